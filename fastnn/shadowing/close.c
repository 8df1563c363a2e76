/* Shadow mode's check of one output in one pass (fastnn.shadowing.diff): the largest
 * |got - want| and the largest |got - want| / (atol + rtol |want|), which NumPy makes in
 * eight passes. An element that is NaN or Inf in either array is only flagged (by its
 * bits, so the loop needs no float test of its own): NumPy's path then places them.
 * Built with -ffinite-math-only and -fno-signed-zeros (the two maxima vectorise only
 * so; what they assume away is what the flag reports) and -fno-strict-aliasing (the
 * arrays are read as bits too). */

#include <math.h>
#include <stdint.h>
#include <string.h>

/* one element's part of the loops below: its NaN or Inf flagged by its bits, the two
 * maxima raised (in a block that declares special, max_abs, max_ratio, rtol and atol) */
#define CLOSE_STEP(REAL, UINT, EXPONENT, ABS, G, W, G_BITS, W_BITS)                         \
    {                                                                                      \
        special |= (UINT)(((G_BITS) & EXPONENT) == EXPONENT)                               \
                   | (UINT)(((W_BITS) & EXPONENT) == EXPONENT);                            \
        REAL err = ABS((G) - (W));                                                         \
        REAL ratio = err / (atol + rtol * ABS(W));                                         \
        max_abs = err > max_abs ? err : max_abs;                                           \
        max_ratio = ratio > max_ratio ? ratio : max_ratio;                                 \
    }

#define CLOSE(NAME, REAL, UINT, EXPONENT, ABS)                                             \
    int NAME(const REAL *got, const REAL *want, int64_t n, REAL rtol, REAL atol,           \
             double *out) {                                                                \
        const UINT *got_bits = (const UINT *)got, *want_bits = (const UINT *)want;         \
        REAL max_abs = 0, max_ratio = 0;                                                   \
        UINT special = 0;                                                                  \
        for (int64_t j = 0; j < n; j++)                                                    \
            CLOSE_STEP(REAL, UINT, EXPONENT, ABS, got[j], want[j], got_bits[j], want_bits[j]) \
        out[0] = max_abs;                                                                  \
        out[1] = max_ratio;                                                                \
        return special != 0;                                                               \
    }                                                                                      \
                                                                                           \
    /* n elements ``got_step`` and ``want_step`` bytes apart (a strided row: a slice, a    \
     * transpose), their maxima raised into out[0] and out[1] as they were */              \
    int NAME##_strided(const char *got, int64_t got_step, const char *want,                \
                       int64_t want_step, int64_t n, REAL rtol, REAL atol, double *out) {  \
        REAL max_abs = (REAL)out[0], max_ratio = (REAL)out[1];                             \
        UINT special = 0;                                                                  \
        for (int64_t j = 0; j < n; j++, got += got_step, want += want_step) {              \
            REAL g, w;                                                                     \
            UINT g_bits, w_bits;                                                           \
            memcpy(&g, got, sizeof g);                                                     \
            memcpy(&w, want, sizeof w);                                                    \
            memcpy(&g_bits, got, sizeof g_bits);                                           \
            memcpy(&w_bits, want, sizeof w_bits);                                          \
            CLOSE_STEP(REAL, UINT, EXPONENT, ABS, g, w, g_bits, w_bits)                    \
        }                                                                                  \
        out[0] = max_abs;                                                                  \
        out[1] = max_ratio;                                                                \
        return special != 0;                                                               \
    }                                                                                      \
                                                                                           \
    /* k outputs laid end to end in got and want, output i from starts[i] for sizes[i]    \
     * elements with its own tolerance: its two maxima at out[2i], out[2i + 1] and        \
     * special[i] set where it holds a NaN or Inf (fastnn.shadowing.vector's batch in one \
     * call, where NumPy made eight passes over it) */                                    \
    void NAME##_many(int64_t k, const REAL *got, const REAL *want, const int64_t *starts,  \
                     const int64_t *sizes, const double *rtol, const double *atol,         \
                     double *out, int32_t *special) {                                      \
        for (int64_t i = 0; i < k; i++)                                                    \
            special[i] = NAME(got + starts[i], want + starts[i], sizes[i], (REAL)rtol[i],  \
                              (REAL)atol[i], out + 2 * i);                                 \
    }

CLOSE(fastnn_close_f32, float, uint32_t, 0x7f800000u, fabsf)
CLOSE(fastnn_close_f64, double, uint64_t, 0x7ff0000000000000ull, fabs)
