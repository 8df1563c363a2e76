// Indexing kernels: strided writes (slice_scatter, cat), gather, scatter-add,
// index_select, cumsum and row products.
// Host defines: T (value type), IS_FLOAT, IS_DOUBLE, IS_LONG (64-bit integer T).
// Arrays along one axis are seen as (outer, n, inner); every kernel takes contiguous
// inputs (the host copies strided views first) except k_write, whose destination is a
// strided view given by its shape and strides (reversed: s0 is the last axis).

#if IS_DOUBLE || IS_LONG
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#endif

// dst view (shape shp, strides st, offset off) <- contiguous src of the same shape
__kernel void k_write(__global T *dst, const int off, const int8 shp, const int8 st,
                      __global const T *src, const int src_off, const int n) {
    const int i = get_global_id(0);
    if (i >= n) return;
    int rem = i, o = off, q;
    q = rem / shp.s0; o += (rem - q * shp.s0) * st.s0; rem = q;
    q = rem / shp.s1; o += (rem - q * shp.s1) * st.s1; rem = q;
    q = rem / shp.s2; o += (rem - q * shp.s2) * st.s2; rem = q;
    q = rem / shp.s3; o += (rem - q * shp.s3) * st.s3; rem = q;
    q = rem / shp.s4; o += (rem - q * shp.s4) * st.s4; rem = q;
    q = rem / shp.s5; o += (rem - q * shp.s5) * st.s5; rem = q;
    q = rem / shp.s6; o += (rem - q * shp.s6) * st.s6; rem = q;
    q = rem / shp.s7; o += (rem - q * shp.s7) * st.s7;
    dst[o] = src[src_off + i];
}

// out (outer, m, inner) = x (outer, n, inner) at idx (outer, m, inner); out of range: 0
__kernel void k_gather(__global T *out, __global const T *x, const int x_off,
                       __global const long *idx, const int idx_off, const int n, const int m,
                       const int inner, const int size) {
    const int i = get_global_id(0);
    if (i >= size) return;
    const int k = i % inner, o = i / (inner * m);
    const long j = idx[idx_off + i];
    out[i] = (j >= 0 && j < n) ? x[x_off + (o * n + (int)j) * inner + k] : (T)0;
}

// out (outer, m, inner) = x (outer, n, inner) at idx[j] (m,) along the middle axis
__kernel void k_index_select(__global T *out, __global const T *x, const int x_off,
                             __global const long *idx, const int idx_off, const int n,
                             const int m, const int inner, const int size) {
    const int i = get_global_id(0);
    if (i >= size) return;
    const int k = i % inner, r = i / inner, o = r / m;
    const long j = idx[idx_off + r - o * m];
    out[i] = (j >= 0 && j < n) ? x[x_off + (o * n + (int)j) * inner + k] : (T)0;
}

#if IS_FLOAT && !IS_DOUBLE
inline void add_at(volatile __global T *p, const T v) {
    union { unsigned int u; float f; } old, new_;
    do {
        old.f = *p;
        new_.f = old.f + v;
    } while (atomic_cmpxchg((volatile __global unsigned int *)p, old.u, new_.u) != old.u);
}
#elif IS_DOUBLE
inline void add_at(volatile __global T *p, const T v) {
    union { ulong u; double f; } old, new_;
    do {
        old.f = *p;
        new_.f = old.f + v;
    } while (atom_cmpxchg((volatile __global ulong *)p, old.u, new_.u) != old.u);
}
#elif IS_LONG
inline void add_at(volatile __global T *p, const T v) { atom_add(p, v); }
#else
inline void add_at(volatile __global T *p, const T v) { atomic_add(p, v); }
#endif

// out (outer, n, inner) += src (outer, m, inner) at idx (outer, m, inner); skips out of range
__kernel void k_scatter_add(__global T *out, __global const long *idx, const int idx_off,
                            __global const T *src, const int src_off, const int n,
                            const int m, const int inner, const int size) {
    const int i = get_global_id(0);
    if (i >= size) return;
    const int k = i % inner, o = i / (inner * m);
    const long j = idx[idx_off + i];
    if (j >= 0 && j < n) add_at(out + (o * n + (int)j) * inner + k, src[src_off + i]);
}

// the same sum in a fixed order, for floating point (whose atomic adds race: the order of
// a repeated index's additions, so the last bits, would change from call to call): one
// work-item per line (o, k) walks its m entries in index order, as NumPy's add.at does;
// entries of different lines never meet, so nothing is shared
__kernel void k_scatter_add_lines(__global T *out, __global const long *idx,
                                  const int idx_off, __global const T *src,
                                  const int src_off, const int n, const int m,
                                  const int inner, const int lines) {
    const int line = get_global_id(0);
    if (line >= lines) return;
    const int k = line % inner, o = line / inner;
    const int first = o * m * inner + k;
    for (int r = 0; r < m; ++r) {
        const int i = first + r * inner;
        const long j = idx[idx_off + i];
        if (j >= 0 && j < n) out[(o * n + (int)j) * inner + k] += src[src_off + i];
    }
}

// running sum along the middle axis of (outer, n, inner): one work-item per line
__kernel void k_cumsum(__global T *out, __global const T *x, const int x_off, const int n,
                       const int inner, const int lines) {
    const int i = get_global_id(0);
    if (i >= lines) return;
    const int k = i % inner, o = i / inner;
    T acc = 0;
#if IS_FLOAT
    // compensated (Kahan) sum: a long float run keeps the low bits each step rounds off,
    // close to PyTorch's CPU sum in double; a non-finite carry (after an Inf) is dropped
    T carry = 0;
    for (int j = 0; j < n; ++j) {
        const int at = (o * n + j) * inner + k;
        const T y = x[x_off + at] - carry;
        const T t = acc + y;
        carry = (t - acc) - y;
        carry = isfinite(carry) ? carry : (T)0;
        acc = t;
        out[at] = acc;
    }
#else
    for (int j = 0; j < n; ++j) {
        const int at = (o * n + j) * inner + k;
        acc += x[x_off + at];
        out[at] = acc;
    }
#endif
}

// product of each row of a contiguous (rows, cols) array; an empty row gives 1
__kernel void k_prod_rows(__global T *out, __global const T *x, const int x_off,
                          const int rows, const int cols) {
    const int r = get_global_id(0);
    if (r >= rows) return;
    T acc = 1;
    for (int c = 0; c < cols; ++c) acc *= x[x_off + r * cols + c];
    out[r] = acc;
}
