// The GRU's fused cells over a sequence, forward and backward. Included by
// recurrent.cl after the LSTM's kernels (its VT, VLOAD, SIG, TANH, STEP_GEMM, ... in
// scope).

// p = xp[t] (x_t W_ih^T + b_ih, (N, 3H)); q = h_prev @ w_t + b_hh (w_t = W_hh^T, (H, 3H));
// r, z = sigmoid(p + q), n = tanh(p_n + r q_n), h' = (1 - z) n + z h.
// Writes saved (T, N, 4H) = r, z, n, q_n of each step and out (T, N, H).
__kernel void k_gru_seq(const int N, const int H, const int t0, const int t1,
                        __global const T *xp, __global const T *b_hh, const int off_bias,
                        __global const T *w_t, __global const T *h0, const int off_h0,
                        __global T *saved, __global T *out) {
    const int j = get_global_id(0) * VW, n = get_global_id(1);
    const int G = 3 * H;
    const __global T *b = b_hh + off_bias + j;
    for (int t = t0; t < t1; ++t) {
        const __global T *h = t ? out + (t - 1) * N * H + n * H : h0 + off_h0 + n * H;
        const __global T *w = w_t + j;
        VT qr = 0, qz = 0, qn = 0;
        for (int k = 0; k < H; ++k) {
            const VT hk = (VT)(h[k]);
            const __global T *wk = w + k * G;
            qr += hk * VLOAD(wk);
            qz += hk * VLOAD(wk + H);
            qn += hk * VLOAD(wk + 2 * H);
        }
        qr += VLOAD(b);
        qz += VLOAD(b + H);
        qn += VLOAD(b + 2 * H);
        const __global T *p = xp + t * N * G + n * G + j;
        const VT r = SIG(VLOAD(p) + qr), z = SIG(VLOAD(p + H) + qz);
        const VT nn = TANH(VLOAD(p + 2 * H) + r * qn);
        const VT hp = VLOAD(h + j);
        __global T *s = saved + t * N * 4 * H + n * 4 * H + j;
        VSTORE(r, s);
        VSTORE(z, s + H);
        VSTORE(nn, s + 2 * H);
        VSTORE(qn, s + 3 * H);
        VSTORE((hp - nn) * z + nn, out + t * N * H + n * H + j);
        barrier(CLK_GLOBAL_MEM_FENCE);
    }
}

// The GRU's sequence in ONE work-item (CPU devices, as k_lstm_seq1): each step's recurrent
// product h @ w_t + b_hh as a register-blocked GEMM into saved[t]'s first 3H columns, which
// each cell reads (q) before writing its own r, z, n, q_n over them.
__kernel void k_gru_seq1(const int N, const int H, const int t0, const int t1,
                         __global const T *xp, __global const T *b_hh, const int off_bias,
                         __global const T *w_t, __global const T *h0, const int off_h0,
                         __global T *saved, __global T *out) {
    const int G = 3 * H;
    for (int t = t0; t < t1; ++t) {
        const __global T *h = t ? out + (t - 1) * N * H : h0 + off_h0;
        __global T *st = saved + t * N * 4 * H;
        STEP_GEMM(N, G, H, h, w_t, G, st, 4 * H, b_hh + off_bias, 0);
        for (int n = 0; n < N; ++n)
            for (int j = 0; j < H; j += VW) {
                __global T *s = st + n * 4 * H + j;
                const __global T *p = xp + t * N * G + n * G + j;
                const VT qr = VLOAD(s), qz = VLOAD(s + H), qn = VLOAD(s + 2 * H);
                const VT r = SIG(VLOAD(p) + qr), z = SIG(VLOAD(p + H) + qz);
                const VT nn = TANH(VLOAD(p + 2 * H) + r * qn);
                const VT hp = VLOAD(h + n * H + j);
                VSTORE(r, s);
                VSTORE(z, s + H);
                VSTORE(nn, s + 2 * H);
                VSTORE(qn, s + 3 * H);
                VSTORE((hp - nn) * z + nn, out + t * N * H + n * H + j);
            }
    }
}

// Its backward in one work-item: dh of step t (grad_out[t] + dq[t+1] @ W_hh) goes to
// dp[t]'s first H columns, which each cell reads before writing its gradients over them.
__kernel void k_gru_seq_back1(const int N, const int H, const int t0, const int t1,
                              const int t_len,
                              __global const T *grad_out, const int off_go,
                              __global const T *w_hh, __global const T *saved,
                              __global const T *out, __global const T *h0, const int off_h0,
                              __global T *dh_buf, __global T *dp, __global T *dq) {
    const int G = 3 * H;
    for (int t = t1 - 1; t >= t0; --t) {
        __global T *dt = dp + t * N * G;
        const __global T *go = grad_out + off_go + t * N * H;
        seq_back_dh(N, H, G, t, t_len, dt, dq + (t + 1) * N * G, w_hh, go);
        const __global T *hp = t ? out + (t - 1) * N * H : h0 + off_h0;
        for (int n = 0; n < N; ++n)
            for (int j = 0; j < H; j += VW) {
                __global T *p = dt + n * G + j;
                const VT dh = VLOAD(p) + VLOAD(dh_buf + n * H + j);
                const __global T *s = saved + t * N * 4 * H + n * 4 * H + j;
                const VT r = VLOAD(s), z = VLOAD(s + H), nn = VLOAD(s + 2 * H);
                const VT qn = VLOAD(s + 3 * H);
                const VT dan = dh * (ONE - z) * (ONE - nn * nn);
                const VT dar = dan * qn * r * (ONE - r);
                const VT daz = dh * (VLOAD(hp + n * H + j) - nn) * z * (ONE - z);
                __global T *q = dq + t * N * G + n * G + j;
                VSTORE(dar, p);
                VSTORE(daz, p + H);
                VSTORE(dan, p + 2 * H);
                VSTORE(dar, q);
                VSTORE(daz, q + H);
                VSTORE(dan * r, q + 2 * H);
                VSTORE(dh * z, dh_buf + n * H + j);
            }
    }
}

// Backward over steps t1-1 down to t0. dh = grad_out[t] + dh_buf + dq[t+1] @ W_hh
// (W_hh (3H, H); no product at the last step), dh_buf carrying dL/dh_{t+1} * z_{t+1} in
// place. Writes dp (T, N, 3H), the gradient of x_t W_ih^T + b_ih, and dq, of h W_hh^T + b_hh.
__kernel void k_gru_seq_back(const int N, const int H, const int t0, const int t1,
                             const int t_len,
                             __global const T *grad_out, const int off_go,
                             __global const T *w_hh, __global const T *saved,
                             __global const T *out, __global const T *h0, const int off_h0,
                             __global T *dh_buf, __global T *dp, __global T *dq) {
    const int j = get_global_id(0) * VW, n = get_global_id(1);
    const int G = 3 * H;
    for (int t = t1 - 1; t >= t0; --t) {
        VT dh = VLOAD(grad_out + off_go + t * N * H + n * H + j) + VLOAD(dh_buf + n * H + j);
        if (t < t_len - 1) {
            const __global T *d = dq + (t + 1) * N * G + n * G;
            const __global T *w = w_hh + j;
            VT acc = 0;
            for (int k = 0; k < G; ++k) acc += (VT)(d[k]) * VLOAD(w + k * H);
            dh += acc;
        }
        const __global T *s = saved + t * N * 4 * H + n * 4 * H + j;
        const VT r = VLOAD(s), z = VLOAD(s + H), nn = VLOAD(s + 2 * H), qn = VLOAD(s + 3 * H);
        const __global T *hp = t ? out + (t - 1) * N * H : h0 + off_h0;
        const VT dan = dh * (ONE - z) * (ONE - nn * nn);
        const VT dar = dan * qn * r * (ONE - r);
        const VT daz = dh * (VLOAD(hp + n * H + j) - nn) * z * (ONE - z);
        __global T *p = dp + t * N * G + n * G + j;
        __global T *q = dq + t * N * G + n * G + j;
        VSTORE(dar, p);
        VSTORE(daz, p + H);
        VSTORE(dan, p + 2 * H);
        VSTORE(dar, q);
        VSTORE(daz, q + H);
        VSTORE(dan * r, q + 2 * H);
        VSTORE(dh * z, dh_buf + n * H + j);
        barrier(CLK_GLOBAL_MEM_FENCE);
    }
}
