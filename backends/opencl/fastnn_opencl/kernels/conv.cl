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
    const int i = get_global_id(0);
    const int total = C * K * N * L_out;
    if (i >= total) return;
    const int l = i % L_out;
    const int n = (i / L_out) % N;
    const int k = (i / (L_out * N)) % K;
    const int ci = i / (L_out * N * K);
    const int pos = l * stride + k * dilation - padding;
    const T value = (pos >= 0 && pos < L) ? x[off + n * sxn + ci * sxc + pos * sxl] : (T)0;
    cols[(ci * K + k) * rs + (n * L_out + l) * cs] = value;
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
