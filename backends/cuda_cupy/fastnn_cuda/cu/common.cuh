// Shared device helpers for fastnn's CUDA kernels.
//
// The loader (fastnn_cuda/kernels.py) prepends this file to every .cu source
// before compiling it with NVRTC, so the sources need no include paths and
// compile the same way in CI (no GPU) and at run time.
//
// Conventions: every kernel is `extern "C"` with a dtype suffix (_f32, _f64)
// so that Python looks it up by a plain name; scalar parameters are `double`
// or `long long` so that Python floats and ints pass without casts; block
// sizes are multiples of 32 (launch.py guarantees it).

#define FASTNN_WARP 32

// Column-tiled kernels launch FASTNN_COLUMN_THREADS threads per block (defined by
// the loader from launch.COLUMN_THREADS): tell the compiler, so that it keeps
// registers within what that many threads may use.
#define FASTNN_COLUMN_BOUNDS __launch_bounds__(FASTNN_COLUMN_THREADS)

typedef long long i64;

// Plane launches (launch.plane_grid): x runs along a row, and a block also holds
// blockDim.y rows when rows are short, so that short rows still fill 256 threads.
#define PLANE_ROW_FIRST ((i64)blockIdx.y * blockDim.y + threadIdx.y)
#define PLANE_ROW_STEP ((i64)gridDim.y * blockDim.y)

template <typename T> __device__ __forceinline__ T f_exp(T x);
template <> __device__ __forceinline__ float f_exp<float>(float x) { return expf(x); }
template <> __device__ __forceinline__ double f_exp<double>(double x) { return exp(x); }

template <typename T> __device__ __forceinline__ T f_log(T x);
template <> __device__ __forceinline__ float f_log<float>(float x) { return logf(x); }
template <> __device__ __forceinline__ double f_log<double>(double x) { return log(x); }

template <typename T> __device__ __forceinline__ T f_log1p(T x);
template <> __device__ __forceinline__ float f_log1p<float>(float x) { return log1pf(x); }
template <> __device__ __forceinline__ double f_log1p<double>(double x) { return log1p(x); }

template <typename T> __device__ __forceinline__ T f_tanh(T x);
template <> __device__ __forceinline__ float f_tanh<float>(float x) { return tanhf(x); }
template <> __device__ __forceinline__ double f_tanh<double>(double x) { return tanh(x); }

template <typename T> __device__ __forceinline__ T f_erf(T x);
template <> __device__ __forceinline__ float f_erf<float>(float x) { return erff(x); }
template <> __device__ __forceinline__ double f_erf<double>(double x) { return erf(x); }

template <typename T> __device__ __forceinline__ T f_sqrt(T x);
template <> __device__ __forceinline__ float f_sqrt<float>(float x) { return sqrtf(x); }
template <> __device__ __forceinline__ double f_sqrt<double>(double x) { return sqrt(x); }

template <typename T> __device__ __forceinline__ T f_abs(T x);
template <> __device__ __forceinline__ float f_abs<float>(float x) { return fabsf(x); }
template <> __device__ __forceinline__ double f_abs<double>(double x) { return fabs(x); }

template <typename T> __device__ __forceinline__ T quiet_nan();
template <> __device__ __forceinline__ float quiet_nan<float>() { return __int_as_float(0x7fc00000); }
template <> __device__ __forceinline__ double quiet_nan<double>() {
    return __longlong_as_double(0x7ff8000000000000LL);
}

template <typename T> __device__ __forceinline__ T neg_inf();
template <> __device__ __forceinline__ float neg_inf<float>() { return __int_as_float(0xff800000); }
template <> __device__ __forceinline__ double neg_inf<double>() {
    return __longlong_as_double(0xfff0000000000000LL);
}

// The type a kernel sums T in. NOTE: float sums accumulate in double: a block adds in
// the order of its threads and shuffles, so in float [3e38, -3e38, 1] may add 3e38 + 1
// first and lose the 1. A float total that overflows still gives inf once cast back to
// float, as NumPy's float32 sum does.
template <typename T> struct Accum { typedef T type; };
template <> struct Accum<float> { typedef double type; };

// a * b rounded to T. NOTE: nvcc and NVRTC contract a * b + c into a fused multiply-add
// by default, which skips that rounding; these intrinsics are never contracted, so a value
// used twice (once summed, once subtracted from its mean) is the same value both times.
template <typename T> __device__ __forceinline__ T mul_rn(T a, T b);
template <> __device__ __forceinline__ float mul_rn<float>(float a, float b) {
    return __fmul_rn(a, b);
}
template <> __device__ __forceinline__ double mul_rn<double>(double a, double b) {
    return __dmul_rn(a, b);
}

// Sign tests on the bits. NOTE: cupy compiles every module with -ftz=true (appended to
// our options in cupy/cuda/compiler.py; NVRTC takes the last), so a float comparison reads
// a subnormal as 0: relu(tiny) kept tiny but its gradient was 0, where PyTorch gives g.
// These read the bits, so they hold with or without flushing.
__device__ __forceinline__ long long bits_of(float v) { return __float_as_int(v); }
__device__ __forceinline__ long long bits_of(double v) { return __double_as_longlong(v); }
template <typename T> __device__ __forceinline__ long long magnitude_bits(T v) {
    return bits_of(v) & (sizeof(T) == 4 ? 0x7fffffffLL : 0x7fffffffffffffffLL);
}
template <typename T> __device__ __forceinline__ bool is_nan_bits(T v) {
    return magnitude_bits(v) > (sizeof(T) == 4 ? 0x7f800000LL : 0x7ff0000000000000LL);
}
// v == 0 (either sign), subnormals not zero
template <typename T> __device__ __forceinline__ bool is_zero_bits(T v) {
    return magnitude_bits(v) == 0;
}
// v > 0: the sign bit clear, not +0, not NaN (+inf included)
template <typename T> __device__ __forceinline__ bool is_positive_bits(T v) {
    return bits_of(v) > 0 && !is_nan_bits(v);
}
// v < 0: the sign bit set, not -0, not NaN (-inf included)
template <typename T> __device__ __forceinline__ bool is_negative_bits(T v) {
    return bits_of(v) < 0 && !is_zero_bits(v) && !is_nan_bits(v);
}

// NOTE: fmax() drops NaNs; NumPy's max propagates them, and so must we.
template <typename T> __device__ __forceinline__ T nan_max(T a, T b) {
    return (a > b || a != a) ? a : b;
}

template <typename T> __device__ __forceinline__ T warp_sum(T v) {
    for (int offset = FASTNN_WARP / 2; offset > 0; offset >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

template <typename T> __device__ __forceinline__ T warp_max(T v) {
    for (int offset = FASTNN_WARP / 2; offset > 0; offset >>= 1)
        v = nan_max(v, __shfl_xor_sync(0xffffffffu, v, offset));
    return v;
}

// Block-wide sum / max; every thread gets the result. blockDim.x % 32 == 0.
// `scratch` holds at least 32 values; it is free for reuse when this returns. A sum adds in
// T: pass it Accum<T>::type values (and scratch) where the order must not lose terms.
template <typename T> __device__ T block_sum(T v, T* scratch) {
    const int lane = threadIdx.x % FASTNN_WARP, warp = threadIdx.x / FASTNN_WARP;
    const int warps = blockDim.x / FASTNN_WARP;
    v = warp_sum(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < warps ? scratch[lane] : T(0);
        v = warp_sum(v);
        if (lane == 0) scratch[0] = v;
    }
    __syncthreads();
    const T total = scratch[0];
    __syncthreads();
    return total;
}

template <typename T> __device__ T block_max(T v, T* scratch) {
    const int lane = threadIdx.x % FASTNN_WARP, warp = threadIdx.x / FASTNN_WARP;
    const int warps = blockDim.x / FASTNN_WARP;
    v = warp_max(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < warps ? scratch[lane] : neg_inf<T>();
        v = warp_max(v);
        if (lane == 0) scratch[0] = v;
    }
    __syncthreads();
    const T total = scratch[0];
    __syncthreads();
    return total;
}

// One instantiation per kernel dtype: INSTANTIATE_F(kernel_macro) expands the
// macro once for float (_f32) and once for double (_f64).
#define FASTNN_INSTANTIATE(MACRO) MACRO(float, f32) MACRO(double, f64)
