// Fused kernels: softmax / log-softmax along one axis, softmax cross-entropy,
// RMS division and bias + activation. Host defines: T (float or double), TI
// (target index type), ACT (bias_act kind: 0 identity, 1 relu, 2 leaky_relu,
// 3 sigmoid, 4 tanh, 5 silu, 6 gelu, 7 softplus).

#ifdef USE_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

// Softmax over K of a contiguous (A, K, B) view, one work-item per (a, b).
__kernel void k_softmax(__global T *out, __global const T *x, const int off, const int K,
                        const int B, const int n_rows, const int log_out) {
    const int o = get_global_id(0);
    if (o >= n_rows) return;
    const int b = o % B, a = o / B;
    const __global T *row = x + off + a * K * B + b;
    __global T *dst = out + a * K * B + b;
    T top = -INFINITY;
    for (int k = 0; k < K; ++k) top = fmax(top, row[k * B]);
    T total = 0;
    for (int k = 0; k < K; ++k) total += exp(row[k * B] - top);
    if (log_out) {
        const T shift = top + log(total);
        for (int k = 0; k < K; ++k) dst[k * B] = row[k * B] - shift;
    } else {
        const T inv = (T)1 / total;
        for (int k = 0; k < K; ++k) dst[k * B] = exp(row[k * B] - top) * inv;
    }
}

#ifdef TI
// Per row n of (N, C) logits: probs = softmax, loss = log(sum exp(x - max)) - (x[t] - max).
// NOTE: a target outside [0, C) gives a NaN loss instead of reading out of bounds.
__kernel void k_softmax_xent(__global T *loss, __global T *probs, __global const T *x,
                             const int off, __global const TI *targets, const int toff,
                             const int N, const int C) {
    const int n = get_global_id(0);
    if (n >= N) return;
    const __global T *row = x + off + n * C;
    __global T *p = probs + n * C;
    T top = -INFINITY;
    for (int c = 0; c < C; ++c) top = fmax(top, row[c]);
    T total = 0;
    for (int c = 0; c < C; ++c) {
        const T e = exp(row[c] - top);
        p[c] = e;
        total += e;
    }
    const T inv = (T)1 / total;
    for (int c = 0; c < C; ++c) p[c] *= inv;
    const TI t = targets[toff + n];
    loss[n] = (t >= 0 && t < C) ? log(total) - (row[t] - top) : (T)NAN;
}
#endif

// r = 1 / sqrt(mean(x^2 over the last axis) + eps); out = x * r. One item per row.
__kernel void k_rms_div(__global T *out, __global T *r, __global const T *x, const int off,
                        const int rows, const int F, const T eps) {
    const int n = get_global_id(0);
    if (n >= rows) return;
    const __global T *row = x + off + n * F;
    T total = 0;
    for (int f = 0; f < F; ++f) total += row[f] * row[f];
    const T scale = rsqrt(total / (T)F + eps);
    r[n] = scale;
    for (int f = 0; f < F; ++f) out[n * F + f] = row[f] * scale;
}

#ifdef ACT
// out = act(x + bias[i % F]) over a contiguous x.
__kernel void k_bias_act(__global T *out, __global const T *x, const int off,
                         __global const T *bias, const int boff, const int n, const int F,
                         const T slope) {
    const int i = get_global_id(0);
    if (i >= n) return;
    const T z = x[off + i] + bias[boff + i % F];
#if ACT == 0
    out[i] = z;
#elif ACT == 1
    out[i] = z < 0 ? (T)0 : z;
#elif ACT == 2
    out[i] = z > 0 ? z : slope * z;
#elif ACT == 3
    out[i] = (T)0.5 * ((T)1 + tanh((T)0.5 * z));
#elif ACT == 4
    out[i] = tanh(z);
#elif ACT == 5
    out[i] = z * ((T)0.5 * ((T)1 + tanh((T)0.5 * z)));
#elif ACT == 6
    out[i] = (T)0.5 * z * ((T)1 + erf(z * (T)M_SQRT1_2));
#else
    out[i] = fmax(z, (T)0) + log1p(exp(-fabs(z)));
#endif
}
#endif
