// Layer normalisation over the last axis of contiguous (rows, cols) arrays
// (fastnn_cuda/norm_act.py), forward and backward in three launches in all:
//
//   layer_norm_forward:     one block per row: mean, then the biased variance of the
//                           centred row (two passes, no cancellation), then
//                           out = (x - mean) * rstd * weight + bias; mean and rstd per row.
//   layer_norm_backward_dx: one block per row: with g = grad * weight and
//                           xhat = (x - mean) * rstd, dx = rstd * (g - mean(g) -
//                           xhat * mean(g * xhat)).
//   layer_norm_param_grads: column-tiled (a block owns 32 adjacent columns, its warps take
//                           the rows in turn) over a chunk of rows per blockIdx.y:
//                           partial[chunk][0][col] = sum grad * xhat, [1][col] = sum grad.
//                           One chunk: those are dweight and dbias; several: sum_rows
//                           (cu/reduce.cu) adds the chunks' partials in one more launch.
//
// The core's composite (fastnn.api.composite_norm) in the same steps; float sums accumulate
// in double (Accum, common.cuh). An empty row gives mean = NaN (0 / 0), as NumPy's.

template <typename T>
__device__ void layer_norm_forward_body(const T* x, const T* weight, const T* bias, T* out,
                                        T* mean_out, T* rstd_out, i64 cols, double eps) {
    typedef typename Accum<T>::type A;
    __shared__ A scratch[FASTNN_WARP];
    const T* row = x + (i64)blockIdx.x * cols;
    T* dst = out + (i64)blockIdx.x * cols;
    A s = A(0);
    for (i64 j = threadIdx.x; j < cols; j += blockDim.x) s += A(row[j]);
    const T mean = T(block_sum(s, scratch) / A(cols));
    A ss = A(0);
    for (i64 j = threadIdx.x; j < cols; j += blockDim.x) {
        const A d = A(row[j]) - A(mean);
        ss += d * d;
    }
    // NOTE: 1 / sqrt rather than rsqrt(): rsqrtf is approximate (2 ulp).
    const T rstd = T(A(1) / f_sqrt(block_sum(ss, scratch) / A(cols) + A(eps)));
    for (i64 j = threadIdx.x; j < cols; j += blockDim.x)
        dst[j] = (row[j] - mean) * rstd * weight[j] + bias[j];
    if (threadIdx.x == 0) {
        mean_out[blockIdx.x] = mean;
        rstd_out[blockIdx.x] = rstd;
    }
}

template <typename T>
__device__ void layer_norm_backward_dx_body(const T* x, const T* weight, const T* mean,
                                            const T* rstd, const T* grad, T* dx, i64 cols) {
    typedef typename Accum<T>::type A;
    __shared__ A scratch[FASTNN_WARP];
    const i64 base = (i64)blockIdx.x * cols;
    const T mu = mean[blockIdx.x], r = rstd[blockIdx.x];
    A sg = A(0), sgx = A(0);
    for (i64 j = threadIdx.x; j < cols; j += blockDim.x) {
        const T g = mul_rn(grad[base + j], weight[j]);
        sg += A(g);
        sgx += A(g) * A((x[base + j] - mu) * r);
    }
    const A mean_g = block_sum(sg, scratch) / A(cols);
    const A mean_gx = block_sum(sgx, scratch) / A(cols);
    for (i64 j = threadIdx.x; j < cols; j += blockDim.x) {
        // NOTE: g rounded as the sums saw it (mul_rn): one feature gives g - mean_g = 0
        // exactly, where an fma's unrounded g left its rounding error times rstd
        const T g = mul_rn(grad[base + j], weight[j]);
        const T xhat = (x[base + j] - mu) * r;
        dx[base + j] = T((A(g) - mean_g - A(xhat) * mean_gx) * A(r));
    }
}

template <typename T>
__device__ void layer_norm_param_grads_body(const T* x, const T* mean, const T* rstd,
                                            const T* grad, T* partial, i64 rows, i64 cols,
                                            i64 chunk_rows) {
    typedef typename Accum<T>::type A;
    __shared__ A part_w[FASTNN_WARP][FASTNN_WARP];
    __shared__ A part_b[FASTNN_WARP][FASTNN_WARP];
    const int lane = threadIdx.x % FASTNN_WARP, warp = threadIdx.x / FASTNN_WARP;
    const int warps = blockDim.x / FASTNN_WARP;
    const i64 col = (i64)blockIdx.x * FASTNN_WARP + lane;
    const i64 first = (i64)blockIdx.y * chunk_rows;
    const i64 end = first + chunk_rows < rows ? first + chunk_rows : rows;
    A dw = A(0), db = A(0);
    if (col < cols) {
#pragma unroll 4
        for (i64 r = first + warp; r < end; r += warps) {
            const i64 i = r * cols + col;
            const T g = grad[i];
            dw += A(g) * A((x[i] - mean[r]) * rstd[r]);
            db += A(g);
        }
    }
    part_w[warp][lane] = dw;
    part_b[warp][lane] = db;
    __syncthreads();
    if (warp == 0 && col < cols) {
        A tw = A(0), tb = A(0);
        for (int w = 0; w < warps; ++w) {
            tw += part_w[w][lane];
            tb += part_b[w][lane];
        }
        partial[(2 * (i64)blockIdx.y) * cols + col] = T(tw);
        partial[(2 * (i64)blockIdx.y + 1) * cols + col] = T(tb);
    }
}

#define FASTNN_LAYER_NORM(T, SUFFIX)                                                        \
    extern "C" __global__ void layer_norm_forward_##SUFFIX(                                 \
        const T* x, const T* weight, const T* bias, T* out, T* mean, T* rstd, i64 cols,     \
        double eps) {                                                                       \
        layer_norm_forward_body<T>(x, weight, bias, out, mean, rstd, cols, eps);            \
    }                                                                                       \
    extern "C" __global__ void layer_norm_backward_dx_##SUFFIX(                             \
        const T* x, const T* weight, const T* mean, const T* rstd, const T* grad, T* dx,    \
        i64 cols) {                                                                         \
        layer_norm_backward_dx_body<T>(x, weight, mean, rstd, grad, dx, cols);              \
    }                                                                                       \
    extern "C" __global__ void FASTNN_COLUMN_BOUNDS layer_norm_param_grads_##SUFFIX(        \
        const T* x, const T* mean, const T* rstd, const T* grad, T* partial, i64 rows,      \
        i64 cols, i64 chunk_rows) {                                                         \
        layer_norm_param_grads_body<T>(x, mean, rstd, grad, partial, rows, cols,            \
                                       chunk_rows);                                         \
    }

FASTNN_INSTANTIATE(FASTNN_LAYER_NORM)
