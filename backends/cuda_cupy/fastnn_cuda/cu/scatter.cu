// scatter_add for floating point, summed in a fixed order (NumPy add.at's), not by
// racing atomics: an atomic add's order, so the last bits of a repeated index's sum,
// changes from call to call, and fnn.compile's first replay must equal eager bit for bit.
//
// The arrays are C-contiguous; index and src have the shape (outer, m, inner) and out
// (outer, n, inner). Entry (o, r, k) adds src[o, r, k] at out[o, idx[o, r, k], k] (an
// index outside [0, n) is skipped), and the entries that meet at one output element add
// in increasing r, onto the value already there, as add.at does. Two launches:
//
//   scatter_add_lines:    `groups` threads per line (o, k), thread g walking the line's
//                         m entries in order and adding those whose index j has
//                         j % groups == g: each output element belongs to one thread,
//                         and a line's destinations are spread over `groups` threads
//                         (groups = 1 for many lines; more for few lines with long
//                         walks, the columns of an embedding gradient, at the price of
//                         reading the line's indices `groups` times). Fixed sizes, no
//                         host work: a CUDA graph captures it. Flat grid-stride launch
//                         over lines * groups threads, adjacent threads adjacent k.
//   scatter_add_segments: one thread per output element that receives anything, walking
//                         its entries (sorted by destination, then r, in Python): for
//                         a long 1-d scatter, where re-reading the indices per group
//                         would cost too much. Flat grid-stride launch over the segments.

template <typename T>
__device__ void scatter_add_lines_body(T* __restrict__ out, const i64* __restrict__ idx,
                                       const T* __restrict__ src, i64 lines, i64 groups,
                                       i64 n, i64 m, i64 inner) {
    const i64 step = (i64)gridDim.x * blockDim.x, total = lines * groups;
    for (i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += step) {
        const i64 rest = t / inner, k = t - rest * inner;
        const i64 o = rest / groups, g = rest - o * groups;
        const i64 first = o * m * inner + k;
        T* row = out + o * n * inner + k;
        for (i64 r = 0; r < m; ++r) {
            const i64 j = idx[first + r * inner];
            // (a 64-bit remainder costs dozens of instructions: skipped for one group)
            if (j >= 0 && j < n && (groups == 1 || j % groups == g))
                row[j * inner] += src[first + r * inner];
        }
    }
}

// Segment s covers sorted entries [starts[s], starts[s + 1]): entry e adds src[pos[e]]
// at out[dest[s]], in the order given.
template <typename T>
__device__ void scatter_add_segments_body(T* out, const T* src, const i64* pos,
                                          const i64* starts, const i64* dest, i64 segments) {
    const i64 step = (i64)gridDim.x * blockDim.x;
    for (i64 s = (i64)blockIdx.x * blockDim.x + threadIdx.x; s < segments; s += step) {
        T acc = out[dest[s]];
        for (i64 e = starts[s]; e < starts[s + 1]; ++e) acc += src[pos[e]];
        out[dest[s]] = acc;
    }
}

#define FASTNN_SCATTER(T, SUFFIX)                                                          \
    extern "C" __global__ void scatter_add_lines_##SUFFIX(                                 \
        T* out, const i64* idx, const T* src, i64 lines, i64 groups, i64 n, i64 m,         \
        i64 inner) {                                                                       \
        scatter_add_lines_body<T>(out, idx, src, lines, groups, n, m, inner);              \
    }                                                                                      \
    extern "C" __global__ void scatter_add_segments_##SUFFIX(                              \
        T* out, const T* src, const i64* pos, const i64* starts, const i64* dest,          \
        i64 segments) {                                                                    \
        scatter_add_segments_body<T>(out, src, pos, starts, dest, segments);               \
    }

FASTNN_INSTANTIATE(FASTNN_SCATTER)
