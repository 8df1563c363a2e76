// Fused kernels: softmax / log-softmax along one axis, softmax cross-entropy,
// RMS division and bias + activation. Host defines: WG (work-group size of the
// *_group row kernels), T (float or double), TI
// (target index type), ACT (bias_act kind: 0 identity, 1 relu, 2 leaky_relu,
// 3 sigmoid, 4 tanh, 5 silu, 6 gelu, 7 softplus), ACC (the type row sums accumulate in:
// double on CPU devices, where it costs nothing, as reduce.cl's sums; T elsewhere).

#ifndef ACC
#define ACC T
#endif

// Softmax over K of a contiguous (A, K, B) view, one work-item per (a, b).
__kernel void k_softmax(__global T *out, __global const T *x, const int off, const int K,
                        const int B, const int n_rows, const int log_out) {
    const int o = get_global_id(0);
    if (o >= n_rows) return;
    const int b = o % B, a = o / B;
    const __global T *row = x + off + a * K * B + b;
    __global T *dst = out + a * K * B + b;
    T top = -INFINITY;
    for (int k = 0; k < K; ++k) top = fmax(top, row[k * B]);
    ACC total = 0;
    for (int k = 0; k < K; ++k) total += (ACC)exp(row[k * B] - top);
    if (log_out) {
        const T shift = top + (T)log(total);
        for (int k = 0; k < K; ++k) dst[k * B] = row[k * B] - shift;
    } else {
        const T inv = (T)((ACC)1 / total);
        for (int k = 0; k < K; ++k) dst[k * B] = exp(row[k * B] - top) * inv;
    }
}

#ifdef TI
// The loss of row n and, with has_ignore, its kept flag: a target equal to ignore gives 0
// (and kept 0), another outside [0, C) NaN, never an index. With smooth = s != 0 the loss
// is (1 - s) nll + s / C * sum_c (-log p_c), the sum C log(total) - shifted, shifted the
// row's sum of x - max (added only then: 0 * an infinite sum would be NaN).
#define XENT_LOSS(n, t, total, row, top, shifted)                                     \
    do {                                                                              \
        const int ignored_ = has_ignore && (long)(t) == ignore;                       \
        if (has_ignore) kept[n] = ignored_ ? (T)0 : (T)1;                             \
        T value_ = ((t) >= 0 && (t) < C) ? (T)log(total) - ((row)[t] - (top)) : (T)NAN; \
        if (smooth != (T)0)                                                           \
            value_ = ((T)1 - smooth) * value_                                         \
                     + smooth / (T)C * ((T)C * (T)log(total) - (T)(shifted));          \
        loss[n] = ignored_ ? (T)0 : value_;                                           \
    } while (0)

// Per row n of (N, C) logits: probs = softmax, loss = log(sum exp(x - max)) - (x[t] - max).
__kernel void k_softmax_xent(__global T *loss, __global T *probs, __global const T *x,
                             const int off, __global const TI *targets, const int toff,
                             const int N, const int C, __global T *kept, const long ignore,
                             const int has_ignore, const T smooth) {
    const int n = get_global_id(0);
    if (n >= N) return;
    const __global T *row = x + off + n * C;
    __global T *p = probs + n * C;
    T top = -INFINITY;
    for (int c = 0; c < C; ++c) top = fmax(top, row[c]);
    ACC total = 0, shifted = 0;
    for (int c = 0; c < C; ++c) {
        const T e = exp(row[c] - top);
        p[c] = e;
        total += (ACC)e;
        shifted += (ACC)(row[c] - top);
    }
    const T inv = (T)((ACC)1 / total);
    for (int c = 0; c < C; ++c) p[c] *= inv;
    const TI t = targets[toff + n];
    XENT_LOSS(n, t, total, row, top, shifted);
}
#endif

// r = 1 / sqrt(mean(x^2 over the last axis) + eps); out = x * r. One item per row.
// NOTE: x^2 overflows float beyond |x| ~ 1.8e19, so the squares are taken of
// x / m with m = max(max|x|, 1): r = (1 / m) / sqrt(mean((x / m)^2) + eps / m^2).
__kernel void k_rms_div(__global T *out, __global T *r, __global const T *x, const int off,
                        const int rows, const int F, const T eps) {
    const int n = get_global_id(0);
    if (n >= rows) return;
    const __global T *row = x + off + n * F;
    T m = 1;
    for (int f = 0; f < F; ++f) m = fmax(m, fabs(row[f]));
    const T inv_m = (T)1 / m;
    ACC total = 0;
    for (int f = 0; f < F; ++f) {
        const ACC v = (ACC)(row[f] * inv_m);
        total += v * v;
    }
    const T scale = inv_m / sqrt((T)(total / (ACC)F) + eps * inv_m * inv_m);
    r[n] = scale;
    for (int f = 0; f < F; ++f) out[n * F + f] = row[f] * scale;
}

#ifdef WG
// The same three row kernels with one work-group of WG items per row (GPUs, rows of 64
// or more; the one-item kernels above leave a GPU nearly idle with few rows): items
// stride over the row, then tree reductions in local memory for the max and the sum.
#define ROW_REDUCE(part, lid, value, COMBINE)                                      \
    do {                                                                           \
        (part)[lid] = (value);                                                     \
        barrier(CLK_LOCAL_MEM_FENCE);                                              \
        for (int s_ = WG / 2; s_ > 0; s_ >>= 1) {                                  \
            if ((lid) < s_) (part)[lid] = COMBINE((part)[lid], (part)[(lid) + s_]); \
            barrier(CLK_LOCAL_MEM_FENCE);                                          \
        }                                                                          \
    } while (0)
#define ROW_ADD(a, b) ((a) + (b))

// The maximum of a row of K, reduced over the work-group: every item returns it.
inline T group_row_max(const __global T *row, const int K, const int lid, __local ACC *part) {
    T top = -INFINITY;
    for (int k = lid; k < K; k += WG) top = fmax(top, row[k]);
    ROW_REDUCE(part, lid, (ACC)top, fmax);
    top = (T)part[0];
    barrier(CLK_LOCAL_MEM_FENCE);  // every item has read part[0] before it is reused
    return top;
}

// Softmax over the last axis of contiguous (rows, K).
__kernel void k_softmax_group(__global T *out, __global const T *x, const int off,
                              const int K, const int log_out) {
    const int n = get_group_id(0), lid = get_local_id(0);
    const __global T *row = x + off + n * K;
    __global T *dst = out + n * K;
    __local ACC part[WG];
    const T top = group_row_max(row, K, lid, part);
    ACC total = 0;
    for (int k = lid; k < K; k += WG) total += (ACC)exp(row[k] - top);
    ROW_REDUCE(part, lid, total, ROW_ADD);
    total = part[0];
    if (log_out) {
        const T shift = top + (T)log(total);
        for (int k = lid; k < K; k += WG) dst[k] = row[k] - shift;
    } else {
        const T inv = (T)((ACC)1 / total);
        for (int k = lid; k < K; k += WG) dst[k] = exp(row[k] - top) * inv;
    }
}

#ifdef TI
__kernel void k_softmax_xent_group(__global T *loss, __global T *probs, __global const T *x,
                                   const int off, __global const TI *targets, const int toff,
                                   const int C, __global T *kept, const long ignore,
                                   const int has_ignore, const T smooth) {
    const int n = get_group_id(0), lid = get_local_id(0);
    const __global T *row = x + off + n * C;
    __global T *p = probs + n * C;
    __local ACC part[WG];
    const T top = group_row_max(row, C, lid, part);
    ACC total = 0, shifted = 0;
    for (int c = lid; c < C; c += WG) {
        const T e = exp(row[c] - top);
        p[c] = e;  // each item scales only what it wrote: no barrier needed for p
        total += (ACC)e;
        shifted += (ACC)(row[c] - top);
    }
    ROW_REDUCE(part, lid, total, ROW_ADD);
    total = part[0];
    if (smooth != (T)0) {  // (a kernel argument: every item of the group takes this branch)
        barrier(CLK_LOCAL_MEM_FENCE);  // every item has read part[0] before it is reused
        ROW_REDUCE(part, lid, shifted, ROW_ADD);
        shifted = part[0];
    }
    const T inv = (T)((ACC)1 / total);
    for (int c = lid; c < C; c += WG) p[c] *= inv;
    if (lid == 0) {
        const TI t = targets[toff + n];
        XENT_LOSS(n, t, total, row, top, shifted);
    }
}
#endif

__kernel void k_rms_div_group(__global T *out, __global T *r, __global const T *x,
                              const int off, const int F, const T eps) {
    const int n = get_group_id(0), lid = get_local_id(0);
    const __global T *row = x + off + n * F;
    __local ACC part[WG];
    T m = 1;
    for (int f = lid; f < F; f += WG) m = fmax(m, fabs(row[f]));
    ROW_REDUCE(part, lid, (ACC)m, fmax);
    m = (T)part[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    const T inv_m = (T)1 / m;
    ACC total = 0;
    for (int f = lid; f < F; f += WG) {
        const ACC v = (ACC)(row[f] * inv_m);
        total += v * v;
    }
    ROW_REDUCE(part, lid, total, ROW_ADD);
    const T scale = inv_m / sqrt((T)(part[0] / (ACC)F) + eps * inv_m * inv_m);
    if (lid == 0) r[n] = scale;
    for (int f = lid; f < F; f += WG) out[n * F + f] = row[f] * scale;
}
#endif

#ifdef ACT
// out = act(x + bias[f]) over a contiguous (rows, F) x, on a 2-d range (f, row): no
// integer modulo per element (it made this kernel ~10x slower on PoCL).
__kernel void k_bias_act(__global T *out, __global const T *x, const int off,
                         __global const T *bias, const int boff, const int rows, const int F,
                         const T slope) {
    const int f = get_global_id(0), row = get_global_id(1);
    if (f >= F || row >= rows) return;
    const int i = row * F + f;
    const T z = x[off + i] + bias[boff + f];
#if ACT == 0
    out[i] = z;
#elif ACT == 1
    out[i] = z < 0 ? (T)0 : z;
#elif ACT == 2
    out[i] = z > 0 ? z : slope * z;
#elif ACT == 3
    out[i] = SIGMOID(z, T);
#elif ACT == 4
    out[i] = SAFE_TANH(z, T);
#elif ACT == 5
    out[i] = z * SIGMOID(z, T);
#elif ACT == 6
    out[i] = GELU(z, T);
#else
    out[i] = SOFTPLUS(z, T);
#endif
}
#endif

#ifdef ACT
// dL/dz for out = act(z) given g = dL/dout. relu reads out > 0 (NaN passes
// nothing), as the core's composite does; z is only read where it is needed.
#define ACT_NEEDS_Z (ACT == 2 || ACT >= 5)
inline T act_grad(const T z, const T o, const T g, const T slope) {
#if ACT == 0
    return g;
#elif ACT == 1
    return o == (T)0 ? (T)0 : g;  // (z <= 0 gives 0; a NaN z passes g, as PyTorch's)
#elif ACT == 2
    return z > 0 ? g : g * slope;
#elif ACT == 3
    return g * (o * ((T)1 - o));
#elif ACT == 4
    return g * ((T)1 - o * o);
#elif ACT == 5
    const T s = SIGMOID(z, T);
    return g * (s * (z * ((T)1 - s) + (T)1));
#elif ACT == 6
    const T cdf = (erf(z * (T)M_SQRT1_2) + (T)1) * (T)0.5;
    const T pdf = exp(z * z * (T)-0.5) * (T)0.39894228040143267794;
    return g * (cdf + z * pdf);
#else
    return g * SIGMOID(z, T);
#endif
}

// bias_act's backward over contiguous (rows, F) arrays: dz = grad * act'(x + bias) and
// dbias[f] = sum of dz[:, f] (accumulated in ACC), one work-item per column f.
__kernel void k_bias_act_backward(__global T *dz, __global T *dbias, __global const T *x,
                                  const int xoff, __global const T *bias, const int boff,
                                  __global const T *out, const int ooff,
                                  __global const T *grad, const int goff, const int rows,
                                  const int F, const T slope) {
    const int f = get_global_id(0);
    if (f >= F) return;
    const T b = bias[boff + f];
    ACC acc = 0;
    for (int r = 0; r < rows; ++r) {
        const int i = r * F + f;
        const T z = ACT_NEEDS_Z ? x[xoff + i] + b : (T)0;
        const T d = act_grad(z, out[ooff + i], grad[goff + i], slope);
        dz[i] = d;
        acc += d;
    }
    dbias[f] = (T)acc;
}

// dz alone on a 2-d range (f, row), for tall arrays on GPUs (the bias gradient is
// then a reduction).
__kernel void k_act_grad(__global T *dz, __global const T *x, const int xoff,
                         __global const T *bias, const int boff, __global const T *out,
                         const int ooff, __global const T *grad, const int goff,
                         const int rows, const int F, const T slope) {
    const int f = get_global_id(0), r = get_global_id(1);
    if (f >= F || r >= rows) return;
    const int i = r * F + f;
    const T z = ACT_NEEDS_Z ? x[xoff + i] + bias[boff + f] : (T)0;
    dz[i] = act_grad(z, out[ooff + i], grad[goff + i], slope);
}

// sums[f] = sum over the rows of a contiguous (rows, F) array's column f: one work-item
// per 4 columns, read as vectors (the bias gradient of an identity bias_act, whose dz is
// grad itself). The reductions' column kernel ran a work-item per column, unvectorised.
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define ACC4 CAT(ACC, 4)
__kernel void k_col_sums(__global T *sums, __global const T *x, const int off,
                         const int rows, const int F) {
    const int f = get_global_id(0) * 4;
    if (f >= F) return;
    const __global T *col = x + off + f;
    if (f + 4 <= F) {
        ACC4 acc = 0;
        for (int r = 0; r < rows; ++r) acc += CAT(convert_, ACC4)(vload4(0, col + r * F));
        vstore4(CAT(convert_, CAT(T, 4))(acc), 0, sums + f);
    } else {
        for (int c = 0; c < F - f; ++c) {
            ACC acc = 0;
            for (int r = 0; r < rows; ++r) acc += col[r * F + c];
            sums[f + c] = (T)acc;
        }
    }
}
#endif

#ifdef TI
// dlogits[n, c] = (probs[n, c] - (c == targets[n])) * grad[n * gstride] on a 2-d range
// (c, n); gstride is 0 for a broadcast scalar gradient (the mean's). A target outside
// [0, C) makes its row NaN, as its loss is: an optimizer step must not go ahead on it.
// With has_ignore, a row whose target equals ignore is p * 0 (a NaN p stays NaN); with
// smooth = s, (p - (1 - s) [c == t] - s / C) * grad.
__kernel void k_softmax_xent_backward(__global T *out, __global const T *probs,
                                      const int poff, __global const TI *targets,
                                      const int toff, __global const T *grad, const int goff,
                                      const int gstride, const int N, const int C,
                                      const long ignore, const int has_ignore,
                                      const T smooth) {
    const int c = get_global_id(0), n = get_global_id(1);
    if (c >= C || n >= N) return;
    const int i = n * C + c;
    const TI t = targets[toff + n];
    const T p = probs[poff + i];
    if (has_ignore && (long)t == ignore) {
        out[i] = p * (T)0;
        return;
    }
    const T q = (c == t ? p - ((T)1 - smooth) : p) - smooth / (T)C;
    out[i] = (t < 0 || t >= C) ? (T)NAN : q * grad[goff + n * gstride];
}
#endif
