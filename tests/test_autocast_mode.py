"""fnn.autocast as PyTorch's: its names, the region state (nesting, enabled=False,
decorator use, per thread), what a region leaves alone, its errors, and a small model
trained under autocast with GradScaler against torch.autocast("cpu", float16)."""

import threading
import warnings

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from fastnn import nn
from fastnn.api import registry

A = np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32)


def _region(**kwargs):
    return fnn.autocast("cpu", dtype=fnn.float16, **kwargs)


def test_the_pytorch_names():
    assert fnn.amp.autocast is fnn.autocast
    assert fnn.amp.is_autocast_available("cpu") and fnn.amp.is_autocast_available("cuda")
    with pytest.warns(FutureWarning, match="amp.autocast\\('cpu'"):
        region = fnn.cpu.amp.autocast(dtype=fnn.float16)
    assert isinstance(region, fnn.autocast) and region.device == "cpu"
    with pytest.warns(FutureWarning), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # no usable cuda here, maybe
        assert fnn.cuda.amp.autocast().fast_dtype is fnn.float16
    assert fnn.get_autocast_dtype("cuda") is fnn.float16
    assert fnn.get_autocast_dtype("cpu") is fnn.bfloat16
    assert not fnn.is_autocast_enabled() and not fnn.is_autocast_enabled("cpu")
    assert fnn.cpu.is_available() and fnn.cpu.device_count() == 1


def test_pytorchs_older_autocast_names():
    """torch.get_autocast_gpu_dtype() (Hugging Face's attention code), get_autocast_cpu_dtype
    and is_autocast_cpu_enabled were missing."""
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in ("get_autocast_gpu_dtype", "get_autocast_cpu_dtype"):
            assert getattr(fnn, name)().name == str(getattr(torch, name)()).split(".")[-1]
        assert fnn.is_autocast_cpu_enabled() is torch.is_autocast_cpu_enabled() is False
        # (float16: the cpu backend lists bfloat16 only where ml_dtypes is installed)
        with fnn.autocast("cpu", dtype=fnn.float16), torch.autocast("cpu", torch.float16):
            assert fnn.is_autocast_cpu_enabled() is torch.is_autocast_cpu_enabled() is True
            assert fnn.get_autocast_cpu_dtype() is fnn.float16
            assert torch.get_autocast_cpu_dtype() is torch.float16


def test_state_inside_and_after_a_region():
    with _region() as region:
        assert region.device == "cpu"
        assert fnn.is_autocast_enabled("cpu") and not fnn.is_autocast_enabled("cuda")
        assert fnn.get_autocast_dtype("cpu") is fnn.float16
    assert not fnn.is_autocast_enabled("cpu")
    assert fnn.get_autocast_dtype("cpu") is fnn.bfloat16
    assert (fnn.tensor(A) @ fnn.tensor(A)).dtype is fnn.float32


def test_nesting_and_enabled_false():
    a = fnn.tensor(A)
    with _region():
        assert (a @ a).dtype is fnn.float16
        with _region(enabled=False):
            assert not fnn.is_autocast_enabled("cpu")
            assert (a @ a).dtype is fnn.float32
            with _region():
                assert (a @ a).dtype is fnn.float16
            assert (a @ a).dtype is fnn.float32
        assert (a @ a).dtype is fnn.float16
    assert (a @ a).dtype is fnn.float32


def test_decorator_and_recursion():
    a = fnn.tensor(A)

    @_region()
    def product(depth):
        assert fnn.is_autocast_enabled("cpu")
        return a @ a if depth == 0 else product(depth - 1)

    assert product(3).dtype is fnn.float16
    assert not fnn.is_autocast_enabled("cpu")
    with pytest.raises(TypeError, match="requires a callable"):
        _region()(3)


def test_state_is_per_thread():
    a, seen = fnn.tensor(A), {}
    entered, done = threading.Event(), threading.Event()

    def other():
        entered.wait()
        seen["enabled"] = fnn.is_autocast_enabled("cpu")
        seen["dtype"] = (a @ a).dtype
        with _region():
            seen["own"] = (a @ a).dtype
        done.set()

    thread = threading.Thread(target=other)
    thread.start()
    with _region():
        entered.set()
        done.wait(30)
        assert (a @ a).dtype is fnn.float16
    thread.join()
    assert seen == {"enabled": False, "dtype": fnn.float32, "own": fnn.float16}


def test_a_cuda_region_leaves_cpu_tensors_alone():
    a = fnn.tensor(A)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "not available, disabling" where cuda is missing
        with fnn.autocast(device_type="cuda"):
            assert (a @ a).dtype is fnn.float32
            assert F.softmax(a.half(), -1).dtype is fnn.float16
            assert nn.Linear(4, 2)(a).dtype is fnn.float32


def test_a_cpu_region_leaves_other_device_types_alone(monkeypatch):
    from fastnn.ops import autocasting

    monkeypatch.setattr(autocasting.state, "fast", {"opencl": fnn.float16})
    monkeypatch.setattr(autocasting.state, "on", True)
    assert (fnn.tensor(A) @ fnn.tensor(A)).dtype is fnn.float32  # cpu tensors


def test_errors(monkeypatch):
    record = registry.get_backend("cpu").record  # as without ml_dtypes: no bfloat16
    monkeypatch.setattr(record, "dtypes", [d for d in record.dtypes if d != "bfloat16"])
    with pytest.raises(RuntimeError, match=r"no bfloat16.*dtype=fnn\.float16"):
        fnn.autocast("cpu")
    monkeypatch.undo()
    fnn.autocast("cpu", enabled=False)  # a disabled region never casts: no error
    with pytest.raises(ValueError, match="of type `str`"):
        fnn.autocast(fnn.device("cpu"))
    assert fnn.autocast("cpu:0", dtype=fnn.float16).device == "cpu"
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'tpu'"):
        fnn.autocast("tpu")
    opencl = [b for b in fnn.backends() if b.name == "opencl" and b.available]
    if opencl and "float16" not in opencl[0].dtypes:
        with pytest.raises(RuntimeError, match="opencl backend has no float16"):
            fnn.autocast("opencl")
    with pytest.warns(UserWarning, match="not supported. Disabling"):
        region = fnn.autocast("cpu", dtype=fnn.float32)
    with region:
        assert not fnn.is_autocast_enabled("cpu")


def test_out_calls_and_in_place_ops_do_not_autocast():
    a, out = fnn.tensor(A), fnn.zeros(4, 4)
    with _region():
        fnn.matmul(a, a, out=out)
        b = fnn.tensor(A).half()
        b.add_(fnn.tensor(A))
    np.testing.assert_allclose(out.numpy(), A @ A, rtol=1e-6)  # computed in float32
    assert b.dtype is fnn.float16


def test_a_compiled_function_records_a_region_apart():
    step = fnn.compile(lambda x, w: (x @ w).sum())
    x = fnn.tensor(A)
    assert step(x, x).dtype is fnn.float32 and step(x, x).dtype is fnn.float32  # replayed
    with _region():
        assert step(x, x).dtype is fnn.float16 and step(x, x).dtype is fnn.float16
    assert step(x, x).dtype is fnn.float32


def test_set_functions():
    a = fnn.tensor(A)
    fnn.set_autocast_dtype("cpu", fnn.float16)
    fnn.set_autocast_enabled("cpu", True)
    try:
        assert (a @ a).dtype is fnn.float16
    finally:
        fnn.set_autocast_enabled("cpu", False)
        fnn.set_autocast_dtype("cpu", fnn.bfloat16)
    assert (a @ a).dtype is fnn.float32


def test_parameter_casts_are_cached_per_region():
    model = nn.Linear(4, 4)
    x = fnn.tensor(A)
    with _region():
        y = model(model(x))  # the weight is cast once and reused
        assert y.dtype is fnn.float16
        from fastnn.ops import autocasting

        assert len(autocasting.state.cache) == 2  # weight and bias
    assert autocasting.state.cache == {}
    with _region(cache_enabled=False):
        model(x)
        assert autocasting.state.cache == {}


def test_custom_fwd_and_custom_bwd():
    seen = {}

    class Square(fnn.autograd.Function):
        @staticmethod
        @fnn.amp.custom_fwd(device_type="cpu", cast_inputs=fnn.float32)
        def forward(ctx, x):
            seen["forward"] = (x.dtype, fnn.is_autocast_enabled("cpu"))
            ctx.save_for_backward(x)
            return x @ x

        @staticmethod
        @fnn.amp.custom_bwd(device_type="cpu")
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            seen["backward"] = fnn.is_autocast_enabled("cpu")
            return grad @ x.T + x.T @ grad

    x = fnn.tensor(A).half().requires_grad_()
    with _region():
        out = Square.apply(x)
    assert out.dtype is fnn.float32 and seen["forward"] == (fnn.float32, False)
    out.sum().backward()
    assert seen["backward"] is False and x.grad.dtype is fnn.float16


def test_a_model_trains_under_the_cuda_list(monkeypatch):
    """Conv, norms, attention and losses mixed in one step, with cpu tensors standing in
    for a GPU device type: it runs, outputs take PyTorch's CUDA dtypes, and every
    parameter gets a float32 gradient."""
    from fastnn.ops import autocasting

    monkeypatch.setattr(autocasting, "_kind", lambda device_type: "cuda")
    fnn.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                          nn.GroupNorm(2, 4), nn.Flatten(), nn.Linear(4 * 6 * 6, 8),
                          nn.LayerNorm(8), nn.GELU(), nn.Linear(8, 3))
    encoder = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, norm_first=True)
    params = [*model.parameters(), *encoder.parameters()]
    x = fnn.randn(5, 1, 6, 6)
    with _region():
        logits = model(x)
        hidden = encoder(fnn.randn(2, 3, 8))
        loss = F.cross_entropy(logits, fnn.tensor(np.array([0, 1, 2, 0, 1]))) + F.mse_loss(
            hidden, fnn.zeros(2, 3, 8))
    assert (logits.dtype, hidden.dtype, loss.dtype) == (fnn.float16, fnn.float32, fnn.float32)
    fnn.amp.GradScaler("cpu").scale(loss).backward()
    assert {p.grad.dtype for p in params} == {fnn.float32}


torch = pytest.importorskip("torch")


class _Net:
    """conv -> relu -> flatten -> linear -> (softmax for the probabilities)."""

    def __init__(self, lib):
        lib.manual_seed(0)
        rng = np.random.default_rng(1)
        self.conv = lib.nn.Conv2d(1, 2, 3)
        self.fc = lib.nn.Linear(2 * 4 * 4, 3)
        for layer in (self.conv, self.fc):
            for p in layer.parameters():
                p.data = lib.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32) / 4)

    def parameters(self):
        return [*self.conv.parameters(), *self.fc.parameters()]

    def __call__(self, x):
        return self.fc(self.conv(x).relu().flatten(1))


def _train(lib, functional, steps=3):
    model = _Net(lib)
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    scaler = lib.amp.GradScaler("cpu", init_scale=2.0 ** 8)
    x = lib.tensor(np.random.default_rng(2).standard_normal((5, 1, 6, 6)).astype(np.float32))
    y = lib.tensor(np.array([0, 1, 2, 0, 1]))
    record = {}
    for _ in range(steps):
        opt.zero_grad()
        with lib.autocast("cpu", dtype=lib.float16):
            logits = model(x)
            probs = functional.softmax(logits, -1)
            loss = functional.cross_entropy(logits, y)
        record["dtypes"] = [str(t.dtype).split(".")[-1] for t in (logits, probs, loss)]
        scaler.scale(loss).backward()
        record["grads"] = [str(p.grad.dtype).split(".")[-1] for p in model.parameters()]
        scaler.step(opt)
        scaler.update()
    record["weights"] = [p.detach().numpy().copy() for p in model.parameters()]
    record["loss"] = float(loss.item())
    return record


def test_training_under_autocast_and_grad_scaler_as_torch():
    ours, theirs = _train(fnn, F), _train(torch, torch.nn.functional)
    assert ours["dtypes"] == theirs["dtypes"] == ["float16", "float16", "float32"]
    assert ours["grads"] == theirs["grads"] == ["float32"] * 4
    assert ours["loss"] == pytest.approx(theirs["loss"], rel=2e-2, abs=2e-2)
    for mine, want in zip(ours["weights"], theirs["weights"]):
        np.testing.assert_allclose(mine, want, rtol=2e-2, atol=2e-2)


def test_transformer_layer_under_autocast_as_torch():
    outputs = []
    for lib in (fnn, torch):
        lib.manual_seed(0)
        layer = lib.nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, batch_first=True)
        state = {k: np.random.default_rng(3).standard_normal(tuple(v.shape)).astype(
            np.float32) / 2 for k, v in layer.state_dict().items()}
        layer.load_state_dict({k: lib.tensor(v) for k, v in state.items()})
        with lib.autocast("cpu", dtype=lib.float16):
            out = layer(lib.tensor(A[None]))
        outputs.append((str(out.dtype).split(".")[-1], out.detach().float().numpy()))
    assert outputs[0][0] == outputs[1][0]
    np.testing.assert_allclose(outputs[0][1], outputs[1][1], rtol=3e-2, atol=3e-2)
