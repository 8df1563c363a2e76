// Gradient clipping's two hooks (fastnn_opencl/clip.py): the p-norm of many arrays taken as
// one vector, and each array times min(max_norm / (total + 1e-6), 1). Host defines: T (an
// array's type) and ACC (the norm's: double when any array is double, else float).

// kind 0: the sum of squares, 1: the max of |x| (NaN wins), 2: the sum of |x|^p. Item i of
// ``items`` takes x[i], x[i + items], ... (neighbouring items read neighbouring values) and
// writes its part to parts[slot + i].
__kernel void k_norm_parts(__global ACC *parts, const int slot, __global const T *x,
                           const int off, const int n, const int items, const int kind,
                           const ACC p) {
    const int i = get_global_id(0);
    if (i >= items) return;
    ACC acc = 0;
    for (int j = i; j < n; j += items) {
        const ACC a = fabs((ACC)x[off + j]);
        if (kind == 0) acc += a * a;
        else if (kind == 1) acc = (a > acc || isnan(a)) ? a : acc;
        else acc += pow(a, p);
    }
    parts[slot + i] = acc;
}

// One item: the parts joined (a compensated sum, or the max), then the root.
__kernel void k_norm_finish(__global ACC *out, __global const ACC *parts, const int count,
                            const int kind, const ACC p) {
    if (get_global_id(0) != 0) return;
    ACC s = 0, c = 0;
    for (int i = 0; i < count; ++i) {
        const ACC v = parts[i];
        if (kind == 1) {
            s = (v > s || isnan(v)) ? v : s;
            continue;
        }
        const ACC y = v - c;
        const ACC t = s + y;
        c = isfinite(t) ? (t - s) - y : (ACC)0;  // (an infinite sum stays infinite, not NaN)
        s = t;
    }
    out[0] = kind == 0 ? sqrt(s) : (kind == 1 ? s : pow(s, (ACC)1 / p));
}

// out = x * c, c = min(max_norm / (total + 1e-6), 1) in ACC (total's type), then as T; a
// NaN total makes c NaN (q >= 1 is false for NaN).
__kernel void k_clip(__global T *out, __global const T *x, const int off, const int n,
                     __global const ACC *total, const int toff, const ACC max_norm) {
    const int i = get_global_id(0);
    if (i >= n) return;
    const ACC q = max_norm / (total[toff] + (ACC)1e-6);
    const T c = (T)(q >= (ACC)1 ? (ACC)1 : q);
    out[i] = x[off + i] * c;
}
