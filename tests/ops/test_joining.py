"""cat, stack, split, chunk, unbind and F.pad against NumPy (and PyTorch where installed)."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F

rng = np.random.default_rng(0)
A, B = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 1, 4))


def test_cat_and_stack_with_gradients(device):
    a = fnn.tensor(A, device=device, requires_grad=True)
    b = fnn.tensor(B, device=device, requires_grad=True)
    out = fnn.cat([a, b, a], dim=1)
    np.testing.assert_array_equal(out.numpy(), np.concatenate([A, B, A], 1))
    w = rng.standard_normal(out.shape)
    (out * fnn.tensor(w, device=device)).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), w[:, :3] + w[:, 4:], rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), w[:, 3:4], rtol=1e-12)
    s = fnn.stack([a, a], axis=-1)
    np.testing.assert_array_equal(s.numpy(), np.stack([A, A], -1))
    assert fnn.cat([a, fnn.zeros((0,), dtype=fnn.float64, device=device)]).shape == A.shape


def test_cat_of_eight_as_a_batch_loop_does(device):
    parts = [rng.standard_normal((5, 3)) for _ in range(8)]
    out = fnn.cat([fnn.tensor(p, device=device) for p in parts])
    np.testing.assert_array_equal(out.numpy(), np.concatenate(parts))


def test_cat_errors_name_the_shapes_and_devices():
    with pytest.raises(ValueError, match=r"cat: tensor 1 has shape \(2, 1, 5\).*except in dim 1"):
        fnn.cat([fnn.ones((2, 3, 4)), fnn.ones((2, 1, 5))], 1)
    with pytest.raises(ValueError, match="non-empty sequence"):
        fnn.cat([])
    with pytest.raises(ValueError, match="stack: tensor 1 has shape"):
        fnn.stack([fnn.ones(2), fnn.ones(3)])
    with pytest.raises(TypeError, match="both dim= and axis="):
        fnn.cat([fnn.ones(2)], dim=0, axis=0)


def test_cat_of_two_devices_is_refused():
    if not any(r.name == "opencl" and r.available for r in fnn.backends()):
        pytest.skip("needs a second device")
    with pytest.raises(fnn.DeviceMismatchError, match="cpu.*opencl|opencl.*cpu"):
        fnn.cat([fnn.ones(2), fnn.ones(2, device="opencl")])


def test_cat_promotes_dtypes():
    out = fnn.cat([fnn.ones(2, dtype=fnn.int64), fnn.ones(1, dtype=fnn.float32)])
    assert out.dtype is fnn.float32


def test_split_chunk_unbind(device):
    x = fnn.tensor(A, device=device, requires_grad=True)
    parts = x.split(3, dim=2)
    assert [p.shape for p in parts] == [(2, 3, 3), (2, 3, 1)]
    parts = fnn.split(x, [1, 2], 1)
    np.testing.assert_array_equal(parts[1].numpy(), A[:, 1:])
    chunks = x.chunk(3, dim=1)
    assert [c.shape[1] for c in chunks] == [1, 1, 1]
    assert [c.shape[2] for c in x.chunk(3, -1)] == [2, 2]
    rows = x.unbind(1)
    np.testing.assert_array_equal(rows[2].numpy(), A[:, 2])
    (chunks[0].sum() + 2 * chunks[2].sum()).backward()
    want = np.zeros_like(A)
    want[:, 0], want[:, 2] = 1, 2
    np.testing.assert_array_equal(x.grad.numpy(), want)
    with pytest.raises(ValueError, match="sum to the size 3"):
        x.split([1, 1], 1)


@pytest.mark.parametrize("pad,mode", [((1, 2), "constant"), ((1, 0, 2, 1), "constant"),
                                      ((2, 3), "reflect"), ((1, 1, 2, 0), "reflect"),
                                      ((3, 1), "replicate"), ((0, 2, 1, 1), "replicate"),
                                      ((-1, 2), "constant"),
                                      # negative sizes crop first in every mode, as PyTorch
                                      ((2, -1), "reflect"), ((-1, 2, 1, -1), "replicate"),
                                      ((2, -1, 0, 1), "circular")])
def test_pad_matches_numpy_and_torch(device, pad, mode):
    x = fnn.tensor(A, device=device, requires_grad=True)
    out = F.pad(x, pad, mode=mode, value=0.5)
    widths = [(0, 0)] * 3
    for k in range(len(pad) // 2):
        widths[2 - k] = (pad[2 * k], pad[2 * k + 1])
    if min(pad) >= 0:
        np_mode = {"constant": "constant", "reflect": "reflect", "replicate": "edge"}[mode]
        extra = {"constant_values": 0.5} if mode == "constant" else {}
        np.testing.assert_array_equal(out.numpy(), np.pad(A, widths, mode=np_mode, **extra))
    torch = pytest.importorskip("torch")
    t = torch.tensor(A, requires_grad=True)
    ref = torch.nn.functional.pad(t if mode == "constant" else t, pad, mode=mode,
                                  **({"value": 0.5} if mode == "constant" else {}))
    np.testing.assert_array_equal(out.numpy(), ref.detach().numpy())
    w = rng.standard_normal(out.shape)
    (out * fnn.tensor(w, device=device)).sum().backward()
    (ref * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_pad_errors():
    with pytest.raises(ValueError, match="reflect padding .* smaller than"):
        F.pad(fnn.ones((2, 3)), (3, 0), mode="reflect")
    with pytest.raises(ValueError, match="mode must be"):
        F.pad(fnn.ones((2, 3)), (1, 1), mode="wrap")
    with pytest.raises(ValueError, match="circular padding .* wraps around more than once"):
        F.pad(fnn.ones((2, 3)), (4, 0), mode="circular")
    with pytest.raises(ValueError, match="even length"):
        F.pad(fnn.ones((2, 3)), (1,))


def test_empty_dims_split_chunk_and_pad_as_torch(device):
    # issue 25: chunk of an empty dim gave 1 piece (torch: as many as asked), split(0) of
    # an empty dim was refused, and F.pad of an empty tensor dropped requires_grad
    empty = fnn.zeros((0, 2), device=device)
    assert [p.shape for p in empty.chunk(3)] == [(0, 2)] * 3
    assert [p.shape for p in fnn.zeros((2, 0), device=device).chunk(2, 1)] == [(2, 0)] * 2
    assert [p.shape for p in empty.split(0)] == [(0, 2)]
    with pytest.raises(ValueError, match="0 only for an empty dim"):
        fnn.zeros((3,), device=device).split(0)
    x = fnn.zeros((0, 3), device=device, requires_grad=True)
    out = F.pad(x, (1, 1), value=2.0)
    assert out.shape == (0, 5) and out.requires_grad
    out.sum().backward()
    assert x.grad.shape == (0, 3)
    torch = pytest.importorskip("torch")
    assert len(torch.zeros((0, 2)).chunk(3)) == 3 and len(torch.zeros(0).split(0)) == 1
    assert torch.nn.functional.pad(torch.zeros((0, 3), requires_grad=True), (1, 1)).requires_grad
