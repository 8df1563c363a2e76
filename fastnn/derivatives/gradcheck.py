"""PyTorch's ``gradcheck`` and ``gradgradcheck``: backward against finite differences.

For every input that requires grad and every element x_k of it, the numerical
column of the Jacobian is the central difference

    (f(x + eps e_k) - f(x - eps e_k)) / (2 eps)

(computed in the input's own dtype, so give float64 inputs, as PyTorch warns); the
analytical one comes from one backward pass per output element. They must agree
within ``|a - n| <= atol + rtol |n|`` (``allclose``). As PyTorch's slow mode, the
backward is also run twice (``nondet_tol``) and with zero ``grad_outputs`` (must give
zeros of the input's shape and dtype). ``fast_mode=True`` runs this slow check too.
"""

from __future__ import annotations

import warnings

import numpy as np

from fastnn.autograd.functional import grad
from fastnn.ops.tensor import Tensor, rand, tensor


class GradcheckError(RuntimeError):
    """The analytical gradient disagrees with the numerical one (PyTorch's name)."""


def _as_tuple(value) -> tuple:
    return value if isinstance(value, tuple) else tuple(value) if isinstance(value, list) \
        else (value,)


def _differentiable(outputs: tuple) -> tuple:
    return tuple(o for o in outputs if isinstance(o, Tensor) and o.requires_grad)


def _check_inputs(inputs: tuple) -> list[int]:
    """Indices of the inputs that require grad (at least one; float64 advised)."""
    indices = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    for i in indices:
        if inputs[i].dtype.name != "float64":
            warnings.warn(f"Input #{i} requires gradient and is not a double precision "
                          "floating point or complex. This check will likely fail if all the "
                          "inputs are not of double precision floating point or complex. ",
                          stacklevel=3)
    if not indices:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, "
                         "but none of them have requires_grad=True.")
    return indices


def _host(x: Tensor) -> np.ndarray:
    return np.asarray(x.detach().numpy(), dtype=np.float64)


def _numerical(func, inputs: tuple, indices: list[int], eps: float,
               out_sizes: list[int]) -> list[list[np.ndarray]]:
    """``result[j][i]``: d output i / d input indices[j], shape (input numel, output numel),
    for every Tensor output (of ``out_sizes`` elements)."""
    columns = []
    for j in indices:
        x = inputs[j]
        base = x.detach().numpy()
        flat = base.reshape(-1)
        per_output = [np.zeros((flat.size, n)) for n in out_sizes]
        for k in range(flat.size):
            sides = []
            for step in (-eps, eps):
                moved = flat.copy()
                moved[k] = moved[k] + step  # in the input's dtype, as PyTorch perturbs it
                probe = tensor(moved.reshape(base.shape), dtype=x.dtype, device=x.device,
                               requires_grad=x.requires_grad)
                args = inputs[:j] + (probe,) + inputs[j + 1:]
                sides.append([_host(o).reshape(-1) for o in _as_tuple(func(*args))
                              if isinstance(o, Tensor)])
            for out, low, high in zip(per_output, *sides):
                out[k] = (high - low) / (2 * eps)
        columns.append(per_output)
    return columns


def _analytical(output: Tensor, diff_inputs: list) -> tuple[list[np.ndarray], bool, bool]:
    """(d output / d input, (input numel, output numel), per input; dtypes ok; shapes ok)."""
    jacobians = [np.zeros((x.numel(), output.numel())) for x in diff_inputs]
    dtypes_ok = shapes_ok = True
    for k in range(output.numel()):
        seed = np.zeros(output.numel())
        seed[k] = 1.0
        seed = tensor(seed.reshape(output.shape), dtype=output.dtype, device=output.device)
        grads = grad(output, diff_inputs, seed, retain_graph=True, allow_unused=True)
        for jac, g, x in zip(jacobians, grads, diff_inputs):
            if g is None:
                continue
            if g.shape != x.shape:
                shapes_ok = False
                continue
            dtypes_ok = dtypes_ok and g.dtype == x.dtype
            jac[:, k] = _host(g).reshape(-1)
    return jacobians, dtypes_ok, shapes_ok


def _check(func, inputs, eps, atol, rtol, nondet_tol, check_grad_dtypes) -> bool:
    inputs = _as_tuple(inputs)
    indices = _check_inputs(inputs)
    func_out = _as_tuple(func(*inputs))
    outputs = _differentiable(func_out)
    tensor_outputs = [o for o in func_out if isinstance(o, Tensor)]
    numerical = _numerical(func, inputs, indices, eps, [o.numel() for o in tensor_outputs])
    if not outputs:  # nothing to differentiate: the function must then be flat
        if any(np.any(n != 0) for per_output in numerical for n in per_output):
            raise GradcheckError("Numerical gradient for function expected to be zero")
        return True
    keep = [i for i, o in enumerate(tensor_outputs) if o.requires_grad]
    diff_inputs = [inputs[j] for j in indices]
    for i, output in enumerate(outputs):
        first, dtypes_ok, shapes_ok = _analytical(output, diff_inputs)
        again, _, _ = _analytical(output, diff_inputs)
        if check_grad_dtypes and not dtypes_ok:
            raise GradcheckError("Gradient has dtype mismatch")
        if not shapes_ok:
            raise GradcheckError("Analytical gradient has incorrect size")
        if any(np.abs(a - b).max(initial=0.0) > nondet_tol for a, b in zip(first, again)):
            raise GradcheckError(
                "Backward is not reentrant, i.e., running backward with same input and "
                "grad_output multiple times gives different values, although analytical "
                f"gradient matches numerical gradient.The tolerance for nondeterminism was "
                f"{nondet_tol}.")
        for j, analytical in enumerate(first):
            num = numerical[j][keep[i]]
            if not np.all(np.abs(analytical - num) <= atol + rtol * np.abs(num)):
                raise GradcheckError(
                    f"Jacobian mismatch for output {i:d} with respect to input {j:d},\n"
                    f"numerical:{num}\nanalytical:{analytical}\n")
    _check_zero_grad_outputs(outputs, diff_inputs)
    return True


def _check_zero_grad_outputs(outputs: tuple, diff_inputs: list) -> None:
    zeros = [o.new_zeros(o.shape) for o in outputs]
    for g, x in zip(grad(outputs, diff_inputs, zeros, allow_unused=True), diff_inputs):
        if g is None:
            continue
        if np.any(g.detach().numpy() != 0):
            raise GradcheckError("backward not multiplied by grad_output")
        if g.dtype != x.dtype:
            raise GradcheckError("grad is incorrect type")
        if g.device != x.device:
            raise GradcheckError("grad is incorrect device")
        if g.shape != x.shape:
            raise GradcheckError("grad is incorrect size")


def _refuse(**flags) -> None:
    """What fastnn cannot check (no forward-mode AD, no vmap) raises rather than passes."""
    for name, value in flags.items():
        if value:
            raise NotImplementedError(f"gradcheck: {name}=True needs forward-mode AD or vmap, "
                                      "which fastnn does not have; leave it False")


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False,
              check_forward_ad=False, check_backward_ad=True, fast_mode=False,
              masked=None) -> bool:
    """Check the gradients of ``func(*inputs)`` with respect to the inputs that require
    grad against central finite differences; True, or :class:`GradcheckError` (False with
    ``raise_exception=False``). ``check_undefined_grad`` has nothing to check in fastnn
    (a gradient is never undefined) and is accepted."""
    _refuse(check_batched_grad=check_batched_grad, check_forward_ad=check_forward_ad,
            check_batched_forward_grad=check_batched_forward_grad, masked=masked)
    if not check_backward_ad:
        _check_inputs(_as_tuple(inputs))
        return True
    try:
        return _check(func, inputs, eps, atol, rtol, nondet_tol, check_grad_dtypes)
    except GradcheckError:
        if raise_exception:
            raise
        return False


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False,
                  check_batched_grad=False, check_fwd_over_rev=False,
                  check_rev_over_rev=True, fast_mode=False, masked=False) -> bool:
    """Check second derivatives: :func:`gradcheck` of the map (inputs, grad_outputs) ->
    autograd.grad(func(inputs), inputs, grad_outputs, create_graph=True). Without
    ``grad_outputs``, random ones uniform in [-1, 1) that require grad (as PyTorch's)."""
    inputs = _as_tuple(inputs)
    if grad_outputs is None:
        grad_outputs = tuple(
            (rand(o.shape, dtype=o.dtype if o.dtype.is_floating else "float64",
                  device=o.device) * 2 - 1).requires_grad_(True)
            for o in _differentiable(_as_tuple(func(*inputs))))
    else:
        grad_outputs = _as_tuple(grad_outputs)
    count = len(grad_outputs)
    diff_inputs = {i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad}

    def gradients(*args):
        outputs = _differentiable(_as_tuple(func(*args[:len(args) - count])))
        wrt = [x for i, x in enumerate(args[:len(args) - count]) if i in diff_inputs]
        found = grad(outputs, wrt, list(args[len(args) - count:]), create_graph=True,
                     allow_unused=True)
        return tuple(g for g in found if g is not None)

    return gradcheck(gradients, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_undefined_grad=check_undefined_grad,
                     check_grad_dtypes=check_grad_dtypes,
                     check_batched_grad=check_batched_grad, fast_mode=fast_mode,
                     check_forward_ad=check_fwd_over_rev,
                     check_backward_ad=check_rev_over_rev, masked=masked or None)
