// Reductions over the middle axis of a contiguous (A, K, B) view.
//
// Output (A, P, B): the K axis is cut into P chunks of ``chunk`` elements so
// that a reduction with few outputs still fills the device (the host runs a
// second pass over P). Two ways to reduce one output:
//   k_reduce_group  one work-group of WG items per output; items stride over
//                   the chunk, then a tree reduction in local memory (GPUs);
//   k_reduce_item   one work-item per output, a plain loop (CPU devices, or
//                   short K, where a work-group per output only adds overhead).
// Host defines: T (input), TO (output), ACC (accumulator), OP (0 sum, 1 max),
// IS_FLOAT, WG.

#if OP == 0
#define INIT ((ACC)0)
#define COMBINE(acc, v) ((acc) + (v))
#elif IS_FLOAT
#define INIT ((ACC)-INFINITY)
// NOTE: NaN wins: once acc is NaN, v > acc is false and acc stays NaN.
#define COMBINE(acc, v) (((v) > (acc) || isnan(v)) ? (v) : (acc))
#else
// the lowest value of ACC: 0 for unsigned types (uchar holds bool), else the sign bit alone
#define INIT (((ACC)-1) > (ACC)0 ? (ACC)0 : (ACC)(((ACC)1) << (sizeof(ACC) * 8 - 1)))
#define COMBINE(acc, v) ((v) > (acc) ? (v) : (acc))
#endif

#define REDUCE_ARGS __global TO *out, __global const T *x, const int off, const int K, \
    const int B, const int P, const int chunk, const int n_out, const ACC scale

#if OP == 0 && IS_FLOAT
// NOTE: a float32 sum may be accumulated in double (CPU devices); a mean is inf where
// the sum in the output type overflows, as in NumPy and PyTorch (mean([3e38, 3e38])
// in float32 is inf there), so that the backends agree however they accumulate.
#define FINAL(acc) (isinf((TO)(acc)) ? (TO)(acc) : (TO)((acc) * scale))
#elif OP == 0
#define FINAL(acc) ((TO)((acc) * scale))
#else
#define FINAL(acc) ((TO)(acc))
#endif

__kernel void k_reduce_item(REDUCE_ARGS) {
    const int o = get_global_id(0);
    if (o >= n_out) return;
    const int b = o % B, ap = o / B;
    const int p = ap % P, a = ap / P;
    const int k1 = min(K, (p + 1) * chunk);
    const __global T *base = x + off + a * K * B + b;
    ACC acc = INIT;
    for (int k = p * chunk; k < k1; ++k) acc = COMBINE(acc, (ACC)base[k * B]);
    out[o] = FINAL(acc);
}

__kernel void k_reduce_group(REDUCE_ARGS) {
    const int o = get_group_id(0);
    const int lid = get_local_id(0);
    const int b = o % B, ap = o / B;
    const int p = ap % P, a = ap / P;
    const int k1 = min(K, (p + 1) * chunk);
    const __global T *base = x + off + a * K * B + b;
    ACC acc = INIT;
    for (int k = p * chunk + lid; k < k1; k += WG) acc = COMBINE(acc, (ACC)base[k * B]);
    __local ACC part[WG];
    part[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = WG / 2; s > 0; s >>= 1) {
        if (lid < s) part[lid] = COMBINE(part[lid], part[lid + s]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) out[o] = FINAL(part[0]);
}

// out[b] over a contiguous (A, B, C) view reduced over A and C (a convolution's bias
// gradient: (N, C, L) summed over N and L), with no transposed copy: one work-item per b
// (CPU devices), the C values of each a read in one run.
#define OUTER_LANES 8
__kernel void k_reduce_outer(__global TO *out, __global const T *x, const int off,
                             const int A, const int B, const int C, const ACC scale) {
    const int b = get_global_id(0);
    if (b >= B) return;
    const __global T *row = x + off + b * C;
    ACC lane[OUTER_LANES];  // independent accumulators: the run vectorises (one chain ran
    _Pragma("unroll") for (int j = 0; j < OUTER_LANES; ++j) lane[j] = INIT;  // 4x slower)
    const int c_vec = C - C % OUTER_LANES;
    for (int a = 0; a < A; ++a, row += B * C) {
        for (int c = 0; c < c_vec; c += OUTER_LANES) {
            _Pragma("unroll") for (int j = 0; j < OUTER_LANES; ++j)
                lane[j] = COMBINE(lane[j], (ACC)row[c + j]);
        }
        for (int c = c_vec; c < C; ++c) lane[0] = COMBINE(lane[0], (ACC)row[c]);
    }
    ACC acc = lane[0];
    _Pragma("unroll") for (int j = 1; j < OUTER_LANES; ++j) acc = COMBINE(acc, lane[j]);
    out[b] = FINAL(acc);
}

// Index of the first maximum along K (NaN counts as the maximum, as in NumPy).
__kernel void k_argmax(__global long *out, __global const T *x, const int off, const int K,
                       const int B, const int n_out) {
    const int o = get_global_id(0);
    if (o >= n_out) return;
    const int b = o % B, a = o / B;
    const __global T *base = x + off + a * K * B + b;
    T best = base[0];
    long best_k = 0;
    for (int k = 1; k < K; ++k) {
        const T v = base[k * B];
#if IS_FLOAT
        if (isnan(best)) break;
        if (v > best || isnan(v)) { best = v; best_k = k; }
#else
        if (v > best) { best = v; best_k = k; }
#endif
    }
    out[o] = best_k;
}
