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
// Direct stride-1 convolution for CPU devices (no im2col buffer):
//   out[n, g*Cout_g + o, l] = sum_{i < Cin_g, k < K} w(g, o, i, k) * x[n, g*Cin_g + i, l + k*dil - pad]
// with w(g, o, i, k) = w[woff + g*swg + o*swo + i*swi + k*swk], so a transposed, flipped
// weight (the input gradient is this convolution of grad_out) is only other strides.
// Each work-item computes TC output channels of one group at VW consecutive positions:
// TC vector accumulators, one x vector load per (i, k) (lane-by-lane in the padding),
// scalar weights broadcast. Channels past the group's last one read a valid weight row
// and are not stored. x needs unit stride along its length; out is written at
// out[n*son + channel*soc + l]. No builtin calls in the loops (see matmul.cl).
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define VT CAT(T, VW)
typedef VT __attribute__((aligned(sizeof(T)))) VT_UNALIGNED;
#define UNROLL _Pragma("unroll")

__kernel void k_conv1d_direct(__global T *out, const int son, const int soc,
                              __global const T *x, const int xoff, const int sxn, const int sxc,
                              __global const T *w, const int woff, const int swg, const int swo,
                              const int swi, const int swk, const int Cin_g, const int Cout_g,
                              const int L, const int L_out, const int K, const int padding,
                              const int dilation) {
    const int l0 = get_global_id(0) * VW;
    const int n = get_global_id(1);
    const int blocks = (Cout_g + TC - 1) / TC;
    const int g = get_global_id(2) / blocks;
    const int o0 = (get_global_id(2) - g * blocks) * TC;
    if (l0 >= L_out) return;
    const int chans = Cout_g - o0 < TC ? Cout_g - o0 : TC;
    int wrow[TC];
    UNROLL for (int c = 0; c < TC; ++c) wrow[c] = woff + g * swg + (c < chans ? o0 + c : o0) * swo;
    VT acc[TC];
    UNROLL for (int c = 0; c < TC; ++c) acc[c] = (VT)0;
    for (int i = 0; i < Cin_g; ++i) {
        const __global T *xrow = x + xoff + n * sxn + (g * Cin_g + i) * sxc;
        for (int k = 0; k < K; ++k) {
            const int pos = l0 + k * dilation - padding;
            VT xv;
            if (pos >= 0 && pos + VW <= L) {
                xv = *(const __global VT_UNALIGNED *)(xrow + pos);
            } else {
                T lanes[VW];
                for (int v = 0; v < VW; ++v) {
                    lanes[v] = (pos + v >= 0 && pos + v < L) ? xrow[pos + v] : (T)0;
                }
                xv = *(VT_UNALIGNED *)lanes;
            }
            const int wik = i * swi + k * swk;
            UNROLL for (int c = 0; c < TC; ++c) acc[c] += (VT)(w[wrow[c] + wik]) * xv;
        }
    }
    __global T *o = out + n * son + (g * Cout_g + o0) * soc + l0;
    if (l0 + VW <= L_out) {
        UNROLL for (int c = 0; c < TC; ++c) {
            if (c < chans) *(__global VT_UNALIGNED *)(o + c * soc) = acc[c];
        }
    } else {
        UNROLL for (int c = 0; c < TC; ++c) {
            if (c < chans) {
                T lanes[VW];
                *(VT_UNALIGNED *)lanes = acc[c];
                for (int v = 0; v < L_out - l0; ++v) o[c * soc + v] = lanes[v];
            }
        }
    }
}
#endif
