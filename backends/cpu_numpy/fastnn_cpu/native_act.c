/* relu, its gradient and the Linear's bias add (with relu or alone) in one pass each
 * (fastnn_cpu.native, used by fastnn_cpu.fused and relu): NumPy makes one pass per ufunc
 * and, for relu's gradient, four (a comparison, the mask widened, negated, ANDed). The
 * values are NumPy's bit for bit: relu keeps -0.0 and NaN (x < 0 is false for both), the
 * gradient passes grad where out != 0 (NaN included) and is +0.0 elsewhere, x + bias is
 * one rounding. Built without -ffast-math (signed zeros and NaN matter here). Python
 * checks every shape, dtype and layout before it calls in here. */

#include <stdint.h>

#define ACT(REAL, SUFFIX)                                                                 \
    void fastnn_relu_##SUFFIX(int64_t n, const REAL *x, REAL *out) {                     \
        for (int64_t j = 0; j < n; j++)                                                  \
            out[j] = x[j] < 0 ? (REAL)0 : x[j];                                          \
    }                                                                                    \
                                                                                         \
    void fastnn_relu_backward_##SUFFIX(int64_t n, const REAL *out, const REAL *grad,     \
                                       REAL *dz) {                                       \
        for (int64_t j = 0; j < n; j++)                                                  \
            dz[j] = out[j] != 0 ? grad[j] : (REAL)0;                                     \
    }                                                                                    \
                                                                                         \
    /* out (rows, cols) = x + bias (cols,) per row, then relu when asked */              \
    void fastnn_bias_act_##SUFFIX(int64_t rows, int64_t cols, const REAL *x,             \
                                  const REAL *bias, REAL *out, int64_t relu) {           \
        for (int64_t i = 0; i < rows; i++) {                                             \
            const REAL *a = x + i * cols;                                                \
            REAL *o = out + i * cols;                                                    \
            if (relu)                                                                    \
                for (int64_t j = 0; j < cols; j++) {                                     \
                    REAL z = a[j] + bias[j];                                             \
                    o[j] = z < 0 ? (REAL)0 : z;                                          \
                }                                                                        \
            else                                                                         \
                for (int64_t j = 0; j < cols; j++)                                       \
                    o[j] = a[j] + bias[j];                                               \
        }                                                                                \
    }

ACT(float, f32)
ACT(double, f64)
