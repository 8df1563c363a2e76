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
//
// Both are launched on planes (launch.plane_grid): x of the grid runs along a
// row's positions, y (and a block's y threads) over samples, z over rows
// (im2col: channel and tap; col2im: channel), each a grid-stride loop. A thread so derives its indices
// from block indices instead of dividing a flat index by runtime sizes: 64-bit
// division is a long software routine on the GPU, and the flat version paid
// several per element.

template <typename T>
__device__ void im2col_body(const T* x, T* cols, i64 n_batch, i64 channels, i64 length,
                            i64 s_n, i64 s_c, i64 s_l, i64 kernel, i64 length_out,
                            i64 stride, i64 padding, i64 dilation) {
    const i64 rows = channels * kernel;
    const i64 first = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    const i64 step = (i64)gridDim.x * blockDim.x;
    for (i64 row = blockIdx.z; row < rows; row += gridDim.z) {
        const i64 c = row / kernel;  // once per row and thread, not per element
        const i64 shift = (row - c * kernel) * dilation - padding;
        for (i64 n = PLANE_ROW_FIRST; n < n_batch; n += PLANE_ROW_STEP) {
            const T* src = x + n * s_n + c * s_c;
            T* dst = cols + (row * n_batch + n) * length_out;
            for (i64 j = first; j < length_out; j += step) {
                const i64 pos = j * stride + shift;
                dst[j] = (pos >= 0 && pos < length) ? src[pos * s_l] : T(0);
            }
        }
    }
}

template <typename T>
__device__ void col2im_body(const T* dcols, T* dx, i64 n_batch, i64 channels, i64 length,
                            i64 kernel, i64 length_out, i64 stride, i64 padding,
                            i64 dilation) {
    const i64 first = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    const i64 step = (i64)gridDim.x * blockDim.x;
    const i64 tap_stride = n_batch * length_out;  // from one tap's rows to the next
    for (i64 c = blockIdx.z; c < channels; c += gridDim.z) {
        for (i64 n = PLANE_ROW_FIRST; n < n_batch; n += PLANE_ROW_STEP) {
            const T* src = dcols + c * kernel * tap_stride + n * length_out;
            T* dst = dx + (n * channels + c) * length;
            for (i64 l = first; l < length; l += step) {
                T acc = T(0);
                for (i64 t = 0; t < kernel; ++t) {
                    const i64 q = l + padding - t * dilation;
                    if (q < 0) break;  // q falls as t grows
                    i64 j = q;
                    if (stride != 1) {
                        if (q <= 0x7fffffffLL && stride <= 0x7fffffffLL) {
                            // 32-bit: a 64-bit divide is a long software routine
                            const unsigned uq = (unsigned)q, us = (unsigned)stride;
                            if (uq % us != 0u) continue;
                            j = (i64)(uq / us);
                        } else {
                            if (q % stride != 0) continue;
                            j = q / stride;
                        }
                    }
                    if (j < length_out) acc += src[t * tap_stride + j];
                }
                dst[l] = acc;
            }
        }
    }
}

// conv2d: the column matrix has the layout (C_in, KH, KW, N, H_out, W_out),
//   cols[c, a, b, n, i, j] = x[n, c, i*sh + a*dh - top, j*sw + b*dw - left]   (0 outside)
// launched on planes of (output columns j) x (n * H_out + i) x (rows (c, a, b)): one
// division per plane row, none per element.

template <typename T>
__device__ void im2col2d_body(const T* x, T* cols, i64 n_batch, i64 channels, i64 height,
                              i64 width, i64 s_n, i64 s_c, i64 s_h, i64 s_w, i64 kh, i64 kw,
                              i64 h_out, i64 w_out, i64 sh, i64 sw, i64 top, i64 left,
                              i64 dh, i64 dw) {
    const i64 rows = channels * kh * kw;
    const i64 middle = n_batch * h_out;
    const i64 first = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    const i64 step = (i64)gridDim.x * blockDim.x;
    for (i64 row = blockIdx.z; row < rows; row += gridDim.z) {
        const i64 c = row / (kh * kw);
        const i64 tap = row - c * kh * kw;
        const i64 a = tap / kw, b = tap - (tap / kw) * kw;
        const i64 shift_w = b * dw - left;
        for (i64 m = PLANE_ROW_FIRST; m < middle; m += PLANE_ROW_STEP) {
            const i64 n = m / h_out, i = m - n * h_out;
            const i64 h = i * sh + a * dh - top;
            T* dst = cols + (row * middle + m) * w_out;
            if (h < 0 || h >= height) {
                for (i64 j = first; j < w_out; j += step) dst[j] = T(0);
                continue;
            }
            const T* src = x + n * s_n + c * s_c + h * s_h;
            for (i64 j = first; j < w_out; j += step) {
                const i64 w = j * sw + shift_w;
                dst[j] = (w >= 0 && w < width) ? src[w * s_w] : T(0);
            }
        }
    }
}

// col2im for conv2d, a gather: dx[n, c, h, w] sums the (a, b, i, j) with
// i*sh = h + top - a*dh and j*sw = w + left - b*dw; planes of w x (n * H + h) x c.
template <typename T>
__device__ void col2im2d_body(const T* dcols, T* dx, i64 n_batch, i64 channels, i64 height,
                              i64 width, i64 kh, i64 kw, i64 h_out, i64 w_out, i64 sh,
                              i64 sw, i64 top, i64 left, i64 dh, i64 dw) {
    const i64 middle = n_batch * height;
    const i64 first = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    const i64 step = (i64)gridDim.x * blockDim.x;
    const i64 tap_stride = n_batch * h_out * w_out;  // from one tap's row to the next
    for (i64 c = blockIdx.z; c < channels; c += gridDim.z) {
        for (i64 m = PLANE_ROW_FIRST; m < middle; m += PLANE_ROW_STEP) {
            const i64 n = m / height, h = m - n * height;
            T* dst = dx + ((n * channels + c) * height + h) * width;
            for (i64 w = first; w < width; w += step) {
                T acc = T(0);
                for (i64 a = 0; a < kh; ++a) {
                    const i64 ph = h + top - a * dh;
                    if (ph < 0) break;  // ph falls as a grows
                    if (ph % sh != 0) continue;
                    const i64 i = ph / sh;
                    if (i >= h_out) continue;
                    const T* src = dcols + (c * kh + a) * kw * tap_stride
                                   + (n * h_out + i) * w_out;
                    for (i64 b = 0; b < kw; ++b) {
                        const i64 pw = w + left - b * dw;
                        if (pw < 0) break;
                        if (pw % sw != 0) continue;
                        const i64 j = pw / sw;
                        if (j < w_out) acc += src[b * tap_stride + j];
                    }
                }
                dst[w] = acc;
            }
        }
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
    }                                                                                        \
    extern "C" __global__ void im2col2d_##SUFFIX(                                           \
        const T* x, T* cols, i64 n_batch, i64 channels, i64 height, i64 width, i64 s_n,      \
        i64 s_c, i64 s_h, i64 s_w, i64 kh, i64 kw, i64 h_out, i64 w_out, i64 sh, i64 sw,     \
        i64 top, i64 left, i64 dh, i64 dw) {                                                 \
        im2col2d_body<T>(x, cols, n_batch, channels, height, width, s_n, s_c, s_h, s_w, kh,  \
                         kw, h_out, w_out, sh, sw, top, left, dh, dw);                       \
    }                                                                                        \
    extern "C" __global__ void col2im2d_##SUFFIX(                                           \
        const T* dcols, T* dx, i64 n_batch, i64 channels, i64 height, i64 width, i64 kh,     \
        i64 kw, i64 h_out, i64 w_out, i64 sh, i64 sw, i64 top, i64 left, i64 dh, i64 dw) {   \
        col2im2d_body<T>(dcols, dx, n_batch, channels, height, width, kh, kw, h_out, w_out,  \
                         sh, sw, top, left, dh, dw);                                         \
    }

FASTNN_INSTANTIATE(FASTNN_CONV)
