// Gather up to 16 word ranges of any buffers into one buffer (to_numpy_many reads many
// small arrays with one copy to the host). Range j: words [o_j, o_j + n_j) of s_j go to
// words [d_j, d_j + n_j) of out; the ranges of out do not overlap.

#define RANGE(j) __global const uint *s##j, long o##j, long d##j, long n##j
#define TAKE(j) if (i >= d##j && i < d##j + n##j) { out[i] = s##j[o##j + i - d##j]; return; }

// (16 ranges: 528 bytes of arguments, within the 1024 every OpenCL device takes)
__kernel void k_gather(__global uint *out, long total, RANGE(0), RANGE(1), RANGE(2),
                       RANGE(3), RANGE(4), RANGE(5), RANGE(6), RANGE(7), RANGE(8),
                       RANGE(9), RANGE(10), RANGE(11), RANGE(12), RANGE(13), RANGE(14),
                       RANGE(15)) {
    long i = get_global_id(0);
    if (i >= total) return;
    TAKE(0) TAKE(1) TAKE(2) TAKE(3) TAKE(4) TAKE(5) TAKE(6) TAKE(7)
    TAKE(8) TAKE(9) TAKE(10) TAKE(11) TAKE(12) TAKE(13) TAKE(14) TAKE(15)
}
