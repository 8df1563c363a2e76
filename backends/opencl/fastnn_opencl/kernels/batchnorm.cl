// Training-mode batch normalisation over x seen as (N, C, S), in three
// launches each way: per-(channel, sample) partial sums, a per-channel combine, and one
// elementwise pass. Host defines: T, ACC (the accumulation type: double where the
// device has it).
//
// x and grad are read through (sample, channel) strides with each (n, c) plane of S values
// contiguous (a conv output's (C, N, ...) buffer needs no copy); outputs are contiguous.
//
// Forward partials are each sample's mean and sum of squared deviations over S (two
// passes over the row, so no cancellation), combined as Chan et al.'s parallel variance.

// part (C, N, 2) = (mean, M2) of x[n, c, :]; global (C, N)
__kernel void k_bn_partial(const int N, const int C, const int S, __global const T *x,
                           const int off_x, const int sxn, const int sxc,
                           __global ACC *part) {
    const int c = get_global_id(0), n = get_global_id(1);
    if (c >= C || n >= N) return;
    const __global T *p = x + off_x + (long)n * sxn + (long)c * sxc;
    ACC sum = 0;
    for (int i = 0; i < S; ++i) sum += p[i];
    const ACC mean = sum / S;
    ACC m2 = 0;
    for (int i = 0; i < S; ++i) {
        const ACC d = p[i] - mean;
        m2 += d * d;
    }
    part[(c * N + n) * 2] = mean;
    part[(c * N + n) * 2 + 1] = m2;
}

// mean, var (C,) and stat (C, 2) = (mean, 1 / sqrt(var + eps)); global (C)
__kernel void k_bn_stats(const int N, const int C, const int S, __global const ACC *part,
                         const ACC eps, __global T *mean_out, __global T *var_out,
                         __global T *stat) {
    const int c = get_global_id(0);
    if (c >= C) return;
    const __global ACC *p = part + c * N * 2;
    ACC mean = 0;
    for (int n = 0; n < N; ++n) mean += p[2 * n];
    mean /= N;
    ACC m2 = 0;
    for (int n = 0; n < N; ++n) {
        const ACC d = p[2 * n] - mean;
        m2 += p[2 * n + 1] + S * d * d;
    }
    const ACC var = m2 / ((ACC)N * S);
    mean_out[c] = mean;
    var_out[c] = var;
    stat[2 * c] = mean;
    stat[2 * c + 1] = 1 / sqrt(var + eps);
}

// out = (x - mean) * rstd * weight + bias; global (S, C, N)
__kernel void k_bn_apply(const int C, const int S, __global const T *x, const int off_x,
                         const int sxn, const int sxc, __global const T *stat, __global const T *weight, const int off_w,
                         __global const T *bias, const int off_b, __global T *out) {
    const int s = get_global_id(0), c = get_global_id(1), n = get_global_id(2);
    if (s >= S) return;
    const long i = ((long)n * C + c) * S + s;
    const T scale = stat[2 * c + 1] * weight[off_w + c];
    out[i] = (x[off_x + (long)n * sxn + (long)c * sxc + s] - stat[2 * c]) * scale
             + bias[off_b + c];
}

// stat (C, 2) = (mean, 1 / sqrt(var + eps)) from the forward pass's mean and var
__kernel void k_bnb_stat(const int C, __global const T *mean, const int off_m,
                         __global const T *var, const int off_v, const ACC eps,
                         __global T *stat) {
    const int c = get_global_id(0);
    if (c >= C) return;
    stat[2 * c] = mean[off_m + c];
    stat[2 * c + 1] = 1 / sqrt((ACC)var[off_v + c] + eps);
}

// part (C, N, 2) = sums over x[n, c, :] of grad and grad * xhat; global (C, N)
__kernel void k_bnb_partial(const int N, const int C, const int S, __global const T *x,
                            const int off_x, const int sxn, const int sxc,
                            __global const T *grad, const int off_g, const int sgn,
                            const int sgc, __global const T *stat, __global ACC *part) {
    const int c = get_global_id(0), n = get_global_id(1);
    if (c >= C || n >= N) return;
    const __global T *p = x + off_x + (long)n * sxn + (long)c * sxc;
    const __global T *g = grad + off_g + (long)n * sgn + (long)c * sgc;
    const T mean = stat[2 * c], rstd = stat[2 * c + 1];
    ACC sg = 0, sgx = 0;
    for (int i = 0; i < S; ++i) {
        sg += g[i];
        sgx += g[i] * ((p[i] - mean) * rstd);
    }
    part[(c * N + n) * 2] = sg;
    part[(c * N + n) * 2 + 1] = sgx;
}

// dbias, dweight (C,) and coef (C, 3) = (weight * rstd, dbias / m, dweight / m); global (C)
__kernel void k_bnb_stats(const int N, const int C, const int S, __global const ACC *part,
                          __global const T *stat, __global const T *weight, const int off_w,
                          __global T *dweight, __global T *dbias, __global T *coef) {
    const int c = get_global_id(0);
    if (c >= C) return;
    const __global ACC *p = part + c * N * 2;
    ACC sg = 0, sgx = 0;
    for (int n = 0; n < N; ++n) {
        sg += p[2 * n];
        sgx += p[2 * n + 1];
    }
    const ACC m = (ACC)N * S;
    dbias[c] = sg;
    dweight[c] = sgx;
    coef[3 * c] = weight[off_w + c] * stat[2 * c + 1];
    coef[3 * c + 1] = sg / m;
    coef[3 * c + 2] = sgx / m;
}

// dx = weight * rstd * (grad - dbias / m - xhat * dweight / m); global (S, C, N)
__kernel void k_bnb_apply(const int C, const int S, __global const T *x, const int off_x,
                          const int sxn, const int sxc, __global const T *grad,
                          const int off_g, const int sgn, const int sgc,
                          __global const T *stat, __global const T *coef, __global T *dx) {
    const int s = get_global_id(0), c = get_global_id(1), n = get_global_id(2);
    if (s >= S) return;
    const long i = ((long)n * C + c) * S + s;
    const T xv = x[off_x + (long)n * sxn + (long)c * sxc + s];
    const T gv = grad[off_g + (long)n * sgn + (long)c * sgc + s];
    const T xhat = (xv - stat[2 * c]) * stat[2 * c + 1];
    dx[i] = coef[3 * c] * (gv - coef[3 * c + 1] - xhat * coef[3 * c + 2]);
}
