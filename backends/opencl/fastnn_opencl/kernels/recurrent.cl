// Fused LSTM and GRU cells: one launch per time step, forward and backward.
//
// Work-item (j, n) owns VW consecutive hidden units j*VW.. of batch row n, as VW-lane
// vectors. Each step's recurrent product (h_prev @ W_hh^T forward, d @ W_hh backward) is
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
#define SIG(x) SIGMOID(x, VT)
#define TANH(x) SAFE_TANH(x, VT)

#define ONE ((T)1)

// a = xp[t] + bias + h_prev @ w_t (w_t = W_hh^T, (H, 4H)); gates i, f, g, o;
// c' = f c + i g, h' = o tanh(c'). Writes gates[t] (N, 4H), cells[t], out[t] (N, H).
__kernel void k_lstm_step(const int N, const int H,
                          __global const T *xp, const int off_xp,
                          __global const T *bias, const int off_bias,
                          __global const T *w_t, const int off_w,
                          __global const T *h_prev, const int off_h,
                          __global const T *c_prev, const int off_c,
                          __global T *gates, __global T *cells, __global T *out,
                          const int off_t4, const int off_t) {
    const int j = get_global_id(0) * VW, n = get_global_id(1);
    if (j >= H || n >= N) return;
    const int G = 4 * H;
    const __global T *h = h_prev + off_h + n * H;
    const __global T *w = w_t + off_w + j;
    VT ai = 0, af = 0, ag = 0, ao = 0;
    for (int k = 0; k < H; ++k) {
        const VT hk = (VT)(h[k]);
        const __global T *wk = w + k * G;
        ai += hk * VLOAD(wk);
        af += hk * VLOAD(wk + H);
        ag += hk * VLOAD(wk + 2 * H);
        ao += hk * VLOAD(wk + 3 * H);
    }
    const __global T *a = xp + off_xp + n * G + j;
    const __global T *b = bias + off_bias + j;
    ai += VLOAD(a) + VLOAD(b);
    af += VLOAD(a + H) + VLOAD(b + H);
    ag += VLOAD(a + 2 * H) + VLOAD(b + 2 * H);
    ao += VLOAD(a + 3 * H) + VLOAD(b + 3 * H);
    const VT i = SIG(ai), f = SIG(af), g = TANH(ag), o = SIG(ao);
    const VT c = f * VLOAD(c_prev + off_c + n * H + j) + i * g;
    __global T *gt = gates + off_t4 + n * G + j;
    VSTORE(i, gt);
    VSTORE(f, gt + H);
    VSTORE(g, gt + 2 * H);
    VSTORE(o, gt + 3 * H);
    VSTORE(c, cells + off_t + n * H + j);
    VSTORE(o * TANH(c), out + off_t + n * H + j);
}

// Backward of step t. dh = grad_out[t] + da[t+1] @ W_hh (W_hh (4H, H); skipped when
// has_next is 0); dc (N, H) is carried in place (dL/dc_t in, dL/dc_{t-1} out).
// Writes the pre-activation gradients da[t] (N, 4H).
__kernel void k_lstm_step_back(const int N, const int H, const int has_next,
                               __global const T *grad_out, const int off_go,
                               __global const T *w_hh, const int off_w,
                               __global const T *gates, __global const T *cells,
                               __global const T *c_prev, const int off_c,
                               __global T *dc_buf, __global T *da,
                               const int off_t4, const int off_t, const int off_next4) {
    const int j = get_global_id(0) * VW, n = get_global_id(1);
    if (j >= H || n >= N) return;
    const int G = 4 * H;
    VT dh = VLOAD(grad_out + off_go + n * H + j);
    if (has_next) {
        const __global T *d = da + off_next4 + n * G;
        const __global T *w = w_hh + off_w + j;
        VT acc = 0;
        for (int k = 0; k < G; ++k) acc += (VT)(d[k]) * VLOAD(w + k * H);
        dh += acc;
    }
    const __global T *gt = gates + off_t4 + n * G + j;
    const VT i = VLOAD(gt), f = VLOAD(gt + H), g = VLOAD(gt + 2 * H), o = VLOAD(gt + 3 * H);
    const VT tc = TANH(VLOAD(cells + off_t + n * H + j));
    const VT dc = VLOAD(dc_buf + n * H + j) + dh * o * (ONE - tc * tc);
    __global T *d = da + off_t4 + n * G + j;
    VSTORE(dc * g * i * (ONE - i), d);
    VSTORE(dc * VLOAD(c_prev + off_c + n * H + j) * f * (ONE - f), d + H);
    VSTORE(dc * i * (ONE - g * g), d + 2 * H);
    VSTORE(dh * tc * o * (ONE - o), d + 3 * H);
    VSTORE(dc * f, dc_buf + n * H + j);
}

// p = xp[t] (x_t W_ih^T + b_ih, (N, 3H)); q = h_prev @ w_t + b_hh (w_t = W_hh^T, (H, 3H));
// r, z = sigmoid(p + q), n = tanh(p_n + r q_n), h' = (1 - z) n + z h.
// Writes saved[t] (N, 4H) = r, z, n, q_n and out[t] (N, H).
__kernel void k_gru_step(const int N, const int H,
                         __global const T *xp, const int off_xp,
                         __global const T *b_hh, const int off_bias,
                         __global const T *w_t, const int off_w,
                         __global const T *h_prev, const int off_h,
                         __global T *saved, __global T *out,
                         const int off_t4, const int off_t) {
    const int j = get_global_id(0) * VW, n = get_global_id(1);
    if (j >= H || n >= N) return;
    const int G = 3 * H;
    const __global T *h = h_prev + off_h + n * H;
    const __global T *w = w_t + off_w + j;
    VT qr = 0, qz = 0, qn = 0;
    for (int k = 0; k < H; ++k) {
        const VT hk = (VT)(h[k]);
        const __global T *wk = w + k * G;
        qr += hk * VLOAD(wk);
        qz += hk * VLOAD(wk + H);
        qn += hk * VLOAD(wk + 2 * H);
    }
    const __global T *b = b_hh + off_bias + j;
    qr += VLOAD(b);
    qz += VLOAD(b + H);
    qn += VLOAD(b + 2 * H);
    const __global T *p = xp + off_xp + n * G + j;
    const VT r = SIG(VLOAD(p) + qr), z = SIG(VLOAD(p + H) + qz);
    const VT nn = TANH(VLOAD(p + 2 * H) + r * qn);
    const VT hp = VLOAD(h + j);
    __global T *s = saved + off_t4 + n * 4 * H + j;
    VSTORE(r, s);
    VSTORE(z, s + H);
    VSTORE(nn, s + 2 * H);
    VSTORE(qn, s + 3 * H);
    VSTORE((hp - nn) * z + nn, out + off_t + n * H + j);
}

// Backward of step t. dh = grad_out[t] + dh_buf + dq[t+1] @ W_hh (W_hh (3H, H); the
// product skipped when has_next is 0), dh_buf carrying dL/dh_{t+1} * z_{t+1} in place.
// Writes dp[t] (the gradient of x_t W_ih^T + b_ih) and dq[t] (of h W_hh^T + b_hh).
__kernel void k_gru_step_back(const int N, const int H, const int has_next,
                              __global const T *grad_out, const int off_go,
                              __global const T *w_hh, const int off_w,
                              __global const T *saved,
                              __global const T *h_prev, const int off_h,
                              __global T *dh_buf, __global T *dp, __global T *dq,
                              const int off_t3, const int off_t4, const int off_next3) {
    const int j = get_global_id(0) * VW, n = get_global_id(1);
    if (j >= H || n >= N) return;
    const int G = 3 * H;
    VT dh = VLOAD(grad_out + off_go + n * H + j) + VLOAD(dh_buf + n * H + j);
    if (has_next) {
        const __global T *d = dq + off_next3 + n * G;
        const __global T *w = w_hh + off_w + j;
        VT acc = 0;
        for (int k = 0; k < G; ++k) acc += (VT)(d[k]) * VLOAD(w + k * H);
        dh += acc;
    }
    const __global T *s = saved + off_t4 + n * 4 * H + j;
    const VT r = VLOAD(s), z = VLOAD(s + H), nn = VLOAD(s + 2 * H), qn = VLOAD(s + 3 * H);
    const VT dan = dh * (ONE - z) * (ONE - nn * nn);
    const VT dar = dan * qn * r * (ONE - r);
    const VT daz = dh * (VLOAD(h_prev + off_h + n * H + j) - nn) * z * (ONE - z);
    __global T *p = dp + off_t3 + n * G + j;
    __global T *q = dq + off_t3 + n * G + j;
    VSTORE(dar, p);
    VSTORE(daz, p + H);
    VSTORE(dan, p + 2 * H);
    VSTORE(dar, q);
    VSTORE(daz, q + H);
    VSTORE(dan * r, q + 2 * H);
    VSTORE(dh * z, dh_buf + n * H + j);
}

// out (N, H) = base + d @ w (d (N, G) at offset off_d, w (G, H)); base skipped when
// has_base is 0: the last recurrent product of a backward pass (dL/dh0).
__kernel void k_rec_last(const int N, const int H, const int G, const int has_base,
                         __global const T *d, const int off_d,
                         __global const T *w, const int off_w,
                         __global const T *base, __global T *out) {
    const int j = get_global_id(0) * VW, n = get_global_id(1);
    if (j >= H || n >= N) return;
    const __global T *dn = d + off_d + n * G;
    const __global T *wj = w + off_w + j;
    VT acc = 0;
    for (int k = 0; k < G; ++k) acc += (VT)(dn[k]) * VLOAD(wj + k * H);
    if (has_base) acc += VLOAD(base + n * H + j);
    VSTORE(acc, out + n * H + j);
}
