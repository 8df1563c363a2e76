/* conv1d's and conv2d's tap products in C (fastnn_cpu.native, used by fastnn_cpu.conv_taps): one
 * small GEMM a sample and tap, looped here, so that a sample's output block (C_out, L) is
 * summed over the taps while it is in cache (MKL's strided batch, a call a tap over every
 * sample, passed over the whole output once a tap), and the weight gradient is summed
 * over the samples into one (C_out, C_in) block a tap (NumPy's batched products wrote a
 * block a sample, then summed them). conv2d (fastnn_cpu.conv_taps2d) goes the same way
 * over each padded sample's image as one flat row of H * W_padded positions per channel,
 * a tap one shifted stretch of it: the columns that fall in the padding are computed
 * into a scratch block and dropped. Python checks every shape, dtype and layout before
 * it calls in here. */

#include <string.h>

#include "native_gemm.h" /* gemm_ft, gemm_dt */

/* out (N, O, T) = sum over k of taps[k] (O, C) @ src[n, :, starts[k] : starts[k] + T],
 * src (N, C, Ls) C-contiguous: conv1d's forward (starts k * dilation), and its input
 * gradient over the zero-padded output gradient (taps the weight's transposed). */
#define TAPS(NAME, REAL, GEMM)                                                            \
    void NAME(void *fn, int ilp64, int64_t n, int64_t c, int64_t o, int64_t t, int64_t k, \
              const int64_t *starts, int64_t ls, const REAL *src, const REAL *taps,       \
              REAL *out) {                                                                \
        for (int64_t i = 0; i < n; i++)                                                  \
            for (int64_t tap = 0; tap < k; tap++)                                        \
                GEMM(fn, ilp64, NO_TRANS, NO_TRANS, o, t, c, taps + tap * o * c, c,       \
                     src + i * c * ls + starts[tap], ls, tap ? 1 : 0, out + i * o * t, t); \
    }

/* conv1d's weight gradient, each tap's block summed over the samples in place: with
 * out_rows, gw (K, O, C) = sum over n of grad[n] (O, T) @ src[n, :, starts[k] : +T]^T;
 * else gw (K, C, O) = sum over n of src[n, :, starts[k] : +T] (C, T) @ grad[n]^T. Which
 * runs faster depends on the shapes (fastnn_cpu.conv_taps chooses). */
#define TAPS_WEIGHT(NAME, REAL, GEMM)                                                     \
    void NAME(void *fn, int ilp64, int64_t n, int64_t c, int64_t o, int64_t t, int64_t k, \
              const int64_t *starts, int64_t ls, const REAL *src, const REAL *grad,       \
              REAL *gw, int64_t out_rows) {                                               \
        for (int64_t i = 0; i < n; i++)                                                  \
            for (int64_t tap = 0; tap < k; tap++) {                                      \
                const REAL *x = src + i * c * ls + starts[tap], *g = grad + i * o * t;   \
                if (out_rows)                                                            \
                    GEMM(fn, ilp64, NO_TRANS, TRANS, o, c, t, g, t, x, ls, i ? 1 : 0,    \
                         gw + tap * o * c, c);                                           \
                else                                                                     \
                    GEMM(fn, ilp64, NO_TRANS, TRANS, c, o, t, x, ls, g, t, i ? 1 : 0,    \
                         gw + tap * c * o, o);                                           \
            }                                                                            \
    }

TAPS(fastnn_conv1d_taps_f32, float, gemm_ft)
TAPS(fastnn_conv1d_taps_f64, double, gemm_dt)
TAPS_WEIGHT(fastnn_conv1d_taps_weight_f32, float, gemm_ft)
TAPS_WEIGHT(fastnn_conv1d_taps_weight_f64, double, gemm_dt)

/* out (N, O, HO, WO) = sum over t of taps[t] (O, C) @ src[n, :, offs[t] : offs[t] + cols],
 * src (N, C, plane) the padded samples flattened (rows ws apart), cols = (HO - 1) ws + WO:
 * conv2d's forward, and its input gradient over the padded output gradient. A sample's
 * products are summed in scratch (O, cols), whose columns past WO in each row (the
 * padding's) are dropped. */
#define TAPS2D(NAME, REAL, GEMM)                                                          \
    void NAME(void *fn, int ilp64, int64_t n, int64_t c, int64_t o, int64_t ho,           \
              int64_t wo, int64_t k, const int64_t *offs, int64_t plane, int64_t ws,      \
              const REAL *src, const REAL *taps, REAL *scratch, REAL *out) {              \
        int64_t cols = (ho - 1) * ws + wo;                                                \
        for (int64_t i = 0; i < n; i++) {                                                \
            for (int64_t t = 0; t < k; t++)                                              \
                GEMM(fn, ilp64, NO_TRANS, NO_TRANS, o, cols, c, taps + t * o * c, c,      \
                     src + i * c * plane + offs[t], plane, t ? 1 : 0, scratch, cols);     \
            REAL *dst = out + i * o * ho * wo;                                           \
            for (int64_t r = 0; r < o * ho; r++)                                         \
                memcpy(dst + r * wo, scratch + (r / ho) * cols + (r % ho) * ws,          \
                       (size_t)wo * sizeof(REAL));                                       \
        }                                                                                \
    }

/* conv2d's weight gradient: each sample's grad (O, HO, WO) laid into scratch (O, cols)
 * with zeros in the padding's columns, then per tap, summed over the samples in place:
 * with out_rows gw (K, O, C) += scratch @ src[n, :, offs[t] :]^T, else gw (K, C, O) +=
 * src[n, :, offs[t] :] @ scratch^T. A NaN or Inf that only the dropped columns read
 * reaches gw through their zeros (Python checks and takes its own path then). */
#define TAPS2D_WEIGHT(NAME, REAL, GEMM)                                                   \
    void NAME(void *fn, int ilp64, int64_t n, int64_t c, int64_t o, int64_t ho,           \
              int64_t wo, int64_t k, const int64_t *offs, int64_t plane, int64_t ws,      \
              const REAL *src, const REAL *grad, REAL *scratch, REAL *gw,                 \
              int64_t out_rows) {                                                         \
        int64_t cols = (ho - 1) * ws + wo;                                                \
        memset(scratch, 0, (size_t)(o * cols) * sizeof(REAL));                          \
        for (int64_t i = 0; i < n; i++) {                                                \
            const REAL *g = grad + i * o * ho * wo;                                      \
            for (int64_t r = 0; r < o * ho; r++)                                         \
                memcpy(scratch + (r / ho) * cols + (r % ho) * ws, g + r * wo,            \
                       (size_t)wo * sizeof(REAL));                                       \
            for (int64_t t = 0; t < k; t++) {                                            \
                const REAL *x = src + i * c * plane + offs[t];                           \
                if (out_rows)                                                            \
                    GEMM(fn, ilp64, NO_TRANS, TRANS, o, c, cols, scratch, cols, x, plane, \
                         i ? 1 : 0, gw + t * o * c, c);                                  \
                else                                                                     \
                    GEMM(fn, ilp64, NO_TRANS, TRANS, c, o, cols, x, plane, scratch, cols, \
                         i ? 1 : 0, gw + t * c * o, o);                                  \
            }                                                                            \
        }                                                                                \
    }

TAPS2D(fastnn_conv2d_taps_f32, float, gemm_ft)
TAPS2D(fastnn_conv2d_taps_f64, double, gemm_dt)
TAPS2D_WEIGHT(fastnn_conv2d_taps_weight_f32, float, gemm_ft)
TAPS2D_WEIGHT(fastnn_conv2d_taps_weight_f64, double, gemm_dt)
