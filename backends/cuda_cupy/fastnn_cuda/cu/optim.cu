// Optimizer steps for many parameters in ONE launch (PyTorch's update rules).
//
// The parameters of a step travel in a StepTable passed *by value* as a kernel
// argument (no host-to-device copy of a pointer table). Each tensor k owns the
// blocks [block_start[k], block_start[k+1]) of a 1-D grid and walks its
// elements with a grid-stride loop over those blocks. launch.py builds the
// table with a NumPy structured dtype of the same layout; the static_assert
// in step_table.cuh fails the compile (also in CI) if the two disagree.
//
// ptr[0] = param, ptr[1] = grad, ptr[2..4] = optimizer state
// (sgd: momentum buffer; adam: exp_avg, exp_avg_sq; rmsprop: square_avg; amsgrad: exp_avg,
// exp_avg_sq, max_exp_avg_sq; rmsprop_momentum: square_avg, grad_avg, momentum buffer;
// adagrad: sum; radam, nadam: exp_avg, exp_avg_sq).

#include "step_table.cuh"

// g = grad + wd*p; buf = g (first) or momentum*buf + (1-dampening)*g;
// g = g + momentum*buf (nesterov) or buf; p -= lr*g.
template <typename T>
__device__ void sgd_body(const StepTable& t, double momentum, double dampening, i64 nesterov) {
    const TensorSlice s = my_slice(t);
    T* p = (T*)t.ptr[0][s.k];
    const T* g = (const T*)t.ptr[1][s.k];
    T* buf = (T*)t.ptr[2][s.k];
    const T lr = T(t.lr[s.k]), wd = T(t.wd[s.k]);
    const T mom = T(momentum), keep = T(1.0 - dampening);
    const bool first = t.flag[s.k] != 0;
    for (i64 i = s.first; i < t.size[s.k]; i += s.stride) {
        T d = g[i];
        if (wd != T(0)) d += wd * p[i];
        if (mom != T(0)) {
            const T b = first ? d : mom * buf[i] + keep * d;
            buf[i] = b;
            d = nesterov ? d + mom * b : b;
        }
        p[i] -= lr * d;
    }
}

// Adam (decoupled = 0: g += wd*p) or AdamW (decoupled = 1: p *= 1 - lr*wd);
// m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g^2;
// p -= (lr / bias1) * m / (sqrt(v / bias2) + eps).
template <typename T>
__device__ void adam_body(const StepTable& t, double beta1, double beta2, double eps,
                          double bias1, double bias2, i64 decoupled) {
    const TensorSlice s = my_slice(t);
    T* p = (T*)t.ptr[0][s.k];
    const T* g = (const T*)t.ptr[1][s.k];
    T* m = (T*)t.ptr[2][s.k];
    T* v = (T*)t.ptr[3][s.k];
    const double lr = t.lr[s.k], wd = t.wd[s.k];
    const T b1 = T(beta1), b2 = T(beta2), e = T(eps), c2 = T(bias2);
    const T step_size = T(lr / bias1), decay = T(1.0 - lr * wd), wd_t = T(wd);
    for (i64 i = s.first; i < t.size[s.k]; i += s.stride) {
        T d = g[i], w = p[i];
        if (wd != 0.0) {
            if (decoupled) w *= decay;
            else d += wd_t * w;
        }
        const T mi = b1 * m[i] + (T(1) - b1) * d;
        const T vi = b2 * v[i] + (T(1) - b2) * d * d;
        m[i] = mi;
        v[i] = vi;
        p[i] = w - step_size * mi / (f_sqrt(vi / c2) + e);
    }
}

// g = grad + wd*p; v = alpha*v + (1-alpha)*g^2; p -= lr * g / (sqrt(v) + eps).
template <typename T>
__device__ void rmsprop_body(const StepTable& t, double alpha, double eps) {
    const TensorSlice s = my_slice(t);
    T* p = (T*)t.ptr[0][s.k];
    const T* g = (const T*)t.ptr[1][s.k];
    T* v = (T*)t.ptr[2][s.k];
    const T lr = T(t.lr[s.k]), wd = T(t.wd[s.k]), a = T(alpha), e = T(eps);
    for (i64 i = s.first; i < t.size[s.k]; i += s.stride) {
        T d = g[i];
        if (wd != T(0)) d += wd * p[i];
        const T vi = a * v[i] + (T(1) - a) * d * d;
        v[i] = vi;
        p[i] -= lr * d / (f_sqrt(vi) + e);
    }
}

// ---- the newer rules (hook docstrings in fastnn/api/hookspec.py); lr is per tensor,
// the step's other coefficients come folded into scalars by optim.py.

// Weight decay as Adam's (decoupled = 1: w *= 1 - lr*wd; else d += wd*w), then Adam's
// moments of element i, stored into m and v and returned in mi and vi.
template <typename T>
__device__ __forceinline__ void adam_moments(T& w, T& d, T* m, T* v, i64 i, T b1, T b2,
                                             double lr, double wd, i64 decoupled, T& mi,
                                             T& vi) {
    if (wd != 0.0) {
        if (decoupled) w *= T(1.0 - lr * wd);
        else d += T(wd) * w;
    }
    mi = b1 * m[i] + (T(1) - b1) * d;
    vi = b2 * v[i] + (T(1) - b2) * d * d;
    m[i] = mi;
    v[i] = vi;
}

// Adam/AdamW with amsgrad: vmax = max(vmax, v); p -= (lr/bias1) m / (sqrt(vmax/bias2) + eps).
template <typename T>
__device__ void amsgrad_body(const StepTable& t, double beta1, double beta2, double eps,
                             double bias1, double bias2, i64 decoupled) {
    const TensorSlice s = my_slice(t);
    T* p = (T*)t.ptr[0][s.k];
    const T* g = (const T*)t.ptr[1][s.k];
    T* m = (T*)t.ptr[2][s.k];
    T* v = (T*)t.ptr[3][s.k];
    T* vmax = (T*)t.ptr[4][s.k];
    const double lr = t.lr[s.k], wd = t.wd[s.k];
    const T b1 = T(beta1), b2 = T(beta2), e = T(eps), c2 = T(bias2), step_size = T(lr / bias1);
    for (i64 i = s.first; i < t.size[s.k]; i += s.stride) {
        T d = g[i], w = p[i];
        T mi, vi;
        adam_moments(w, d, m, v, i, b1, b2, lr, wd, decoupled, mi, vi);
        const T old = vmax[i];
        const T top = (old > vi || old != old) ? old : vi;  // NaN stays, as max() keeps it
        vmax[i] = top;
        p[i] = w - step_size * mi / (f_sqrt(top / c2) + e);
    }
}

// RMSprop with momentum and/or centering (g includes wd*p); a and buf used only when on.
template <typename T>
__device__ void rmsprop_momentum_body(const StepTable& t, double alpha, double eps,
                                      double momentum, i64 centered) {
    const TensorSlice s = my_slice(t);
    T* p = (T*)t.ptr[0][s.k];
    const T* g = (const T*)t.ptr[1][s.k];
    T* v = (T*)t.ptr[2][s.k];
    T* a = (T*)t.ptr[3][s.k];
    T* buf = (T*)t.ptr[4][s.k];
    const T lr = T(t.lr[s.k]), wd = T(t.wd[s.k]), al = T(alpha), e = T(eps), mom = T(momentum);
    for (i64 i = s.first; i < t.size[s.k]; i += s.stride) {
        T d = g[i];
        if (wd != T(0)) d += wd * p[i];
        const T vi = al * v[i] + (T(1) - al) * d * d;
        v[i] = vi;
        T denom;
        if (centered) {
            const T ai = al * a[i] + (T(1) - al) * d;
            a[i] = ai;
            denom = f_sqrt(vi - ai * ai) + e;
        } else {
            denom = f_sqrt(vi) + e;
        }
        if (mom != T(0)) {
            const T b = mom * buf[i] + d / denom;
            buf[i] = b;
            p[i] -= lr * b;
        } else {
            p[i] -= lr * d / denom;
        }
    }
}

// Adagrad (lr already decayed): s += g^2; p -= lr g / (sqrt(s) + eps).
template <typename T>
__device__ void adagrad_body(const StepTable& t, double eps) {
    const TensorSlice s = my_slice(t);
    T* p = (T*)t.ptr[0][s.k];
    const T* g = (const T*)t.ptr[1][s.k];
    T* sum = (T*)t.ptr[2][s.k];
    const T lr = T(t.lr[s.k]), wd = T(t.wd[s.k]), e = T(eps);
    for (i64 i = s.first; i < t.size[s.k]; i += s.stride) {
        T d = g[i];
        if (wd != T(0)) d += wd * p[i];
        const T si = sum[i] + d * d;
        sum[i] = si;
        p[i] -= lr * d / (f_sqrt(si) + e);
    }
}

// RAdam: rectified: p -= lr*adaptive * m / (sqrt(v) + eps), else p -= lr*plain * m.
template <typename T>
__device__ void radam_body(const StepTable& t, double beta1, double beta2, double eps,
                           double plain, double adaptive, i64 rectified, i64 decoupled) {
    const TensorSlice s = my_slice(t);
    T* p = (T*)t.ptr[0][s.k];
    const T* g = (const T*)t.ptr[1][s.k];
    T* m = (T*)t.ptr[2][s.k];
    T* v = (T*)t.ptr[3][s.k];
    const double lr = t.lr[s.k], wd = t.wd[s.k];
    const T b1 = T(beta1), b2 = T(beta2), e = T(eps);
    const T plain_step = T(lr * plain), adaptive_step = T(lr * adaptive);
    for (i64 i = s.first; i < t.size[s.k]; i += s.stride) {
        T d = g[i], w = p[i];
        T mi, vi;
        adam_moments(w, d, m, v, i, b1, b2, lr, wd, decoupled, mi, vi);
        p[i] = rectified ? w - adaptive_step * mi / (f_sqrt(vi) + e) : w - plain_step * mi;
    }
}

// NAdam: den = sqrt(v/bias2) + eps; p -= lr*g_factor * g / den + lr*m_factor * m / den.
template <typename T>
__device__ void nadam_body(const StepTable& t, double beta1, double beta2, double eps,
                           double bias2, double g_factor, double m_factor, i64 decoupled) {
    const TensorSlice s = my_slice(t);
    T* p = (T*)t.ptr[0][s.k];
    const T* g = (const T*)t.ptr[1][s.k];
    T* m = (T*)t.ptr[2][s.k];
    T* v = (T*)t.ptr[3][s.k];
    const double lr = t.lr[s.k], wd = t.wd[s.k];
    const T b1 = T(beta1), b2 = T(beta2), e = T(eps), c2 = T(bias2);
    const T coef_g = T(lr * g_factor), coef_m = T(lr * m_factor);
    for (i64 i = s.first; i < t.size[s.k]; i += s.stride) {
        T d = g[i], w = p[i];
        T mi, vi;
        adam_moments(w, d, m, v, i, b1, b2, lr, wd, decoupled, mi, vi);
        const T den = f_sqrt(vi / c2) + e;
        p[i] = w - coef_g * d / den - coef_m * mi / den;
    }
}

#define FASTNN_OPTIM(T, SUFFIX)                                                          \
    extern "C" __global__ void sgd_step_##SUFFIX(const StepTable table, double momentum,  \
                                                 double dampening, i64 nesterov) {        \
        sgd_body<T>(table, momentum, dampening, nesterov);                               \
    }                                                                                    \
    extern "C" __global__ void adam_step_##SUFFIX(const StepTable table, double beta1,    \
                                                  double beta2, double eps, double bias1, \
                                                  double bias2, i64 decoupled) {          \
        adam_body<T>(table, beta1, beta2, eps, bias1, bias2, decoupled);                 \
    }                                                                                    \
    extern "C" __global__ void rmsprop_step_##SUFFIX(const StepTable table, double alpha, \
                                                     double eps) {                       \
        rmsprop_body<T>(table, alpha, eps);                                              \
    }                                                                                    \
    extern "C" __global__ void amsgrad_step_##SUFFIX(const StepTable table, double beta1, \
                                                     double beta2, double eps,           \
                                                     double bias1, double bias2,         \
                                                     i64 decoupled) {                    \
        amsgrad_body<T>(table, beta1, beta2, eps, bias1, bias2, decoupled);              \
    }                                                                                    \
    extern "C" __global__ void rmsprop_momentum_step_##SUFFIX(                           \
        const StepTable table, double alpha, double eps, double momentum, i64 centered) { \
        rmsprop_momentum_body<T>(table, alpha, eps, momentum, centered);                 \
    }                                                                                    \
    extern "C" __global__ void adagrad_step_##SUFFIX(const StepTable table, double eps) { \
        adagrad_body<T>(table, eps);                                                     \
    }                                                                                    \
    extern "C" __global__ void radam_step_##SUFFIX(const StepTable table, double beta1,   \
                                                   double beta2, double eps,             \
                                                   double plain, double adaptive,        \
                                                   i64 rectified, i64 decoupled) {        \
        radam_body<T>(table, beta1, beta2, eps, plain, adaptive, rectified, decoupled);  \
    }                                                                                    \
    extern "C" __global__ void nadam_step_##SUFFIX(const StepTable table, double beta1,   \
                                                   double beta2, double eps,             \
                                                   double bias2, double g_factor,        \
                                                   double m_factor, i64 decoupled) {      \
        nadam_body<T>(table, beta1, beta2, eps, bias2, g_factor, m_factor, decoupled);   \
    }

FASTNN_INSTANTIATE(FASTNN_OPTIM)
