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
//
// NOTE: a block adds in the order of its threads and shuffles, not NumPy's: for
// [3e38, -3e38, 1] a warp adds 3e38 + 1 first, which is 3e38 in float and in double alike,
// and the mean came out 0 instead of 1/3. So each sum is a compensated one in double (a
// running total and the exact rounding error of every addition, Knuth's TwoSum), which no
// order of float inputs can spoil. The total is rounded to T before the division, so that
// a float sum that overflows gives inf for its mean too, as NumPy's.

struct CompSum {
    double hi, lo;  // the sum is hi + lo; lo gathers the rounding errors of hi
};

__device__ __forceinline__ CompSum comp_add(CompSum a, double b) {
    const double s = a.hi + b;
    const double b_part = s - a.hi;
    const double err = (a.hi - (s - b_part)) + (b - b_part);  // exactly a.hi + b - s
    return CompSum{s, a.lo + err};
}

__device__ __forceinline__ CompSum comp_merge(CompSum a, CompSum b) {
    CompSum r = comp_add(a, b.hi);
    r.lo += b.lo;
    return r;
}

// hi + lo; where hi is Inf or NaN, lo is NaN (inf - inf) and hi is the answer
__device__ __forceinline__ double comp_total(CompSum a) {
    return isfinite(a.hi) ? a.hi + a.lo : a.hi;
}

__device__ __forceinline__ CompSum warp_comp_sum(CompSum v) {
    for (int offset = FASTNN_WARP / 2; offset > 0; offset >>= 1) {
        CompSum other;
        other.hi = __shfl_xor_sync(0xffffffffu, v.hi, offset);
        other.lo = __shfl_xor_sync(0xffffffffu, v.lo, offset);
        v = comp_merge(v, other);
    }
    return v;
}

template <typename T>
__device__ void sum_rows_body(const T* x, T* out, i64 rows, i64 cols, double divisor) {
    __shared__ CompSum partial[FASTNN_WARP][FASTNN_WARP];
    const int lane = threadIdx.x % FASTNN_WARP, warp = threadIdx.x / FASTNN_WARP;
    const int warps = blockDim.x / FASTNN_WARP;
    const i64 col = (i64)blockIdx.x * FASTNN_WARP + lane;
    CompSum acc = CompSum{0.0, 0.0};
    if (col < cols) {
#pragma unroll 4
        for (i64 r = warp; r < rows; r += warps) acc = comp_add(acc, (double)x[r * cols + col]);
    }
    partial[warp][lane] = acc;
    __syncthreads();
    if (warp == 0 && col < cols) {
        CompSum total = CompSum{0.0, 0.0};
        for (int w = 0; w < warps; ++w) total = comp_merge(total, partial[w][lane]);
        out[col] = T(comp_total(total)) / T(divisor);
    }
}

template <typename T>
__device__ void sum_all_body(const T* x, T* out, i64 n, double divisor) {
    __shared__ CompSum scratch[FASTNN_WARP];
    const int lane = threadIdx.x % FASTNN_WARP, warp = threadIdx.x / FASTNN_WARP;
    const int warps = blockDim.x / FASTNN_WARP;
    CompSum acc = CompSum{0.0, 0.0};
    for (i64 i = threadIdx.x; i < n; i += blockDim.x) acc = comp_add(acc, (double)x[i]);
    acc = warp_comp_sum(acc);
    if (lane == 0) scratch[warp] = acc;
    __syncthreads();
    if (warp == 0) {
        acc = lane < warps ? scratch[lane] : CompSum{0.0, 0.0};
        acc = warp_comp_sum(acc);
        if (lane == 0) out[0] = T(comp_total(acc)) / T(divisor);
    }
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
