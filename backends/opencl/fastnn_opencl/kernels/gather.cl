// Gather up to 30 word ranges of any buffers into one buffer (to_numpy_many reads many
// small arrays with one copy to the host). Range j: words [o_j, o_j + n_j) of s_j go to
// words [d_j, d_j + n_j) of out; the ranges of out do not overlap.
//
// A 2-D launch: dimension 1 is the range, dimension 0 the word in it (launched over the
// longest range; to_numpy_many puts ranges of like length in one launch). Each work item
// copies one word, so the cost is that of a copy (a 1-D launch that looked for its range
// among the 16 cost 16 tests a word).

#define RANGE(j) __global const uint *s##j, long o##j, long d##j, long n##j
#define TAKE(j) case j: if (i < n##j) out[d##j + i] = s##j[o##j + i]; break;

// (30 ranges: 968 bytes of arguments, within the 1024 every OpenCL device takes)
__kernel void k_gather(__global uint *out, RANGE(0), RANGE(1), RANGE(2), RANGE(3),
                       RANGE(4), RANGE(5), RANGE(6), RANGE(7), RANGE(8), RANGE(9),
                       RANGE(10), RANGE(11), RANGE(12), RANGE(13), RANGE(14), RANGE(15),
                       RANGE(16), RANGE(17), RANGE(18), RANGE(19), RANGE(20), RANGE(21),
                       RANGE(22), RANGE(23), RANGE(24), RANGE(25), RANGE(26), RANGE(27),
                       RANGE(28), RANGE(29)) {
    long i = get_global_id(0);
    switch (get_global_id(1)) {
    TAKE(0) TAKE(1) TAKE(2) TAKE(3) TAKE(4) TAKE(5) TAKE(6) TAKE(7)
    TAKE(8) TAKE(9) TAKE(10) TAKE(11) TAKE(12) TAKE(13) TAKE(14) TAKE(15)
    TAKE(16) TAKE(17) TAKE(18) TAKE(19) TAKE(20) TAKE(21) TAKE(22) TAKE(23)
    TAKE(24) TAKE(25) TAKE(26) TAKE(27) TAKE(28) TAKE(29)
    }
}
