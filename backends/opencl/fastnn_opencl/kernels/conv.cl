// conv1d helpers around the GEMM: im2col (any input strides, any output
// layout) and a gather-style col2im that needs no atomics. Host defines: T.
//
// cols[row, col] with row = ci * K + k and col = n * L_out + l holds
// x[n, ci, l * stride + k * dilation - padding] (0 outside [0, L)); it is
// written at cols[row * rs + col * cs], so the same kernel builds cols (rs =
// N * L_out, cs = 1) or its transpose (rs = 1, cs = C_in * K).

__kernel void k_im2col(__global T *cols, __global const T *x, const int off, const int sxn,
                       const int sxc, const int sxl, const int N, const int C, const int L,
                       const int K, const int L_out, const int stride, const int padding,
                       const int dilation, const int rs, const int cs) {
    // a 3-d range (l, n, row): one integer division per item instead of four
    const int l = get_global_id(0), n = get_global_id(1), row = get_global_id(2);
    if (l >= L_out) return;
    const int ci = row / K;
    const int k = row - ci * K;
    const int pos = l * stride + k * dilation - padding;
    const T value = (pos >= 0 && pos < L) ? x[off + n * sxn + ci * sxc + pos * sxl] : (T)0;
    cols[row * rs + (n * L_out + l) * cs] = value;
}

// dx[n, ci, t] = sum over taps k with t + padding - k * dilation = l * stride, 0 <= l < L_out,
// of dcols[ci * K + k, n * L_out + l].
__kernel void k_col2im(__global T *dx, __global const T *dcols, const int N, const int C,
                       const int L, const int K, const int L_out, const int stride,
                       const int padding, const int dilation) {
    const int i = get_global_id(0);
    if (i >= N * C * L) return;
    const int t = i % L;
    const int ci = (i / L) % C;
    const int n = i / (L * C);
    T acc = 0;
    for (int k = 0; k < K; ++k) {
        const int pos = t + padding - k * dilation;
        if (pos < 0 || pos % stride) continue;
        const int l = pos / stride;
        if (l < L_out) acc += dcols[(ci * K + k) * (N * L_out) + n * L_out + l];
    }
    dx[i] = acc;
}

#ifdef TC
// ---- Direct stride-1 kernels for CPU devices (no im2col buffer). Host defines: VW (lanes),
// TC x VN (output channels x vectors of positions per work-item of k_conv1d_direct) and
// TO x TJ (output channels x (input channel, tap) columns of k_conv1d_grad_weight); one
// program holds both. No builtin calls in the loops (see matmul.cl).
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define VT CAT(T, VW)
typedef VT __attribute__((aligned(sizeof(T)))) VT_UNALIGNED;
#define VLOAD(p) (*(const __global VT_UNALIGNED *)(p))
#define UNROLL _Pragma("unroll")

// VW lanes of row[pos ...], 0 outside [0, L)
inline VT load_lanes(const __global T *row, const int pos, const int L) {
    if (pos >= 0 && pos + VW <= L) return VLOAD(row + pos);
    T lanes[VW];
    for (int v = 0; v < VW; ++v) lanes[v] = (pos + v >= 0 && pos + v < L) ? row[pos + v] : (T)0;
    return *(VT_UNALIGNED *)lanes;
}

//   out[n, g*Cout_g + o, l] = sum_{i < Cin_g, k < K} w(g, o, i, k) * x[n, g*Cin_g + i, l + k*dil - pad]
// with w(g, o, i, k) = w[woff + g*swg + o*swo + i*swi + k*swk], so a transposed, flipped
// weight (the input gradient is this convolution of grad_out) is only other strides.
// Each work-item computes TC output channels of one group at VN * VW consecutive
// positions: TC x VN vector accumulators, VN x vector loads per (i, k), scalar weights
// broadcast. A work-item whose window lies inside x (all but the first and last of a
// row) takes the loop without bound checks. Channels past the group's last one read a
// valid weight row and are not stored. x needs unit stride along its length; out is
// written at out[n*son + channel*soc + l].
// NOTE: testing the window once per work-item instead of per (i, k) ran 1.3x faster on
// PoCL (AVX2); 4 x 2 vectors of 8 floats another 1.05-1.1x over 8 x 1 (4 x 3 and 6 x 2
// about level with 4 x 2).
#define BL (VW * VN)
__kernel void k_conv1d_direct(__global T *out, const int son, const int soc,
                              __global const T *x, const int xoff, const int sxn, const int sxc,
                              __global const T *w, const int woff, const int swg, const int swo,
                              const int swi, const int swk, const int Cin_g, const int Cout_g,
                              const int L, const int L_out, const int K, const int padding,
                              const int dilation) {
    const int l0 = get_global_id(0) * BL;
    const int n = get_global_id(1);
    const int blocks = (Cout_g + TC - 1) / TC;
    const int g = get_global_id(2) / blocks;
    const int o0 = (get_global_id(2) - g * blocks) * TC;
    if (l0 >= L_out) return;
    const int chans = Cout_g - o0 < TC ? Cout_g - o0 : TC;
    int wrow[TC];
    UNROLL for (int c = 0; c < TC; ++c) wrow[c] = woff + g * swg + (c < chans ? o0 + c : o0) * swo;
    VT acc[TC][VN];
    UNROLL for (int c = 0; c < TC; ++c) UNROLL for (int v = 0; v < VN; ++v) acc[c][v] = (VT)0;
    const __global T *xrow = x + xoff + n * sxn + g * Cin_g * sxc;
    const int inside = l0 - padding >= 0 && l0 + BL + (K - 1) * dilation - padding <= L;
    for (int i = 0; i < Cin_g; ++i, xrow += sxc) {
        for (int k = 0; k < K; ++k) {
            const int pos = l0 + k * dilation - padding;
            VT xv[VN];
            if (inside) {
                UNROLL for (int v = 0; v < VN; ++v) xv[v] = VLOAD(xrow + pos + v * VW);
            } else {
                UNROLL for (int v = 0; v < VN; ++v) xv[v] = load_lanes(xrow, pos + v * VW, L);
            }
            const int wik = i * swi + k * swk;
            UNROLL for (int c = 0; c < TC; ++c) {
                const VT wv = (VT)(w[wrow[c] + wik]);
                UNROLL for (int v = 0; v < VN; ++v) acc[c][v] += wv * xv[v];
            }
        }
    }
    __global T *o = out + n * son + (g * Cout_g + o0) * soc + l0;
    if (l0 + BL <= L_out) {
        UNROLL for (int c = 0; c < TC; ++c) {
            if (c < chans) {
                UNROLL for (int v = 0; v < VN; ++v) *(__global VT_UNALIGNED *)(o + c * soc + v * VW) = acc[c][v];
            }
        }
    } else {
        UNROLL for (int c = 0; c < TC; ++c) {
            if (c < chans) {
                T lanes[BL];
                UNROLL for (int v = 0; v < VN; ++v) *(VT_UNALIGNED *)(lanes + v * VW) = acc[c][v];
                for (int q = 0; q < L_out - l0; ++q) o[c * soc + q] = lanes[q];
            }
        }
    }
}

// The stride-1 weight gradient as dot products along the positions (no im2col, no packing):
//   dw[s][g*Cout_g + o, j] = sum over (n, l) of g[n, g*Cout_g + o, l] * x[n, g*Cin_g + ci, l + tap*dil - pad]
// with column j = ci * K + tap, over the (sample, position-vector) pairs [P0 s, P0 (s + 1)) of
// split s (dimension 2; each split writes its own Cout x Cin_g*K slice of dw, summed after
// by k_sum_slices). Each work-item holds TO x TJ vector accumulators (TO channels by TJ
// columns), per position vector TJ shifted x loads and TO grad loads, and adds the lanes
// up at the end. Vectors with a lane past L_out or a tap outside x take the checked loads.
// x and g need unit stride along their lengths.
__kernel void k_conv1d_grad_weight(__global T *dw, __global const T *x, const int xoff,
                                   const int sxn, const int sxc, __global const T *gr,
                                   const int goff, const int sgn, const int sgc,
                                   const int Cin_g, const int Cout_g, const int groups,
                                   const int L, const int L_out, const int K,
                                   const int padding, const int dilation, const int pairs,
                                   const int per_split) {
    const int CK = Cin_g * K;
    const int j0 = get_global_id(0) * TJ;
    const int oblocks = (Cout_g + TO - 1) / TO;
    const int g = get_global_id(1) / oblocks;
    const int o0 = (get_global_id(1) - g * oblocks) * TO;
    const int split = get_global_id(2);
    if (j0 >= CK || g >= groups) return;
    const int chans = Cout_g - o0 < TO ? Cout_g - o0 : TO;
    const int cols = CK - j0 < TJ ? CK - j0 : TJ;
    int xcol[TJ], shift[TJ], grow[TO];
    UNROLL for (int t = 0; t < TJ; ++t) {
        const int j = j0 + (t < cols ? t : 0);
        const int ci = j / K, tap = j - ci * K;
        shift[t] = tap * dilation - padding;
        xcol[t] = xoff + (g * Cin_g + ci) * sxc + shift[t];
    }
    UNROLL for (int c = 0; c < TO; ++c) grow[c] = goff + (g * Cout_g + (c < chans ? o0 + c : o0)) * sgc;
    VT acc[TO][TJ];
    UNROLL for (int c = 0; c < TO; ++c) UNROLL for (int t = 0; t < TJ; ++t) acc[c][t] = (VT)0;
    // vectors at l0 in [lo, hi - VW] read every tap inside x and no lane past L_out
    const int lo = padding > 0 ? (padding + VW - 1) / VW * VW : 0;
    const int reach = (K - 1) * dilation - padding;
    const int hi = L - reach < L_out ? L - reach : L_out;
    const int nv = (L_out + VW - 1) / VW;
    const int p0 = split * per_split;
    const int p1 = p0 + per_split < pairs ? p0 + per_split : pairs;
    for (int p = p0; p < p1;) {  // one sample's run of vectors at a time
        const int n = p / nv, v0 = p - n * nv;
        const int v1 = nv - v0 < p1 - p ? nv : v0 + p1 - p;
        p += v1 - v0;
        const __global T *xn = x + n * sxn;
        const __global T *gn = gr + n * sgn;
        for (int l0 = v0 * VW; l0 < v1 * VW; l0 += VW) {
            VT xv[TJ];
            if (l0 >= lo && l0 + VW <= hi) {
                UNROLL for (int t = 0; t < TJ; ++t) xv[t] = VLOAD(xn + xcol[t] + l0);
                UNROLL for (int c = 0; c < TO; ++c) {
                    const VT gv = VLOAD(gn + grow[c] + l0);
                    UNROLL for (int t = 0; t < TJ; ++t) acc[c][t] += gv * xv[t];
                }
            } else {
                UNROLL for (int t = 0; t < TJ; ++t) {
                    T lanes[VW];
                    for (int q = 0; q < VW; ++q) {
                        const int l = l0 + q, pos = l + shift[t];
                        lanes[q] = (l < L_out && pos >= 0 && pos < L) ? xn[xcol[t] + l] : (T)0;
                    }
                    xv[t] = *(VT_UNALIGNED *)lanes;
                }
                UNROLL for (int c = 0; c < TO; ++c) {
                    T lanes[VW];
                    for (int q = 0; q < VW; ++q) lanes[q] = l0 + q < L_out ? gn[grow[c] + l0 + q] : (T)0;
                    const VT gv = *(VT_UNALIGNED *)lanes;
                    UNROLL for (int t = 0; t < TJ; ++t) acc[c][t] += gv * xv[t];
                }
            }
        }
    }
    __global T *d = dw + (long)split * groups * Cout_g * CK + (g * Cout_g + o0) * CK + j0;
    UNROLL for (int c = 0; c < TO; ++c) {
        UNROLL for (int t = 0; t < TJ; ++t) {
            if (c < chans && t < cols) {
                T lanes[VW];
                *(VT_UNALIGNED *)lanes = acc[c][t];
                T sum = 0;
                UNROLL for (int q = 0; q < VW; ++q) sum += lanes[q];
                d[c * CK + t] = sum;
            }
        }
    }
}

// out[i] = sum over s < S of parts[s * size + i]: the splits of k_conv1d_grad_weight.
__kernel void k_sum_slices(__global T *out, __global const T *parts, const int size,
                           const int S) {
    const int i = get_global_id(0);
    if (i >= size) return;
    T acc = 0;
    for (int s = 0; s < S; ++s) acc += parts[(long)s * size + i];
    out[i] = acc;
}
#endif
