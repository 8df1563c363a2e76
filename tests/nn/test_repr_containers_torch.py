"""How parameter containers, optimizers and return types print, as PyTorch's (with
fastnn where PyTorch writes torch)."""

from __future__ import annotations

import pytest

import fastnn as fnn

try:
    import torch
except ImportError:  # pragma: no cover - the literal expectations below hold without it
    torch = None


def _both(build):
    ours = build(fnn)
    if torch is not None:
        assert ours == build(torch).replace("torch.", "fastnn.")
    return ours


def test_parameter_list_and_dict():
    assert _both(lambda L: repr(L.nn.ParameterList(
        [L.nn.Parameter(L.ones(2)), L.nn.Parameter(L.ones(3, 4))]))) == (
        "ParameterList(\n"
        "    (0): Parameter containing: [fastnn.float32 of size 2]\n"
        "    (1): Parameter containing: [fastnn.float32 of size 3x4]\n)")
    assert _both(lambda L: repr(L.nn.ParameterDict({"a": L.nn.Parameter(L.ones(2))}))) == (
        "ParameterDict(  (a): Parameter containing: [fastnn.FloatTensor of size 2])")


def test_return_types():
    assert _both(lambda L: repr(L.tensor([[1.0, 3.0], [2.0, 0.0]]).max(1))) == (
        "fastnn.return_types.max(\nvalues=tensor([3., 2.]),\nindices=tensor([1, 0]))")


@pytest.mark.parametrize("make", [
    lambda L, w: L.optim.Adam([w], lr=0.1, weight_decay=0),
    lambda L, w: L.optim.SGD([w], lr=0.1, momentum=0.9, weight_decay=0, dampening=0),
])
def test_optimizer(make):
    text = _both(lambda L: repr(make(L, L.nn.Parameter(L.ones(2)))))
    assert text.startswith(("Adam (\nParameter Group 0\n    amsgrad: False\n",
                            "SGD (\nParameter Group 0\n    dampening: 0\n"))
    assert "class_lr" not in text and text.endswith(")")


@pytest.mark.parametrize("name", ["SGD", "RMSprop", "Adam", "Adamax", "NAdam", "RAdam",
                                  "Adagrad", "Adadelta", "ASGD"])
def test_optimizer_defaults_print_as_pytorch(name):
    # PyTorch's defaults are the int 0 where they are zero (weight_decay: 0, not 0.0), and
    # the beginner tutorials print their optimizers with the defaults.
    text = _both(lambda L: repr(getattr(L.optim, name)([L.nn.Parameter(L.ones(2, 2))])))
    assert ": 0.0\n" not in text


def test_sgd_defaults_print_as_pytorch():
    assert repr(fnn.optim.SGD([fnn.nn.Parameter(fnn.ones(2))], lr=0.01)) == (
        "SGD (\nParameter Group 0\n    dampening: 0\n    differentiable: False\n"
        "    foreach: None\n    fused: None\n    lr: 0.01\n    maximize: False\n"
        "    momentum: 0\n    nesterov: False\n    weight_decay: 0\n)")


def test_module_list_folds_runs_of_alike_children():
    # the transformer tutorial prints its encoder's layers as "(0-1): 2 x ..."
    text = _both(lambda L: repr(L.nn.ModuleList(
        [L.nn.Linear(2, 2), L.nn.Linear(2, 2), L.nn.ReLU(), L.nn.Linear(2, 3)])))
    assert text == ("ModuleList(\n"
                    "  (0-1): 2 x Linear(in_features=2, out_features=2, bias=True)\n"
                    "  (2): ReLU()\n"
                    "  (3): Linear(in_features=2, out_features=3, bias=True)\n)")
    assert _both(lambda L: repr(L.nn.ModuleList())) == "ModuleList()"
    nested = _both(lambda L: repr(L.nn.TransformerEncoder(
        L.nn.TransformerEncoderLayer(4, 2, 8), 3, enable_nested_tensor=False)))
    assert "(0-2): 3 x TransformerEncoderLayer(\n" in nested


def test_module_list_subclass_prints_its_own_name():
    # the parametrizations tutorial prints layer.parametrizations.weight (a ParametrizationList)
    def build(L):
        layer = L.nn.Linear(2, 2)
        L.nn.utils.parametrize.register_parametrization(layer, "weight", L.nn.Identity())
        return repr(layer.parametrizations)

    assert _both(build) == ("ModuleDict(\n  (weight): ParametrizationList(\n"
                            "    (0): Identity()\n  )\n)")
