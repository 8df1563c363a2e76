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
