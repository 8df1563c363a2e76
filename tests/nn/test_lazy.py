"""Lazy modules without PyTorch: the placeholders refuse use, the first forward
materialises them exactly as the non-lazy layer made at that point (same seed, same
values, same output), the module becomes that class, and state, moves, copies and
optimizers handle the placeholders."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn

DEVICES = ["cpu"] + [r.name for r in fnn.backends() if r.name == "opencl" and r.available]

# (lazy layer, the non-lazy layer given the inferred size n, input shape)
CASES = [
    ("LazyLinear", lambda: nn.LazyLinear(3), lambda n: nn.Linear(n, 3), (2, 5, 4)),
    ("LazyLinear(bias=False)", lambda: nn.LazyLinear(3, bias=False),
     lambda n: nn.Linear(n, 3, bias=False), (2, 4)),
    ("LazyConv1d", lambda: nn.LazyConv1d(4, 3, padding=1, groups=2),
     lambda n: nn.Conv1d(n, 4, 3, padding=1, groups=2), (2, 6, 7)),
    ("LazyConv2d", lambda: nn.LazyConv2d(3, (2, 3), stride=2),
     lambda n: nn.Conv2d(n, 3, (2, 3), stride=2), (2, 2, 5, 6)),
    ("LazyConv3d", lambda: nn.LazyConv3d(2, 2, padding=1),
     lambda n: nn.Conv3d(n, 2, 2, padding=1), (1, 3, 3, 4, 3)),
    ("LazyConvTranspose1d", lambda: nn.LazyConvTranspose1d(4, 3, stride=2),
     lambda n: nn.ConvTranspose1d(n, 4, 3, stride=2), (2, 3, 5)),
    ("LazyConvTranspose2d", lambda: nn.LazyConvTranspose2d(2, 3, output_padding=1, stride=2),
     lambda n: nn.ConvTranspose2d(n, 2, 3, output_padding=1, stride=2), (2, 3, 4, 3)),
    ("LazyConvTranspose3d", lambda: nn.LazyConvTranspose3d(2, 2, stride=(1, 2, 1)),
     lambda n: nn.ConvTranspose3d(n, 2, 2, stride=(1, 2, 1)), (1, 3, 2, 3, 2)),
    ("LazyBatchNorm1d", lambda: nn.LazyBatchNorm1d(), lambda n: nn.BatchNorm1d(n), (5, 3)),
    ("LazyBatchNorm2d", lambda: nn.LazyBatchNorm2d(momentum=None),
     lambda n: nn.BatchNorm2d(n, momentum=None), (4, 3, 2, 3)),
    ("LazyBatchNorm3d", lambda: nn.LazyBatchNorm3d(affine=False),
     lambda n: nn.BatchNorm3d(n, affine=False), (2, 2, 2, 3, 2)),
    ("LazyInstanceNorm1d", lambda: nn.LazyInstanceNorm1d(),
     lambda n: nn.InstanceNorm1d(n, affine=True, track_running_stats=True), (2, 3, 5)),
    ("LazyInstanceNorm2d", lambda: nn.LazyInstanceNorm2d(affine=False),
     lambda n: nn.InstanceNorm2d(n, track_running_stats=True), (3, 4, 4)),
    ("LazyInstanceNorm3d", lambda: nn.LazyInstanceNorm3d(track_running_stats=False),
     lambda n: nn.InstanceNorm3d(n, affine=True), (2, 2, 2, 3, 2)),
]


def _input(shape, device):
    x = np.random.default_rng(3).normal(size=shape)
    return fnn.tensor(x, dtype=fnn.float32, device=device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("label, lazy, eager, shape", CASES, ids=[c[0] for c in CASES])
def test_lazy_equals_the_layer_made_at_first_forward(label, lazy, eager, shape, device):
    fnn.manual_seed(11)
    layer = lazy().to(device)
    assert layer.has_uninitialized_params() == bool(layer._parameters or any(
        b is not None and b.dtype.is_floating for b in layer._buffers.values()))
    x = _input(shape, device)
    out = layer(x)
    size = shape[1]
    if "Linear" in label:
        size = shape[-1]
    elif "InstanceNorm" in label and len(shape) == {"1d": 2, "2d": 3, "3d": 4}[label[-2:]]:
        size = shape[0]  # unbatched
    fnn.manual_seed(11)
    ref = eager(size).to(device)
    assert type(layer) is type(ref), f"{label} became {type(layer).__name__}"
    assert not hasattr(layer, "has_uninitialized_params")
    assert repr(layer) == repr(ref)
    for (name, p), (ref_name, q) in zip(layer.named_parameters(), ref.named_parameters(),
                                        strict=True):
        assert name == ref_name and type(p) is nn.Parameter
        assert p.param_class == q.param_class and p.device == q.device
        np.testing.assert_array_equal(p.numpy(), q.numpy(), err_msg=f"{label}.{name}")
    np.testing.assert_array_equal(out.numpy(), ref(x).numpy())
    for (name, b), (_, c) in zip(layer.named_buffers(), ref.named_buffers(), strict=True):
        assert type(b) is fnn.Tensor, name
        np.testing.assert_array_equal(b.numpy(), c.numpy(), err_msg=f"{label}.{name}")


def test_the_placeholders_refuse_use_with_pytorch_messages():
    layer = nn.LazyLinear(3)
    w = layer.weight
    assert isinstance(w, nn.UninitializedParameter) and isinstance(w, nn.Parameter)
    assert repr(w) == "<UninitializedParameter>" and w.dtype == fnn.float32
    with pytest.raises(ValueError, match="Attempted to use an uninitialized parameter"):
        w + 1
    with pytest.raises(ValueError, match="uninitialized parameter in numpy"):
        w.numpy()
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized"):
        w.shape  # noqa: B018
    with pytest.raises(RuntimeError, match="Can't access the shape"):
        w.size()
    buf = nn.LazyBatchNorm2d().running_mean
    assert isinstance(buf, nn.UninitializedBuffer) and not buf.requires_grad
    with pytest.raises(ValueError, match="uninitialized parameter"):
        buf * 2
    w.materialize((3, 4))  # in place: references taken before see the values
    assert type(w) is nn.Parameter and w.shape == (3, 4) and w.requires_grad
    assert layer.weight is w and np.array_equal(w.numpy(), np.zeros((3, 4)))


def test_an_optimizer_over_placeholders_says_to_run_forward_first():
    model = nn.Sequential(nn.LazyLinear(4), nn.ReLU(), nn.LazyLinear(2))
    with pytest.raises(ValueError, match="dry-run forward"):
        fnn.optim.SGD(model.parameters(), lr=0.1)
    model(fnn.ones(3, 5))
    assert [type(m).__name__ for m in model] == ["Linear", "ReLU", "Linear"]
    opt = fnn.optim.SGD(model.parameters(), lr=0.1)
    model(fnn.ones(3, 5)).sum().backward()
    before = model[0].weight.numpy().copy()
    opt.step()
    assert not np.array_equal(before, model[0].weight.numpy())


def test_initialize_parameters_keeps_the_lazy_class_until_forward():
    layer = nn.LazyConv2d(2, 3)
    w = layer.weight
    layer.initialize_parameters(fnn.ones(1, 4, 5, 5))
    assert type(layer) is nn.LazyConv2d and not layer.has_uninitialized_params()
    assert layer.weight is w and w.shape == (2, 4, 3, 3) and layer.in_channels == 4
    layer(fnn.ones(1, 4, 5, 5))
    assert type(layer) is nn.Conv2d and layer.weight is w


def test_state_dict_holds_placeholders_and_loading_materialises():
    layer = nn.LazyBatchNorm1d()
    state = layer.state_dict()
    assert list(state) == ["weight", "bias", "running_mean", "running_var",
                           "num_batches_tracked"]
    assert isinstance(state["weight"], nn.UninitializedParameter)
    assert isinstance(state["running_mean"], nn.UninitializedBuffer)
    assert np.array_equal(state["num_batches_tracked"], 0)
    trained = nn.BatchNorm1d(4)
    trained.load_state_dict({"weight": np.arange(4.0), "bias": np.ones(4),
                             "running_mean": np.full(4, 0.5), "running_var": np.full(4, 2.0),
                             "num_batches_tracked": np.array(3)})
    layer.load_state_dict(trained.state_dict())
    assert type(layer) is nn.LazyBatchNorm1d and not layer.has_uninitialized_params()
    layer.eval()
    x = _input((3, 4), "cpu")
    np.testing.assert_array_equal(layer(x).numpy(), trained.eval()(x).numpy())
    assert type(layer) is nn.BatchNorm1d and layer.num_features == 4
    # an uninitialized value cannot go into a materialised module
    with pytest.raises(RuntimeError, match="Can't access the shape"):
        trained.load_state_dict(nn.LazyBatchNorm1d().state_dict())


def test_loaded_shape_that_the_input_contradicts_is_refused():
    layer = nn.LazyLinear(2)
    layer.load_state_dict({"weight": np.ones((2, 3)), "bias": np.zeros(2)})
    with pytest.raises(ValueError, match="loaded"):
        layer(fnn.ones(1, 5))


def test_move_copy_pickle_and_reverse_before_the_dry_run():
    layer = nn.LazyLinear(3).double()
    assert layer.weight.dtype == fnn.float64 and layer.has_uninitialized_params()
    for other in (copy.deepcopy(layer), pickle.loads(pickle.dumps(layer))):
        assert type(other.weight) is nn.UninitializedParameter
        assert other.weight is not layer.weight and other.weight.dtype == fnn.float64
    x = _input((2, 4), "cpu").double()
    fnn.manual_seed(5)
    grad_x, grads = layer.reverse(x, fnn.ones(2, 3, dtype=fnn.float64))
    assert type(layer) is nn.Linear and layer.weight.dtype == fnn.float64
    fnn.manual_seed(5)
    ref = nn.Linear(4, 3, dtype=fnn.float64)
    ref_x, ref_grads = ref.reverse(x, fnn.ones(2, 3, dtype=fnn.float64))
    np.testing.assert_array_equal(grad_x.numpy(), ref_x.numpy())
    np.testing.assert_array_equal(grads["weight"].numpy(), ref_grads["weight"].numpy())


def test_frozen_placeholders_stay_frozen_and_bad_inputs_are_named():
    layer = nn.LazyLinear(3).requires_grad_(False)
    layer(fnn.ones(2, 4))
    assert not layer.weight.requires_grad and not layer.bias.requires_grad
    with pytest.raises(RuntimeError, match="Expected 3D \\(unbatched\\) or 4D"):
        nn.LazyConv2d(2, 3)(fnn.ones(5, 5))
    with pytest.raises(TypeError, match="needs an input"):
        nn.LazyLinear(2)()
