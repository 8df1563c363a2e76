// conv2d helpers around the GEMM: im2col (any input strides, either output layout) and a
// gather-style col2im that needs no atomics. Host defines: T.
//
// cols[row, col] with row = (ci * KH + a) * KW + b and col = (n * OH + i) * OW + j holds
// x[n, ci, i * sh + a * dh - top, j * sw + b * dw - left] (0 outside the input); it is
// written at cols[row * rs + col * cs], so the same kernel builds cols (rs = N * OH * OW,
// cs = 1) or its transpose (rs = 1, cs = C * KH * KW).

// One work-item per (output row m = n * OH + i, cols row): a loop over the OW columns,
// so the index arithmetic (divisions) is paid once per OW values, not per value.
// NOTE: the per-value version (a 3-d range) spent ~7 ns per value on its five integer
// divisions on PoCL: 35 ms for one ResNet layer, 10x the GEMM after it. rows_first puts
// the cols row on dimension 0: consecutive work-items then write neighbouring addresses
// of the transposed layout.
__kernel void k_im2col2d(__global T *cols, __global const T *x, const int off, const int sxn,
                         const int sxc, const int sxh, const int sxw, const int C, const int H,
                         const int W, const int KH, const int KW, const int OH, const int OW,
                         const int sh, const int sw, const int top, const int left,
                         const int dh, const int dw, const int rs, const int cs,
                         const int M, const int rows_first) {
    const int d0 = get_global_id(0), d1 = get_global_id(1);
    const int m = rows_first ? d1 : d0, row = rows_first ? d0 : d1;
    if (m >= M || row >= C * KH * KW) return;
    const int n = m / OH, i = m - n * OH;
    const int ci = row / (KH * KW);
    const int a = (row / KW) % KH, b = row % KW;
    const int h = i * sh + a * dh - top;
    __global T *dst = cols + row * rs + m * OW * cs;
    if (h < 0 || h >= H) {
        for (int j = 0; j < OW; ++j) dst[j * cs] = 0;
        return;
    }
    const __global T *src = x + off + n * sxn + ci * sxc + h * sxh;
    int w = b * dw - left;
    for (int j = 0; j < OW; ++j, w += sw) dst[j * cs] = (w >= 0 && w < W) ? src[w * sxw] : (T)0;
}

// dx[n, ci, h, w] = sum over taps (a, b) and outputs (i, j) with i * sh = h + top - a * dh
// and j * sw = w + left - b * dw of dcols[(ci * KH + a) * KW + b, (n * OH + i) * OW + j].
// One work-item per input row (n, ci, h): a loop over its W values.
__kernel void k_col2im2d(__global T *dx, __global const T *dcols, const int N, const int C,
                         const int H, const int W, const int KH, const int KW, const int OH,
                         const int OW, const int sh, const int sw, const int top,
                         const int left, const int dh, const int dw) {
    const int r = get_global_id(0);
    if (r >= N * C * H) return;
    const int h = r % H;
    const int ci = (r / H) % C;
    const int n = r / (H * C);
    const int cols = N * OH * OW;
    __global T *out = dx + r * W;
    for (int w = 0; w < W; ++w) out[w] = 0;
    for (int a = 0; a < KH; ++a) {
        const int ph = h + top - a * dh;
        if (ph < 0 || ph % sh) continue;
        const int i = ph / sh;
        if (i >= OH) continue;
        for (int b = 0; b < KW; ++b) {
            const __global T *src = dcols + ((ci * KH + a) * KW + b) * cols + (n * OH + i) * OW;
            // columns j with w = j * sw - left + b * dw inside [0, W)
            int j = 0, w = b * dw - left;
            for (; j < OW; ++j, w += sw) {
                if (w >= 0 && w < W) out[w] += src[j];
            }
        }
    }
}

#ifdef TC
// Direct stride-1 convolution for CPU devices (no im2col buffer), conv.cl's 1-d kernel
// with a loop over kernel rows:
//   out[n, g*Cout_g + o, i, l] = sum_{c < Cin_g, a < KH, b < KW} w(g, o, c, a, b)
//                                * x[n, g*Cin_g + c, i + a*dh - top, l + b*dw - left]
// with w(g, o, c, a, b) = w[woff + g*swg + o*swo + c*swi + a*swa + b*swb], so the input
// gradient (this convolution of grad_out with the transposed, flipped weight) is only
// other strides. Each work-item computes TC output channels of one group at VW
// consecutive columns of one output row: TC vector accumulators, one x vector load per
// (c, a, b) (lane by lane in the padding), scalar weights broadcast. Rows of x outside
// the input are skipped. x needs unit stride along its width; out is written at
// out[n*son + channel*soc + i*soh + l]. No builtin calls in the loops (see matmul.cl).
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define VT CAT(T, VW)
typedef VT __attribute__((aligned(sizeof(T)))) VT_UNALIGNED;
#define UNROLL _Pragma("unroll")

__kernel void k_conv2d_direct(__global T *out, const int son, const int soc, const int soh,
                              __global const T *x, const int xoff, const int sxn, const int sxc,
                              const int sxh, __global const T *w, const int woff,
                              const int swg, const int swo, const int swi, const int swa,
                              const int swb, const int Cin_g, const int Cout_g, const int H,
                              const int W, const int OH, const int OW, const int KH,
                              const int KW, const int top, const int left, const int dh,
                              const int dw) {
    const int l0 = get_global_id(0) * VW;
    const int m = get_global_id(1);
    const int n = m / OH, i = m - n * OH;
    const int blocks = (Cout_g + TC - 1) / TC;
    const int g = get_global_id(2) / blocks;
    const int o0 = (get_global_id(2) - g * blocks) * TC;
    if (l0 >= OW) return;
    const int chans = Cout_g - o0 < TC ? Cout_g - o0 : TC;
    int wrow[TC];
    UNROLL for (int c = 0; c < TC; ++c) wrow[c] = woff + g * swg + (c < chans ? o0 + c : o0) * swo;
    VT acc[TC];
    UNROLL for (int c = 0; c < TC; ++c) acc[c] = (VT)0;
    for (int ci = 0; ci < Cin_g; ++ci) {
        const __global T *plane = x + xoff + n * sxn + (g * Cin_g + ci) * sxc;
        for (int a = 0; a < KH; ++a) {
            const int y = i + a * dh - top;
            if (y < 0 || y >= H) continue;
            const __global T *xrow = plane + y * sxh;
            for (int b = 0; b < KW; ++b) {
                const int pos = l0 + b * dw - left;
                VT xv;
                if (pos >= 0 && pos + VW <= W) {
                    xv = *(const __global VT_UNALIGNED *)(xrow + pos);
                } else {
                    T lanes[VW];
                    for (int v = 0; v < VW; ++v) {
                        lanes[v] = (pos + v >= 0 && pos + v < W) ? xrow[pos + v] : (T)0;
                    }
                    xv = *(VT_UNALIGNED *)lanes;
                }
                const int wk = ci * swi + a * swa + b * swb;
                UNROLL for (int c = 0; c < TC; ++c) acc[c] += (VT)(w[wrow[c] + wk]) * xv;
            }
        }
    }
    __global T *o = out + n * son + (g * Cout_g + o0) * soc + i * soh + l0;
    if (l0 + VW <= OW) {
        UNROLL for (int c = 0; c < TC; ++c) {
            if (c < chans) *(__global VT_UNALIGNED *)(o + c * soc) = acc[c];
        }
    } else {
        UNROLL for (int c = 0; c < TC; ++c) {
            if (c < chans) {
                T lanes[VW];
                *(VT_UNALIGNED *)lanes = acc[c];
                for (int v = 0; v < OW - l0; ++v) o[c * soc + v] = lanes[v];
            }
        }
    }
}
#endif
