// The packing passes of convolutions: B of the packed GEMM as a conv input's
// transposed im2col, written straight into the panels. Included by matmul.cl under
// #ifdef KC, after matmul_packed.cl (NR, T, UNROLL in scope).

// B as the transposed im2col of a conv1d input x (N, C, L), without building it: row
// k = n * L_out + l, column j = c * KS + tap holds x[n, c, l * stride + tap * dilation -
// padding] (0 outside [0, L)); the columns of group g start at channel c0. A work-item
// packs rows [8 i, 8 i + 8) of one panel (fewer, longer work-items: PoCL's per-item cost
// dominated with one row each); rows whose window is inside x skip the bound checks.
inline void pack_im2col_row(const int k, const int p, const int NC, __global const T *x,
                            const int sxn, const int sxc, const int sxl, const int L,
                            const int L_out, const int KS, const int stride,
                            const int padding, const int dilation, const int K,
                            __global T *Bp) {
    const int n = k / L_out, l = k - n * L_out;
    const int base = l * stride - padding;
    __global T *dst = Bp + ((long)p * K + k) * NR;
    int ci = p * NR / KS, tap = p * NR - ci * KS;  // column j = ci * KS + tap, stepped
    const __global T *row = x + n * sxn + ci * sxc;
    if (base >= 0 && base + (KS - 1) * dilation < L && (p + 1) * NR <= NC) {
        row += base * sxl;
        UNROLL for (int c = 0; c < NR; ++c) {
            dst[c] = row[tap * dilation * sxl];
            if (++tap == KS) {
                tap = 0;
                row += sxc;
            }
        }
        return;
    }
    for (int c = 0; c < NR; ++c) {
        const int pos = base + tap * dilation;
        dst[c] = (p * NR + c < NC && pos >= 0 && pos < L) ? row[pos * sxl] : (T)0;
        if (++tap == KS) {
            tap = 0;
            row += sxc;
        }
    }
}

__kernel void k_pack_b_im2col(const int K, const int NC, __global const T *x, const int offx,
                              const int sxn, const int sxc, const int sxl, const int L,
                              const int L_out, const int KS, const int stride,
                              const int padding, const int dilation, const int c0,
                              __global T *Bp) {
    const int k0 = get_global_id(0) * 8, p = get_global_id(1);
    const int k1 = k0 + 8 < K ? k0 + 8 : K;
    for (int k = k0; k < k1; ++k)
        pack_im2col_row(k, p, NC, x + offx + c0 * sxc, sxn, sxc, sxl, L, L_out, KS, stride,
                        padding, dilation, K, Bp);
}

// B as the transposed im2col of a conv2d input x (N, C, H, W), as k_pack_b_im2col: row
// k = (n * OH + i) * OW + j, column c = (ci * KH + a) * KW + b holds x[n, c0 + ci,
// i * sh + a * dh - top, j * sw + b * dw - left] (0 outside x). A work-item packs rows
// [8 r, 8 r + 8) of one panel: its NR columns' tap offsets are worked out once, then a row
// whose window lies inside x is NR unrolled loads at fixed offsets, another one bound test
// per axis and column (1.3-1.45x faster than stepping the column walk on every row). Columns
// past NC (the last panel's padding) read column j0's tap: the GEMM never stores them.
__kernel void k_pack_b_im2col2d(const int K, const int NC, __global const T *x,
                                const int offx, const int sxn, const int sxc, const int sxh,
                                const int sxw, const int H, const int W, const int OH,
                                const int OW, const int KH, const int KW, const int sh,
                                const int sw, const int top, const int left, const int dh,
                                const int dw, const int c0, __global T *Bp) {
    const int k0 = get_global_id(0) * 8, p = get_global_id(1);
    const int k1 = k0 + 8 < K ? k0 + 8 : K;
    const int taps = KH * KW;
    const int j0 = p * NR;
    int ho[NR], wo[NR], off[NR];  // per column: its tap's row and column, its offset in x
    const int ci0 = j0 / taps;
    int ci = 0, a = (j0 - ci0 * taps) / KW, b = j0 - ci0 * taps - a * KW;
    const int a0 = a, b0 = b;
    UNROLL for (int c = 0; c < NR; ++c) {
        const int live = j0 + c < NC;
        ho[c] = (live ? a : a0) * dh;
        wo[c] = (live ? b : b0) * dw;
        off[c] = (live ? ci : 0) * sxc + ho[c] * sxh + wo[c] * sxw;
        if (++b == KW) {
            b = 0;
            if (++a == KH) {
                a = 0;
                ++ci;
            }
        }
    }
    x += offx + (c0 + ci0) * sxc;
    for (int k = k0; k < k1; ++k) {
        const int n = k / (OH * OW), rem = k - n * (OH * OW);
        const int i = rem / OW, j = rem - i * OW;
        const int hb = i * sh - top, wb = j * sw - left;
        __global T *dst = Bp + ((long)p * K + k) * NR;
        const __global T *base = x + n * sxn + hb * sxh + wb * sxw;
        if (hb >= 0 && hb + (KH - 1) * dh < H && wb >= 0 && wb + (KW - 1) * dw < W) {
            UNROLL for (int c = 0; c < NR; ++c) dst[c] = base[off[c]];
            continue;
        }
        UNROLL for (int c = 0; c < NR; ++c) {
            const int h = hb + ho[c], w = wb + wo[c];
            dst[c] = ((uint)h < (uint)H && (uint)w < (uint)W) ? base[off[c]] : (T)0;
        }
    }
}

// B[n] as the im2col of sample n of a conv2d input x (N, C, H, W), for the forward product
// out[n] (C_out, Q) = W (C_out, CK) @ B[n] (CK, Q), Q = OH * OW: row k = (ci * KH + a) * KW
// + b, column q = i * OW + j holds x[n, c0 + ci, i * sh + a * dh - top, j * sw + b * dw -
// left] (0 outside x and past Q). Work-item (kb, p, n) packs rows [8 kb, 8 kb + 8) of panel
// p of sample n: the panel's NR window corners are worked out once, then each row is NR
// unrolled loads with one unsigned bounds test per axis (a panel spans rows of a small
// image, so there is no run to copy whole; 2x faster than stepping the positions per row).
__kernel void k_pack_b_im2col2d_fwd(const int K, const int Q, __global const T *x,
                                    const int offx, const int sxn, const int sxc,
                                    const int sxh, const int sxw, const int H, const int W,
                                    const int OW, const int KH, const int KW, const int sh,
                                    const int sw, const int top, const int left,
                                    const int dh, const int dw, const int c0,
                                    __global T *Bp) {
    const int k0 = get_global_id(0) * 8, p = get_global_id(1), n = get_global_id(2);
    const int k1 = k0 + 8 < K ? k0 + 8 : K;
    const int panels = (Q + NR - 1) / NR, taps = KH * KW;
    const int q0 = p * NR;
    int hb[NR], wb[NR];
    int i = q0 / OW, j = q0 - i * OW;
    UNROLL for (int c = 0; c < NR; ++c) {
        hb[c] = q0 + c < Q ? i * sh - top : -(1 << 28);  // past Q: outside every row
        wb[c] = j * sw - left;
        if (++j == OW) {
            j = 0;
            ++i;
        }
    }
    x += offx + n * sxn + c0 * sxc;
    __global T *dst = Bp + (((long)n * panels + p) * K + k0) * NR;
    int ci = k0 / taps, a = (k0 - ci * taps) / KW, b = k0 - ci * taps - a * KW;
    for (int k = k0; k < k1; ++k, dst += NR) {
        const int hoff = a * dh, woff = b * dw;
        const __global T *plane = x + ci * sxc;
        UNROLL for (int c = 0; c < NR; ++c) {
            const int h = hb[c] + hoff, w = wb[c] + woff;
            dst[c] = ((uint)h < (uint)H && (uint)w < (uint)W) ? plane[h * sxh + w * sxw] : (T)0;
        }
        if (++b == KW) {
            b = 0;
            if (++a == KH) {
                a = 0;
                ++ci;
            }
        }
    }
}
