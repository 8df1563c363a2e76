// Sums for the common cases of a training step, in one launch each:
//
//   sum_rows: out[j] = sum_r x[r, j] over a C-contiguous (rows, cols)
//             matrix (a bias gradient; leading axes of any array). A block owns
//             32 adjacent columns, one per lane, and its warps take the rows in
//             turn; the warps' partial sums meet in shared memory.
//             grid.x = ceil(cols / 32).
//   sum_all:  out[0] = sum of n contiguous elements, one block (a loss
//             mean); for small n only, as one block cannot fill the GPU.
//
// Each total is divided by `divisor`: 1 for a sum, the count for a mean (as
// NumPy does). NaN and Inf propagate as in NumPy.

template <typename T>
__device__ void sum_rows_body(const T* x, T* out, i64 rows, i64 cols, double divisor) {
    __shared__ T partial[FASTNN_WARP][FASTNN_WARP];
    const int lane = threadIdx.x % FASTNN_WARP, warp = threadIdx.x / FASTNN_WARP;
    const int warps = blockDim.x / FASTNN_WARP;
    const i64 col = (i64)blockIdx.x * FASTNN_WARP + lane;
    T acc = T(0);
    if (col < cols) {
#pragma unroll 4
        for (i64 r = warp; r < rows; r += warps) acc += x[r * cols + col];
    }
    partial[warp][lane] = acc;
    __syncthreads();
    if (warp == 0 && col < cols) {
        T total = T(0);
        for (int w = 0; w < warps; ++w) total += partial[w][lane];
        out[col] = total / T(divisor);
    }
}

template <typename T>
__device__ void sum_all_body(const T* x, T* out, i64 n, double divisor) {
    __shared__ T scratch[FASTNN_WARP];
    T acc = T(0);
    for (i64 i = threadIdx.x; i < n; i += blockDim.x) acc += x[i];
    acc = block_sum(acc, scratch);
    if (threadIdx.x == 0) out[0] = acc / T(divisor);
}

#define FASTNN_REDUCE(T, SUFFIX)                                                           \
    extern "C" __global__ void FASTNN_COLUMN_BOUNDS sum_rows_##SUFFIX(                     \
        const T* x, T* out, i64 rows, i64 cols, double divisor) {                          \
        sum_rows_body<T>(x, out, rows, cols, divisor);                                     \
    }                                                                                      \
    extern "C" __global__ void sum_all_##SUFFIX(const T* x, T* out, i64 n,                 \
                                                double divisor) {                          \
        sum_all_body<T>(x, out, n, divisor);                                               \
    }

FASTNN_INSTANTIATE(FASTNN_REDUCE)
