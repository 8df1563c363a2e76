/* relu, its gradient and the Linear's bias add (with relu or alone) in one pass each
 * (fastnn_cpu.native, used by fastnn_cpu.fused and relu): NumPy makes one pass per ufunc
 * and, for relu's gradient, four (a comparison, the mask widened, negated, ANDed). The
 * values are NumPy's bit for bit: relu keeps -0.0 and NaN (x < 0 is false for both), the
 * gradient passes grad where out != 0 (NaN included) and is +0.0 elsewhere, x + bias is
 * one rounding. Built without -ffast-math (signed zeros and NaN matter here). Python
 * checks every shape, dtype and layout before it calls in here. GELU in float32 (NumPy's
 * takes 18 passes) is fastnn_cpu.erf's gelu32 in one: its polynomial and constants,
 * handed over from Python, and tanh_f where gelu32 calls NumPy's tanh. */

#include <math.h>
#include <stdint.h>

#include "native_tanh.h" /* tanh_f, exp_nonpositive */

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

/* out[rows[i], :] += src[i, :] for i < n, in that order (np.add.at's, so the sums are
 * its bit for bit): an embedding's gradient, rows of d elements (Python checks that the
 * rows are in range and the arrays dense) */
#define INDEX_ADD(REAL, SUFFIX)                                                          \
    void fastnn_index_add_rows_##SUFFIX(int64_t n, int64_t d, const int64_t *rows,       \
                                        const REAL *src, REAL *out) {                    \
        for (int64_t i = 0; i < n; i++) {                                                \
            REAL *o = out + rows[i] * d;                                                 \
            const REAL *a = src + i * d;                                                 \
            for (int64_t j = 0; j < d; j++)                                              \
                o[j] += a[j];                                                            \
        }                                                                                \
    }

ACT(float, f32)
ACT(double, f64)
INDEX_ADD(float, f32)
INDEX_ADD(double, f64)

/* out = 0.5 x (1 + tanh(u)), u = x g(min(x^2, clamp)), g the degree-7 polynomial coefs
 * (in powers of x^2, lowest first): fastnn_cpu.erf.gelu32's argument, and its 0.5 (1 +
 * tanh u) as the logistic 1 / (1 + e^{-2u}), which needs one exp where tanh_f takes an
 * exp and a polynomial and chooses: 2.6x faster over (16, 64, 256), and closer to the
 * float64 GELU where the tanh's 1 + tanh u cancels (x < -3). e^{-2u} is taken in
 * [-87, 88] (past it out is x, or x / 1.7e38 for x under about -10, where GELU is under
 * 1e-22). NaN stays NaN; -inf gives NaN (-inf * 0, as the defining formula and gelu32);
 * +-0.0 and +inf are kept. */
void fastnn_gelu_f32(int64_t n, const float *x, const float *coefs, float clamp,
                     float *out) {
    float c0 = coefs[0], c1 = coefs[1], c2 = coefs[2], c3 = coefs[3], c4 = coefs[4],
          c5 = coefs[5], c6 = coefs[6], c7 = coefs[7];
    for (int64_t j = 0; j < n; j++) {
        float v = x[j];
        float s = v * v;
        s = s > clamp ? clamp : s;
        float acc = s * c7 + c6;
        acc = acc * s + c5;
        acc = acc * s + c4;
        acc = acc * s + c3;
        acc = acc * s + c2;
        acc = acc * s + c1;
        acc = acc * s + c0;
        float y = -2.0f * (acc * v);
        y = y > 88.0f ? 88.0f : y;
        y = y < -87.0f ? -87.0f : y;
        y = y != y ? 0.0f : y; /* (a NaN x: out is NaN through v below) */
        float r = v / (1.0f + exp_small(y));
        out[j] = v == -INFINITY ? NAN : r;
    }
}

/* dz = grad * (out / x + x exp(-x^2 / 2) / sqrt(2 pi)): fastnn_cpu.fused.gelu_backward's
 * steps in its order, in one pass (NumPy makes nine). out / x is the cdf (out = x cdf);
 * where x^2 is at most tiny2 it is 0.5 (fused.gelu_backward says why). Past 13 < |x|
 * the pdf is 0 (exp_nonpositive: float32's exp gives subnormals there, which times x are
 * far under the cdf's ulp); x = +-inf: 0 * inf, NaN, as NumPy's; NaN passed on. */
void fastnn_gelu_backward_f32(int64_t n, const float *x, const float *out,
                              const float *grad, float tiny2, float inv_sqrt_2pi,
                              float *dz) {
    for (int64_t j = 0; j < n; j++) {
        float v = x[j];
        float s = v * v;
        float pdf = exp_nonpositive(s * -0.5f) * v * inv_sqrt_2pi;
        float cdf = s <= tiny2 ? 0.5f : out[j] / v;
        dz[j] = (cdf + pdf) * grad[j];
    }
}

/* Softmax down the columns of n (S, L) float32 matrices in place (fastnn_cpu.sdpa's
 * transposed scores: a column is one query's scores over the S keys), entries where
 * drop (an (S, L) int32 mask, or NULL; bytes did not vectorise) is nonzero taken as
 * -inf: NumPy's max, subtract, exp, sum, reciprocal and multiply passes (a column with
 * a NaN is NaN, and so is one wholly dropped: -inf - -inf) in three sweeps of each
 * matrix while it is in L1, COLS columns at a time, each loop along a row's columns
 * (vectorised: the reductions are per column); exp by exp_nonpositive. */
#define COLS 256
void fastnn_softmax_cols_f32(int64_t n, int64_t S, int64_t L, float *x,
                             const int32_t *drop) {
    float top[COLS], sum[COLS];
    for (int64_t i = 0; i < n; i++) {
        float *a = x + i * S * L;
        for (int64_t c0 = 0; c0 < L; c0 += COLS) {
            int64_t w = L - c0 < COLS ? L - c0 : COLS;
            for (int64_t c = 0; c < w; c++) {
                top[c] = -INFINITY;
                sum[c] = 0.0f;
            }
            /* (as written, restrict and loads outside the tests, so that GCC 12
             * vectorises the loops: a load under a test, or || , stopped it) */
            for (int64_t s = 0; s < S; s++) {
                float *restrict row = a + s * L + c0;
                if (drop) {
                    const int32_t *restrict off = drop + s * L + c0;
                    for (int64_t c = 0; c < w; c++) {
                        float r = row[c], t = top[c];
                        float v = off[c] ? -INFINITY : r;
                        row[c] = v;
                        top[c] = (v > t) | (v != v) ? v : t;
                    }
                } else {
                    for (int64_t c = 0; c < w; c++) {
                        float v = row[c], t = top[c];
                        top[c] = (v > t) | (v != v) ? v : t;
                    }
                }
            }
            for (int64_t s = 0; s < S; s++) {
                float *row = a + s * L + c0;
                for (int64_t c = 0; c < w; c++) {
                    float e = exp_nonpositive(row[c] - top[c]);
                    row[c] = e;
                    sum[c] += e;
                }
            }
            for (int64_t c = 0; c < w; c++)
                sum[c] = 1.0f / sum[c];
            for (int64_t s = 0; s < S; s++) {
                float *row = a + s * L + c0;
                for (int64_t c = 0; c < w; c++)
                    row[c] *= sum[c];
            }
        }
    }
}

/* The softmax's backward down the same columns, in place on ds (n (S, L) matrices, the
 * gradient of the weights): ds = (ds - sum over s of ds * p) * p * factor, p the
 * softmax's output laid out as ds (fastnn_cpu.sdpa.attention_backward's passes). */
void fastnn_softmax_cols_backward_f32(int64_t n, int64_t S, int64_t L, float *ds,
                                      const float *p, float factor) {
    float dot[COLS];
    for (int64_t i = 0; i < n; i++) {
        float *d = ds + i * S * L;
        const float *q = p + i * S * L;
        for (int64_t c0 = 0; c0 < L; c0 += COLS) {
            int64_t w = L - c0 < COLS ? L - c0 : COLS;
            for (int64_t c = 0; c < w; c++)
                dot[c] = 0.0f;
            for (int64_t s = 0; s < S; s++) {
                const float *dr = d + s * L + c0, *pr = q + s * L + c0;
                for (int64_t c = 0; c < w; c++)
                    dot[c] += dr[c] * pr[c];
            }
            for (int64_t s = 0; s < S; s++) {
                float *dr = d + s * L + c0;
                const float *pr = q + s * L + c0;
                for (int64_t c = 0; c < w; c++)
                    dr[c] = (dr[c] - dot[c]) * pr[c] * factor;
            }
        }
    }
}

/* out[i] = max of row i of x (rows, d), d >= 1, NaN where the row holds one (as
 * np.maximum.reduce): NumPy's reduction over a short last axis pays its loop's set-up a
 * row (110 us for (1024, 64) float32, where this takes a few). A row is taken a 64-byte
 * vector at a time (GCC's vector extension: one running maximum is a serial chain GCC
 * does not vectorise, and (1024, 512) float32 took 4x NumPy's time), then element by
 * element. */
#define ROW_MAX(NAME, REAL, INT)                                                          \
    typedef REAL NAME##_v __attribute__((vector_size(64)));                              \
    typedef INT NAME##_m __attribute__((vector_size(64)));                               \
    static inline REAL NAME##_one(const REAL *a, int64_t d) {                            \
        enum { LANES = 64 / sizeof(REAL) };                                              \
        REAL m = a[0];                                                                   \
        int64_t j = 0;                                                                   \
        int nan = 0;                                                                     \
        if (d >= LANES) {                                                                \
            NAME##_v top, v;                                                             \
            NAME##_m bad = {0};                                                          \
            memcpy(&top, a, sizeof top);                                                 \
            for (; j + LANES <= d; j += LANES) {                                         \
                memcpy(&v, a + j, sizeof v);                                             \
                NAME##_m up = v > top;                                                   \
                top = (NAME##_v)(((NAME##_m)v & up) | ((NAME##_m)top & ~up));            \
                bad |= v != v;                                                           \
            }                                                                            \
            m = top[0];                                                                  \
            for (int l = 1; l < LANES; l++) {                                            \
                m = top[l] > m ? top[l] : m;                                             \
            }                                                                            \
            for (int l = 0; l < LANES; l++) {                                            \
                nan |= bad[l] != 0;                                                      \
            }                                                                            \
        }                                                                                \
        for (; j < d; j++) {                                                             \
            m = a[j] > m ? a[j] : m;                                                     \
            nan |= a[j] != a[j];                                                         \
        }                                                                                \
        return nan ? (REAL)NAN : m;                                                      \
    }                                                                                    \
    void NAME(int64_t rows, int64_t d, const REAL *x, REAL *out) {                       \
        for (int64_t i = 0; i < rows; i++)                                               \
            out[i] = NAME##_one(x + i * d, d);                                           \
    }

ROW_MAX(fastnn_row_max_f32, float, int32_t)
ROW_MAX(fastnn_row_max_f64, double, int64_t)

/* The softmax along the rows of x (rows, d), d >= 1, float32, into out: NumPy's max,
 * subtract, exp, sum and divide passes in three sweeps of a row while it is in L1 (a
 * 4x4 softmax was five NumPy calls, 4x PyTorch's). The row's maximum as
 * fastnn_row_max_f32, exp by exp_nonpositive, the sum 16 lanes at a time (a serial sum
 * does not vectorise) in blocks of 1024 added in double (NumPy's pairwise sum is as
 * close), then a multiply by its reciprocal. A NaN anywhere in a row, or an
 * infinite maximum, makes the row NaN, as NumPy's passes do. top and total, where not
 * NULL, take each row's maximum and sum (the cross-entropy's loss is log(total) + top -
 * x[target]). */
typedef float sum16_f32 __attribute__((vector_size(64)));
void fastnn_softmax_rows_f32(int64_t rows, int64_t d, const float *x, float *out,
                             float *top, float *total) {
    for (int64_t i = 0; i < rows; i++) {
        const float *restrict a = x + i * d;
        float *restrict o = out + i * d;
        float m = fastnn_row_max_f32_one(a, d);
        for (int64_t j = 0; j < d; j++)
            o[j] = exp_nonpositive(a[j] - m);
        double whole = 0.0; /* blocks of 1024 in 16 float lanes, the blocks in double */
        int64_t j = 0;
        while (j + 16 <= d) {
            sum16_f32 acc = {0}, v;
            int64_t end = j + 1024 < d ? j + 1024 : d;
            for (; j + 16 <= end; j += 16) {
                memcpy(&v, o + j, sizeof v);
                acc += v;
            }
            float part = 0.0f;
            for (int l = 0; l < 16; l++)
                part += acc[l];
            whole += part;
        }
        for (; j < d; j++)
            whole += o[j];
        float s = (float)whole;
        float inv = 1.0f / s;
        for (int64_t k = 0; k < d; k++)
            o[k] *= inv;
        if (top) {
            top[i] = m;
            total[i] = s;
        }
    }
}
