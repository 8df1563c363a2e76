// Row-wise softmax, log-softmax and softmax cross-entropy over contiguous rows.
//
// One block per row of `cols` elements (grid.x = rows); three passes over the
// row: max, sum of exp(x - max), then the outputs. NaN anywhere in a row makes
// that row's results NaN, as in NumPy.

template <typename T>
__device__ void row_max_sum(const T* row, i64 cols, T* scratch, T* max_out, T* sum_out) {
    T m = neg_inf<T>();
    for (i64 j = threadIdx.x; j < cols; j += blockDim.x) m = nan_max(m, row[j]);
    m = block_max(m, scratch);
    T s = T(0);
    for (i64 j = threadIdx.x; j < cols; j += blockDim.x) s += f_exp(row[j] - m);
    s = block_sum(s, scratch);
    *max_out = m;
    *sum_out = s;
}

template <typename T>
__device__ void softmax_body(const T* x, T* out, i64 cols, bool log_space) {
    __shared__ T scratch[FASTNN_WARP];
    const T* row = x + (i64)blockIdx.x * cols;
    T* dst = out + (i64)blockIdx.x * cols;
    T m, s;
    row_max_sum(row, cols, scratch, &m, &s);
    if (log_space) {
        const T shift = m + f_log(s);
        for (i64 j = threadIdx.x; j < cols; j += blockDim.x) dst[j] = row[j] - shift;
    } else {
        const T inv = T(1) / s;
        for (i64 j = threadIdx.x; j < cols; j += blockDim.x) dst[j] = f_exp(row[j] - m) * inv;
    }
}

// loss[r] = log(sum_j exp(x[r,j] - m)) - (x[r,t] - m); probs = softmax(x).
// A target outside [0, cols) gives a NaN loss and is never used as an index. With
// has_ignore, a target equal to `ignore` gives loss 0 and kept 0 (kept 1 elsewhere). With
// smooth = s != 0 the loss is (1 - s) nll + s / cols * sum_j (-log p_j), that sum being
// cols log(sum) - sum_j (x_j - m) (added only then: 0 * an infinite sum would be NaN).
template <typename T>
__device__ void softmax_xent_body(const T* logits, const i64* targets, T* loss, T* probs,
                                  i64 cols, T* kept, i64 ignore, bool has_ignore, T smooth) {
    __shared__ T scratch[FASTNN_WARP];
    const i64 r = blockIdx.x;
    const T* row = logits + r * cols;
    T* dst = probs + r * cols;
    T m, s;
    row_max_sum(row, cols, scratch, &m, &s);
    const T inv = T(1) / s;
    for (i64 j = threadIdx.x; j < cols; j += blockDim.x) dst[j] = f_exp(row[j] - m) * inv;
    T shifted = T(0);
    if (smooth != T(0)) {  // (a kernel argument: every thread of the block takes it)
        for (i64 j = threadIdx.x; j < cols; j += blockDim.x) shifted += row[j] - m;
        shifted = block_sum(shifted, scratch);
    }
    if (threadIdx.x == 0) {
        const i64 t = targets[r];
        const bool ignored = has_ignore && t == ignore;
        if (has_ignore) kept[r] = ignored ? T(0) : T(1);
        T value = (t >= 0 && t < cols) ? f_log(s) - (row[t] - m) : quiet_nan<T>();
        if (smooth != T(0))
            value = (T(1) - smooth) * value + smooth / T(cols) * (T(cols) * f_log(s) - shifted);
        loss[r] = ignored ? T(0) : value;
    }
}

#define FASTNN_SOFTMAX(T, SUFFIX)                                                        \
    extern "C" __global__ void softmax_##SUFFIX(const T* x, T* out, i64 cols) {          \
        softmax_body<T>(x, out, cols, false);                                            \
    }                                                                                    \
    extern "C" __global__ void log_softmax_##SUFFIX(const T* x, T* out, i64 cols) {      \
        softmax_body<T>(x, out, cols, true);                                             \
    }                                                                                    \
    extern "C" __global__ void softmax_xent_##SUFFIX(const T* logits, const i64* targets, \
                                                     T* loss, T* probs, i64 cols) {      \
        softmax_xent_body<T>(logits, targets, loss, probs, cols, loss, 0, false, T(0));  \
    }                                                                                    \
    extern "C" __global__ void softmax_xent_ignore_##SUFFIX(                             \
        const T* logits, const i64* targets, T* loss, T* probs, i64 cols, T* kept,       \
        i64 ignore, double smooth) {                                                     \
        softmax_xent_body<T>(logits, targets, loss, probs, cols, kept, ignore, true,     \
                             T(smooth));                                                 \
    }

FASTNN_INSTANTIATE(FASTNN_SOFTMAX)

// dlogits[r, j] = (probs[r, j] - (j == targets[r])) * grad[r * grad_stride], on planes
// (x along a row's columns, y over rows). grad_stride is 0 for a broadcast scalar
// gradient (the mean's). Targets are compared, never used as an index; one outside
// [0, cols) makes its row NaN, as its loss is, so that no optimizer step goes ahead on it.
// With has_ignore, a row whose target equals `ignore` is probs * 0 (NaN stays NaN); with
// smooth = s, (probs - (1 - s) [j == target] - s / cols) * grad.
template <typename T>
__device__ void softmax_xent_backward_body(const T* probs, const i64* targets, const T* grad,
                                           i64 grad_stride, T* out, i64 rows, i64 cols,
                                           i64 ignore, bool has_ignore, T smooth) {
    const i64 first = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    const i64 step = (i64)gridDim.x * blockDim.x;
    for (i64 r = PLANE_ROW_FIRST; r < rows; r += PLANE_ROW_STEP) {
        const i64 target = targets[r];
        const bool valid = target >= 0 && target < cols;
        const bool ignored = has_ignore && target == ignore;
        const T g = ignored ? T(0) : valid ? grad[r * grad_stride] : quiet_nan<T>();
        for (i64 j = first; j < cols; j += step) {
            const T p = probs[r * cols + j];
            out[r * cols + j] = ((j == target ? p - (T(1) - smooth) : p) - smooth / T(cols)) * g;
        }
    }
}

#define FASTNN_SOFTMAX_XENT_BACKWARD(T, SUFFIX)                                          \
    extern "C" __global__ void softmax_xent_backward_##SUFFIX(                           \
        const T* probs, const i64* targets, const T* grad, i64 grad_stride, T* out,      \
        i64 rows, i64 cols) {                                                            \
        softmax_xent_backward_body<T>(probs, targets, grad, grad_stride, out, rows, cols,  \
                                      0, false, T(0));                                   \
    }                                                                                    \
    extern "C" __global__ void softmax_xent_ignore_backward_##SUFFIX(                    \
        const T* probs, const i64* targets, const T* grad, i64 grad_stride, T* out,      \
        i64 rows, i64 cols, i64 ignore, double smooth) {                                 \
        softmax_xent_backward_body<T>(probs, targets, grad, grad_stride, out, rows, cols,  \
                                      ignore, true, T(smooth));                          \
    }

FASTNN_INSTANTIATE(FASTNN_SOFTMAX_XENT_BACKWARD)
