// 2-d max pooling, forward and backward, over contiguous (N*C, H, W) planes.
//
// Window (oy, ox) covers input rows oy*SH - PH + a*DH (a < KH) and columns
// ox*SW - PW + b*DW (b < KW) that lie inside the input. A NaN in a window makes its max
// NaN (v != v tests it: PoCL links isnan as a library call). The backward pass shares each
// window's gradient evenly among its positions equal to its max (none for a NaN max) and
// gathers, per input position, the shares of the windows that contain it: no atomics.
// Host define: T.

#define POOL_ARGS const int H, const int W, const int OH, const int OW, \
    const int KH, const int KW, const int SH, const int SW, const int PH, const int PW, \
    const int DH, const int DW

// one work-item per output element: global (OW, OH, N*C)
__kernel void k_maxpool(POOL_ARGS, __global const T *x, const int off_x, __global T *out) {
    const int ox = get_global_id(0), oy = get_global_id(1), plane = get_global_id(2);
    if (ox >= OW || oy >= OH) return;
    const __global T *p = x + off_x + plane * H * W;
    T best = 0;
    int found = 0, nan = 0;
    for (int a = 0; a < KH; ++a) {
        const int y = oy * SH - PH + a * DH;
        if (y < 0 || y >= H) continue;
        for (int b = 0; b < KW; ++b) {
            const int xx = ox * SW - PW + b * DW;
            if (xx < 0 || xx >= W) continue;
            const T v = p[y * W + xx];
            if (v != v) nan = 1;
            else if (!found || v > best) best = v;
            found = 1;
        }
    }
    out[(plane * OH + oy) * OW + ox] = nan ? (T)NAN : best;
}

// share (N*C, OH, OW) = grad / (positions equal to the max), 0 where the max is NaN
__kernel void k_maxpool_share(POOL_ARGS, __global const T *x, const int off_x,
                              __global const T *out, const int off_out,
                              __global const T *grad, const int off_grad, __global T *share) {
    const int ox = get_global_id(0), oy = get_global_id(1), plane = get_global_id(2);
    if (ox >= OW || oy >= OH) return;
    const __global T *p = x + off_x + plane * H * W;
    const int o = (plane * OH + oy) * OW + ox;
    const T m = out[off_out + o];
    int count = 0;
    for (int a = 0; a < KH; ++a) {
        const int y = oy * SH - PH + a * DH;
        if (y < 0 || y >= H) continue;
        for (int b = 0; b < KW; ++b) {
            const int xx = ox * SW - PW + b * DW;
            if (xx >= 0 && xx < W && p[y * W + xx] == m) ++count;
        }
    }
    share[o] = count ? grad[off_grad + o] / (T)count : (T)0;
}

// dx (N*C, H, W): one work-item per input element, global (W, H, N*C)
__kernel void k_maxpool_back(POOL_ARGS, __global const T *x, const int off_x,
                             __global const T *out, const int off_out,
                             __global const T *share, __global T *dx) {
    const int xx = get_global_id(0), y = get_global_id(1), plane = get_global_id(2);
    if (xx >= W || y >= H) return;
    const T v = x[off_x + (plane * H + y) * W + xx];
    const __global T *o = out + off_out + plane * OH * OW;
    const __global T *s = share + plane * OH * OW;
    T acc = 0;
    for (int a = 0; a < KH; ++a) {
        const int ty = y + PH - a * DH;  // oy * SH for a window holding row y at tap a
        if (ty < 0 || ty % SH) continue;
        const int oy = ty / SH;
        if (oy >= OH) continue;
        for (int b = 0; b < KW; ++b) {
            const int tx = xx + PW - b * DW;
            if (tx < 0 || tx % SW) continue;
            const int ox = tx / SW;
            if (ox < OW && o[oy * OW + ox] == v) acc += s[oy * OW + ox];
        }
    }
    dx[(plane * H + y) * W + xx] = acc;
}
