"""The GELU backward and layer-norm hooks on cupy arrays, as kernels (cu/activations.cu,
cu/norm.cu).

- relu_backward: one elementwise launch (the composite makes three).
- gelu_backward: one elementwise launch (the core's composite makes eleven, each writing a
  temporary as large as x);
- layer_norm_train: one launch, a block per row (mean, variance and the affine output
  without a temporary; the composite makes nine launches);
- layer_norm_backward: two launches, or three for many rows: dx (a block per row) and the
  weight and bias gradients together (column tiles over chunks of rows, then one sum of
  the chunks' partials); the composite makes thirteen.

float32/float64 with every array of the same dtype take the kernels; other dtypes and
empty arrays go through the core's composites over this backend's own hooks.
"""

from __future__ import annotations

from fastnn.api import composite, composite_norm
from fastnn.api.hookspec import hookimpl
from fastnn_cuda import kernels, launch
from fastnn_cuda._cupy import cupy as cp
from fastnn_cuda.fused import _own_hooks


def _kernel_dtype(*arrays) -> bool:
    dtype = arrays[0].dtype
    return kernels.has_kernel(dtype) and all(a.dtype == dtype for a in arrays)


@hookimpl
def gelu_backward(x, out, grad):
    if not _kernel_dtype(x, out, grad) or x.shape != grad.shape or x.size == 0:
        return composite.gelu_backward(_own_hooks(), x, out, grad)
    x, out, grad = (cp.ascontiguousarray(a) for a in (x, out, grad))
    dx = cp.empty(x.shape, dtype=x.dtype)
    args = (x, out, grad, dx, x.size, kernels.ACTIVATION_CODES["gelu"], 0.0)
    kernels.launch_planes("act_backward", x.dtype, x.device.id, x.size, 1, 1, args)
    return dx


@hookimpl
def relu_backward(out, grad):
    """One elementwise launch (the activations' gradient kernel, relu's code: it reads out
    and grad), where the composite makes three."""
    if not _kernel_dtype(out, grad) or out.shape != grad.shape or out.size == 0:
        return composite.relu_backward(_own_hooks(), out, grad)
    out, grad = (cp.ascontiguousarray(a) for a in (out, grad))
    dx = cp.empty(out.shape, dtype=out.dtype)
    args = (out, out, grad, dx, out.size, kernels.ACTIVATION_CODES["relu"], 0.0)
    kernels.launch_planes("act_backward", out.dtype, out.device.id, out.size, 1, 1, args)
    return dx


def _rows(x) -> tuple[int, int]:
    cols = x.shape[-1]
    return x.size // cols, cols


def in_float32(fn, *arrays):
    """``fn`` on float16 arrays computed in float32, its results cast back to float16.

    NOTE: in float16 a row of large values loses its mean (one ulp at 100 is 0.06), and
    x - mean carries that error into every output; PyTorch accumulates half in float.
    """
    return tuple(a.astype(cp.float16) for a in fn(*(a.astype(cp.float32) for a in arrays)))


@hookimpl
def layer_norm_train(x, weight, bias, eps):
    if x.dtype == cp.float16:
        return in_float32(lambda *a: layer_norm_train(*a, eps), x, weight, bias)
    if not _kernel_dtype(x, weight, bias) or x.ndim == 0 or x.size == 0:
        return composite_norm.layer_norm_train(_own_hooks(), x, weight, bias, eps)
    x = cp.ascontiguousarray(x)
    rows, cols = _rows(x)
    out = cp.empty(x.shape, dtype=x.dtype)
    stats = x.shape[:-1] + (1,)
    mean, rstd = cp.empty(stats, dtype=x.dtype), cp.empty(stats, dtype=x.dtype)
    kernels.launch_rows("layer_norm_forward", x.dtype, x.device.id, rows, cols,
                        (x, cp.ascontiguousarray(weight), cp.ascontiguousarray(bias), out,
                         mean, rstd, cols, float(eps)))
    return out, mean, rstd


@hookimpl
def layer_norm_backward(x, weight, mean, rstd, grad):
    arrays = (x, weight, mean, rstd, grad)
    if not _kernel_dtype(*arrays) or x.ndim == 0 or x.size == 0 or grad.shape != x.shape:
        return composite_norm.layer_norm_backward(_own_hooks(), *arrays)
    x, grad = cp.ascontiguousarray(x), cp.ascontiguousarray(grad)  # grad: maybe a broadcast
    mean, rstd = cp.ascontiguousarray(mean), cp.ascontiguousarray(rstd)
    rows, cols = _rows(x)
    device = x.device.id
    dx = cp.empty(x.shape, dtype=x.dtype)
    kernels.launch_rows("layer_norm_backward_dx", x.dtype, device, rows, cols,
                        (x, cp.ascontiguousarray(weight), mean, rstd, grad, dx, cols))
    grid, block, chunk_rows = launch.column_chunk_grid(rows, cols)
    partial = cp.empty((grid[1], 2 * cols), dtype=x.dtype)
    kernels.function("layer_norm_param_grads", x.dtype, device)(
        grid, block, (x, mean, rstd, grad, partial, rows, cols, chunk_rows))
    if grid[1] == 1:
        sums = partial.reshape(2 * cols)
    else:
        sums = cp.empty((2 * cols,), dtype=x.dtype)
        kernels.launch_columns("sum_rows", x.dtype, device, 2 * cols,
                               (partial, sums, grid[1], 2 * cols, 1.0))
    return dx, sums[:cols], sums[cols:]
