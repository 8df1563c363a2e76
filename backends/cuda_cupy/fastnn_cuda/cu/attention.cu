// The row kernels of the attention hooks (fastnn_cuda/sdpa.py); the three products around
// them are cuBLAS batched GEMMs. One block per row of `cols` scores, in place (the hooks
// pass the fresh GEMM output, which nothing else holds):
//
//   attention_softmax:  z = x * scale, -inf where the mask is false, then softmax(z) along
//                       the row: one launch for what was a scale, a where and a softmax,
//                       three passes over the (..., L, S) scores and two temporaries.
//                       `mask` is NULL or bytes (bool) of `mask_rows` rows of `cols`: row r
//                       reads mask row r % mask_rows (a causal (L, S) mask serves every
//                       head with mask_rows = L; any other broadcast is materialised).
//   attention_softmax_backward: ds = w * (dw - rowsum(dw * w)) * scale, in place on dw
//                       (the core's composite makes five launches and three temporaries).
//
// Every row has at least one unmasked score (the hook's contract), so the max is finite.

template <typename T>
__device__ void attention_softmax_body(T* x, i64 cols, double scale_d,
                                       const unsigned char* mask, i64 mask_rows) {
    __shared__ T scratch[FASTNN_WARP];
    T* row = x + (i64)blockIdx.x * cols;
    const unsigned char* keep = mask ? mask + ((i64)blockIdx.x % mask_rows) * cols : nullptr;
    const T scale = T(scale_d);
    T m = neg_inf<T>();
    for (i64 j = threadIdx.x; j < cols; j += blockDim.x)
        if (!keep || keep[j]) m = nan_max(m, row[j] * scale);
    m = block_max(m, scratch);
    T s = T(0);
    for (i64 j = threadIdx.x; j < cols; j += blockDim.x)
        if (!keep || keep[j]) s += f_exp(row[j] * scale - m);
    const T inv = T(1) / block_sum(s, scratch);
    for (i64 j = threadIdx.x; j < cols; j += blockDim.x)
        row[j] = (!keep || keep[j]) ? f_exp(row[j] * scale - m) * inv : T(0);
}

template <typename T>
__device__ void attention_softmax_backward_body(const T* weights, T* dw, i64 cols,
                                                double scale_d) {
    __shared__ T scratch[FASTNN_WARP];
    const i64 base = (i64)blockIdx.x * cols;
    T dot = T(0);
    for (i64 j = threadIdx.x; j < cols; j += blockDim.x) dot += dw[base + j] * weights[base + j];
    dot = block_sum(dot, scratch);
    const T scale = T(scale_d);
    for (i64 j = threadIdx.x; j < cols; j += blockDim.x)
        dw[base + j] = weights[base + j] * (dw[base + j] - dot) * scale;
}

#define FASTNN_ATTENTION(T, SUFFIX)                                                        \
    extern "C" __global__ void attention_softmax_##SUFFIX(                                 \
        T* x, i64 cols, double scale, const unsigned char* mask, i64 mask_rows) {          \
        attention_softmax_body<T>(x, cols, scale, mask, mask_rows);                        \
    }                                                                                      \
    extern "C" __global__ void attention_softmax_backward_##SUFFIX(                        \
        const T* weights, T* dw, i64 cols, double scale) {                                 \
        attention_softmax_backward_body<T>(weights, dw, cols, scale);                      \
    }

FASTNN_INSTANTIATE(FASTNN_ATTENTION)
