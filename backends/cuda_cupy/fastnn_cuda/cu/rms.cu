// RMS division over contiguous rows: r = 1 / sqrt(mean(x^2) + eps); out = x * r.
//
// One block per row (grid.x = rows). `r` has one value per row. An empty row
// gives r = NaN (0 / 0), as NumPy's mean of an empty axis does.

template <typename T>
__device__ void rms_div_body(const T* x, T* out, T* r_out, i64 cols, double eps) {
    __shared__ T scratch[FASTNN_WARP];
    const T* row = x + (i64)blockIdx.x * cols;
    T* dst = out + (i64)blockIdx.x * cols;
    T ss = T(0);
    for (i64 j = threadIdx.x; j < cols; j += blockDim.x) ss += row[j] * row[j];
    ss = block_sum(ss, scratch);
    // NOTE: 1 / sqrt rather than rsqrt(): rsqrtf is approximate (2 ulp).
    const T r = T(1) / f_sqrt(ss / T(cols) + T(eps));
    for (i64 j = threadIdx.x; j < cols; j += blockDim.x) dst[j] = row[j] * r;
    if (threadIdx.x == 0) r_out[blockIdx.x] = r;
}

#define FASTNN_RMS(T, SUFFIX)                                                         \
    extern "C" __global__ void rms_div_##SUFFIX(const T* x, T* out, T* r, i64 cols,    \
                                                double eps) {                         \
        rms_div_body<T>(x, out, r, cols, eps);                                        \
    }

FASTNN_INSTANTIATE(FASTNN_RMS)
