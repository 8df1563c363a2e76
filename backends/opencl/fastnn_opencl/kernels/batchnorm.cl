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

// Sums over a plane run in LANES independent accumulators (one dependent chain of double
// adds ran 3-4x slower on PoCL 3.1); the elementwise passes give a work-item RUN (a host
// define) values of a plane (one value per work-item cost PoCL several times a loop).
#define LANES 8
#define UNROLL _Pragma("unroll")
#define SUM_LANES(l) ((((l)[0] + (l)[1]) + ((l)[2] + (l)[3])) + (((l)[4] + (l)[5]) + ((l)[6] + (l)[7])))

// part (C, N, 2) = (mean, M2) of x[n, c, :]; global (C, N)
__kernel void k_bn_partial(const int N, const int C, const int S, __global const T *x,
                           const int off_x, const int sxn, const int sxc,
                           __global ACC *part) {
    const int c = get_global_id(0), n = get_global_id(1);
    if (c >= C || n >= N) return;
    const __global T *p = x + off_x + (long)n * sxn + (long)c * sxc;
    const int s_vec = S - S % LANES;
    ACC lane[LANES];
    UNROLL for (int j = 0; j < LANES; ++j) lane[j] = 0;
    for (int i = 0; i < s_vec; i += LANES) {
        UNROLL for (int j = 0; j < LANES; ++j) lane[j] += p[i + j];
    }
    for (int i = s_vec; i < S; ++i) lane[0] += p[i];
    const ACC mean = SUM_LANES(lane) / S;
    UNROLL for (int j = 0; j < LANES; ++j) lane[j] = 0;
    for (int i = 0; i < s_vec; i += LANES) {
        UNROLL for (int j = 0; j < LANES; ++j) {
            const ACC d = p[i + j] - mean;
            lane[j] += d * d;
        }
    }
    for (int i = s_vec; i < S; ++i) {
        const ACC d = p[i] - mean;
        lane[0] += d * d;
    }
    const ACC m2 = SUM_LANES(lane);
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

// out = (x - mean) * rstd * weight + bias; global (S / RUN, C, N)
__kernel void k_bn_apply(const int C, const int S, __global const T *x, const int off_x,
                         const int sxn, const int sxc, __global const T *stat, __global const T *weight, const int off_w,
                         __global const T *bias, const int off_b, __global T *out) {
    const int s0 = get_global_id(0) * RUN, c = get_global_id(1), n = get_global_id(2);
    const int s1 = S - s0 < RUN ? S : s0 + RUN;
    const T scale = stat[2 * c + 1] * weight[off_w + c];
    const T mean = stat[2 * c], shift = bias[off_b + c];
    const __global T *src = x + off_x + (long)n * sxn + (long)c * sxc;
    __global T *dst = out + ((long)n * C + c) * S;
    for (int s = s0; s < s1; ++s) dst[s] = (src[s] - mean) * scale + shift;
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
    const int s_vec = S - S % LANES;
    ACC lg[LANES], lgx[LANES];
    UNROLL for (int j = 0; j < LANES; ++j) lg[j] = lgx[j] = 0;
    for (int i = 0; i < s_vec; i += LANES) {
        UNROLL for (int j = 0; j < LANES; ++j) {
            lg[j] += g[i + j];
            lgx[j] += g[i + j] * ((p[i + j] - mean) * rstd);
        }
    }
    for (int i = s_vec; i < S; ++i) {
        lg[0] += g[i];
        lgx[0] += g[i] * ((p[i] - mean) * rstd);
    }
    part[(c * N + n) * 2] = SUM_LANES(lg);
    part[(c * N + n) * 2 + 1] = SUM_LANES(lgx);
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

// dx = weight * rstd * (grad - dbias / m - xhat * dweight / m); global (S / RUN, C, N)
__kernel void k_bnb_apply(const int C, const int S, __global const T *x, const int off_x,
                          const int sxn, const int sxc, __global const T *grad,
                          const int off_g, const int sgn, const int sgc,
                          __global const T *stat, __global const T *coef, __global T *dx) {
    const int s0 = get_global_id(0) * RUN, c = get_global_id(1), n = get_global_id(2);
    const int s1 = S - s0 < RUN ? S : s0 + RUN;
    const __global T *xs = x + off_x + (long)n * sxn + (long)c * sxc;
    const __global T *gs = grad + off_g + (long)n * sgn + (long)c * sgc;
    __global T *dst = dx + ((long)n * C + c) * S;
    const T mean = stat[2 * c], rstd = stat[2 * c + 1];
    const T w = coef[3 * c], gm = coef[3 * c + 1], gxm = coef[3 * c + 2];
    for (int s = s0; s < s1; ++s) dst[s] = w * (gs[s] - gm - (xs[s] - mean) * rstd * gxm);
}
