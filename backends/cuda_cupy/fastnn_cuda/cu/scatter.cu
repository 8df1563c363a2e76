// scatter_add for floating point, summed in a fixed order (NumPy add.at's), not by
// racing atomics: an atomic add's order, so the last bits of a repeated index's sum,
// changes from call to call, and fnn.compile's first replay must equal eager bit for bit.
//
// The arrays are C-contiguous; index and src have the shape (outer, m, inner) and out
// (outer, n, inner). Entry (o, r, k) adds src[o, r, k] at out[o, idx[o, r, k], k] (an
// index outside [0, n) is skipped), and the entries that meet at one output element add
// in increasing r, onto the value already there, as add.at does. Two launches:
//
//   scatter_add_lines:    one thread per line (o, k) walks its m entries in order;
//                         lines never share an output element. For many lines and
//                         short walks. Flat grid-stride launch over the lines.
//   scatter_add_segments: one thread per output element that receives anything, walking
//                         its entries (sorted by destination, then r, in Python): the
//                         parallelism of distinct destinations, for few lines with long
//                         walks (a 1-d scatter, the columns of an embedding gradient).
//                         Flat grid-stride launch over the segments.

template <typename T>
__device__ void scatter_add_lines_body(T* out, const i64* idx, const T* src, i64 lines,
                                       i64 n, i64 m, i64 inner) {
    const i64 step = (i64)gridDim.x * blockDim.x;
    for (i64 line = (i64)blockIdx.x * blockDim.x + threadIdx.x; line < lines; line += step) {
        const i64 o = line / inner, k = line - o * inner;
        const i64 first = o * m * inner + k;
        T* row = out + o * n * inner + k;
        for (i64 r = 0; r < m; ++r) {
            const i64 j = idx[first + r * inner];
            if (j >= 0 && j < n) row[j * inner] += src[first + r * inner];
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
        T* out, const i64* idx, const T* src, i64 lines, i64 n, i64 m, i64 inner) {        \
        scatter_add_lines_body<T>(out, idx, src, lines, n, m, inner);                      \
    }                                                                                      \
    extern "C" __global__ void scatter_add_segments_##SUFFIX(                              \
        T* out, const T* src, const i64* pos, const i64* starts, const i64* dest,          \
        i64 segments) {                                                                    \
        scatter_add_segments_body<T>(out, src, pos, starts, dest, segments);               \
    }

FASTNN_INSTANTIATE(FASTNN_SCATTER)
