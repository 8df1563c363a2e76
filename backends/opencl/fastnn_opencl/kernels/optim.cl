// Optimizer updates, in place, one kernel launch per parameter (PyTorch's rules).
// Host defines: T. Gradients may sit at an offset in their buffer.

// g = grad + wd * p; buf = g (first step) or momentum * buf + (1 - dampening) * g;
// g = g + momentum * buf (nesterov) or buf; p -= lr * g. momentum == 0 leaves buf alone.
__kernel void k_sgd(__global T *p, __global const T *grad, const int goff, __global T *buf,
                    const int n, const T lr, const T wd, const T momentum, const T dampening,
                    const int nesterov, const int first) {
    const int i = get_global_id(0);
    if (i >= n) return;
    T g = grad[goff + i] + wd * p[i];
    if (momentum != 0) {
        const T b = first ? g : momentum * buf[i] + ((T)1 - dampening) * g;
        buf[i] = b;
        g = nesterov ? g + momentum * b : b;
    }
    p[i] -= lr * g;
}

// Adam (decoupled = 0: g += wd * p) or AdamW (decoupled = 1: p *= 1 - lr * wd).
__kernel void k_adam(__global T *p, __global const T *grad, const int goff, __global T *m,
                     __global T *v, const int n, const T lr, const T wd, const T beta1,
                     const T beta2, const T eps, const T bias1, const T bias2,
                     const int decoupled) {
    const int i = get_global_id(0);
    if (i >= n) return;
    T w = p[i];
    T g = grad[goff + i];
    if (decoupled) w *= (T)1 - lr * wd;
    else g += wd * w;
    const T mi = beta1 * m[i] + ((T)1 - beta1) * g;
    const T vi = beta2 * v[i] + ((T)1 - beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    p[i] = w - (lr / bias1) * mi / (sqrt(vi / bias2) + eps);
}

// v = alpha * v + (1 - alpha) * g^2; p -= lr * g / (sqrt(v) + eps), g including wd * p.
__kernel void k_rmsprop(__global T *p, __global const T *grad, const int goff, __global T *v,
                        const int n, const T lr, const T wd, const T alpha, const T eps) {
    const int i = get_global_id(0);
    if (i >= n) return;
    const T g = grad[goff + i] + wd * p[i];
    const T vi = alpha * v[i] + ((T)1 - alpha) * g * g;
    v[i] = vi;
    p[i] -= lr * g / (sqrt(vi) + eps);
}
