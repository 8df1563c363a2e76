// im2col and col2im for conv1d as im2col + GEMM.
//
// The column matrix has the layout (C_in, K, N, L_out), so that reshaped to
// (groups, C_in/groups * K, N * L_out) one GEMM per group covers the whole
// batch (the same layout as the NumPy backend's conv.py).
//
//   cols[c, t, n, j] = x[n, c, j*stride + t*dilation - padding]   (0 outside)
//
// x is read through element strides, so transposed views need no copy. col2im
// is a gather (each input element sums the taps that read it): no atomics,
// deterministic, and it writes grad_x contiguous in (N, C_in, L).

template <typename T>
__device__ void im2col_body(const T* x, T* cols, i64 n_batch, i64 channels, i64 length,
                            i64 s_n, i64 s_c, i64 s_l, i64 kernel, i64 length_out,
                            i64 stride, i64 padding, i64 dilation) {
    const i64 total = channels * kernel * n_batch * length_out;
    const i64 step = (i64)blockDim.x * gridDim.x;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step) {
        const i64 j = i % length_out;
        const i64 n = (i / length_out) % n_batch;
        const i64 t = (i / (length_out * n_batch)) % kernel;
        const i64 c = i / (length_out * n_batch * kernel);
        const i64 pos = j * stride + t * dilation - padding;
        cols[i] = (pos >= 0 && pos < length) ? x[n * s_n + c * s_c + pos * s_l] : T(0);
    }
}

template <typename T>
__device__ void col2im_body(const T* dcols, T* dx, i64 n_batch, i64 channels, i64 length,
                            i64 kernel, i64 length_out, i64 stride, i64 padding,
                            i64 dilation) {
    const i64 total = n_batch * channels * length;
    const i64 step = (i64)blockDim.x * gridDim.x;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step) {
        const i64 l = i % length;
        const i64 c = (i / length) % channels;
        const i64 n = i / (length * channels);
        T acc = T(0);
        for (i64 t = 0; t < kernel; ++t) {
            const i64 q = l + padding - t * dilation;
            if (q < 0 || q % stride != 0) continue;
            const i64 j = q / stride;
            if (j < length_out) acc += dcols[((c * kernel + t) * n_batch + n) * length_out + j];
        }
        dx[i] = acc;
    }
}

#define FASTNN_CONV(T, SUFFIX)                                                               \
    extern "C" __global__ void im2col_##SUFFIX(const T* x, T* cols, i64 n_batch,             \
                                               i64 channels, i64 length, i64 s_n, i64 s_c,    \
                                               i64 s_l, i64 kernel, i64 length_out,           \
                                               i64 stride, i64 padding, i64 dilation) {       \
        im2col_body<T>(x, cols, n_batch, channels, length, s_n, s_c, s_l, kernel,            \
                       length_out, stride, padding, dilation);                               \
    }                                                                                        \
    extern "C" __global__ void col2im_##SUFFIX(const T* dcols, T* dx, i64 n_batch,           \
                                               i64 channels, i64 length, i64 kernel,          \
                                               i64 length_out, i64 stride, i64 padding,       \
                                               i64 dilation) {                               \
        col2im_body<T>(dcols, dx, n_batch, channels, length, kernel, length_out, stride,     \
                       padding, dilation);                                                   \
    }

FASTNN_INSTANTIATE(FASTNN_CONV)
