// conv2d helpers around the GEMM: im2col (any input strides, either output layout) and a
// gather-style col2im that needs no atomics. Host defines: T.
//
// cols[row, col] with row = (ci * KH + a) * KW + b and col = (n * OH + i) * OW + j holds
// x[n, ci, i * sh + a * dh - top, j * sw + b * dw - left] (0 outside the input); it is
// written at cols[row * rs + col * cs], so the same kernel builds cols (rs = N * OH * OW,
// cs = 1) or its transpose (rs = 1, cs = C * KH * KW).

__kernel void k_im2col2d(__global T *cols, __global const T *x, const int off, const int sxn,
                         const int sxc, const int sxh, const int sxw, const int C, const int H,
                         const int W, const int KH, const int KW, const int OH, const int OW,
                         const int sh, const int sw, const int top, const int left,
                         const int dh, const int dw, const int rs, const int cs) {
    // a 3-d range (j, n * OH + i, row): a few integer divisions per item
    const int j = get_global_id(0), m = get_global_id(1), row = get_global_id(2);
    if (j >= OW) return;
    const int n = m / OH, i = m - n * OH;
    const int ci = row / (KH * KW);
    const int a = (row / KW) % KH, b = row % KW;
    const int h = i * sh + a * dh - top, w = j * sw + b * dw - left;
    const T value = (h >= 0 && h < H && w >= 0 && w < W)
                        ? x[off + n * sxn + ci * sxc + h * sxh + w * sxw] : (T)0;
    cols[row * rs + (m * OW + j) * cs] = value;
}

// dx[n, ci, h, w] = sum over taps (a, b) and outputs (i, j) with i * sh = h + top - a * dh
// and j * sw = w + left - b * dw of dcols[(ci * KH + a) * KW + b, (n * OH + i) * OW + j].
__kernel void k_col2im2d(__global T *dx, __global const T *dcols, const int N, const int C,
                         const int H, const int W, const int KH, const int KW, const int OH,
                         const int OW, const int sh, const int sw, const int top,
                         const int left, const int dh, const int dw) {
    const int idx = get_global_id(0);
    if (idx >= N * C * H * W) return;
    const int w = idx % W;
    const int h = (idx / W) % H;
    const int ci = (idx / (W * H)) % C;
    const int n = idx / (W * H * C);
    const int cols = N * OH * OW;
    T acc = 0;
    for (int a = 0; a < KH; ++a) {
        const int ph = h + top - a * dh;
        if (ph < 0 || ph % sh) continue;
        const int i = ph / sh;
        if (i >= OH) continue;
        for (int b = 0; b < KW; ++b) {
            const int pw = w + left - b * dw;
            if (pw < 0 || pw % sw) continue;
            const int j = pw / sw;
            if (j < OW) acc += dcols[((ci * KH + a) * KW + b) * cols + (n * OH + i) * OW + j];
        }
    }
    dx[idx] = acc;
}
