"""bfloat16 on the NumPy backend (ml_dtypes' storage, float32 arithmetic inside), against
PyTorch's bfloat16 CPU kernels: ops, promotion, autocast("cpu") training steps, bfloat16
models through state_dict and fnn.save/load, finfo; and the backend without ml_dtypes."""

from __future__ import annotations

import copy
import os
import subprocess
import sys

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F

pytest.importorskip("ml_dtypes")
torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _pair(*shape, positive=False, seed=0):
    values = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    if positive:
        values = np.abs(values) + 0.1
    return torch.tensor(values).bfloat16(), fnn.tensor(values).bfloat16()


def _values(t):
    return t.detach().float().numpy() if isinstance(t, torch.Tensor) else \
        t.detach().float().numpy()


def _same_dtype(theirs, ours):
    assert str(theirs.dtype).split(".")[-1] == ours.dtype.name


A, FA = _pair(16, 12)
B, FB = _pair(16, 12, seed=1)
P, FP = _pair(16, 12, positive=True, seed=2)

# one hook each, computed in float32 and rounded once, as PyTorch's kernels: bit for bit
EXACT = {
    "exp": (lambda t: t.exp(), lambda f: f.exp()),
    "tanh": (torch.tanh, fnn.tanh),
    "sigmoid": (torch.sigmoid, fnn.sigmoid),
    "relu": (torch.relu, fnn.relu),
    "abs": (torch.abs, fnn.abs),
    "sin": (torch.sin, fnn.sin),
    "erf": (torch.erf, fnn.erf),
    "gelu": (TF.gelu, F.gelu),
    "silu": (TF.silu, F.silu),
    "softmax": (lambda t: TF.softmax(t, -1), lambda f: F.softmax(f, -1)),
    "log": (lambda t: (t.abs() + 0.1).log(), lambda f: (f.abs() + 0.1).log()),
    "add": (lambda t: t + B, lambda f: f + FB),
    "mul": (lambda t: t * B, lambda f: f * FB),
    "div": (lambda t: t / P, lambda f: f / FP),
    "pow": (lambda t: P ** t, lambda f: FP ** f),
    # PyTorch rounds a Python float to bfloat16 for add, sub and pow, not for mul and div
    "add 1/3": (lambda t: t + 1 / 3, lambda f: f + 1 / 3),
    "rsub 0.1": (lambda t: 0.1 - t, lambda f: 0.1 - f),
    "mul 1/3": (lambda t: t * (1 / 3), lambda f: f * (1 / 3)),
    "div 0.7": (lambda t: t / 0.7, lambda f: f / 0.7),
    "sum": (lambda t: t.sum(1), lambda f: f.sum(1)),
    "mean": (lambda t: t.mean(), lambda f: f.mean()),
    "cumsum": (lambda t: t.cumsum(1), lambda f: f.cumsum(1)),
    "amax": (lambda t: t.amax(0), lambda f: f.amax(0)),
    "matmul": (lambda t: t @ B.T, lambda f: f @ FB.T),
    "where": (lambda t: torch.where(t > 0, t, B), lambda f: fnn.where(f > 0, f, FB)),
    "clamp": (lambda t: t.clamp(-0.5, 0.5), lambda f: f.clamp(-0.5, 0.5)),
    "slice": (lambda t: t[::2, 3:7].contiguous(), lambda f: f[::2, 3:7].contiguous()),
}


@pytest.mark.parametrize("name", list(EXACT))
def test_ops_match_pytorch_bit_for_bit(name):
    theirs, ours = EXACT[name][0](A), EXACT[name][1](FA)
    _same_dtype(theirs, ours)
    np.testing.assert_array_equal(_values(ours), _values(theirs))


X, FX = _pair(4, 3, 10, 10, seed=3)
W, FW = _pair(5, 3, 3, 3, seed=4)
# fastnn composes these from several hooks (each rounding) where PyTorch has one kernel,
# or its kernel rounds an intermediate: within 2 bfloat16 ulps of the result's scale
CLOSE = {
    "conv2d": (lambda: TF.conv2d(X, W, padding=1), lambda: F.conv2d(FX, FW, padding=1)),
    "linear": (lambda: TF.linear(A, B[:5], B[0, :5]), lambda: F.linear(FA, FB[:5], FB[0, :5])),
    "log_softmax": (lambda: TF.log_softmax(A, -1), lambda: F.log_softmax(FA, -1)),
    "layer_norm": (lambda: TF.layer_norm(A, (12,)), lambda: F.layer_norm(FA, (12,))),
    "var": (lambda: A.var(1), lambda: FA.var(1)),
    "rsqrt": (lambda: P.rsqrt(), lambda: FP.rsqrt()),
    "cross_entropy": (lambda: TF.cross_entropy(A, torch.arange(16) % 12),
                      lambda: F.cross_entropy(FA, fnn.arange(16) % 12)),
    "max_pool2d": (lambda: TF.max_pool2d(X, 2), lambda: F.max_pool2d(FX, 2)),
    "attention": (lambda: TF.scaled_dot_product_attention(X, X, X),
                  lambda: F.scaled_dot_product_attention(FX, FX, FX)),
}


@pytest.mark.parametrize("name", list(CLOSE))
def test_composed_ops_match_pytorch_within_bfloat16_rounding(name):
    theirs, ours = CLOSE[name][0](), CLOSE[name][1]()
    _same_dtype(theirs, ours)
    want = _values(theirs)
    scale = np.abs(want).max()
    np.testing.assert_allclose(_values(ours), want, rtol=2 ** -6, atol=2 ** -7 * scale)


@pytest.mark.parametrize("other", ["float16", "float32", "float64", "int64", "bool"])
def test_promotion_as_pytorch(other):
    theirs = A + B.to(getattr(torch, other))
    ours = FA + FB.to(getattr(fnn, other))
    _same_dtype(theirs, ours)
    np.testing.assert_array_equal(_values(ours), _values(theirs))
    _same_dtype(A + torch.tensor(0.5, dtype=torch.float64),
                FA + fnn.tensor(0.5, dtype=fnn.float64))  # a 0-d float: bfloat16 stays


def test_conversions_printing_and_finfo():
    doubles = np.random.default_rng(5).standard_normal(10000)
    # double -> float -> bfloat16, as PyTorch converts (rounded once, 1 in ~700 differs)
    np.testing.assert_array_equal(
        _values(fnn.tensor(doubles, dtype=fnn.bfloat16)),
        _values(torch.tensor(doubles, dtype=torch.bfloat16)))
    np.testing.assert_array_equal(
        _values(fnn.tensor(doubles).to(fnn.float64).bfloat16()),
        _values(torch.tensor(doubles).double().bfloat16()))
    assert repr(FA[0, :3]) == repr(A[0, :3]).replace("torch.", "")
    assert repr(FA[0, :3].float()) == repr(A[0, :3].float())
    assert FA[0, 0].item() == A[0, 0].item() and FA[0].tolist() == A[0].tolist()
    assert fnn.tensor([300.7, -2.5]).bfloat16().int().tolist() == [300, -2]
    ours, theirs = fnn.finfo(fnn.bfloat16), torch.finfo(torch.bfloat16)
    for name in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"):
        assert getattr(ours, name) == getattr(theirs, name), name
    assert (fnn.rand(4096, dtype=fnn.bfloat16).float() < 1).all()  # never rounded up to 1


def _mlp(lib):
    return lib.nn.Sequential(lib.nn.Linear(20, 32), lib.nn.ReLU(), lib.nn.Linear(32, 32),
                             lib.nn.GELU(), lib.nn.Linear(32, 5))


def _cnn(lib):
    return lib.nn.Sequential(lib.nn.Conv2d(3, 6, 3, padding=1), lib.nn.BatchNorm2d(6),
                             lib.nn.ReLU(), lib.nn.MaxPool2d(2), lib.nn.Flatten(),
                             lib.nn.Linear(6 * 4 * 4, 5))


def _train(lib, build, weights, xs, ys, mode, optimizer):
    model = build(lib)
    model.load_state_dict({k: lib.tensor(v) for k, v in weights.items()})
    if mode == "bfloat16":
        model = model.bfloat16()
    opt = (lib.optim.SGD(model.parameters(), lr=0.05, momentum=0.9) if optimizer == "sgd"
           else lib.optim.AdamW(model.parameters(), lr=1e-3))
    losses = []
    for x, y in zip(xs, ys):
        x, y = lib.tensor(x), lib.tensor(y)
        opt.zero_grad()
        if mode == "autocast":
            with lib.autocast("cpu"):
                out = model(x)
                loss = lib.nn.functional.cross_entropy(out, y)
        else:
            out = model(x.bfloat16())
            loss = lib.nn.functional.cross_entropy(out, y)
        loss.backward()
        opt.step()
        losses.append(float(loss.float().item()))
    dtypes = [str(t.dtype).split(".")[-1] for t in (out, loss, next(model.parameters()).grad)]
    return losses, dtypes


@pytest.mark.parametrize("mode", ["autocast", "bfloat16"])
@pytest.mark.parametrize("optimizer", ["sgd", "adamw"])
@pytest.mark.parametrize("build,shape", [(_mlp, (16, 20)), (_cnn, (4, 3, 8, 8))],
                         ids=["mlp", "cnn"])
def test_training_steps_as_pytorch(build, shape, mode, optimizer):
    """autocast("cpu") (PyTorch's default: bfloat16) over a float32 model, and a model
    made bfloat16 (.bfloat16(): parameters, gradients and optimizer state in bfloat16)."""
    rng = np.random.default_rng(6)
    xs = [rng.standard_normal(shape).astype(np.float32) for _ in range(4)]
    ys = [rng.integers(0, 5, shape[0]) for _ in range(4)]
    torch.manual_seed(0)
    weights = {k: v.numpy() for k, v in build(torch).state_dict().items()}
    theirs = _train(torch, build, weights, xs, ys, mode, optimizer)
    ours = _train(fnn, build, weights, xs, ys, mode, optimizer)
    assert ours[1] == theirs[1] == (["bfloat16", "float32", "float32"] if mode == "autocast"
                                    else ["bfloat16"] * 3)
    # a loss near 1.6 is 2**-7 apart from its bfloat16 neighbours
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-2, atol=1e-2)


def _losses(mode, compiled, x, y):
    fnn.manual_seed(0)
    model = fnn.nn.Sequential(fnn.nn.Linear(8, 32), fnn.nn.ReLU(), fnn.nn.Linear(32, 4))
    if mode == "bfloat16":
        model, x = model.bfloat16(), x.bfloat16()
    opt = fnn.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def step(xb, yb):
        opt.zero_grad()
        with fnn.autocast("cpu", enabled=mode == "autocast"):
            loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
        return loss

    run = fnn.compile(step) if compiled else step
    return [float(run(x, y)) for _ in range(4)]


@pytest.mark.parametrize("mode", ["autocast", "bfloat16"])
def test_a_compiled_step_gives_the_eager_steps_losses(mode, monkeypatch):
    """fnn.compile's cpu buffer plan (NumPy writing into kept buffers, every size here)
    leaves bfloat16 calls to their hooks."""
    from fastnn_cpu import program

    monkeypatch.setattr(program, "MIN_BYTES", 0)
    x, y = fnn.randn(16, 8), fnn.randint(0, 4, (16,))
    assert _losses(mode, True, x, y) == _losses(mode, False, x, y)


def test_a_bfloat16_model_round_trips_through_state_dict_and_save(tmp_path):
    model = fnn.nn.Sequential(fnn.nn.Linear(4, 3), fnn.nn.BatchNorm1d(3)).bfloat16()
    model(fnn.randn(5, 4).bfloat16())  # running statistics too
    state = model.state_dict()
    assert {v.dtype.name for v in state.values()} == {"bfloat16", "int64"}
    fnn.save(state, tmp_path / "m.safetensors")
    back = fnn.load(tmp_path / "m.safetensors")
    for key, value in state.items():
        assert back[key].dtype == value.dtype
        np.testing.assert_array_equal(back[key].astype(np.float64), value.astype(np.float64))
    again = fnn.nn.Sequential(fnn.nn.Linear(4, 3), fnn.nn.BatchNorm1d(3)).bfloat16()
    again.load_state_dict(back)
    x = fnn.randn(2, 4).bfloat16()
    model.eval(), again.eval()
    np.testing.assert_array_equal(_values(again(x)), _values(model(x)))
    wide = fnn.nn.Sequential(fnn.nn.Linear(4, 3), fnn.nn.BatchNorm1d(3))
    wide.load_state_dict(back)  # into float32, exactly
    assert wide[0].weight.dtype is fnn.float32
    np.testing.assert_array_equal(wide[0].weight.detach().numpy(),
                                  state["0.weight"].astype(np.float32))
    # PyTorch's bfloat16 state dict (NumPy cannot read its tensors) loads too
    theirs = torch.nn.Linear(4, 3).bfloat16()
    ours = fnn.nn.Linear(4, 3).bfloat16()
    ours.load_state_dict(theirs.state_dict())
    np.testing.assert_array_equal(_values(ours.weight), _values(theirs.weight))


def test_optimizer_state_round_trips(tmp_path):
    model = fnn.nn.Linear(4, 3).bfloat16()
    opt = fnn.optim.Adam(model.parameters())
    model(fnn.randn(5, 4).bfloat16()).sum().backward()
    opt.step()
    fnn.save(opt.state_dict(), tmp_path / "o.safetensors")
    opt.load_state_dict(fnn.load(tmp_path / "o.safetensors"))
    assert opt.state[model.weight]["exp_avg"].dtype is fnn.bfloat16


def test_a_float32_gradient_beside_a_bfloat16_one_stays_float32():
    """One clip (and optimizer) hook over both dtypes: only the bfloat16 arrays round."""
    low, wide = fnn.nn.Linear(3, 2).bfloat16(), fnn.nn.Linear(3, 2)
    x = fnn.randn(4, 3)
    (low(x.bfloat16()).float().sum() + wide(x).sum()).backward()
    before = wide.weight.grad.numpy().copy()
    total = fnn.nn.utils.clip_grad_norm_([*low.parameters(), *wide.parameters()], 0.1)
    assert wide.weight.grad.dtype is fnn.float32 and total.dtype is fnn.float32
    np.testing.assert_allclose(wide.weight.grad.numpy(), before * 0.1 / (float(total) + 1e-6),
                               rtol=1e-6)
    alone = copy.deepcopy(wide)  # the same float32 step, without a bfloat16 neighbour
    for mine, theirs in zip(alone.parameters(), wide.parameters()):
        mine.grad = theirs.grad.clone()
    fnn.optim.Adam([*low.parameters(), *wide.parameters()], lr=0.1).step()
    fnn.optim.Adam(alone.parameters(), lr=0.1).step()
    assert wide.weight.dtype is fnn.float32
    np.testing.assert_array_equal(wide.weight.detach().numpy(), alone.weight.detach().numpy())


def test_layer_norm_keeps_its_statistics_in_float32():
    """Two nearby values far from 0: rounded to bfloat16, the mean the backward subtracts
    loses their difference (the gradient came out 8x too large, of the wrong sign). Held
    to the exact gradient: PyTorch's own bfloat16 kernel is further off here (178, 228)."""
    values = np.array([[3.0, 3.015625], [-0.5, 0.5]])
    grad = np.array([[1.0, -2.0], [0.5, 1.0]])
    x = fnn.tensor(values, dtype=fnn.bfloat16, requires_grad=True)
    out = F.layer_norm(x, (2,), fnn.ones(2).bfloat16(), fnn.zeros(2).bfloat16())
    (out * fnn.tensor(grad).bfloat16()).sum().backward()
    rstd = 1 / np.sqrt(values.var(1, keepdims=True) + 1e-5)
    xhat = (values - values.mean(1, keepdims=True)) * rstd
    want = rstd * (grad - grad.mean(1, keepdims=True) - xhat * (grad * xhat).mean(1,
                                                                                 keepdims=True))
    np.testing.assert_allclose(_values(x.grad), want, rtol=2 ** -6, atol=1e-6)


def test_widening_is_ml_dtypes_cast_bit_for_bit():
    """The hooks' fast bfloat16 -> float32 (bits shifted up), on every bfloat16 value."""
    from fastnn_cpu.bfloat16 import widened

    every = np.arange(2 ** 16, dtype=np.uint32).astype(np.uint16).view(FA.numpy().dtype)
    for values in (every, every.reshape(256, 256)[:, ::3].T, every[7:8].reshape(())):
        wide = widened(values)
        assert wide.dtype == np.float32 and wide.shape == values.shape
        np.testing.assert_array_equal(wide.view(np.uint32),
                                      values.astype(np.float32).view(np.uint32))


def test_host_side_ops_take_bfloat16_as_a_float():
    """Ops that work on host arrays asked ``dtype.kind == "f"``, which ml_dtypes' bfloat16
    (kind "V") is not: include_self=False filled with 0 (a bool's identity) instead of
    -inf, NaN was not found by cummax, median and anomaly mode."""
    index = [[0, 1, 2], [1, 1, 3]]
    src = [[-0.5, -0.25, -1.3], [0.5, 0.7, -2.0]]
    for reduce in ("amax", "amin"):
        theirs = torch.zeros(2, 4).bfloat16().scatter_reduce(
            1, torch.tensor(index), torch.tensor(src).bfloat16(), reduce, include_self=False)
        ours = fnn.zeros(2, 4).bfloat16().scatter_reduce(
            1, fnn.tensor(index), fnn.tensor(src).bfloat16(), reduce, include_self=False)
        np.testing.assert_array_equal(_values(ours), _values(theirs))
    values = [1.0, float("nan"), 3.0, 0.5]
    theirs, ours = torch.tensor(values).bfloat16(), fnn.tensor(values).bfloat16()
    assert ours.cummax(0).indices.tolist() == theirs.cummax(0).indices.tolist()
    assert ours.median(0).indices.item() == theirs.median(0).indices.item()
    with pytest.raises(FloatingPointError, match="NaN or Inf"), fnn.detect_anomaly():
        x = fnn.tensor([1.0, 0.0], dtype=fnn.bfloat16, requires_grad=True)
        (x / 0.0).sum().backward()


def test_without_ml_dtypes_the_backend_refuses_bfloat16_clearly():
    """ml_dtypes is optional: without it the backend imports, lists no bfloat16, and a
    bfloat16 tensor or autocast("cpu") region is refused with the error that says so."""
    code = ("import sys; sys.modules['ml_dtypes'] = None\n"
            "import fastnn as fnn\n"
            "assert 'bfloat16' not in [b for b in fnn.backends() if b.name == 'cpu'][0].dtypes\n"
            "print(fnn.ones(2) + 1)\n"
            "for make in (lambda: fnn.ones(2, dtype=fnn.bfloat16), lambda: fnn.autocast('cpu')):\n"
            "    try:\n"
            "        make()\n"
            "    except (TypeError, RuntimeError) as exc:\n"
            "        print(exc)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ), timeout=120)
    assert done.returncode == 0, done.stderr
    assert "tensor([2., 2.])" in done.stdout
    assert "cpu does not support bfloat16" in done.stdout
    assert "the cpu backend has no bfloat16" in done.stdout
