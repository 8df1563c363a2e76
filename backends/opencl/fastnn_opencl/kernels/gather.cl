// Gather up to 40 word ranges of any buffers into one buffer (to_numpy_many reads many
// small arrays with one copy to the host). Range j: words [o_j, o_j + n_j) of s_j go to
// words [d_j, d_j + n_j) of out; the ranges of out do not overlap.
//
// A 2-D launch: dimension 1 is the range, dimension 0 a work group's items, each of which
// copies the words i, i + 256, ... of its range: one work group a range, whatever its
// length, so ranges of any lengths share a launch (a launch costs more than a small copy;
// on PoCL a work item per word, over the longest range, cost 1.5 to 3 launches to read a
// small model's step).

// (40 ranges of 24 bytes, a pointer and 4 uints (the 4th pads the next pointer to 8 bytes):
// 968 bytes of arguments, within the 1024 every OpenCL device takes)
#define RANGE(j) __global const uint *s##j, uint o##j, uint d##j, uint n##j, uint pad##j
#define TAKE(j) case j: take(out + d##j, s##j + o##j, n##j, i, step); break;

// Words [0, n) of src to dst: 8 at a time (a 32-byte vector each), then the rest one by one
// (PoCL ran a word a work item at a third of memcpy's speed: the reads of a large model's
// step cost more than its kernels). Not 16: pip's PoCL 3.0 (LLVM 14, AVX2 only) builds a
// uint16 kernel once, but its kernel cache gives the program back with no kernel in it
// (INVALID_KERNEL_NAME from the second process on)
inline void take(__global uint *dst, __global const uint *src, uint n, uint i, uint step) {
    uint whole = n / 8 * 8;
    for (uint k = i * 8; k < whole; k += step * 8) vstore8(vload8(0, src + k), 0, dst + k);
    for (uint k = whole + i; k < n; k += step) dst[k] = src[k];
}

__kernel void k_gather(__global uint *out, RANGE(0), RANGE(1), RANGE(2), RANGE(3),
                       RANGE(4), RANGE(5), RANGE(6), RANGE(7), RANGE(8), RANGE(9),
                       RANGE(10), RANGE(11), RANGE(12), RANGE(13), RANGE(14), RANGE(15),
                       RANGE(16), RANGE(17), RANGE(18), RANGE(19), RANGE(20), RANGE(21),
                       RANGE(22), RANGE(23), RANGE(24), RANGE(25), RANGE(26), RANGE(27),
                       RANGE(28), RANGE(29), RANGE(30), RANGE(31), RANGE(32), RANGE(33),
                       RANGE(34), RANGE(35), RANGE(36), RANGE(37), RANGE(38), RANGE(39)) {
    uint i = get_global_id(0), step = get_global_size(0);
    switch (get_global_id(1)) {
    TAKE(0) TAKE(1) TAKE(2) TAKE(3) TAKE(4) TAKE(5) TAKE(6) TAKE(7) TAKE(8) TAKE(9)
    TAKE(10) TAKE(11) TAKE(12) TAKE(13) TAKE(14) TAKE(15) TAKE(16) TAKE(17) TAKE(18)
    TAKE(19) TAKE(20) TAKE(21) TAKE(22) TAKE(23) TAKE(24) TAKE(25) TAKE(26) TAKE(27)
    TAKE(28) TAKE(29) TAKE(30) TAKE(31) TAKE(32) TAKE(33) TAKE(34) TAKE(35) TAKE(36)
    TAKE(37) TAKE(38) TAKE(39)
    }
}
