"""Conformance cases of conv1d and its two gradient primitives.

The reference is a direct loop over kernel taps in float64:
``out[n, o, l] = sum_{c, k} w[o, c, k] * xpad[n, g*Cg + c, l*stride + k*dilation]``
for output channel o in group g; its adjoint gives the gradients.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import fastnn as fnn
import fastnn.functional as F
from fastnn.conformance.case import Case, Sample, register
from fastnn.conformance.compare import ACCUMULATING, GRADIENT

# The weight gradient sums N * L_out products per element (1,024 in the (1, 16, 1024)
# sample): float32 rounding in a plain running sum reaches ~3e-5 relative there (the
# minimal backend's 8e-5 absolute on a value of 2.7), past ACCUMULATING's 1e-5.
LONG_SUMS = dict(ACCUMULATING, float32=(1e-4, 1e-4))
# the same sums in the tape's weight gradient of conv1d itself: 2.4e-5 absolute on a value
# of 0.023 (a cancelled sum of 1,024 products of size ~0.6) on the cpu backend's GEMM
LONG_SUM_GRADS = dict(GRADIENT, float32=(1e-4, 1e-4))

NAN = float("nan")
# (N, C_in, L, C_out, K, stride, padding, dilation, groups)
CONV_CONFIGS = [
    (2, 4, 9, 6, 3, 1, 0, 1, 1),
    (2, 4, 9, 6, 3, 2, 1, 1, 1),
    (1, 3, 10, 2, 3, 1, 2, 2, 1),
    (2, 4, 8, 6, 3, 1, 1, 1, 2),
    (1, 6, 11, 6, 2, 3, 3, 2, 3),
    (3, 2, 5, 3, 1, 1, 0, 1, 1),
    (1, 2, 5, 2, 5, 1, 0, 1, 1),
    (0, 2, 6, 3, 3, 1, 0, 1, 1),
    # long signals (64+ outputs): the cpu backend's per-sample taps path
    (2, 3, 70, 4, 3, 1, 1, 2, 1),
    (1, 2, 66, 3, 5, 1, 4, 1, 1),
    # its per-sample im2col GEMM (16, 80) @ (80, 1024), split in two column halves
    (1, 16, 1024, 16, 5, 1, 2, 1, 1),
]
# its im2col a few samples at a time: float32 in chunks of 2 and a last one of 1 (short
# sums, so that float16's stay in tolerance). Drawn last, from a generator of its own, so
# that the other samples' draws (and their float16 rounding) stay as they were.
CHUNKED_CONFIG = (3, 20, 128, 4, 9, 1, 4, 1, 1)


def _taps(length, k_size, stride, padding, dilation):
    length_out = (length + 2 * padding - dilation * (k_size - 1) - 1) // stride + 1
    return length_out, [k * dilation + stride * np.arange(length_out) for k in range(k_size)]


def conv1d_ref(x, weight, stride=1, padding=0, dilation=1, groups=1):
    n, c_in, length = x.shape
    c_out, c_group, k_size = weight.shape
    length_out, taps = _taps(length, k_size, stride, padding, dilation)
    xpad = np.pad(x, ((0, 0), (0, 0), (padding, padding)))
    out = np.zeros((n, c_out, length_out))
    per_out = c_out // groups
    for g in range(groups):
        xs = xpad[:, g * c_group:(g + 1) * c_group]
        ws = weight[g * per_out:(g + 1) * per_out]
        for k in range(k_size):
            out[:, g * per_out:(g + 1) * per_out] += np.einsum("ncl,oc->nol", xs[:, :, taps[k]],
                                                               ws[:, :, k])
    return out


def conv1d_grads(x, weight, grad_out, stride, padding, dilation, groups):
    """The adjoint of :func:`conv1d_ref`: (dL/dx, dL/dweight)."""
    n, c_in, length = x.shape
    c_out, c_group, k_size = weight.shape
    _, taps = _taps(length, k_size, stride, padding, dilation)
    xpad = np.pad(x, ((0, 0), (0, 0), (padding, padding)))
    gxpad = np.zeros_like(xpad)
    gw = np.zeros_like(weight)
    per_out = c_out // groups
    for g in range(groups):
        cs, os_ = slice(g * c_group, (g + 1) * c_group), slice(g * per_out, (g + 1) * per_out)
        for k in range(k_size):
            gw[os_, :, k] = np.einsum("nol,ncl->oc", grad_out[:, os_], xpad[:, cs, taps[k]])
            np.add.at(gxpad, (slice(None), cs, taps[k]),
                      np.einsum("nol,oc->ncl", grad_out[:, os_], weight[os_, :, k]))
    return gxpad[:, :, padding:padding + length], gw


def _params(cfg):
    n, c_in, length, c_out, k, stride, padding, dilation, groups = cfg
    return {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}


def _inputs(rng, cfg):
    n, c_in, length, c_out, k, stride, padding, dilation, groups = cfg
    return rng.normal(size=(n, c_in, length)), rng.normal(size=(c_out, c_in // groups, k))


def _label(cfg):
    n, c_in, length, c_out, k, *_ = cfg
    return f"x ({n}, {c_in}, {length}) w ({c_out}, {c_in}/g, {k})"


def _conv_samples(rng):
    out = [Sample(_label(cfg), _inputs(rng, cfg), _params(cfg)) for cfg in CONV_CONFIGS]
    x, w = _inputs(rng, CONV_CONFIGS[1])
    out.append(Sample("with bias", (x, w, rng.normal(size=w.shape[0])), _params(CONV_CONFIGS[1])))
    out.append(Sample(_label(CHUNKED_CONFIG), _inputs(np.random.default_rng(22), CHUNKED_CONFIG),
                      _params(CHUNKED_CONFIG)))
    return out


def _conv_edges(rng, dtype):
    x, w = _inputs(rng, CONV_CONFIGS[0])
    x[0, 1, 4] = NAN
    return [Sample("one NaN input", (x, w), _params(CONV_CONFIGS[0]))]


def _valid_config(draw):
    groups = draw(st.integers(1, 3))
    c_in, c_out = groups * draw(st.integers(1, 2)), groups * draw(st.integers(1, 2))
    k, stride = draw(st.integers(1, 4)), draw(st.integers(1, 3))
    padding, dilation = draw(st.integers(0, 3)), draw(st.integers(1, 3))
    min_length = max(1, dilation * (k - 1) + 1 - 2 * padding)
    length = draw(st.integers(min_length, min_length + 6))
    return (draw(st.integers(1, 2)), c_in, length, c_out, k, stride, padding, dilation, groups)


def _conv_random(draw):
    cfg = _valid_config(draw)
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    return Sample(f"random {_label(cfg)}", _inputs(rng, cfg), _params(cfg))


def _conv_run(x, weight, bias=None, **params):
    return F.conv1d(x, weight, bias, **params)


def _conv_reference(x, weight, bias=None, **params):
    out = conv1d_ref(x, weight, **params)
    return out if bias is None else out + bias[:, None]


def _conv_grad_ref(x, weight, bias=None, *, grad_out, **params):
    gx, gw = conv1d_grads(x, weight, grad_out, **params)
    return gx, gw, (None if bias is None else grad_out.sum(axis=(0, 2)))


register(Case("conv1d", run=_conv_run, ref=_conv_reference, grad_ref=_conv_grad_ref,
              diff_args=(0, 1, 2), samples=_conv_samples, edges=_conv_edges,
              random=_conv_random, tol=dict(ACCUMULATING), grad_tol=dict(LONG_SUM_GRADS)))


def register_gradient_cases(prefix, conv, forward_ref, grads_ref, conv_samples, conv_random):
    """The cases of ``<prefix>_grad_input`` and ``<prefix>_grad_weight``, reached the way
    users reach them: ``conv`` forward, then ``autograd.grad`` (with ``create_graph``, so
    that each is differentiable again, as a gradient penalty needs); ``grads_ref`` gives
    both. Each is bilinear, and its adjoints are the forward and the other gradient:
    <h, grad_input(g, w)> = <conv(h, w), g> and <h, grad_weight(x, g)> = <conv(x, h), g>.
    x is only the shape of grad_input, and the weight only that of grad_weight. Their
    gradients are checked against those adjoints only (the conv cases check the adjoints
    against finite differences; here they would cost minutes)."""

    def with_grad_out(rng, sample):
        x, w = sample.args[:2]
        out_shape = forward_ref(x, w, **sample.params).shape
        return Sample(sample.label, (x, w, rng.normal(size=out_shape)), sample.params)

    def make(which):
        def run(x, weight, grad_out, **params):
            args = [x, weight]
            args[which] = args[which].detach().requires_grad_()
            with fnn.enable_grad():
                (grad,) = fnn.autograd.grad(conv(*args, None, **params), args[which],
                                            grad_out, create_graph=True)
            return grad

        def ref(x, weight, grad_out, **params):
            return grads_ref(x, weight, grad_out, **params)[which]

        def grad_ref(x, weight, conv_grad, *, grad_out, **params):
            # conv_grad: the gradient this case takes in (its third argument); grad_out:
            # the one coming back into its output
            if which == 0:  # grad_input(conv_grad, weight)
                return (None, grads_ref(grad_out, weight, conv_grad, **params)[1],
                        forward_ref(grad_out, weight, **params))
            return (grads_ref(x, grad_out, conv_grad, **params)[0], None,
                    forward_ref(x, grad_out, **params))

        def samples(rng):
            return [with_grad_out(rng, s) for s in conv_samples(rng) if len(s.args) == 2]

        def random(draw):
            return with_grad_out(np.random.default_rng(0), conv_random(draw))

        name = f"{prefix}_{('grad_input', 'grad_weight')[which]}"
        register(Case(name, run=run, ref=ref, samples=samples, random=random,
                      grad_ref=grad_ref,
                      diff_args=((1, 2), (0, 2))[which], edges=lambda rng, dtype: [],
                      tol=dict((ACCUMULATING, LONG_SUMS)[which]),
                      grad_tol=dict(LONG_SUM_GRADS), grad_check="analytic"))

    make(0)
    make(1)


register_gradient_cases("conv1d", F.conv1d, conv1d_ref, conv1d_grads, _conv_samples, _conv_random)
