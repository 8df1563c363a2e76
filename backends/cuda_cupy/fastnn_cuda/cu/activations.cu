// Elementwise activations, optionally fused with a bias add along the last axis.
//
//   out[i] = act(x[i] + bias[i % features])      (bias may be NULL: no add)
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
    // NOTE: 0.5 * (1 + tanh(z / 2)) never overflows, unlike 1 / (1 + exp(-z)).
    return T(0.5) * (T(1) + f_tanh(T(0.5) * z));
}

template <typename T> __device__ __forceinline__ T activate(T z, i64 kind, T slope) {
    switch ((int)kind) {
        case ACT_RELU: return (z > T(0) || z != z) ? z : T(0);
        case ACT_LEAKY_RELU: return z > T(0) ? z : slope * z;
        case ACT_SIGMOID: return sigmoid_of(z);
        case ACT_TANH: return f_tanh(z);
        case ACT_SILU: return z * sigmoid_of(z);
        case ACT_GELU: return T(0.5) * z * (T(1) + f_erf(z * T(0.70710678118654752440)));
        case ACT_SOFTPLUS: return (z > T(0) ? z : T(0)) + f_log1p(f_exp(-f_abs(z)));
        default: return z;
    }
}

template <typename T>
__device__ void bias_act_body(const T* x, const T* bias, T* out, i64 n, i64 features,
                              i64 kind, double slope) {
    const T s = T(slope);
    const i64 step = (i64)blockDim.x * gridDim.x;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        T z = x[i];
        if (bias != nullptr) z += bias[i % features];
        out[i] = activate(z, kind, s);
    }
}

#define FASTNN_BIAS_ACT(T, SUFFIX)                                                      \
    extern "C" __global__ void bias_act_##SUFFIX(const T* x, const T* bias, T* out,     \
                                                 i64 n, i64 features, i64 kind,         \
                                                 double slope) {                        \
        bias_act_body<T>(x, bias, out, n, features, kind, slope);                       \
    }

FASTNN_INSTANTIATE(FASTNN_BIAS_ACT)
