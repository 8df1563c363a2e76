// Fused LSTM and GRU cells: one launch per time step, forward and backward.
//
// Work-item (j, n) owns hidden unit j of batch row n. Each step's recurrent product
// (h_prev @ W_hh^T forward, d @ W_hh backward) is computed inside the cell kernel:
// with j along dimension 0 the weight reads of neighbouring work-items are
// contiguous, so PoCL vectorises them across the work-group as it does the GEMM.
// Every pointer comes with an element offset; every array is contiguous.
// Host define: T (float or double).

#define SIG(x) SIGMOID(x, T)
#define TANH(x) SAFE_TANH(x, T)

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
    const int j = get_global_id(0), n = get_global_id(1);
    if (j >= H || n >= N) return;
    const int G = 4 * H;
    const __global T *h = h_prev + off_h + n * H;
    const __global T *w = w_t + off_w + j;
    T ai = 0, af = 0, ag = 0, ao = 0;
    for (int k = 0; k < H; ++k) {
        const T hk = h[k];
        const __global T *wk = w + k * G;
        ai += hk * wk[0];
        af += hk * wk[H];
        ag += hk * wk[2 * H];
        ao += hk * wk[3 * H];
    }
    const __global T *a = xp + off_xp + n * G + j;
    const __global T *b = bias + off_bias + j;
    ai += a[0] + b[0];
    af += a[H] + b[H];
    ag += a[2 * H] + b[2 * H];
    ao += a[3 * H] + b[3 * H];
    const T i = SIG(ai), f = SIG(af), g = TANH(ag), o = SIG(ao);
    const T c = f * c_prev[off_c + n * H + j] + i * g;
    __global T *gt = gates + off_t4 + n * G + j;
    gt[0] = i;
    gt[H] = f;
    gt[2 * H] = g;
    gt[3 * H] = o;
    cells[off_t + n * H + j] = c;
    out[off_t + n * H + j] = o * TANH(c);
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
    const int j = get_global_id(0), n = get_global_id(1);
    if (j >= H || n >= N) return;
    const int G = 4 * H;
    T dh = grad_out[off_go + n * H + j];
    if (has_next) {
        const __global T *d = da + off_next4 + n * G;
        const __global T *w = w_hh + off_w + j;
        T acc = 0;
        for (int k = 0; k < G; ++k) acc += d[k] * w[k * H];
        dh += acc;
    }
    const __global T *gt = gates + off_t4 + n * G + j;
    const T i = gt[0], f = gt[H], g = gt[2 * H], o = gt[3 * H];
    const T tc = TANH(cells[off_t + n * H + j]);
    const T dc = dc_buf[n * H + j] + dh * o * (1 - tc * tc);
    __global T *d = da + off_t4 + n * G + j;
    d[0] = dc * g * i * (1 - i);
    d[H] = dc * c_prev[off_c + n * H + j] * f * (1 - f);
    d[2 * H] = dc * i * (1 - g * g);
    d[3 * H] = dh * tc * o * (1 - o);
    dc_buf[n * H + j] = dc * f;
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
    const int j = get_global_id(0), n = get_global_id(1);
    if (j >= H || n >= N) return;
    const int G = 3 * H;
    const __global T *h = h_prev + off_h + n * H;
    const __global T *w = w_t + off_w + j;
    T qr = 0, qz = 0, qn = 0;
    for (int k = 0; k < H; ++k) {
        const T hk = h[k];
        const __global T *wk = w + k * G;
        qr += hk * wk[0];
        qz += hk * wk[H];
        qn += hk * wk[2 * H];
    }
    const __global T *b = b_hh + off_bias + j;
    qr += b[0];
    qz += b[H];
    qn += b[2 * H];
    const __global T *p = xp + off_xp + n * G + j;
    const T r = SIG(p[0] + qr), z = SIG(p[H] + qz);
    const T nn = TANH(p[2 * H] + r * qn);
    const T hp = h[j];
    __global T *s = saved + off_t4 + n * 4 * H + j;
    s[0] = r;
    s[H] = z;
    s[2 * H] = nn;
    s[3 * H] = qn;
    out[off_t + n * H + j] = (hp - nn) * z + nn;
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
    const int j = get_global_id(0), n = get_global_id(1);
    if (j >= H || n >= N) return;
    const int G = 3 * H;
    T dh = grad_out[off_go + n * H + j] + dh_buf[n * H + j];
    if (has_next) {
        const __global T *d = dq + off_next3 + n * G;
        const __global T *w = w_hh + off_w + j;
        T acc = 0;
        for (int k = 0; k < G; ++k) acc += d[k] * w[k * H];
        dh += acc;
    }
    const __global T *s = saved + off_t4 + n * 4 * H + j;
    const T r = s[0], z = s[H], nn = s[2 * H], qn = s[3 * H];
    const T dan = dh * (1 - z) * (1 - nn * nn);
    const T dar = dan * qn * r * (1 - r);
    const T daz = dh * (h_prev[off_h + n * H + j] - nn) * z * (1 - z);
    __global T *p = dp + off_t3 + n * G + j;
    __global T *q = dq + off_t3 + n * G + j;
    p[0] = dar;
    p[H] = daz;
    p[2 * H] = dan;
    q[0] = dar;
    q[H] = daz;
    q[2 * H] = dan * r;
    dh_buf[n * H + j] = dh * z;
}

// out (N, H) = base + d @ w (d (N, G) at offset off_d, w (G, H)); base skipped when
// has_base is 0: the last recurrent product of a backward pass (dL/dh0).
__kernel void k_rec_last(const int N, const int H, const int G, const int has_base,
                         __global const T *d, const int off_d,
                         __global const T *w, const int off_w,
                         __global const T *base, __global T *out) {
    const int j = get_global_id(0), n = get_global_id(1);
    if (j >= H || n >= N) return;
    const __global T *dn = d + off_d + n * G;
    const __global T *wj = w + off_w + j;
    T acc = 0;
    for (int k = 0; k < G; ++k) acc += dn[k] * wj[k * H];
    out[n * H + j] = has_base ? acc + base[n * H + j] : acc;
}
