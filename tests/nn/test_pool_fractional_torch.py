"""F.fractional_max_pool2d/3d and nn.FractionalMaxPool2d/3d: against a NumPy reference of
PyTorch's interval formula, against PyTorch itself with the same ``_random_samples``
(values, indices, gradients), finite differences, drawn samples, and refusals."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from fastnn import nn

DEVICES = ["cpu"] + [r.name for r in fnn.backends() if r.name == "opencl" and r.available]
# (input shape, kernel_size, output_size): 2-D and 3-D, batched and not, overlapping windows
CASES = [((2, 3, 13, 11), (3, 2), (5, 7)), ((3, 9, 8), 2, 4), ((2, 5, 5, 6), 2, (1, 1)),
         ((2, 2, 7, 7), 3, 5), ((2, 2, 7, 6, 9), (2, 3, 2), (3, 3, 5)),
         ((2, 6, 5, 8), 1, (2, 3, 4))]


def _starts(u, length, out, pool, kind):
    """PyTorch's generate_intervals, in the input's float type."""
    seq = np.zeros(out, np.int64)
    if out > 1:
        alpha = kind(length - pool) / kind(out - 1)
        for i in range(out - 1):
            seq[i] = int(kind(kind(i) + u) * alpha) - int(kind(u * alpha))
    if out > 0:
        seq[out - 1] = length - pool
    return seq


def reference(x, kernel, out, samples):
    """(values, indices): PyTorch's CPU loop in NumPy (first maximum, the last NaN)."""
    dims = len(out)
    kind, spatial = x.dtype.type, x.shape[2:]
    order = (1, 0) if dims == 2 else (0, 1, 2)
    values = np.zeros(x.shape[:2] + out, x.dtype)
    index = np.zeros(x.shape[:2] + out, np.int64)
    for n, c in np.ndindex(*x.shape[:2]):
        seqs = [_starts(samples[n, c, order[d]], spatial[d], out[d], kernel[d], kind)
                for d in range(dims)]
        for pos in np.ndindex(*out):
            starts = [seqs[d][pos[d]] for d in range(dims)]
            best, where = -np.inf, int(np.ravel_multi_index(starts, spatial))
            for off in np.ndindex(*kernel):
                p = tuple(s + a for s, a in zip(starts, off))
                v = x[(n, c) + p]
                if v > best or np.isnan(v):
                    best, where = v, int(np.ravel_multi_index(p, spatial))
            values[(n, c) + pos], index[(n, c) + pos] = best, where
    return values, index


def _functions(dims):
    return (F.fractional_max_pool2d, F.fractional_max_pool3d)[dims - 2]


def test_values_and_indices_match_the_numpy_reference():
    rng = np.random.default_rng(0)
    x = np.round(rng.normal(size=(2, 3, 12, 10)) * 2)  # ties: the first maximum wins
    x[0, 0, 3:5, 2:6] = np.nan  # whole windows of NaN, and NaN beside numbers
    x[1, 2, :, :4] = -np.inf  # windows of -inf keep the window's first index
    samples = rng.uniform(size=(2, 3, 2))
    out, index = F.fractional_max_pool2d(fnn.tensor(x), (3, 2), output_size=(6, 5),
                                         return_indices=True,
                                         _random_samples=fnn.tensor(samples))
    ref, ref_index = reference(x, (3, 2), (6, 5), samples)
    np.testing.assert_array_equal(out.numpy(), ref)
    np.testing.assert_array_equal(index.numpy(), ref_index)
    x3 = rng.normal(size=(1, 2, 7, 6, 9)).astype(np.float32)
    s3 = rng.uniform(size=(1, 2, 3)).astype(np.float32)
    out, index = F.fractional_max_pool3d(fnn.tensor(x3), (2, 3, 2), (3, 3, 5),
                                         return_indices=True, _random_samples=fnn.tensor(s3))
    ref, ref_index = reference(x3, (2, 3, 2), (3, 3, 5), s3)
    np.testing.assert_array_equal(out.numpy(), ref)
    np.testing.assert_array_equal(index.numpy(), ref_index)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape, kernel, size", CASES)
def test_matches_torch(shape, kernel, size, dtype, device):
    torch = pytest.importorskip("torch")
    dims = 3 if len(shape) == 5 or (isinstance(size, tuple) and len(size) == 3) else 2
    rng = np.random.default_rng(1)
    x = rng.normal(size=shape).astype(dtype)
    x[..., 1] = np.round(x[..., 1])  # some ties
    batch = shape[0] if len(shape) == dims + 2 else 1
    samples = rng.uniform(size=(batch, shape[-dims - 1], dims)).astype(dtype)
    theirs_x = torch.tensor(x, requires_grad=True)
    ref, ref_index = getattr(torch.nn.functional, f"fractional_max_pool{dims}d")(
        theirs_x, kernel, output_size=size, return_indices=True,
        _random_samples=torch.tensor(samples))
    ours_x = fnn.tensor(x, device=device, requires_grad=True)
    out, index = _functions(dims)(ours_x, kernel, output_size=size, return_indices=True,
                                  _random_samples=fnn.tensor(samples, device=device))
    assert index.dtype == fnn.int64 and out.dtype == ours_x.dtype
    np.testing.assert_array_equal(index.numpy(), ref_index.numpy())
    np.testing.assert_array_equal(out.numpy(), ref.detach().numpy())
    g = rng.normal(size=tuple(ref.shape)).astype(dtype)
    (ref * torch.tensor(g)).sum().backward()
    (out * fnn.tensor(g, device=device)).sum().backward()
    np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), rtol=1e-6,
                               atol=1e-6)


def test_layers_and_ratio_match_torch_through_state_dict():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    x = rng.normal(size=(3, 2, 9, 8)).astype(np.float32)
    samples = rng.uniform(size=(4, 2, 2)).astype(np.float32)  # more rows than the batch
    theirs = torch.nn.FractionalMaxPool2d(2, output_ratio=(0.5, 0.7), return_indices=True,
                                          _random_samples=torch.tensor(samples))
    ours = nn.FractionalMaxPool2d(2, output_ratio=(0.5, 0.7), return_indices=True,
                                  _random_samples=fnn.zeros(4, 2, 2))
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    assert list(ours.state_dict()) == ["_random_samples"]
    assert repr(ours) == repr(theirs) == "FractionalMaxPool2d()"
    (out, index), (ref, ref_index) = ours(fnn.tensor(x)), theirs(torch.tensor(x))
    np.testing.assert_array_equal(out.numpy(), ref.numpy())
    np.testing.assert_array_equal(index.numpy(), ref_index.numpy())
    assert ours.kernel_size == (2, 2) and ours.output_ratio == (0.5, 0.7)
    assert ours.output_size is None
    x3 = rng.normal(size=(2, 6, 7, 8))  # unbatched 3-D, float64: the buffer is cast
    s3 = rng.uniform(size=(1, 2, 3)).astype(np.float32)
    ours3 = nn.FractionalMaxPool3d(2, 3, _random_samples=fnn.tensor(s3)).double()
    theirs3 = torch.nn.FractionalMaxPool3d(2, 3, _random_samples=torch.tensor(s3)).double()
    np.testing.assert_array_equal(ours3(fnn.tensor(x3)).numpy(),
                                  theirs3(torch.tensor(x3)).numpy())


def test_functional_forms_and_drawn_samples():
    x = fnn.tensor(np.random.default_rng(3).normal(size=(2, 3, 10, 9)))
    both = F.fractional_max_pool2d_with_indices(x, 2, output_size=4)
    assert isinstance(both, tuple) and both[0].shape == both[1].shape == (2, 3, 4, 4)
    plain = F.fractional_max_pool2d(x, 2, output_ratio=0.5)
    assert plain.shape == (2, 3, 5, 4)
    fnn.manual_seed(5)
    first = F.fractional_max_pool2d(x, 3, output_size=(5, 6), return_indices=True)
    fnn.manual_seed(5)
    again = F.fractional_max_pool2d(x, 3, output_size=(5, 6), return_indices=True)
    np.testing.assert_array_equal(first[1].numpy(), again[1].numpy())
    # every output is its index's input value, and each window a 3 x 3 box inside the input
    flat = x.numpy().reshape(2, 3, -1)
    index = first[1].numpy().reshape(2, 3, -1)
    np.testing.assert_array_equal(np.take_along_axis(flat, index, 2),
                                  first[0].numpy().reshape(2, 3, -1))
    three = F.fractional_max_pool3d_with_indices(fnn.tensor(np.ones((1, 2, 5, 5, 5))), 2, 3)
    assert three[1].shape == (1, 2, 3, 3, 3)
    empty = F.fractional_max_pool2d(x, 2, output_size=(0, 3))
    assert empty.shape == (2, 3, 0, 3)


def test_gradient_matches_central_differences():
    rng = np.random.default_rng(4)
    x = rng.permutation(5 * 6 * 7).reshape(1, 5, 6, 7).astype(np.float64) / 10  # distinct
    samples = fnn.tensor(rng.uniform(size=(1, 5, 2)))
    g = rng.normal(size=(1, 5, 3, 4))

    def loss(values):
        out = F.fractional_max_pool2d(values, 3, (3, 4), _random_samples=samples)
        return (out * fnn.tensor(g)).sum()

    leaf = fnn.tensor(x, requires_grad=True)
    loss(leaf).backward()
    eps, numeric = 1e-3, np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        numeric[i] = (float(loss(fnn.tensor(up))) - float(loss(fnn.tensor(down)))) / (2 * eps)
    np.testing.assert_allclose(leaf.grad.numpy(), numeric, rtol=1e-7, atol=1e-9)
    layer = nn.FractionalMaxPool2d(3, (3, 4), return_indices=True, _random_samples=samples)
    grad_x, own = layer.reverse(fnn.tensor(x), fnn.tensor(g))
    np.testing.assert_allclose(grad_x.numpy(), leaf.grad.numpy())
    assert own == {}


BAD = {
    "no size": (lambda x: F.fractional_max_pool2d(x, 2), ValueError, "output_size or an"),
    "ratio 1": (lambda x: F.fractional_max_pool2d(x, 2, output_ratio=1.0), ValueError,
                "between 0 and 1"),
    "pool too big": (lambda x: F.fractional_max_pool2d(x, 3, 6), ValueError,
                     "pool height 3 too large relative to input height 7"),
    "3-D bound": (lambda x: F.fractional_max_pool3d(fnn.zeros(1, 1, 4, 4, 4), 2, 3),
                  ValueError, "pool time 2 too large"),
    "kernel 0": (lambda x: F.fractional_max_pool2d(x, 0, 2), ValueError, "kernel_size"),
    "kernel triple": (lambda x: F.fractional_max_pool2d(x, (2, 2, 2), 2), ValueError,
                      "tuple of 2 ints"),
    "rank": (lambda x: F.fractional_max_pool2d(x[0, 0], 2, 2), ValueError, "expected input"),
    "integer": (lambda x: F.fractional_max_pool2d(fnn.zeros(1, 1, 5, 5, dtype=fnn.int64), 2,
                                                  2), TypeError, "floating-point"),
    "samples dtype": (lambda x: F.fractional_max_pool2d(
        x, 2, 2, _random_samples=fnn.zeros(2, 3, 2, dtype=fnn.float64)), TypeError,
        "input's dtype float32"),
    "samples batch": (lambda x: F.fractional_max_pool2d(x, 2, 2,
                                                        _random_samples=fnn.zeros(1, 3, 2)),
                      ValueError, "batch size N = 2"),
    "samples last": (lambda x: F.fractional_max_pool2d(x, 2, 2,
                                                       _random_samples=fnn.zeros(2, 3, 3)),
                     ValueError, r"\(N, C, 2\)"),
    "samples type": (lambda x: F.fractional_max_pool2d(x, 2, 2, _random_samples=[0.5]),
                     TypeError, "_random_samples must be a Tensor"),
    "layer no size": (lambda x: nn.FractionalMaxPool2d(2), ValueError, "either an output"),
    "layer both": (lambda x: nn.FractionalMaxPool3d(2, 2, 0.5), ValueError, "only one of"),
    "layer ratio": (lambda x: nn.FractionalMaxPool3d(2, output_ratio=(0.5, 1, 0.5)),
                    ValueError, "between 0 and 1"),
    "layer kernel": (lambda x: nn.FractionalMaxPool3d(0, 2), ValueError, "greater than 0"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_arguments_raise(name):
    call, error, match = BAD[name]
    with pytest.raises(error, match=match):
        call(fnn.zeros(2, 3, 7, 7))


def test_cpu_autocast_runs_it_in_float32_as_torch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(6).normal(size=(1, 2, 8, 8)).astype(np.float32)
    samples = np.random.default_rng(7).uniform(size=(1, 2, 2)).astype(np.float32)
    with torch.autocast("cpu", dtype=torch.float16):
        ref = torch.nn.functional.fractional_max_pool2d(
            torch.tensor(x).half(), 2, 4, _random_samples=torch.tensor(samples).half())
    with fnn.autocast("cpu", dtype=fnn.float16):
        out = F.fractional_max_pool2d(fnn.tensor(x).half(), 2, 4,
                                      _random_samples=fnn.tensor(samples).half())
    assert out.dtype == fnn.float32 and ref.dtype == torch.float32
    np.testing.assert_array_equal(out.numpy(), ref.numpy())
