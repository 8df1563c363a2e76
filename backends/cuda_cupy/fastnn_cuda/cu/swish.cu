// Swish with a learnable per-feature beta along the last axis:
//
//   s = sigmoid(beta_j * x);  y = x * s
//   dy/dx = s + beta_j * x * s * (1 - s);   dy/dbeta_j = x^2 * s * (1 - s)
//
// The backward kernel writes grad_x and the per-element beta contributions
// (grad_out * dy/dbeta); the caller sums the latter over all rows.

template <typename T> __device__ __forceinline__ T swish_sigmoid(T z) {
    return T(0.5) * (T(1) + f_tanh(T(0.5) * z));
}

// Both on planes (x along a row's features, y over rows): beta's index is the column.
template <typename T>
__device__ void swish_forward_body(const T* x, const T* beta, T* out, i64 rows, i64 features) {
    const i64 first = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    const i64 step = (i64)gridDim.x * blockDim.x;
    for (i64 r = PLANE_ROW_FIRST; r < rows; r += PLANE_ROW_STEP) {
        for (i64 j = first; j < features; j += step) {
            const i64 i = r * features + j;
            const T v = x[i];
            out[i] = v * swish_sigmoid(beta[j] * v);
        }
    }
}

template <typename T>
__device__ void swish_backward_body(const T* grad_out, const T* x, const T* beta, T* grad_x,
                                    T* grad_beta_terms, i64 rows, i64 features) {
    const i64 first = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    const i64 step = (i64)gridDim.x * blockDim.x;
    for (i64 r = PLANE_ROW_FIRST; r < rows; r += PLANE_ROW_STEP) {
        for (i64 j = first; j < features; j += step) {
            const i64 i = r * features + j;
            const T v = x[i], b = beta[j], g = grad_out[i];
            const T s = swish_sigmoid(b * v);
            const T ds = s * (T(1) - s);
            grad_x[i] = g * (s + b * v * ds);
            grad_beta_terms[i] = g * v * v * ds;
        }
    }
}

#define FASTNN_SWISH(T, SUFFIX)                                                           \
    extern "C" __global__ void swish_forward_##SUFFIX(const T* x, const T* beta, T* out,   \
                                                      i64 rows, i64 features) {           \
        swish_forward_body<T>(x, beta, out, rows, features);                              \
    }                                                                                     \
    extern "C" __global__ void swish_backward_##SUFFIX(const T* grad_out, const T* x,      \
                                                       const T* beta, T* grad_x,          \
                                                       T* grad_beta_terms, i64 rows,      \
                                                       i64 features) {                    \
        swish_backward_body<T>(grad_out, x, beta, grad_x, grad_beta_terms, rows, features); \
    }

FASTNN_INSTANTIATE(FASTNN_SWISH)
