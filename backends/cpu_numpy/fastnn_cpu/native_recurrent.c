/* The LSTM's and GRU's time loops in C (fastnn_cpu.native): a step's GEMM through the
 * BLAS that NumPy or MKL uses (a function pointer handed over from Python), then its
 * gates and state in one pass. Layouts are those of fastnn_cpu.recurrent's NumPy loops
 * (the LSTM feature-major, one (H, N) block per gate; the GRU batch-major), so either
 * loop's outputs feed the other's backward. Python checks every shape, dtype and layout
 * before it calls in here. */

#include <math.h>
#include <stdint.h>
#include <string.h>

/* the blocks a step's loop reads and writes do not overlap: vectorise without checks */
#define IVDEP _Pragma("GCC ivdep")

#include "native_gemm.h" /* gemm_f, gemm_d */

#include "native_tanh.h" /* exp_small, tanh_f */

static inline double tanh_d(double x) { return tanh(x); }

/* Test hook: tanh_f over n elements (the approximation is checked against NumPy's
 * float64 tanh by the cpu backend's tests). */
void fastnn_tanh_f32(const float *x, float *out, int64_t n) {
    for (int64_t j = 0; j < n; j++)
        out[j] = tanh_f(x[j]);
}

/* The forward: w (4H, K) is [W_ih, W_hh, b] with the sigmoid gates' rows halved (K = I +
 * H + 1); rows (T + 1, K, N) holds step t's [x_t; h_{t-1}; 1] (h_0 in step 0's, the
 * loop writes h_t into step t + 1's); gates (T, 4H, N) gets each step's activations i,
 * f, g, o; cs (2, T + 1, H, N) holds c_0 at [0, 0] and gets c_t at [0, t] and tanh(c_t)
 * at [1, t]. sigmoid(a) is 0.5 tanh(a / 2) + 0.5, as the NumPy loop's. */
#define LSTM_FORWARD(NAME, REAL, GEMM, TANH)                                               \
    void NAME(void *gemm, int ilp64, int64_t t_len, int64_t n, int64_t size, int64_t hid,   \
              const REAL *w, REAL *rows, REAL *gates, REAL *cs) {                         \
        int64_t k = size + hid + 1, hn = hid * n;                                          \
        REAL *tcs = cs + (t_len + 1) * hn;                                                 \
        for (int64_t t = 0; t < t_len; t++) {                                              \
            REAL *a = gates + t * 4 * hn;                                                  \
            GEMM(gemm, ilp64, 4 * hid, n, k, w, k, rows + t * k * n, n, 0, a, n);                      \
            REAL *gi = a, *gf = a + hn, *gg = a + 2 * hn, *go = a + 3 * hn;                \
            const REAL *c_prev = cs + t * hn;                                              \
            REAL *c = cs + (t + 1) * hn, *tc = tcs + (t + 1) * hn;                         \
            REAL *h = rows + (t + 1) * k * n + size * n;                                   \
            IVDEP                                                                          \
            for (int64_t j = 0; j < hn; j++) {                                             \
                REAL i = (REAL)0.5 * TANH(gi[j]) + (REAL)0.5;                              \
                REAL f = (REAL)0.5 * TANH(gf[j]) + (REAL)0.5;                              \
                REAL g = TANH(gg[j]);                                                      \
                REAL o = (REAL)0.5 * TANH(go[j]) + (REAL)0.5;                              \
                gi[j] = i;                                                                 \
                gf[j] = f;                                                                 \
                gg[j] = g;                                                                 \
                go[j] = o;                                                                 \
                REAL cell = f * c_prev[j] + i * g;                                         \
                REAL t_cell = TANH(cell);                                                  \
                c[j] = cell;                                                               \
                tc[j] = t_cell;                                                            \
                h[j] = o * t_cell;                                                         \
            }                                                                              \
        }                                                                                  \
    }

LSTM_FORWARD(fastnn_lstm_forward_f32, float, gemm_f, tanh_f)
LSTM_FORWARD(fastnn_lstm_forward_f64, double, gemm_d, tanh_d)

/* The backward's time loop: gates (T, 4H, N), c_prev and t_cell (T, H, N: c_{t-1} and
 * tanh(c_t)), each step an (H, N) or (4H, N) contiguous block ``*_step`` elements after
 * the last; grad_out (T, H, N) contiguous; w_back (H, 4H) is W_hh^T. dh (H, N) comes in
 * zero and dc (H, N) as grad_c^T, and leave as the gradients of h_0 and c_0. da (4H, T N)
 * gets the gradients of every step's pre-activations, step t's in columns t N to t N + N
 * (the layout of the GEMMs over all steps that give the weights' and input's gradients,
 * in Python; a step's own GEMM reads its columns in place). */
#define LSTM_BACKWARD(NAME, REAL, GEMM)                                                    \
    void NAME(void *gemm, int ilp64, int64_t t_len, int64_t n, int64_t hid,                 \
              const REAL *w_back, const REAL *gates, int64_t gates_step,                   \
              const REAL *c_prev, int64_t c_prev_step, const REAL *t_cell,                 \
              int64_t t_cell_step, const REAL *grad_out, REAL *dh, REAL *dc, REAL *da) {   \
        int64_t hn = hid * n, ld = t_len * n, gate = hid * ld;                             \
        for (int64_t t = t_len - 1; t >= 0; t--) {                                         \
            for (int64_t row = 0; row < hid; row++) {                                      \
                int64_t at = row * n;                                                      \
                const REAL *gi = gates + t * gates_step + at, *gf = gi + hn, *gg = gf + hn; \
                const REAL *go = gg + hn, *cp = c_prev + t * c_prev_step + at;             \
                const REAL *tc = t_cell + t * t_cell_step + at, *up = grad_out + t * hn + at; \
                REAL *h = dh + at, *c = dc + at, *d = da + row * ld + t * n;               \
                IVDEP                                                                      \
                for (int64_t j = 0; j < n; j++) {                                          \
                    REAL i = gi[j], f = gf[j], g = gg[j], o = go[j], tcv = tc[j];          \
                    REAL dhv = h[j] + up[j];                                               \
                    REAL dcv = c[j] + dhv * (o * ((REAL)1 - tcv * tcv));                   \
                    d[j] = dcv * (g * (i * ((REAL)1 - i)));                                \
                    d[gate + j] = dcv * (cp[j] * (f * ((REAL)1 - f)));                     \
                    d[2 * gate + j] = dcv * (i * ((REAL)1 - g * g));                       \
                    d[3 * gate + j] = dhv * (tcv * (o * ((REAL)1 - o)));                   \
                    c[j] = dcv * f;                                                        \
                }                                                                          \
            }                                                                              \
            GEMM(gemm, ilp64, hid, n, 4 * hid, w_back, 4 * hid, da + t * n, ld, 0, dh, n);                \
        }                                                                                  \
    }

LSTM_BACKWARD(fastnn_lstm_backward_f32, float, gemm_f)
LSTM_BACKWARD(fastnn_lstm_backward_f64, double, gemm_d)

/* The GRU, batch-major as fastnn_cpu.recurrent's NumPy loop. w (K, 4H) has the columns
 * (r, z: both projections and biases, halved; p_n: x's and b_in; q_n: h's and b_hn), K =
 * I + H + 1; rows (T + 1, N, K) holds step t's [x_t, h_{t-1}, 1] (the loop writes h_t
 * into step t + 1's); saved (T, N, 4H) gets each step's (r, z, n, q_n). */
#define GRU_FORWARD(NAME, REAL, GEMM, TANH)                                                \
    void NAME(void *gemm, int ilp64, int64_t t_len, int64_t n, int64_t size, int64_t hid,   \
              const REAL *w, REAL *rows, REAL *saved) {                                    \
        int64_t k = size + hid + 1, four = 4 * hid;                                        \
        for (int64_t t = 0; t < t_len; t++) {                                              \
            REAL *s = saved + t * n * four;                                                \
            GEMM(gemm, ilp64, n, four, k, rows + t * n * k, k, w, four, 0, s, four);       \
            for (int64_t b = 0; b < n; b++) {                                              \
                REAL *gr = s + b * four, *gz = gr + hid, *gn = gz + hid, *gq = gn + hid;   \
                const REAL *hp = rows + (t * n + b) * k + size;                            \
                REAL *h = rows + ((t + 1) * n + b) * k + size;                             \
                IVDEP                                                                      \
                for (int64_t j = 0; j < hid; j++) {                                        \
                    REAL r = (REAL)0.5 * TANH(gr[j]) + (REAL)0.5;                          \
                    REAL z = (REAL)0.5 * TANH(gz[j]) + (REAL)0.5;                          \
                    REAL nv = TANH(gn[j] + r * gq[j]);                                     \
                    gr[j] = r;                                                             \
                    gz[j] = z;                                                             \
                    gn[j] = nv;                                                            \
                    h[j] = (hp[j] - nv) * z + nv;                                          \
                }                                                                          \
            }                                                                              \
        }                                                                                  \
    }

GRU_FORWARD(fastnn_gru_forward_f32, float, gemm_f, tanh_f)
GRU_FORWARD(fastnn_gru_forward_f64, double, gemm_d, tanh_d)

/* The GRU's backward time loop: saved (T, N, 4H) and rows (T + 1, N, K) as the forward
 * left them, grad_out (T, N, H) contiguous, w_hh (3H, H) contiguous; dh (N, H) comes in
 * zero and leaves as h_0's gradient; grads (T, N, 4H) gets each step's gradients of (p_n,
 * p_r, p_z, q_n) (the layout fastnn_cpu.recurrent's weight GEMMs read). */
#define GRU_BACKWARD(NAME, REAL, GEMM)                                                     \
    void NAME(void *gemm, int ilp64, int64_t t_len, int64_t n, int64_t size, int64_t hid,   \
              const REAL *w_hh, const REAL *saved, const REAL *rows,                       \
              const REAL *grad_out, REAL *dh, REAL *grads) {                               \
        int64_t k = size + hid + 1, four = 4 * hid;                                        \
        for (int64_t t = t_len - 1; t >= 0; t--) {                                         \
            REAL *g = grads + t * n * four;                                                \
            for (int64_t b = 0; b < n; b++) {                                              \
                const REAL *sr = saved + (t * n + b) * four, *sz = sr + hid;               \
                const REAL *sn = sz + hid, *sq = sn + hid;                                 \
                const REAL *hp = rows + (t * n + b) * k + size;                            \
                const REAL *up = grad_out + (t * n + b) * hid;                             \
                REAL *d = dh + b * hid, *gn = g + b * four, *gr = gn + hid;                \
                REAL *gz = gr + hid, *gq = gz + hid;                                       \
                IVDEP                                                                      \
                for (int64_t j = 0; j < hid; j++) {                                        \
                    REAL r = sr[j], z = sz[j], nv = sn[j];                                 \
                    REAL dhv = d[j] + up[j];                                               \
                    REAL dan = dhv * (((REAL)1 - z) * ((REAL)1 - nv * nv));                \
                    gn[j] = dan;                                                           \
                    gr[j] = dan * (sq[j] * (r * ((REAL)1 - r)));                           \
                    gz[j] = dhv * ((hp[j] - nv) * (z * ((REAL)1 - z)));                    \
                    gq[j] = dan * r;                                                       \
                    d[j] = dhv * z;                                                        \
                }                                                                          \
            }                                                                              \
            GEMM(gemm, ilp64, n, hid, 3 * hid, g + hid, four, w_hh, hid, 1, dh, hid);      \
        }                                                                                  \
    }

GRU_BACKWARD(fastnn_gru_backward_f32, float, gemm_f)
GRU_BACKWARD(fastnn_gru_backward_f64, double, gemm_d)
