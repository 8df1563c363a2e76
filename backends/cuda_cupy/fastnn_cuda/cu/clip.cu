// Gradient clipping for many arrays in ONE launch a table (hooks total_norm and
// clip_grads_with_norm, fastnn/api/hookspec_optim.py). The arrays travel in the optimizer
// steps' StepTable (optim.cu's layout; lr, wd and flag unused), so a model's gradients make
// one launch per dtype and MAX_TENSORS arrays, and nothing is copied to the device first.
//
//   norm_parts:   ptr[0][k] = array k. Each block writes one part of the norm to
//                 parts[blockIdx.x]: the sum of |x|^p (x^2 for p = 2) or the max |x| of the
//                 elements it walks, in double whatever T is (a float's square is exact in
//                 double; the terms are never negative, so a plain sum loses nothing to
//                 cancellation).
//   norm_finish:  one block: the parts of every launch (and of the arrays the Python side
//                 summed itself) joined, rounded to T, then the root: out[0], a 0-d T.
//   clip_scale:   ptr[0][k] = out k, ptr[1][k] = grad k: out = grad * c, c from the total
//                 read from device memory where it runs, so that nothing waits for it.
//
// NaN: a sum keeps it; the max keeps it through nan_max (fmax drops it).
// NOTE: under cupy's -ftz=true a float32 subnormal reads as 0 when widened to double, so an
// array of nothing but values below 1.2e-38 has norm 0 (PyTorch CUDA: ~1e-38); a clip
// coefficient cannot tell the two apart (the total is shifted by 1e-6).

#include "step_table.cuh"

#define NORM_TWO 0  // p = 2: squares
#define NORM_INF 1  // max |x|
#define NORM_POW 2  // any other p > 0: |x|^p

template <typename T> __device__ __forceinline__ T f_pow(T x, T y);
template <> __device__ __forceinline__ float f_pow<float>(float x, float y) { return powf(x, y); }
template <> __device__ __forceinline__ double f_pow<double>(double x, double y) {
    return pow(x, y);
}

// one thread's share of array x: the sum of its terms, or their max (0 when it has none:
// every term is >= 0, so 0 is the max of nothing too)
template <typename T, int KIND>
__device__ __forceinline__ double norm_terms(const T* x, i64 n, i64 first, i64 stride,
                                             double p) {
    double acc = 0.0;
    for (i64 i = first; i < n; i += stride) {
        const double a = f_abs((double)x[i]);
        if (KIND == NORM_TWO) acc += a * a;
        else if (KIND == NORM_INF) acc = nan_max(acc, a);
        else acc += pow(a, p);
    }
    return acc;
}

template <typename T>
__device__ void norm_parts_body(const StepTable& t, double* parts, double p, i64 kind) {
    __shared__ double scratch[FASTNN_WARP];
    const TensorSlice s = my_slice(t);
    const T* x = (const T*)t.ptr[0][s.k];
    const i64 n = t.size[s.k];
    double acc;
    if (kind == NORM_TWO) acc = norm_terms<T, NORM_TWO>(x, n, s.first, s.stride, p);
    else if (kind == NORM_INF) acc = norm_terms<T, NORM_INF>(x, n, s.first, s.stride, p);
    else acc = norm_terms<T, NORM_POW>(x, n, s.first, s.stride, p);
    acc = kind == NORM_INF ? block_max(acc, scratch) : block_sum(acc, scratch);
    if (threadIdx.x == 0) parts[blockIdx.x] = acc;
}

// NOTE: the joined sum is rounded to T before the root, as the composite takes it (a float
// sum past float's range is inf, not a finite root of a double).
template <typename T>
__device__ void norm_finish_body(const double* parts, T* out, i64 n, double p, i64 kind) {
    __shared__ double scratch[FASTNN_WARP];
    double acc = 0.0;
    for (i64 i = threadIdx.x; i < n; i += blockDim.x)
        acc = kind == NORM_INF ? nan_max(acc, parts[i]) : acc + parts[i];
    acc = kind == NORM_INF ? block_max(acc, scratch) : block_sum(acc, scratch);
    if (threadIdx.x == 0) {
        const T total = T(acc);
        out[0] = kind == NORM_TWO ? f_sqrt(total)
                 : kind == NORM_INF ? total : f_pow(total, T(1.0 / p));
    }
}

// c = min(max_norm / (total + 1e-6), 1) in total's type A; NaN kept (a NaN total makes
// every value NaN), an infinite total gives 0.
template <typename A>
__device__ __forceinline__ A clip_coef(A total, double max_norm) {
    const A c = A(max_norm) / (total + A(1e-6));
    return (c < A(1) || c != c) ? c : A(1);
}

template <typename T>
__device__ void clip_scale_body(const StepTable& t, const void* total, double max_norm,
                                i64 total_is_double) {
    const TensorSlice s = my_slice(t);
    T* out = (T*)t.ptr[0][s.k];
    const T* g = (const T*)t.ptr[1][s.k];
    // computed in the total's type, then cast once to T (as an in-place multiply by a 0-d
    // tensor of the total's dtype)
    const T c = total_is_double ? T(clip_coef(*(const double*)total, max_norm))
                                : T(clip_coef(*(const float*)total, max_norm));
    for (i64 i = s.first; i < t.size[s.k]; i += s.stride) out[i] = g[i] * c;
}

#define FASTNN_CLIP(T, SUFFIX)                                                             \
    extern "C" __global__ void norm_parts_##SUFFIX(const StepTable table, double* parts,   \
                                                   double p, i64 kind) {                   \
        norm_parts_body<T>(table, parts, p, kind);                                         \
    }                                                                                      \
    extern "C" __global__ void norm_finish_##SUFFIX(const double* parts, T* out, i64 n,    \
                                                    double p, i64 kind) {                  \
        norm_finish_body<T>(parts, out, n, p, kind);                                       \
    }                                                                                      \
    extern "C" __global__ void clip_scale_##SUFFIX(const StepTable table, const void* total, \
                                                   double max_norm, i64 total_is_double) { \
        clip_scale_body<T>(table, total, max_norm, total_is_double);                       \
    }

FASTNN_INSTANTIATE(FASTNN_CLIP)
