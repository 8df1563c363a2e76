"""fastnn.nn.modules (torch.nn.modules' layout) and the loss bases custom losses
subclass: _Loss's and _WeightedLoss's arguments, the weight buffers, against PyTorch."""

from __future__ import annotations

import importlib
import inspect
import warnings

import numpy as np
import pytest
from fastnn.nn.modules.loss import _Loss, _WeightedLoss

import fastnn as fnn
from fastnn import nn
from fastnn.nn.modules import SUBMODULES
from fastnn.nn.modules.utils import _pair, _quadruple, _reverse_repeat_tuple, _single, _triple

RNG = np.random.default_rng(0)
LOGITS = RNG.normal(size=(6, 3)).astype(np.float32)
TARGET = RNG.integers(0, 3, 6)
WEIGHT = np.array([0.2, 1.0, 3.0], np.float32)


class FocalLike(_Loss):
    """A custom loss written for PyTorch: reduction from the base class."""

    def __init__(self, gamma=2.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.gamma = gamma

    def forward(self, logits, target):
        log_p = nn.functional.log_softmax(logits, dim=1).gather(1, target.view(-1, 1)).view(-1)
        per = -((1 - log_p.exp()) ** self.gamma) * log_p
        return per.mean() if self.reduction == "mean" else per.sum() \
            if self.reduction == "sum" else per


class Weighted(_WeightedLoss):
    def forward(self, logits, target):
        return nn.functional.cross_entropy(logits, target, weight=self.weight,
                                           reduction=self.reduction)


def _focal_numpy(reduction):
    z = LOGITS.astype(np.float64)
    log_p = (z - np.log(np.exp(z).sum(1, keepdims=True)))[np.arange(6), TARGET]
    per = -((1 - np.exp(log_p)) ** 2) * log_p
    return {"mean": per.mean(), "sum": per.sum()}.get(reduction, per)


@pytest.mark.parametrize("args, kwargs, reduction", [
    ((), {}, "mean"), ((), {"reduction": "sum"}, "sum"), ((None, None, "none"), {}, "none"),
    ((False, None), {}, "sum"), ((None, False), {}, "none"), ((True, True), {}, "mean")])
def test_custom_loss_on_the_base(args, kwargs, reduction):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loss = FocalLike(2.0, *args, **kwargs)
    assert loss.reduction == reduction
    assert bool(caught) == (len(args) > 0 and any(a is not None for a in args[:2]))
    got = loss(fnn.tensor(LOGITS), fnn.tensor(TARGET)).numpy()
    np.testing.assert_allclose(got, _focal_numpy(reduction), rtol=1e-5, atol=1e-6)
    loss.reduction = "sum"  # read by forward, as in PyTorch
    np.testing.assert_allclose(loss(fnn.tensor(LOGITS), fnn.tensor(TARGET)).numpy(),
                               _focal_numpy("sum"), rtol=1e-5)


def test_reduction_assignment_reaches_builtin_losses():
    loss = nn.CrossEntropyLoss()
    loss.reduction = "none"
    assert loss(fnn.tensor(LOGITS), fnn.tensor(TARGET)).shape == (6,)


def test_weight_is_a_buffer():
    loss = Weighted(fnn.tensor(WEIGHT), reduction="sum")
    assert list(loss.state_dict()) == ["weight"]
    z = LOGITS.astype(np.float64)
    nll = -(z - np.log(np.exp(z).sum(1, keepdims=True)))[np.arange(6), TARGET]
    expected = (WEIGHT[TARGET] * nll).sum()
    np.testing.assert_allclose(loss(fnn.tensor(LOGITS), fnn.tensor(TARGET)).numpy(), expected,
                               rtol=1e-5)
    # a new weight loaded into a built-in loss is the one used
    builtin = nn.CrossEntropyLoss(weight=fnn.ones(3), reduction="sum")
    builtin.load_state_dict({"weight": WEIGHT})
    np.testing.assert_allclose(builtin(fnn.tensor(LOGITS), fnn.tensor(TARGET)).numpy(),
                               expected, rtol=1e-5)
    assert nn.CrossEntropyLoss().state_dict() == {}
    model = nn.Sequential(nn.Linear(3, 3), nn.BCEWithLogitsLoss(pos_weight=fnn.ones(3)))
    assert list(model.double().state_dict()) == ["0.weight", "0.bias", "1.pos_weight"]
    assert model[1].pos_weight.dtype == fnn.float64


def test_weighted_losses_match_pytorch_state_dicts():
    torch = pytest.importorskip("torch")
    cases = [("CrossEntropyLoss", {"weight": WEIGHT}), ("NLLLoss", {"weight": WEIGHT}),
             ("BCELoss", {"weight": WEIGHT}),
             ("BCEWithLogitsLoss", {"weight": WEIGHT, "pos_weight": WEIGHT}),
             ("MultiLabelSoftMarginLoss", {"weight": WEIGHT}),
             ("MultiMarginLoss", {"weight": WEIGHT}), ("MSELoss", {})]
    for name, arrays in cases:
        ours = getattr(nn, name)(**{k: fnn.tensor(v) for k, v in arrays.items()})
        theirs = getattr(torch.nn, name)(**{k: torch.tensor(v) for k, v in arrays.items()})
        assert list(ours.state_dict()) == list(theirs.state_dict()), name
        assert isinstance(ours, _WeightedLoss) == isinstance(
            theirs, torch.nn.modules.loss._WeightedLoss), name


def test_tuple_helpers_match_pytorch():
    assert (_single(2), _pair(3), _triple((1, 2, 3)), _quadruple(0)) == (
        (2,), (3, 3), (1, 2, 3), (0, 0, 0, 0))
    assert _reverse_repeat_tuple((1, 2), 2) == (2, 2, 1, 1)
    pytest.importorskip("torch")
    from torch.nn.modules import utils as theirs

    for value in (3, (4, 5), [6, 7]):
        assert _pair(value) == theirs._pair(value)
    assert _reverse_repeat_tuple((1, 2, 3), 2) == theirs._reverse_repeat_tuple((1, 2, 3), 2)


def test_submodules_hold_pytorchs_names():
    pytest.importorskip("torch")
    missing = []
    for name in SUBMODULES:
        ours = importlib.import_module(f"fastnn.nn.modules.{name}")
        theirs = importlib.import_module(f"torch.nn.modules.{name}")
        for attr in getattr(theirs, "__all__", ()):
            if hasattr(nn, attr):  # every layer fastnn has is found where PyTorch has it
                if getattr(ours, attr, None) is not getattr(nn, attr):
                    missing.append(f"{name}.{attr}")
    assert not missing
    for base in ("_Loss", "_WeightedLoss", "_BatchNorm", "_NormBase", "_InstanceNorm"):
        owner = {"_Loss": "loss", "_WeightedLoss": "loss", "_InstanceNorm": "instancenorm"
                 }.get(base, "batchnorm")
        assert hasattr(importlib.import_module(f"torch.nn.modules.{owner}"), base)
        assert hasattr(importlib.import_module(f"fastnn.nn.modules.{owner}"), base)
    assert fnn.nn.modules.conv.Conv2d is nn.Conv2d


def test_a_custom_pool_on_pytorchs_base_takes_its_arguments():
    """class MyPool(_MaxPoolNd) gets kernel_size, stride (= kernel_size) ... as PyTorch's."""
    torch = pytest.importorskip("torch")
    from fastnn.nn.modules.pooling import _MaxPoolNd

    def make(base, functional):
        class MyPool(base):
            def forward(self, x):
                return functional.max_pool2d(x, self.kernel_size, self.stride, self.padding)
        return MyPool(3, padding=1)

    ours = make(_MaxPoolNd, fnn.nn.functional)
    theirs = make(torch.nn.modules.pooling._MaxPoolNd, torch.nn.functional)
    assert (ours.kernel_size, ours.stride, ours.padding) == (3, 3, 1)
    assert (theirs.kernel_size, theirs.stride, theirs.padding) == (3, 3, 1)
    x = np.random.default_rng(0).standard_normal((1, 2, 7, 7)).astype(np.float32)
    np.testing.assert_array_equal(ours(fnn.tensor(x)).numpy(), theirs(torch.tensor(x)).numpy())
    assert repr(nn.ReLU6(inplace=True)) == repr(torch.nn.ReLU6(inplace=True))
    assert repr(nn.ZeroPad2d(2)) == repr(torch.nn.ZeroPad2d(2))


def test_multihead_attentions_out_proj_class_is_where_pytorch_has_it():
    # the word language model example lists torch.nn.modules.linear.NonDynamicallyQuantizableLinear
    # among its safe globals: reaching it raised AttributeError
    torch = pytest.importorskip("torch")
    ours = fnn.nn.modules.linear.NonDynamicallyQuantizableLinear
    theirs = torch.nn.modules.linear.NonDynamicallyQuantizableLinear
    assert type(nn.MultiheadAttention(4, 2).out_proj) is ours
    assert type(torch.nn.MultiheadAttention(4, 2).out_proj) is theirs
    assert issubclass(ours, nn.Linear)


# PyTorch's deprecated or internal positional arguments that fastnn's layers leave out
_NOT_POSITIONAL = {"Hardtanh": {"min_value", "max_value"}, "RNNBase": {"mode"},
                   "RNNCellBase": {"num_chunks"}}


def _positional(cls) -> list | None:
    """The names of ``cls.__init__``'s positional parameters, None where it takes *args."""
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    params = inspect.signature(cls.__init__).parameters.values()
    if any(p.kind == inspect.Parameter.VAR_POSITIONAL for p in params):
        return None
    return [p.name for p in params if p.kind in kinds][1:]


def test_every_layer_takes_pytorchs_positional_arguments_in_pytorchs_order():
    # nn.Linear(i, o, True, device, dtype) took the device as the dtype (fastnn had dtype
    # first), as did ~20 layers; mnist_forward_forward's Linear subclass passes them so
    torch = pytest.importorskip("torch")
    wrong = []
    for name in dir(torch.nn):
        theirs, ours = getattr(torch.nn, name), getattr(nn, name, None)
        if not (isinstance(theirs, type) and issubclass(theirs, torch.nn.Module)
                and isinstance(ours, type)):
            continue
        try:
            want, got = _positional(theirs), _positional(ours)
        except (TypeError, ValueError):  # no signature to read
            continue
        if want is None or got is None:
            continue
        want = [p for p in want if p not in _NOT_POSITIONAL.get(name, ())]
        if got[:len(want)] != want:
            wrong.append(f"{name}: {got} for PyTorch's {want}")
    assert not wrong, "\n".join(wrong)


def test_a_device_and_dtype_given_by_position_land_where_pytorchs_do():
    class Layer(nn.Linear):  # as mnist_forward_forward's
        def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
            super().__init__(in_features, out_features, bias, device, dtype)

    layer = Layer(3, 2, True, "cpu", fnn.float64)
    assert layer.weight.dtype is fnn.float64 and layer.weight.device.type == "cpu"
    assert nn.LayerNorm(4, 1e-5, True, True, None, fnn.float64).weight.dtype is fnn.float64
    assert nn.Conv1d(1, 2, 3, 1, 0, 1, 1, True, "zeros", "cpu").causal is False


_BASES = [("conv", "_ConvNd"), ("conv", "_ConvTransposeNd"), ("dropout", "_DropoutNd"),
          ("batchnorm", "_BatchNorm"), ("batchnorm", "_NormBase"),
          ("instancenorm", "_InstanceNorm"), ("loss", "_Loss"), ("loss", "_WeightedLoss"),
          ("pooling", "_MaxPoolNd"), ("pooling", "_AvgPoolNd"), ("pooling", "_AdaptiveAvgPoolNd"),
          ("pooling", "_AdaptiveMaxPoolNd"), ("pooling", "_MaxUnpoolNd"), ("pooling", "_LPPoolNd"),
          ("padding", "_ConstantPadNd"), ("padding", "_ReflectionPadNd"),
          ("padding", "_ReplicationPadNd"), ("padding", "_CircularPadNd"),
          # a ReLU6 is a Hardtanh and a ZeroPad2d a ConstantPad2d, as in PyTorch
          ("activation", "Hardtanh"), ("padding", "ConstantPad2d")]


@pytest.mark.parametrize("owner, base", _BASES, ids=[b for _, b in _BASES])
def test_layers_are_instances_of_pytorchs_bases_as_pytorchs_are(owner, base):
    # init loops written for PyTorch ask isinstance(m, nn.modules.conv._ConvNd), which had no
    # answer (no such name), as had dropout's _DropoutNd
    torch = pytest.importorskip("torch")
    theirs = getattr(importlib.import_module(f"torch.nn.modules.{owner}"), base)
    ours = getattr(importlib.import_module(f"fastnn.nn.modules.{owner}"), base)
    differ = []
    for name in dir(torch.nn):
        t, f = getattr(torch.nn, name), getattr(nn, name, None)
        if isinstance(t, type) and issubclass(t, torch.nn.Module) and isinstance(f, type):
            if issubclass(t, theirs) != issubclass(f, ours):
                differ.append(f"{name}: PyTorch {issubclass(t, theirs)}, fastnn "
                              f"{issubclass(f, ours)}")
    assert not differ, "\n".join(differ)


@pytest.mark.parametrize("make, data", [
    (lambda lib: lib.nn.Linear(3, 2), RNG.normal(size=(4, 3))),
    (lambda lib: lib.nn.ReLU(), RNG.normal(size=(4, 3))),
    (lambda lib: lib.nn.Conv1d(2, 3, 2), RNG.normal(size=(1, 2, 5))),
    (lambda lib: lib.nn.LayerNorm(3), RNG.normal(size=(4, 3))),
    (lambda lib: lib.nn.Sequential(lib.nn.Linear(3, 3), lib.nn.Tanh()), RNG.normal(size=(4, 3))),
    (lambda lib: lib.nn.GRU(3, 2), RNG.normal(size=(5, 1, 3))),
    (lambda lib: lib.nn.Embedding(5, 2), np.array([[0, 4, 1]])),
])
def test_a_layer_takes_its_tensor_by_pytorchs_name_input(make, data):
    """layer(input=x), as PyTorch's forward(self, input): fastnn's layers name it x."""
    torch = pytest.importorskip("torch")
    results, state = [], None
    for lib in (fnn, torch):
        layer = make(lib)
        if state is None:
            state = {k: np.asarray(v) for k, v in layer.state_dict().items()}
        else:
            layer.load_state_dict({k: torch.tensor(v) for k, v in state.items()})
        x = lib.tensor(data if data.dtype.kind == "i" else data.astype(np.float32))
        out = layer(input=x)
        out = out[0] if isinstance(out, tuple) else out
        results.append(out.detach().numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-5, atol=1e-6)


def test_helpers_scripts_import_from_pytorchs_submodules():
    """consume_prefix_in_state_dict_if_present (loading a DistributedDataParallel
    checkpoint into the bare model) and module._addindent (custom reprs) were missing."""
    torch = pytest.importorskip("torch")
    import collections

    from fastnn.nn.modules.module import _addindent, _IncompatibleKeys

    from fastnn.nn.modules.utils import consume_prefix_in_state_dict_if_present

    theirs_utils = importlib.import_module("torch.nn.modules.utils")
    theirs_module = importlib.import_module("torch.nn.modules.module")
    for text in ("one line", "a\nb\n  c"):
        assert _addindent(text, 4) == theirs_module._addindent(text, 4)
    wrapped = torch.nn.Sequential(collections.OrderedDict(
        module=torch.nn.Sequential(torch.nn.Linear(2, 2)))).state_dict()
    for strip in (consume_prefix_in_state_dict_if_present,
                  theirs_utils.consume_prefix_in_state_dict_if_present):
        state = collections.OrderedDict(wrapped)
        state._metadata = dict(wrapped._metadata)
        strip(state, "module.")
        assert list(state) == ["0.weight", "0.bias"] and sorted(state._metadata) == ["", "0"]
    model = nn.Sequential(nn.Linear(2, 2))
    result = model.load_state_dict({k: v.numpy() for k, v in state.items()})
    assert isinstance(result, _IncompatibleKeys) and not result.missing_keys


def test_transformer_helpers_are_where_pytorch_has_them():
    """Code that builds its own transformer stacks imports _get_clones,
    _get_activation_fn and _generate_square_subsequent_mask from
    torch.nn.modules.transformer."""
    pytest.importorskip("torch")
    from fastnn.nn.modules.transformer import (
        _generate_square_subsequent_mask,
        _get_activation_fn,
        _get_clones,
    )

    theirs = importlib.import_module("torch.nn.modules.transformer")
    layer = nn.Linear(2, 2)
    clones = _get_clones(layer, 3)
    assert isinstance(clones, nn.ModuleList) and len(clones) == 3
    assert clones[0] is not layer and clones[0].weight is not layer.weight
    np.testing.assert_array_equal(clones[1].weight.detach().numpy(),
                                  layer.weight.detach().numpy())
    assert _get_activation_fn("gelu") is fnn.nn.functional.gelu
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        _get_activation_fn("tanh")
    np.testing.assert_array_equal(_generate_square_subsequent_mask(4).numpy(),
                                  theirs._generate_square_subsequent_mask(4).numpy())
