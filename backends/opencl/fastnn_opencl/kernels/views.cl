// Copies between strided views with no per-axis division: the (at most 4) collapsed axes
// are the NDRange's, the last two folded into its third dimension.
// Host defines: T (value type).

// dst view <- src view of the same shape (n0, n1, n2, n3), n0 the innermost axis
__kernel void k_write_view(__global T *dst, const int dst_off, const int4 dst_st,
                           __global const T *src, const int src_off, const int4 src_st,
                           const int n2) {
    const int c0 = get_global_id(0), c1 = get_global_id(1), g = get_global_id(2);
    const int c3 = g / n2, c2 = g - c3 * n2;
    const int4 c = (int4)(c0, c1, c2, c3);
    const int4 d = c * dst_st, s = c * src_st;
    dst[dst_off + d.x + d.y + d.z + d.w] = src[src_off + s.x + s.y + s.z + s.w];
}

// The same copy on CPU devices: one work-item per run of n0 innermost elements, on the
// NDRange (n1, n2 * n3). PoCL pays per work-group (an element per work-item cost a
// (16, 64, 64) write into a (16, 64, 192) array ~5x this).
__kernel void k_write_runs(__global T *dst, const int dst_off, const int4 dst_st,
                           __global const T *src, const int src_off, const int4 src_st,
                           const int n0, const int n2) {
    const int c1 = get_global_id(0), g = get_global_id(1);
    const int c3 = g / n2, c2 = g - c3 * n2;
    __global T *d = dst + dst_off + c1 * dst_st.y + c2 * dst_st.z + c3 * dst_st.w;
    const __global T *s = src + src_off + c1 * src_st.y + c2 * src_st.z + c3 * src_st.w;
    const int ds = dst_st.x, ss = src_st.x;
    if (ds == 1 && ss == 1) {
        for (int i = 0; i < n0; ++i) d[i] = s[i];
    } else {
        for (int i = 0; i < n0; ++i) d[i * ds] = s[i * ss];
    }
}
