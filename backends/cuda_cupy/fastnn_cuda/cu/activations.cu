// Elementwise activations, optionally fused with a bias add along the last axis.
//
//   out[r, j] = act(x[r, j] + bias[j])      (bias may be NULL: no add)
//
// `kind` codes must match ACTIVATION_CODES in fastnn_cuda/kernels.py (a test
// parses this enum and compares). x and out are C-contiguous with n elements.

enum ActKind {
    ACT_IDENTITY = 0,
    ACT_RELU = 1,
    ACT_LEAKY_RELU = 2,
    ACT_SIGMOID = 3,
    ACT_TANH = 4,
    ACT_SILU = 5,
    ACT_GELU = 6,
    ACT_SOFTPLUS = 7,
};

template <typename T> __device__ __forceinline__ T sigmoid_of(T z) {
    // NOTE: 1 / (1 + exp(-z)) for z >= 0 and exp(z) / (1 + exp(z)) below never overflow
    // and keep full relative precision for very negative z, where 0.5 * (1 + tanh(z / 2))
    // cancels (0 at z = -20 in float32, not 2.1e-9). NaN takes the second branch.
    if (z >= T(0)) return T(1) / (T(1) + f_exp(-z));
    const T e = f_exp(z);
    return e / (T(1) + e);
}

template <typename T> __device__ __forceinline__ T activate(T z, i64 kind, T slope) {
    switch ((int)kind) {
        // the sign read from the bits: subnormals kept under -ftz=true (common.cuh)
        case ACT_RELU: return is_negative_bits(z) ? T(0) : z;  // NaN and -0.0 kept, as PyTorch
        case ACT_LEAKY_RELU: return is_positive_bits(z) ? z : slope * z;
        case ACT_SIGMOID: return sigmoid_of(z);
        case ACT_TANH: return f_tanh(z);
        case ACT_SILU: return z * sigmoid_of(z);
        case ACT_GELU: return T(0.5) * z * (T(1) + f_erf(z * T(0.70710678118654752440)));
        case ACT_SOFTPLUS: return (z > T(0) ? z : T(0)) + f_log1p(f_exp(-f_abs(z)));
        default: return z;
    }
}

// Launched on planes (launch.plane_grid): x along a row's features, y over rows
// (several per block when rows are short),
// so the bias index is the column itself (no modulo of a flat index). A plain
// activation is one row of all the elements.
template <typename T>
__device__ void bias_act_body(const T* x, const T* bias, T* out, i64 rows, i64 features,
                              i64 kind, double slope) {
    const T s = T(slope);
    const i64 first = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    const i64 step = (i64)gridDim.x * blockDim.x;
    for (i64 r = PLANE_ROW_FIRST; r < rows; r += PLANE_ROW_STEP) {
        const i64 base = r * features;
        for (i64 j = first; j < features; j += step) {
            T z = x[base + j];
            if (bias != nullptr) z += bias[j];
            out[base + j] = activate(z, kind, s);
        }
    }
}

#define FASTNN_BIAS_ACT(T, SUFFIX)                                                      \
    extern "C" __global__ void bias_act_##SUFFIX(const T* x, const T* bias, T* out,     \
                                                 i64 rows, i64 features, i64 kind,      \
                                                 double slope) {                        \
        bias_act_body<T>(x, bias, out, rows, features, kind, slope);                    \
    }

FASTNN_INSTANTIATE(FASTNN_BIAS_ACT)

// ---------------------------------------------------------------- backward
//
// dz = grad * act'(z), z = x + bias; dbias[j] = sum over rows of dz[:, j].
// relu's derivative is 0 where `out == 0` (z <= 0), 1 elsewhere: a NaN input
// passes the gradient, as PyTorch's and the core's composite. One launch computes both: a block owns 32 adjacent columns
// (one per lane, so each row's loads are coalesced) and its warps take the
// rows in turn; the warps' partial column sums meet in shared memory.
// grid.x = ceil(features / 32); blockDim.x a multiple of 32, at most 1024.

template <typename T> __device__ __forceinline__ T activation_grad(T z, T out, T g, i64 kind,
                                                                    T slope) {
    switch ((int)kind) {
        case ACT_RELU: return is_zero_bits(out) ? T(0) : g;
        case ACT_LEAKY_RELU: return is_positive_bits(z) ? g : g * slope;
        case ACT_SIGMOID: return g * (out * (T(1) - out));
        case ACT_TANH: return g * (T(1) - out * out);
        case ACT_SILU: {
            const T s = sigmoid_of(z);
            return g * (s * (z * (T(1) - s) + T(1)));
        }
        case ACT_GELU: {
            const T cdf = (f_erf(z * T(0.70710678118654752440)) + T(1)) * T(0.5);
            const T pdf = f_exp(z * z * T(-0.5)) * T(0.39894228040143267794);
            return g * (cdf + z * pdf);
        }
        case ACT_SOFTPLUS: return g * sigmoid_of(z);
        default: return g;
    }
}

template <typename T>
__device__ void bias_act_backward_body(const T* x, const T* bias, const T* out, const T* grad,
                                       T* dz, T* dbias, i64 rows, i64 features, i64 kind,
                                       double slope) {
    __shared__ T partial[FASTNN_WARP][FASTNN_WARP];
    const int lane = threadIdx.x % FASTNN_WARP, warp = threadIdx.x / FASTNN_WARP;
    const int warps = blockDim.x / FASTNN_WARP;
    const i64 col = (i64)blockIdx.x * FASTNN_WARP + lane;
    const bool needs_z = kind == ACT_LEAKY_RELU || kind == ACT_SILU || kind == ACT_GELU ||
                         kind == ACT_SOFTPLUS;
    const T s = T(slope);
    T acc = T(0);
    if (col < features) {
        const T b = bias[col];
#pragma unroll 4
        for (i64 r = warp; r < rows; r += warps) {
            const i64 i = r * features + col;
            const T z = needs_z ? x[i] + b : T(0);
            const T d = activation_grad(z, out[i], grad[i], kind, s);
            dz[i] = d;
            acc += d;
        }
    }
    partial[warp][lane] = acc;
    __syncthreads();
    if (warp == 0 && col < features) {
        T total = T(0);
        for (int w = 0; w < warps; ++w) total += partial[w][lane];
        dbias[col] = total;
    }
}

#define FASTNN_BIAS_ACT_BACKWARD(T, SUFFIX)                                                  \
    extern "C" __global__ void FASTNN_COLUMN_BOUNDS bias_act_backward_##SUFFIX(              \
        const T* x, const T* bias, const T* out, const T* grad, T* dz, T* dbias, i64 rows,   \
        i64 features, i64 kind, double slope) {                                              \
        bias_act_backward_body<T>(x, bias, out, grad, dz, dbias, rows, features, kind,       \
                                  slope);                                                    \
    }

FASTNN_INSTANTIATE(FASTNN_BIAS_ACT_BACKWARD)

// dx = grad * act'(x) elementwise with no bias (the gelu_backward hook), on planes with
// one row of all n elements, as a plain bias_act: one launch where the core's composite
// makes eight (erf, exp and six products and sums, each a temporary).
template <typename T>
__device__ void act_backward_body(const T* x, const T* out, const T* grad, T* dx, i64 n,
                                  i64 kind, double slope) {
    const T s = T(slope);
    const i64 first = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    const i64 step = (i64)gridDim.x * blockDim.x;
    for (i64 i = first; i < n; i += step) dx[i] = activation_grad(x[i], out[i], grad[i], kind, s);
}

#define FASTNN_ACT_BACKWARD(T, SUFFIX)                                                   \
    extern "C" __global__ void act_backward_##SUFFIX(const T* x, const T* out,           \
                                                     const T* grad, T* dx, i64 n,        \
                                                     i64 kind, double slope) {           \
        act_backward_body<T>(x, out, grad, dx, n, kind, slope);                          \
    }

FASTNN_INSTANTIATE(FASTNN_ACT_BACKWARD)
