// Creation kernels: fill, counter-based uniform samples, one-hot.
// Host defines: T (output type), TI (index type, one_hot only), IS_DOUBLE.

__kernel void k_fill(__global T *out, const int n, const T value) {
    const int i = get_global_id(0);
    if (i < n) out[i] = value;
}

// A contiguous copy of a strided 2-d view: no index division, unlike the n-d copy.
__kernel void k_copy2d(__global T *out, __global const T *x, const int off, const int rows,
                       const int cols, const int srow, const int scol) {
    const int c = get_global_id(0), r = get_global_id(1);
    if (r < rows && c < cols) out[r * cols + c] = x[off + r * srow + c * scol];
}

#ifdef IS_DOUBLE
// splitmix64 of (seed, i): the same seed gives the same array on any device.
__kernel void k_uniform(__global T *out, const int n, const ulong seed) {
    const int i = get_global_id(0);
    if (i >= n) return;
    ulong z = seed * 0x9E3779B97F4A7C15UL + (ulong)i * 0xD1B54A32D192ED03UL + 0x632BE59BD9B4E019UL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9UL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBUL;
    z = z ^ (z >> 31);
#if IS_DOUBLE
    out[i] = (T)(z >> 11) * (T)(1.0 / 9007199254740992.0);
#else
    out[i] = (T)(uint)(z >> 40) * (T)(1.0f / 16777216.0f);
#endif
}
#endif

#ifdef TI
// out (n_idx, C): 1 where the class index of the row equals the column.
__kernel void k_one_hot(__global T *out, __global const TI *idx, const int off,
                        const int n, const int classes) {
    const int i = get_global_id(0);
    if (i >= n) return;
    const int row = i / classes;
    out[i] = (T)(idx[off + row] == (TI)(i - row * classes));
}
#endif
