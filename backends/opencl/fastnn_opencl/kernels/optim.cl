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

// ---- the newer rules (hook docstrings in fastnn/api/hookspec.py) ----

// Weight decay (decoupled = 1: w *= 1 - lr * wd; else g += wd * w), then Adam's moments,
// stored into m[i] and v[i]; the decayed weight and gradient come back through w and g.
void adam_moments(__global const T *p, __global const T *grad, const int goff, __global T *m,
                  __global T *v, const int i, const T lr, const T wd, const T beta1,
                  const T beta2, const int decoupled, T *w, T *g) {
    *w = p[i];
    *g = grad[goff + i];
    if (decoupled) *w *= (T)1 - lr * wd;
    else *g += wd * *w;
    m[i] = beta1 * m[i] + ((T)1 - beta1) * *g;
    v[i] = beta2 * v[i] + ((T)1 - beta2) * *g * *g;
}

// Adam/AdamW with amsgrad: vmax = max(vmax, v); p -= (lr / bias1) m / (sqrt(vmax / bias2) + eps).
__kernel void k_amsgrad(__global T *p, __global const T *grad, const int goff, __global T *m,
                        __global T *v, __global T *vmax, const int n, const T lr, const T wd,
                        const T beta1, const T beta2, const T eps, const T bias1,
                        const T bias2, const int decoupled) {
    const int i = get_global_id(0);
    if (i >= n) return;
    T w, g;
    adam_moments(p, grad, goff, m, v, i, lr, wd, beta1, beta2, decoupled, &w, &g);
    const T mi = m[i], vi = v[i];
    const T top = fmax(vmax[i], vi);
    vmax[i] = top;
    p[i] = w - (lr / bias1) * mi / (sqrt(top / bias2) + eps);
}

// RMSprop with momentum and/or centering; a (grad_avg) and buf are read only when on.
__kernel void k_rmsprop_momentum(__global T *p, __global const T *grad, const int goff,
                                 __global T *v, __global T *a, __global T *buf, const int n,
                                 const T lr, const T wd, const T alpha, const T eps,
                                 const T momentum, const int centered) {
    const int i = get_global_id(0);
    if (i >= n) return;
    const T g = grad[goff + i] + wd * p[i];
    const T vi = alpha * v[i] + ((T)1 - alpha) * g * g;
    v[i] = vi;
    T d;
    if (centered) {
        const T ai = alpha * a[i] + ((T)1 - alpha) * g;
        a[i] = ai;
        d = sqrt(vi - ai * ai) + eps;
    } else {
        d = sqrt(vi) + eps;
    }
    if (momentum != 0) {
        const T b = momentum * buf[i] + g / d;
        buf[i] = b;
        p[i] -= lr * b;
    } else {
        p[i] -= lr * g / d;
    }
}

// Adagrad: s += g^2; p -= lr g / (sqrt(s) + eps), lr already decayed.
__kernel void k_adagrad(__global T *p, __global const T *grad, const int goff, __global T *s,
                        const int n, const T lr, const T wd, const T eps) {
    const int i = get_global_id(0);
    if (i >= n) return;
    const T g = grad[goff + i] + wd * p[i];
    const T si = s[i] + g * g;
    s[i] = si;
    p[i] -= lr * g / (sqrt(si) + eps);
}

// RAdam: rectified = 1: p -= adaptive_scale m / (sqrt(v) + eps), else p -= plain_scale m.
__kernel void k_radam(__global T *p, __global const T *grad, const int goff, __global T *m,
                      __global T *v, const int n, const T lr, const T wd, const T beta1,
                      const T beta2, const T eps, const T plain_scale, const T adaptive_scale,
                      const int rectified, const int decoupled) {
    const int i = get_global_id(0);
    if (i >= n) return;
    T w, g;
    adam_moments(p, grad, goff, m, v, i, lr, wd, beta1, beta2, decoupled, &w, &g);
    const T mi = m[i], vi = v[i];
    p[i] = rectified ? w - adaptive_scale * mi / (sqrt(vi) + eps) : w - plain_scale * mi;
}

// NAdam: d = sqrt(v / bias2) + eps; p -= coef_g g / d + coef_m m / d.
__kernel void k_nadam(__global T *p, __global const T *grad, const int goff, __global T *m,
                      __global T *v, const int n, const T lr, const T wd, const T beta1,
                      const T beta2, const T eps, const T bias2, const T coef_g,
                      const T coef_m, const int decoupled) {
    const int i = get_global_id(0);
    if (i >= n) return;
    T w, g;
    adam_moments(p, grad, goff, m, v, i, lr, wd, beta1, beta2, decoupled, &w, &g);
    const T mi = m[i], vi = v[i];
    const T d = sqrt(vi / bias2) + eps;
    p[i] = w - coef_g * g / d - coef_m * mi / d;
}

// Adadelta: g += wd p; v = rho v + (1-rho) g^2; delta = sqrt(u+eps) / sqrt(v+eps) g;
// u = rho u + (1-rho) delta^2; p -= lr delta.
__kernel void k_adadelta(__global T *p, __global const T *grad, const int goff, __global T *v,
                         __global T *u, const int n, const T lr, const T wd, const T rho,
                         const T eps) {
    const int i = get_global_id(0);
    if (i >= n) return;
    const T g = grad[goff + i] + wd * p[i];
    const T vi = rho * v[i] + ((T)1 - rho) * g * g;
    v[i] = vi;
    const T delta = sqrt(u[i] + eps) / sqrt(vi + eps) * g;
    u[i] = rho * u[i] + ((T)1 - rho) * delta * delta;
    p[i] -= lr * delta;
}

// Adamax: g += wd p; m = lerp(m, g, w) (w = 1 - beta1, PyTorch's rounding);
// u = max(beta2 u, |g| + eps) (NaN kept); p -= clr m / u, clr = lr / (1 - beta1^t).
__kernel void k_adamax(__global T *p, __global const T *grad, const int goff, __global T *m,
                       __global T *u, const int n, const T lr, const T wd, const T w,
                       const T beta2, const T eps, const T clr) {
    const int i = get_global_id(0);
    if (i >= n) return;
    const T g = grad[goff + i] + wd * p[i];
    const T mi = w < (T)0.5 ? m[i] + w * (g - m[i]) : g - (g - m[i]) * ((T)1 - w);
    m[i] = mi;
    const T a = beta2 * u[i], b = fabs(g) + eps;
    const T ui = (a > b || a != a) ? a : b;
    u[i] = ui;
    p[i] -= clr * (mi / ui);
}

// ASGD: g += wd p; p = p (1 - lambd eta) - eta g; ax = p (copy) or ax + mu (p - ax).
__kernel void k_asgd(__global T *p, __global const T *grad, const int goff, __global T *ax,
                     const int n, const T eta, const T wd, const T lambd, const T mu,
                     const int copy) {
    const int i = get_global_id(0);
    if (i >= n) return;
    const T g = grad[goff + i] + wd * p[i];
    const T w = p[i] * ((T)1 - lambd * eta) - eta * g;
    p[i] = w;
    ax[i] = copy ? w : ax[i] + (w - ax[i]) * mu;
}

// Rprop: s = sign(g prev); step *= etaplus (s > 0), etaminus (s < 0), 1 (s == 0), clamped
// to [lo, hi] (NaN kept); g = 0 where s < 0; p -= sign(g) step; prev = g.
__kernel void k_rprop(__global T *p, __global const T *grad, const int goff, __global T *prev,
                      __global T *size, const int n, const T etaminus, const T etaplus,
                      const T lo, const T hi) {
    const int i = get_global_id(0);
    if (i >= n) return;
    T g = grad[goff + i];
    const T s = sign(g * prev[i]);
    const T f = s > (T)0 ? etaplus : (s < (T)0 ? etaminus : (s == (T)0 ? (T)1 : s));
    T z = size[i] * f;
    z = z < lo ? lo : z;
    z = z > hi ? hi : z;
    size[i] = z;
    if (s < (T)0) g = (T)0;
    p[i] -= sign(g) * z;
    prev[i] = g;
}
