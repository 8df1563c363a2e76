// Scaled dot-product attention, forward and backward, one work-item per query row (the
// forward and the first backward kernel) or per key row (the second backward kernel).
// Host defines: T (value type), HAS_MASK (a bool mask is given), VW (vector width: 1, or
// 2/4/8 where every input's feature axis is contiguous and E, EV are its multiples; at
// most 32 bytes, PoCL builds no wider vectors). PoCL cannot vectorise a work-item loop
// around these row loops, so the lanes are the feature axis, by explicit vectors.
// Inputs are strided views of (B1, B2, rows, cols): an int4 of strides (b1, b2, row, col)
// per input; the NDRange is (rows, B2, B1). Outputs are contiguous (B1 * B2, rows, cols).

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#if VW == 1
#define VT T
#define VLOAD(p) (*(p))
#define VSTORE(x, p) (*(p) = (x))
#define HSUM(x) (x)
#else
// NOTE: PoCL links builtins such as vloadN and fmax as real calls (the accumulators then
// spill; see matmul.cl): vectors load through an element-aligned vector type instead
#define VT CAT(T, VW)
typedef VT __attribute__((aligned(sizeof(T)))) VT_UNALIGNED;
#define VLOAD(p) (*(const __global VT_UNALIGNED *)(p))
#define VSTORE(x, p) (*(__global VT_UNALIGNED *)(p) = (x))
#if VW == 2
#define HSUM(x) ((x).s0 + (x).s1)
#elif VW == 4
#define HSUM(x) (((x).s0 + (x).s1) + ((x).s2 + (x).s3))
#else
#define HSUM(x) ((((x).s0 + (x).s1) + ((x).s2 + (x).s3)) + \
                 (((x).s4 + (x).s5) + ((x).s6 + (x).s7)))
#endif
#endif

#define BASE(p, off, st) ((p) + (off) + b1 * (st).x + b2 * (st).y)
#define UNROLL _Pragma("unroll")
// NE = E / VW and NEV = EV / VW where the host fixes them (a few vectors, contiguous
// features): a row's vectors then live in registers across the loop over the other rows,
// which reads each of its rows once (register arrays need compile-time bounds)
#ifdef NE
#define ZERO(a, n) UNROLL for (int u = 0; u < n; ++u) a[u] = (VT)0;
#endif

// out (.., L, EV) = softmax(q k^T scale, masked) v; w (.., L, S) the softmax weights
__kernel void k_attention(__global T *out, __global T *w,
                          __global const T *q, const int q_off, const int4 qs,
                          __global const T *k, const int k_off, const int4 ks,
                          __global const T *v, const int v_off, const int4 vs,
                          __global const uchar *m, const int m_off, const int4 ms,
                          const int L, const int S, const int E, const int EV,
                          const T scale) {
    const int i = get_global_id(0), b2 = get_global_id(1), b1 = get_global_id(2);
    if (i >= L) return;
    const int row = b1 * get_global_size(1) + b2;
    __global T *wi = w + ((long)row * L + i) * S;
    __global const T *qi = BASE(q, q_off, qs) + i * qs.z;
    __global const T *kb = BASE(k, k_off, ks);
    __global const T *vb = BASE(v, v_off, vs);
#if HAS_MASK
    __global const uchar *mi = BASE(m, m_off, ms) + i * ms.z;
#endif
#ifdef NE
    VT qr[NE];
    UNROLL for (int u = 0; u < NE; ++u) qr[u] = VLOAD(qi + u * VW);
#endif
    T mx = (T)(-INFINITY);
    for (int j = 0; j < S; ++j) {
        T s = (T)(-INFINITY);
#if HAS_MASK
        if (mi[j * ms.w])
#endif
        {
            __global const T *kj = kb + j * ks.z;
            VT acc = (VT)0;
#ifdef NE
            UNROLL for (int u = 0; u < NE; ++u) acc += qr[u] * VLOAD(kj + u * VW);
#else
            for (int e = 0; e < E; e += VW)
                acc += VLOAD(qi + e * qs.w) * VLOAD(kj + e * ks.w);
#endif
            s = HSUM(acc) * scale;  // the composite's rounding: scores in T, then scaled
        }
        wi[j] = s;
        mx = s > mx ? s : mx;
    }
    T sum = 0;
    int j = 0;
#if VW > 1
    VT vsum = (VT)0;
    for (; j + VW <= S; j += VW) {  // exp is a call on PoCL: one per vector, not element
        const VT p = exp(VLOAD(wi + j) - (VT)mx);
        VSTORE(p, wi + j);
        vsum += p;
    }
    sum = HSUM(vsum);
#endif
    for (; j < S; ++j) {
        const T p = exp(wi[j] - mx);
        wi[j] = p;
        sum += p;
    }
    for (j = 0; j < S; ++j)
        wi[j] /= sum;
    __global T *oi = out + ((long)row * L + i) * EV;
#ifdef NE
    VT o[NEV];
    ZERO(o, NEV)
    for (j = 0; j < S; ++j) {
        const VT p = (VT)(wi[j]);
        __global const T *vj = vb + j * vs.z;
        UNROLL for (int u = 0; u < NEV; ++u) o[u] += p * VLOAD(vj + u * VW);
    }
    UNROLL for (int u = 0; u < NEV; ++u) VSTORE(o[u], oi + u * VW);
    return;
#endif
    for (int c = 0; c < EV; c += VW) {
        VT acc = (VT)0;
        for (int j = 0; j < S; ++j)
            acc += (VT)(wi[j]) * VLOAD(vb + j * vs.z + c * vs.w);
        VSTORE(acc, oi + c);
    }
}

// Per query row i: ds (.., L, S) = w * (dw - rowsum(dw * w)) * scale with dw = g v^T, and
// dq (.., L, E) = ds k. w is contiguous (.., L, S).
__kernel void k_attention_dq(__global T *dq, __global T *ds, __global const T *w,
                             __global const T *g, const int g_off, const int4 gs,
                             __global const T *k, const int k_off, const int4 ks,
                             __global const T *v, const int v_off, const int4 vs,
                             const int L, const int S, const int E, const int EV,
                             const T scale) {
    const int i = get_global_id(0), b2 = get_global_id(1), b1 = get_global_id(2);
    if (i >= L) return;
    const int row = b1 * get_global_size(1) + b2;
    const long base = ((long)row * L + i) * S;
    __global const T *wi = w + base;
    __global T *dsi = ds + base;
    __global const T *gi = BASE(g, g_off, gs) + i * gs.z;
    __global const T *kb = BASE(k, k_off, ks);
    __global const T *vb = BASE(v, v_off, vs);
#ifdef NE
    VT gr[NEV];
    UNROLL for (int u = 0; u < NEV; ++u) gr[u] = VLOAD(gi + u * VW);
#endif
    T dot = 0;
    for (int j = 0; j < S; ++j) {
        __global const T *vj = vb + j * vs.z;
        VT acc = (VT)0;
#ifdef NE
        UNROLL for (int u = 0; u < NEV; ++u) acc += gr[u] * VLOAD(vj + u * VW);
#else
        for (int c = 0; c < EV; c += VW)
            acc += VLOAD(gi + c * gs.w) * VLOAD(vj + c * vs.w);
#endif
        const T dw = HSUM(acc);
        dsi[j] = dw;
        dot += dw * wi[j];
    }
    __global T *dqi = dq + ((long)row * L + i) * E;
#ifdef NE
    VT a[NE];
    ZERO(a, NE)
    for (int j = 0; j < S; ++j) {
        const T d = wi[j] * (dsi[j] - dot) * scale;
        dsi[j] = d;
        const VT p = (VT)d;
        __global const T *kj = kb + j * ks.z;
        UNROLL for (int u = 0; u < NE; ++u) a[u] += p * VLOAD(kj + u * VW);
    }
    UNROLL for (int u = 0; u < NE; ++u) VSTORE(a[u], dqi + u * VW);
    return;
#endif
    for (int j = 0; j < S; ++j)
        dsi[j] = wi[j] * (dsi[j] - dot) * scale;
    for (int e = 0; e < E; e += VW) {
        VT acc = (VT)0;
        for (int j = 0; j < S; ++j)
            acc += (VT)(dsi[j]) * VLOAD(kb + j * ks.z + e * ks.w);
        VSTORE(acc, dqi + e);
    }
}

// Per key row j: dk (.., S, E) = ds^T q and dv (.., S, EV) = w^T g.
__kernel void k_attention_dkv(__global T *dk, __global T *dv, __global const T *ds,
                              __global const T *w,
                              __global const T *q, const int q_off, const int4 qs,
                              __global const T *g, const int g_off, const int4 gs,
                              const int L, const int S, const int E, const int EV) {
    const int j = get_global_id(0), b2 = get_global_id(1), b1 = get_global_id(2);
    if (j >= S) return;
    const int row = b1 * get_global_size(1) + b2;
    __global const T *dsj = ds + (long)row * L * S + j;
    __global const T *wj = w + (long)row * L * S + j;
    __global const T *qb = BASE(q, q_off, qs);
    __global const T *gb = BASE(g, g_off, gs);
    __global T *dkj = dk + ((long)row * S + j) * E;
    __global T *dvj = dv + ((long)row * S + j) * EV;
#ifdef NE
    VT a[NE], b[NEV];
    ZERO(a, NE)
    ZERO(b, NEV)
    for (int i = 0; i < L; ++i) {
        const VT p = (VT)(dsj[(long)i * S]), pw = (VT)(wj[(long)i * S]);
        __global const T *qi = qb + i * qs.z, *gi = gb + i * gs.z;
        UNROLL for (int u = 0; u < NE; ++u) a[u] += p * VLOAD(qi + u * VW);
        UNROLL for (int u = 0; u < NEV; ++u) b[u] += pw * VLOAD(gi + u * VW);
    }
    UNROLL for (int u = 0; u < NE; ++u) VSTORE(a[u], dkj + u * VW);
    UNROLL for (int u = 0; u < NEV; ++u) VSTORE(b[u], dvj + u * VW);
    return;
#endif
    for (int e = 0; e < E; e += VW) {
        VT acc = (VT)0;
        for (int i = 0; i < L; ++i)
            acc += (VT)(dsj[(long)i * S]) * VLOAD(qb + i * qs.z + e * qs.w);
        VSTORE(acc, dkj + e);
    }
    for (int c = 0; c < EV; c += VW) {
        VT acc = (VT)0;
        for (int i = 0; i < L; ++i)
            acc += (VT)(wj[(long)i * S]) * VLOAD(gb + i * gs.z + c * gs.w);
        VSTORE(acc, dvj + c);
    }
}
