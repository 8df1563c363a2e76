// Fused LSTM and GRU cells over steps [t0, t1) of a sequence, forward and backward.
//
// Work-item (j, n) owns VW consecutive hidden units j*VW.. of batch row n, as VW-lane
// vectors. When every (j, n) fits in one work-group the host runs the whole sequence as
// ONE launch, with a barrier between steps (each step reads the state the others wrote);
// otherwise it launches each step on its own (t1 = t0 + 1). Each step's recurrent product (h_prev @ W_hh^T forward, d @ W_hh backward) is
// computed inside the cell kernel: per k, one scalar of the row times one vector of the
// weight row, so the products run as vector FMAs.
// NOTE: PoCL vectorises neither inner loops across work-items nor code around builtin
// calls (see matmul.cl), hence the explicit vectors. Every array is contiguous; each
// pointer comes with an element offset. Host defines: T (float or double), VW (1, 2, 4,
// 8 or 16, dividing H).

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#if VW == 1
#define VT T
#define VLOAD(p) (*(p))
#define VSTORE(v, p) (*(p) = (v))
#else
#define VT CAT(T, VW)
typedef VT __attribute__((aligned(sizeof(T)))) VT_UNALIGNED;
#define VLOAD(p) (*(const __global VT_UNALIGNED *)(p))
#define VSTORE(v, p) (*(__global VT_UNALIGNED *)(p) = (v))
#endif
#define ONE ((T)1)

// NOTE: PoCL's tanh costs twice its exp per lane (4 and 2-4.5 ns here, library calls);
// sigmoid and tanh take one exp each (they round to their limits where exp overflows;
// NaN passes through).
#define EXP(x) exp(x)
#define SIG(x) (ONE / (ONE + EXP(-(x))))
#define TANH(x) (ONE - (T)2 / (ONE + EXP((T)2 * (x))))


// a = xp[t] + bias + h_prev @ w_t (w_t = W_hh^T, (H, 4H)); gates i, f, g, o;
// c' = f c + i g, h' = o tanh(c'). Writes gates (T, N, 4H), cells and out (T, N, H);
// h_prev and c_prev are h0 and c0 at t = 0, else out[t-1] and cells[t-1].
// One step t of work-item (j, n): its VW hidden units of batch row n.
inline void lstm_step(const int N, const int H, const int t, const int j, const int n,
                      __global const T *xp, __global const T *bias, const int off_bias,
                      __global const T *w_t, __global const T *h0, const int off_h0,
                      __global const T *c0, const int off_c0,
                      __global T *gates, __global T *cells, __global T *out) {
    const int G = 4 * H;
    const __global T *b = bias + off_bias + j;
    const __global T *h = t ? out + (t - 1) * N * H + n * H : h0 + off_h0 + n * H;
    const __global T *cp = t ? cells + (t - 1) * N * H : c0 + off_c0;
    const __global T *w = w_t + j;
    VT ai = 0, af = 0, ag = 0, ao = 0;
    for (int k = 0; k < H; ++k) {
        const VT hk = (VT)(h[k]);
        const __global T *wk = w + k * G;
        ai += hk * VLOAD(wk);
        af += hk * VLOAD(wk + H);
        ag += hk * VLOAD(wk + 2 * H);
        ao += hk * VLOAD(wk + 3 * H);
    }
    const __global T *a = xp + t * N * G + n * G + j;
    ai += VLOAD(a) + VLOAD(b);
    af += VLOAD(a + H) + VLOAD(b + H);
    ag += VLOAD(a + 2 * H) + VLOAD(b + 2 * H);
    ao += VLOAD(a + 3 * H) + VLOAD(b + 3 * H);
    const VT i = SIG(ai), f = SIG(af), g = TANH(ag), o = SIG(ao);
    const VT c = f * VLOAD(cp + n * H + j) + i * g;
    __global T *gt = gates + t * N * G + n * G + j;
    VSTORE(i, gt);
    VSTORE(f, gt + H);
    VSTORE(g, gt + 2 * H);
    VSTORE(o, gt + 3 * H);
    VSTORE(c, cells + t * N * H + n * H + j);
    VSTORE(o * TANH(c), out + t * N * H + n * H + j);
}

#define LSTM_ARGS const int N, const int H, const int t0, const int t1, \
    __global const T *xp, __global const T *bias, const int off_bias, \
    __global const T *w_t, __global const T *h0, const int off_h0, \
    __global const T *c0, const int off_c0, \
    __global T *gates, __global T *cells, __global T *out
#define LSTM_PASS N, H, t, j, n, xp, bias, off_bias, w_t, h0, off_h0, c0, off_c0, gates, \
    cells, out

__kernel void k_lstm_seq(LSTM_ARGS) {
    const int j = get_global_id(0) * VW, n = get_global_id(1);
    for (int t = t0; t < t1; ++t) {
        lstm_step(LSTM_PASS);
        barrier(CLK_GLOBAL_MEM_FENCE);
    }
}

// ---- The whole sequence in ONE work-item (CPU devices: no launch per step, no barrier;
// PoCL keeps every work-item's state in memory across a barrier). Each step in two
// passes: its recurrent product as a GEMM of register blocks (RB rows by COLS vectors,
// so each weight vector loaded feeds RB FMAs: the one-pass cell loaded one per FMA and
// ran ~2x slower), straight into the step's rows of gates (or da), then the cells,
// which read those rows back from L1 and overwrite them.
#define RB 4

// acc[c * RB + r] = sum_k a[r * lda + k] * b[k * ldb + c * VW ..], r < ROWS, c < COLS.
#define ROW_PRODUCT(ROWS, COLS, K, a, lda, b, ldb, acc) do { \
    _Pragma("unroll") for (int q_ = 0; q_ < (COLS) * RB; ++q_) (acc)[q_] = 0; \
    for (int k_ = 0; k_ < (K); ++k_) { \
        const __global T *bk_ = (b) + k_ * (ldb); \
        _Pragma("unroll") for (int c_ = 0; c_ < (COLS); ++c_) { \
            const VT b_ = VLOAD(bk_ + c_ * VW); \
            _Pragma("unroll") for (int r_ = 0; r_ < (ROWS); ++r_) \
                (acc)[c_ * RB + r_] += (VT)((a)[r_ * (lda) + k_]) * b_; \
        } \
    } \
} while (0)

// dst[r * ld + c * VW ..] = acc[c * RB + r] + add[r * lda + c * VW ..]
#define ROW_STORE(ROWS, COLS, acc, dst, ld, add, lda) do { \
    _Pragma("unroll") for (int r_ = 0; r_ < (ROWS); ++r_) \
        _Pragma("unroll") for (int c_ = 0; c_ < (COLS); ++c_) \
            VSTORE((acc)[c_ * RB + r_] + VLOAD((add) + r_ * (lda) + c_ * VW), \
                   (dst) + r_ * (ld) + c_ * VW); \
} while (0)

// dst (N, ld) rows, columns [0, cols) = add (N, lda) + a (N, K) @ b (K, ldb): every row
// block of RB and its remainder, two vectors of columns at a time and one at the end.
#define ROWS_GEMM(ROWS, n, cols, K, a, b, ldb, dst, ld, add, lda, acc) do { \
    int j_ = 0; \
    for (; j_ + 2 * VW <= (cols); j_ += 2 * VW) { \
        ROW_PRODUCT(ROWS, 2, K, (a) + (n) * (K), K, (b) + j_, ldb, acc); \
        ROW_STORE(ROWS, 2, acc, (dst) + (n) * (ld) + j_, ld, (add) + (n) * (lda) + j_, lda); \
    } \
    if (j_ < (cols)) { \
        ROW_PRODUCT(ROWS, 1, K, (a) + (n) * (K), K, (b) + j_, ldb, acc); \
        ROW_STORE(ROWS, 1, acc, (dst) + (n) * (ld) + j_, ld, (add) + (n) * (lda) + j_, lda); \
    } \
} while (0)

#define STEP_GEMM(N, cols, K, a, b, ldb, dst, ld, add, lda) do { \
    VT acc_[2 * RB]; \
    int n_ = 0; \
    for (; n_ + RB <= (N); n_ += RB) \
        ROWS_GEMM(RB, n_, cols, K, a, b, ldb, dst, ld, add, lda, acc_); \
    for (; n_ < (N); ++n_) ROWS_GEMM(1, n_, cols, K, a, b, ldb, dst, ld, add, lda, acc_); \
} while (0)

// dh of step t of a sequence's backward, into the first H columns of dt's rows (length G):
// grad_out[t], plus dnext (the next step's gate gradients) @ W_hh after the last step.
inline void seq_back_dh(const int N, const int H, const int G, const int t, const int t_len,
                        __global T *dt, __global const T *dnext, __global const T *w_hh,
                        __global const T *go) {
    if (t < t_len - 1)
        STEP_GEMM(N, H, G, dnext, w_hh, H, dt, G, go, H);
    else
        for (int n = 0; n < N; ++n)
            for (int j = 0; j < H; j += VW) VSTORE(VLOAD(go + n * H + j), dt + n * G + j);
}

__kernel void k_lstm_seq1(LSTM_ARGS) {
    const int G = 4 * H;
    const __global T *b = bias + off_bias;
    for (int t = t0; t < t1; ++t) {
        const __global T *h = t ? out + (t - 1) * N * H : h0 + off_h0;
        const __global T *cp = t ? cells + (t - 1) * N * H : c0 + off_c0;
        __global T *gt = gates + t * N * G;
        STEP_GEMM(N, G, H, h, w_t, G, gt, G, xp + t * N * G, G);
        for (int n = 0; n < N; ++n)
            for (int j = 0; j < H; j += VW) {
                __global T *a = gt + n * G + j;
                const VT i = SIG(VLOAD(a) + VLOAD(b + j));
                const VT f = SIG(VLOAD(a + H) + VLOAD(b + j + H));
                const VT g = TANH(VLOAD(a + 2 * H) + VLOAD(b + j + 2 * H));
                const VT o = SIG(VLOAD(a + 3 * H) + VLOAD(b + j + 3 * H));
                const VT c = f * VLOAD(cp + n * H + j) + i * g;
                VSTORE(i, a);
                VSTORE(f, a + H);
                VSTORE(g, a + 2 * H);
                VSTORE(o, a + 3 * H);
                VSTORE(c, cells + t * N * H + n * H + j);
                VSTORE(o * TANH(c), out + t * N * H + n * H + j);
            }
    }
}

// Backward over steps t1-1 down to t0. dh = grad_out[t] + da[t+1] @ W_hh (W_hh (4H, H);
// no product at the last step T-1); dc (N, H) is carried in place (dL/dc_t in,
// dL/dc_{t-1} out). Writes the pre-activation gradients da (T, N, 4H).
inline void lstm_back_step(const int N, const int H, const int t, const int j, const int n,
                           const int t_len, __global const T *grad_out, const int off_go,
                           __global const T *w_hh, __global const T *gates,
                           __global const T *cells, __global const T *c0, const int off_c0,
                           __global T *dc_buf, __global T *da) {
    const int G = 4 * H;
    VT dh = VLOAD(grad_out + off_go + t * N * H + n * H + j);
    if (t < t_len - 1) {
        const __global T *d = da + (t + 1) * N * G + n * G;
        const __global T *w = w_hh + j;
        VT acc = 0;
        for (int k = 0; k < G; ++k) acc += (VT)(d[k]) * VLOAD(w + k * H);
        dh += acc;
    }
    const __global T *gt = gates + t * N * G + n * G + j;
    const VT i = VLOAD(gt), f = VLOAD(gt + H), g = VLOAD(gt + 2 * H);
    const VT o = VLOAD(gt + 3 * H);
    const VT tc = TANH(VLOAD(cells + t * N * H + n * H + j));
    const VT dc = VLOAD(dc_buf + n * H + j) + dh * o * (ONE - tc * tc);
    const __global T *cp = t ? cells + (t - 1) * N * H : c0 + off_c0;
    __global T *d = da + t * N * G + n * G + j;
    VSTORE(dc * g * i * (ONE - i), d);
    VSTORE(dc * VLOAD(cp + n * H + j) * f * (ONE - f), d + H);
    VSTORE(dc * i * (ONE - g * g), d + 2 * H);
    VSTORE(dh * tc * o * (ONE - o), d + 3 * H);
    VSTORE(dc * f, dc_buf + n * H + j);
}

#define LSTM_BACK_ARGS const int N, const int H, const int t0, const int t1, \
    const int t_len, __global const T *grad_out, const int off_go, \
    __global const T *w_hh, __global const T *gates, __global const T *cells, \
    __global const T *c0, const int off_c0, __global T *dc_buf, __global T *da
#define LSTM_BACK_PASS N, H, t, j, n, t_len, grad_out, off_go, w_hh, gates, cells, c0, \
    off_c0, dc_buf, da

__kernel void k_lstm_seq_back(LSTM_BACK_ARGS) {
    const int j = get_global_id(0) * VW, n = get_global_id(1);
    for (int t = t1 - 1; t >= t0; --t) {
        lstm_back_step(LSTM_BACK_PASS);
        barrier(CLK_GLOBAL_MEM_FENCE);
    }
}

// dh of step t (grad_out[t] + da[t+1] @ W_hh) goes to da[t]'s i columns first; each cell
// reads its dh there before writing its own gradients over it.
__kernel void k_lstm_seq_back1(LSTM_BACK_ARGS) {
    const int G = 4 * H;
    for (int t = t1 - 1; t >= t0; --t) {
        __global T *dt = da + t * N * G;
        const __global T *go = grad_out + off_go + t * N * H;
        seq_back_dh(N, H, G, t, t_len, dt, da + (t + 1) * N * G, w_hh, go);
        const __global T *cp = t ? cells + (t - 1) * N * H : c0 + off_c0;
        for (int n = 0; n < N; ++n)
            for (int j = 0; j < H; j += VW) {
                __global T *d = dt + n * G + j;
                const __global T *gt = gates + t * N * G + n * G + j;
                const VT dh = VLOAD(d);
                const VT i = VLOAD(gt), f = VLOAD(gt + H), g = VLOAD(gt + 2 * H);
                const VT o = VLOAD(gt + 3 * H);
                const VT tc = TANH(VLOAD(cells + t * N * H + n * H + j));
                const VT dc = VLOAD(dc_buf + n * H + j) + dh * o * (ONE - tc * tc);
                VSTORE(dc * g * i * (ONE - i), d);
                VSTORE(dc * VLOAD(cp + n * H + j) * f * (ONE - f), d + H);
                VSTORE(dc * i * (ONE - g * g), d + 2 * H);
                VSTORE(dh * tc * o * (ONE - o), d + 3 * H);
                VSTORE(dc * f, dc_buf + n * H + j);
            }
    }
}

#include "recurrent_gru.cl"

// out (N, H) = base + d @ w (d (N, G), w (G, H)); base skipped when has_base is 0: the
// last recurrent product of a backward pass (dL/dh0).
__kernel void k_rec_last(const int N, const int H, const int G, const int has_base,
                         __global const T *d, __global const T *w,
                         __global const T *base, __global T *out) {
    const int j = get_global_id(0) * VW, n = get_global_id(1);
    const __global T *dn = d + n * G;
    const __global T *wj = w + j;
    VT acc = 0;
    for (int k = 0; k < G; ++k) acc += (VT)(dn[k]) * VLOAD(wj + k * H);
    if (has_base) acc += VLOAD(base + n * H + j);
    VSTORE(acc, out + n * H + j);
}

// rows (T * N, I + H + 1) = [x_t, h_{t-1}, 1] per step and batch row (h_{-1} = h0): the
// right operand of the LSTM's weight gradients, dW = da^T @ rows = [dW_ih, dW_hh, dbias]
// in one GEMM. x (T * N, I), h0 (N, H) and out (T * N, H) contiguous at their offsets.
__kernel void k_lstm_rows(const int TN, const int N, const int I, const int H,
                          __global const T *x, const int off_x, __global const T *h0,
                          const int off_h0, __global const T *out, const int off_out,
                          __global T *rows) {
    const int r = get_global_id(0);
    if (r >= TN) return;
    const int W = I + H + 1;
    __global T *row = rows + r * W;
    const __global T *xr = x + off_x + r * I;
    for (int c = 0; c < I; ++c) row[c] = xr[c];
    const __global T *h = r < N ? h0 + off_h0 + r * H : out + off_out + (r - N) * H;
    for (int c = 0; c < H; ++c) row[I + c] = h[c];
    row[I + H] = ONE;
}
