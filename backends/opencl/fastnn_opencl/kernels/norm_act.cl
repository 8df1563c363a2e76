// Layer normalisation over the last axis of contiguous (R, D) rows, forward and backward,
// and GELU's backward: one launch each where the core's composites took 9, 12 and 10.
// Host defines: T (float or double), ACC (the type row and column sums accumulate in:
// double where the device has it), VW (lanes of k_gelu_backward's vectors, at most 32
// bytes: PoCL builds no kernels for some 64-byte vectors).
// NOTE: no contraction into FMAs: g * w - mean(g) as one fma(g, w, -mean) is not 0 where
// the composite's is (one feature: dx must be exactly 0).
#pragma OPENCL FP_CONTRACT OFF

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define VT CAT(T, VW)
typedef VT __attribute__((aligned(sizeof(T)))) VT_UNALIGNED;

// out = (x - mean) * rstd * weight + bias, mean and rstd (R,) of each row (the biased
// variance, two passes: no E[x^2] - E[x]^2 cancellation). One work-item per row; the
// last pass rounds as the composite's ops do, in T.
__kernel void k_ln_train(const int R, const int D, __global const T *x, const int off_x,
                         __global const T *w, const int off_w, __global const T *b,
                         const int off_b, const ACC eps, __global T *out,
                         __global T *mean_out, __global T *rstd_out) {
    const int r = get_global_id(0);
    if (r >= R) return;
    const __global T *row = x + off_x + (long)r * D;
    ACC sum = 0;
    for (int i = 0; i < D; ++i) sum += row[i];
    const T mean = (T)(sum / D);
    ACC m2 = 0;
    for (int i = 0; i < D; ++i) {
        const ACC d = (ACC)row[i] - sum / D;
        m2 += d * d;
    }
    const T rstd = (T)((ACC)1 / sqrt(m2 / D + eps));
    __global T *dst = out + (long)r * D;
    for (int i = 0; i < D; ++i) dst[i] = (row[i] - mean) * rstd * w[off_w + i] + b[off_b + i];
    mean_out[r] = mean;
    rstd_out[r] = rstd;
}

// Work-items [0, R): row r's dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = grad *
// weight, xhat = (x - mean) * rstd. Work-items [R, R + D): column c's dweight = sum of
// grad * xhat and dbias = sum of grad over the rows. One launch for both (they read the
// same inputs and write apart).
__kernel void k_ln_backward(const int R, const int D, __global const T *x, const int off_x,
                            __global const T *w, const int off_w, __global const T *mean,
                            const int off_m, __global const T *rstd, const int off_r,
                            __global const T *grad, const int off_g, __global T *dx,
                            __global T *dw, __global T *db) {
    const int id = get_global_id(0);
    if (id < R) {
        const __global T *xr = x + off_x + (long)id * D;
        const __global T *gr = grad + off_g + (long)id * D;
        const T m = mean[off_m + id], rs = rstd[off_r + id];
        ACC a = 0, bsum = 0;
        for (int i = 0; i < D; ++i) {
            const T g = gr[i] * w[off_w + i];
            a += g;
            bsum += g * ((xr[i] - m) * rs);
        }
        const T am = (T)(a / D), bm = (T)(bsum / D);
        __global T *dst = dx + (long)id * D;
        for (int i = 0; i < D; ++i)
            dst[i] = (gr[i] * w[off_w + i] - am - (xr[i] - m) * rs * bm) * rs;
    } else if (id < R + D) {
        const int c = id - R;
        ACC sw = 0, sb = 0;
        for (int r = 0; r < R; ++r) {
            const T g = grad[off_g + (long)r * D + c];
            sw += g * ((x[off_x + (long)r * D + c] - mean[off_m + r]) * rstd[off_r + r]);
            sb += g;
        }
        dw[c] = (T)sw;
        db[c] = (T)sb;
    }
}

// dx = grad * (cdf(x) + x * pdf(x)) over n contiguous elements, one VW-lane vector per
// work-item (PoCL calls erf and exp once per vector), the last partial one by elements.
// A NaN or infinite x gives NaN, as the composite's formula does.
#define GELU_GRAD(x, g, T_) ((g) * (((T_)1 + erf((x) * (T)M_SQRT1_2)) * (T)0.5 \
    + (x) * exp((x) * (x) * (T)-0.5) * (T)0.39894228040143267794))

__kernel void k_gelu_backward(__global T *dx, __global const T *x, const int off_x,
                              __global const T *grad, const int off_g, const int n) {
    const int i = get_global_id(0) * VW;
    if (i + VW <= n) {
        const VT v = *(__global const VT_UNALIGNED *)(x + off_x + i);
        const VT g = *(__global const VT_UNALIGNED *)(grad + off_g + i);
        *(__global VT_UNALIGNED *)(dx + i) = GELU_GRAD(v, g, VT);
    } else {
        for (int j = i; j < n; ++j) {
            const T v = x[off_x + j];
            dx[j] = GELU_GRAD(v, grad[off_g + j], T);
        }
    }
}
