/* Training-mode batch normalisation in two passes each way (fastnn_cpu.native, used by
 * fastnn_cpu.batchnorm): x is (N, C, L) contiguous. The per-channel sums are taken in
 * float64, of the values less the channel's first one (so that a large mean does not
 * cancel the variance away), in several partial sums that vectorise (built with
 * -fassociative-math: only the order of the additions is the compiler's). Python checks
 * every shape, dtype and layout before it calls in here. */

#include <math.h>
#include <stdint.h>

/* sum over j < len of a[j] - shift and of its square, added into s[0] and s[1] */
#define SUMS(NAME, REAL)                                                                  \
    static void NAME(const REAL *a, int64_t len, double shift, double *s) {              \
        double sum = 0, squares = 0;                                                     \
        for (int64_t j = 0; j < len; j++) {                                              \
            double d = (double)a[j] - shift;                                             \
            sum += d;                                                                    \
            squares += d * d;                                                            \
        }                                                                                \
        s[0] += sum;                                                                     \
        s[1] += squares;                                                                 \
    }

SUMS(sums_f32, float)
SUMS(sums_f64, double)

/* mean and var (C) in float64 (the biased variance), out = (x - mean) * weight /
 * sqrt(var + eps) + bias. */
#define BN_TRAIN(NAME, REAL, SUMS_FN)                                                     \
    void NAME(int64_t n, int64_t c, int64_t len, const REAL *x, const REAL *weight,       \
              const REAL *bias, double eps, REAL *out, double *mean, double *var) {       \
        double m = (double)(n * len);                                                    \
        for (int64_t ch = 0; ch < c; ch++) {                                             \
            double shift = (double)x[ch * len], s[2] = {0, 0};                           \
            for (int64_t i = 0; i < n; i++)                                              \
                SUMS_FN(x + (i * c + ch) * len, len, shift, s);                          \
            double centre = s[0] / m;                                                    \
            mean[ch] = shift + centre;                                                   \
            double v = s[1] / m - centre * centre;                                       \
            var[ch] = v > 0 ? v : 0;                                                     \
        }                                                                                \
        for (int64_t i = 0; i < n; i++)                                                  \
            for (int64_t ch = 0; ch < c; ch++) {                                         \
                REAL scale = (REAL)((double)weight[ch] / sqrt(var[ch] + eps));           \
                REAL mu = (REAL)mean[ch], b = bias[ch];                                  \
                const REAL *a = x + (i * c + ch) * len;                                  \
                REAL *o = out + (i * c + ch) * len;                                      \
                for (int64_t j = 0; j < len; j++)                                        \
                    o[j] = (a[j] - mu) * scale + b;                                      \
            }                                                                            \
    }

BN_TRAIN(fastnn_bn_train_f32, float, sums_f32)
BN_TRAIN(fastnn_bn_train_f64, double, sums_f64)

/* dbias = sum(grad), dweight = sum(grad (x - mean)) / sqrt(var + eps) (float64, C), and
 * dx = a grad + b (x - mean) + k per channel (a = weight / sqrt(var + eps), b = -a
 * dweight / (m sqrt(var + eps)), k = -a dbias / m). */
#define BN_BACKWARD(NAME, REAL)                                                           \
    void NAME(int64_t n, int64_t c, int64_t len, const REAL *x, const REAL *grad,         \
              const REAL *weight, const REAL *mean, const REAL *var, double eps, REAL *dx, \
              double *dweight, double *dbias) {                                          \
        double m = (double)(n * len);                                                    \
        for (int64_t ch = 0; ch < c; ch++) {                                             \
            double mu = (double)mean[ch], sum = 0, dot = 0;                              \
            for (int64_t i = 0; i < n; i++) {                                            \
                const REAL *a = x + (i * c + ch) * len, *g = grad + (i * c + ch) * len;  \
                double s = 0, p = 0;                                                     \
                for (int64_t j = 0; j < len; j++) {                                      \
                    double gj = (double)g[j];                                            \
                    s += gj;                                                             \
                    p += gj * ((double)a[j] - mu);                                       \
                }                                                                        \
                sum += s;                                                                \
                dot += p;                                                                \
            }                                                                            \
            double inv = 1.0 / sqrt((double)var[ch] + eps);                              \
            dbias[ch] = sum;                                                             \
            dweight[ch] = dot * inv;                                                     \
        }                                                                                \
        for (int64_t i = 0; i < n; i++)                                                  \
            for (int64_t ch = 0; ch < c; ch++) {                                         \
                double inv = 1.0 / sqrt((double)var[ch] + eps);                          \
                double a64 = (double)weight[ch] * inv;                                   \
                double b64 = -a64 * inv * dweight[ch] / m;                               \
                REAL a = (REAL)a64, b = (REAL)b64, k = (REAL)(-a64 * dbias[ch] / m);     \
                REAL mu = mean[ch];                                                      \
                const REAL *xs = x + (i * c + ch) * len, *g = grad + (i * c + ch) * len; \
                REAL *d = dx + (i * c + ch) * len;                                       \
                for (int64_t j = 0; j < len; j++)                                        \
                    d[j] = a * g[j] + (b * (xs[j] - mu) + k);                            \
            }                                                                            \
    }

BN_BACKWARD(fastnn_bn_backward_f32, float)
BN_BACKWARD(fastnn_bn_backward_f64, double)

/* Layer normalisation over the last axis of x (rows, d) C-contiguous (fastnn_cpu.layernorm):
 * each row's mean and biased variance in float64 (two passes over the row, in cache),
 * out = (x - mean) * rstd * weight + bias, rstd = 1 / sqrt(var + eps); mean and rstd
 * (rows,) in x's type. */
#define LN_TRAIN(NAME, REAL)                                                              \
    void NAME(int64_t rows, int64_t d, const REAL *x, const REAL *weight,                \
              const REAL *bias, double eps, REAL *out, REAL *mean, REAL *rstd) {         \
        for (int64_t i = 0; i < rows; i++) {                                             \
            const REAL *a = x + i * d;                                                   \
            double sum = 0, squares = 0;                                                 \
            for (int64_t j = 0; j < d; j++)                                              \
                sum += (double)a[j];                                                     \
            double m = sum / (double)d;                                                  \
            for (int64_t j = 0; j < d; j++) {                                            \
                double c = (double)a[j] - m;                                             \
                squares += c * c;                                                        \
            }                                                                            \
            REAL mu = (REAL)m, r = (REAL)(1.0 / sqrt(squares / (double)d + eps));        \
            mean[i] = mu;                                                                \
            rstd[i] = r;                                                                 \
            REAL *o = out + i * d;                                                       \
            for (int64_t j = 0; j < d; j++)                                              \
                o[j] = (a[j] - mu) * r * weight[j] + bias[j];                            \
        }                                                                                \
    }

/* Its backward: with xhat = (x - mean) rstd and g = grad weight, dx = rstd (g - mean(g) -
 * xhat mean(g xhat)) per row; dweight = sum(grad xhat), dbias = sum(grad) over the rows,
 * summed in float64 (work: 2 d doubles). */
#define LN_BACKWARD(NAME, REAL)                                                           \
    void NAME(int64_t rows, int64_t d, const REAL *x, const REAL *weight,                \
              const REAL *mean, const REAL *rstd, const REAL *grad, REAL *dx,            \
              REAL *dweight, REAL *dbias, double *work) {                                \
        double *dw = work, *db = work + d;                                               \
        for (int64_t j = 0; j < 2 * d; j++)                                              \
            work[j] = 0;                                                                 \
        for (int64_t i = 0; i < rows; i++) {                                             \
            const REAL *a = x + i * d, *g = grad + i * d;                                \
            REAL mu = mean[i], r = rstd[i];                                              \
            double sg = 0, sgx = 0;                                                      \
            for (int64_t j = 0; j < d; j++) {                                            \
                REAL xh = (a[j] - mu) * r, gw = g[j] * weight[j];                        \
                sg += (double)gw;                                                        \
                sgx += (double)gw * (double)xh;                                          \
                dw[j] += (double)g[j] * (double)xh;                                      \
                db[j] += (double)g[j];                                                   \
            }                                                                            \
            REAL ma = (REAL)(sg / (double)d), mb = (REAL)(sgx / (double)d);              \
            REAL *o = dx + i * d;                                                        \
            for (int64_t j = 0; j < d; j++) {                                            \
                REAL xh = (a[j] - mu) * r;                                               \
                o[j] = r * (g[j] * weight[j] - ma - xh * mb);                            \
            }                                                                            \
        }                                                                                \
        for (int64_t j = 0; j < d; j++) {                                                \
            dweight[j] = (REAL)dw[j];                                                    \
            dbias[j] = (REAL)db[j];                                                      \
        }                                                                                \
    }

LN_TRAIN(fastnn_ln_train_f32, float)
LN_TRAIN(fastnn_ln_train_f64, double)
LN_BACKWARD(fastnn_ln_backward_f32, float)
LN_BACKWARD(fastnn_ln_backward_f64, double)
