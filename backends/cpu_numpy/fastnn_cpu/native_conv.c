/* conv1d's tap products in C (fastnn_cpu.native, used by fastnn_cpu.conv_taps): one
 * small GEMM a sample and tap, looped here, so that a sample's output block (C_out, L) is
 * summed over the taps while it is in cache (MKL's strided batch, a call a tap over every
 * sample, passed over the whole output once a tap), and the weight gradient is summed
 * over the samples into one (C_out, C_in) block a tap (NumPy's batched products wrote a
 * block a sample, then summed them). Python checks every shape, dtype and layout before
 * it calls in here. */

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
