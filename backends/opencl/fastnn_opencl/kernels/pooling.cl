// 2-d max pooling, forward and backward, over contiguous (N*C, H, W) planes.
//
// Window (oy, ox) covers input rows oy*SH - PH + a*DH (a < KH) and columns
// ox*SW - PW + b*DW (b < KW) that lie inside the input. A NaN in a window makes its max
// NaN (v != v tests it: PoCL links isnan as a library call). The backward pass gives each
// window's gradient whole to the position PyTorch's index names (PICK below: the first
// equal to the max in row-major order, the last NaN of a NaN window) and adds up, per input
// row, the gradients of the windows that picked it: no atomics.
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

// Visit the window positions in row-major order, keeping in `at` (y * W + xx) the one
// PyTorch's CPU kernel keeps: the first, then any later one greater than the best so far
// or NaN (so ties keep the first, and a NaN window the last NaN). READ(y, xx) is the value.
#define PICK(READ, OY, OX, at)                                                             \
    {                                                                                      \
        T best = 0;                                                                        \
        at = -1;                                                                           \
        for (int a = 0; a < KH; ++a) {                                                     \
            const int y = (OY) * SH - PH + a * DH;                                         \
            if (y < 0 || y >= H) continue;                                                 \
            for (int b = 0; b < KW; ++b) {                                                 \
                const int xx = (OX) * SW - PW + b * DW;                                    \
                if (xx < 0 || xx >= W) continue;                                           \
                const T v = READ(y, xx);                                                   \
                if (at < 0 || v > best || v != v) { best = v; at = y * W + xx; }           \
            }                                                                              \
        }                                                                                  \
    }

// pick (N*C, OH, OW): the in-plane index y * W + xx that each window's gradient goes to;
// one work-item per output row r = plane * OH + oy (1-d range of PLANES * OH), a loop over OW
__kernel void k_maxpool_pick(POOL_ARGS, const int PLANES, __global const T *x,
                             const int off_x, __global int *pick) {
    const int r = get_global_id(0);
    if (r >= PLANES * OH) return;
    const int plane = r / OH, oy = r - plane * OH;
    const __global T *p = x + off_x + plane * H * W;
#define PLANE_READ(y, xx) p[(y) * W + (xx)]
    for (int ox = 0; ox < OW; ++ox) {
        int at;
        PICK(PLANE_READ, oy, ox, at)
        pick[r * OW + ox] = at;
    }
#undef PLANE_READ
}

// dx (N*C, H, W): one work-item per input row r = plane * H + y, a 1-d global range of
// PLANES * H (a 2-d one left PoCL many small work-groups, each with its own overhead). It walks the
// windows of the output rows that hold row y (one division per kernel row, none per value)
// and adds each window's gradient at the position of its row that the window picked; the
// row is the work-item's own, so there are no races.
// NOTE: one work-item per value with a modulo per tap cost 10 ms per CNN layer on PoCL.
__kernel void k_maxpool_back(POOL_ARGS, const int PLANES, __global const int *pick,
                             __global const T *grad, const int off_grad, __global T *dx) {
    const int r = get_global_id(0);
    if (r >= PLANES * H) return;
    const int plane = r / H, y = r - plane * H;
    const __global int *k = pick + plane * OH * OW;
    const __global T *g = grad + off_grad + plane * OH * OW;
    __global T *d = dx + (plane * H + y) * W;
    for (int xx = 0; xx < W; ++xx) d[xx] = 0;
    for (int a = 0; a < KH; ++a) {
        const int ty = y + PH - a * DH;  // oy * SH for a window holding row y at tap a
        if (ty < 0 || ty % SH) continue;
        const int oy = ty / SH;
        if (oy >= OH) continue;
        for (int ox = 0; ox < OW; ++ox) {
            const int at = k[oy * OW + ox] - y * W;  // the pick's column if in row y
            if (at >= 0 && at < W) d[at] += g[oy * OW + ox];
        }
    }
}

// Windows that tile the input (stride = kernel, no padding or dilation, OH * KH <= H and
// OW * KW <= W: the common 2x2 pooling): the backward pass in one launch. Each input
// position lies in one window at most, so the work-item of output row r = plane * OH + oy
// writes the KH input rows of its windows whole (the window's gradient at the position
// PICK's rule names, 0 elsewhere, 0 in the columns past OW * KW); the last output row of a
// plane also zeroes the rows past OH * KH.
__kernel void k_maxpool_tiled_back(POOL_ARGS, const int PLANES, __global const T *x,
                                   const int off_x, __global const T *grad, const int off_grad,
                                   __global T *dx) {
    const int r = get_global_id(0);
    if (r >= PLANES * OH) return;
    const int plane = r / OH, oy = r - plane * OH;
    const int row0 = (plane * H + oy * KH) * W;
    const __global T *p = x + off_x + row0;
    __global T *d = dx + row0;
    for (int ox = 0; ox < OW; ++ox) {
        const __global T *q = p + ox * KW;
        T best = 0;
        int at = -1;  // PICK's rule, in window coordinates a * W + b
        for (int a = 0; a < KH; ++a)
            for (int b = 0; b < KW; ++b) {
                const T v = q[a * W + b];
                if (at < 0 || v > best || v != v) { best = v; at = a * W + b; }
            }
        const T g = grad[off_grad + r * OW + ox];
        for (int a = 0; a < KH; ++a)
            for (int b = 0; b < KW; ++b) d[a * W + ox * KW + b] = a * W + b == at ? g : (T)0;
    }
    for (int a = 0; a < KH; ++a)
        for (int c = OW * KW; c < W; ++c) d[a * W + c] = 0;
    if (oy == OH - 1) {
        __global T *rest = dx + (plane * H + OH * KH) * W;
        for (int i = 0; i < (H - OH * KH) * W; ++i) rest[i] = 0;
    }
}
