/* cblas_?gemm reached through a function pointer handed over from Python
 * (fastnn_cpu.native: MKL's where fastnn_cpu.mkl_gemm took NumPy's products, else the
 * BLAS inside NumPy's wheel), for the C loops that call it once a step or a sample.
 * fastnn.api.native keys a build on this header's text too (a quoted include). */

#include <stdint.h>

enum { ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112 };

/* cblas_?gemm with 32-bit integers (MKL's LP64, a system CBLAS) or 64-bit ones (the
 * OpenBLAS inside NumPy's wheels is ILP64); the enums are C ints in both. */
typedef void (*sgemm32)(int, int, int, int32_t, int32_t, int32_t, float, const float *,
                        int32_t, const float *, int32_t, float, float *, int32_t);
typedef void (*sgemm64)(int, int, int, int64_t, int64_t, int64_t, float, const float *,
                        int64_t, const float *, int64_t, float, float *, int64_t);
typedef void (*dgemm32)(int, int, int, int32_t, int32_t, int32_t, double, const double *,
                        int32_t, const double *, int32_t, double, double *, int32_t);
typedef void (*dgemm64)(int, int, int, int64_t, int64_t, int64_t, double, const double *,
                        int64_t, const double *, int64_t, double, double *, int64_t);

/* C (m, n) = op(A) (m, k) op(B) (k, n) + beta C, row-major, rows lda, ldb and ldc apart;
 * ta and tb NO_TRANS or TRANS (op(A) = A^T: A stored (k, m)). */
#define GEMM_T(NAME, REAL, FN32, FN64)                                                    \
    static void NAME(void *fn, int ilp64, int ta, int tb, int64_t m, int64_t n,           \
                     int64_t k, const REAL *a, int64_t lda, const REAL *b, int64_t ldb,   \
                     REAL beta, REAL *c, int64_t ldc) {                                   \
        if (ilp64)                                                                        \
            ((FN64)fn)(ROW_MAJOR, ta, tb, m, n, k, 1, a, lda, b, ldb, beta, c, ldc);       \
        else                                                                              \
            ((FN32)fn)(ROW_MAJOR, ta, tb, (int32_t)m, (int32_t)n, (int32_t)k, 1, a,       \
                       (int32_t)lda, b, (int32_t)ldb, beta, c, (int32_t)ldc);             \
    }

GEMM_T(gemm_ft, float, sgemm32, sgemm64)
GEMM_T(gemm_dt, double, dgemm32, dgemm64)

/* C (m, n) = A (m, k) B (k, n) + beta C, neither transposed */
static inline void gemm_f(void *fn, int ilp64, int64_t m, int64_t n, int64_t k,
                          const float *a, int64_t lda, const float *b, int64_t ldb,
                          float beta, float *c, int64_t ldc) {
    gemm_ft(fn, ilp64, NO_TRANS, NO_TRANS, m, n, k, a, lda, b, ldb, beta, c, ldc);
}

static inline void gemm_d(void *fn, int ilp64, int64_t m, int64_t n, int64_t k,
                          const double *a, int64_t lda, const double *b, int64_t ldb,
                          double beta, double *c, int64_t ldc) {
    gemm_dt(fn, ilp64, NO_TRANS, NO_TRANS, m, n, k, a, lda, b, ldb, beta, c, ldc);
}
