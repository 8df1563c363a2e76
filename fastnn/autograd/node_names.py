"""How a tape node prints: the name PyTorch gives the ``grad_fn`` of the same call.

Tutorials print ``loss.grad_fn``, its ``next_functions`` and tensors with their
``grad_fn=<...>``. fastnn records some calls as other primitives than PyTorch does (a
``view`` is a ``reshape``, ``nn.Linear`` a fused ``bias_act``) and composes others (the
losses) from several nodes. ``PYTORCH_NAMES`` renames the first kind where the op alone
decides PyTorch's name; :func:`show_as` names the last node of a composite after the call
and gives it the call's inputs as ``next_functions``. The edges themselves (and the
``AccumulateGrad`` a leaf's edge ends in) are built here too. Only printing and graph
walkers read any of it; backward never does.
"""

from __future__ import annotations

import functools
import weakref


def _first_input_dims(node, default: int = 2) -> int:
    """The number of dims of the node's first input (``default`` once backward freed it)."""
    return node.inputs[0].ndim if node.inputs and node.inputs[0] is not None else default


def _matmul_name(node):
    dims = (_first_input_dims(node), node.inputs[1].ndim if node.inputs else 2)
    return {(2, 2): "MmBackward0", (3, 3): "BmmBackward0"}.get(dims)


def _addmm_name(node):
    """nn.Linear: x @ W.T + b is one addmm on a matrix, a view of one on more dims."""
    if not (node.attrs and node.attrs[0] == "identity"):
        return None
    return "AddmmBackward0" if _first_input_dims(node) == 2 else "ViewBackward0"


def _over_dims(name: str):
    """``x.sum()`` prints SumBackward0, ``x.sum(dim)`` SumBackward1 (PyTorch's overloads):
    the node's attrs hold the dims, None for all."""
    return lambda node: f"{name}Backward1" if node.attrs and node.attrs[1] is not None \
        else f"{name}Backward0"


# op -> PyTorch's name, or a function of the node giving it (None: the default spelling)
PYTORCH_NAMES = {
    "sum": _over_dims("Sum"),
    "mean": _over_dims("Mean"),
    "prod": _over_dims("Prod"),
    "max": lambda node: "MaxBackward1" if node.attrs and node.attrs[1] is None
    else "AmaxBackward0",
    "reshape": "ViewBackward0",
    "astype": "ToCopyBackward0",
    "broadcast_to": "ExpandBackward0",
    "linear": "MmBackward0",
    "matmul": _matmul_name,
    "bias_act": _addmm_name,
    "conv2d": "ConvolutionBackward0",
    "max_pool2d": "MaxPool2DWithIndicesBackward0",
    "layer_norm_train": "NativeLayerNormBackward0",
    "batch_norm_train": "NativeBatchNormBackward0",
    "overwrite": lambda node: node.attrs[0] if node.attrs else None,  # ZeroBackward0 ...
}


class AccumulateGrad:
    """The graph's edge into a leaf: ``variable`` is the leaf whose ``.grad`` it fills."""

    __slots__ = ("variable",)

    def __init__(self, variable):
        self.variable = variable

    next_functions = ()

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"

    def __repr__(self) -> str:
        return f"<AccumulateGrad object at {hex(id(self))}>"  # (PyTorch's)


def edge(t, parent, need: bool) -> tuple:
    """The ``next_functions`` entry into input ``t``: (the node that made it, 0),
    (AccumulateGrad of a leaf that requires grad, 0) or (None, 0)."""
    if parent is not None:
        return (parent, 0)
    return (AccumulateGrad(t), 0) if need and t is not None else (None, 0)


def edge_to(t) -> tuple:
    """The ``next_functions`` entry of an edge into tensor ``t`` (or None) as it is now."""
    if t is None or not hasattr(t, "_node"):
        return (None, 0)
    return edge(t, t._node, t._requires_grad)


class Shown:
    """A node of PyTorch's graph that fastnn's tape has none for (the ``TBackward0`` of
    nn.Linear's weight): a name and edges, for printing and graph walkers."""

    __slots__ = ("_name", "next_functions")

    def __init__(self, name: str, next_functions: tuple):
        self._name, self.next_functions = name, next_functions

    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"<{self._name} object at {hex(id(self))}>"


def _mm_edges(node, edges):
    """x @ W.T: PyTorch's mm sees the weight through a TBackward0 node."""
    return edges[0], (Shown("TBackward0", (edges[1],)), 0)


def _addmm_edges(node, edges):
    """nn.Linear's fused bias add over its matmul: PyTorch's one addmm(bias, x, W.T)."""
    matmul = edges[0][0]
    if _addmm_name(node) != "AddmmBackward0" or getattr(matmul, "op", None) != "linear":
        return edges
    return (edges[1],) + matmul.next_functions


# op -> a function of (node, its edges) giving PyTorch's edges for the same call
PYTORCH_EDGES = {"linear": _mm_edges, "bias_act": _addmm_edges}

_SHOWN: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # node -> (name, edges)


def default_name(op: str) -> str:
    """fastnn's own spelling: ``MulBackward0`` for ``mul``."""
    return "".join(part.capitalize() for part in op.split("_")) + "Backward0"


def name_of(node) -> str:
    """The name ``node`` prints under (see the module docstring)."""
    shown = _SHOWN.get(node) if _SHOWN else None
    if shown is not None:
        return shown[0]
    rename = PYTORCH_NAMES.get(node.op)
    if callable(rename):
        rename = rename(node)
    return rename or default_name(node.op)


def edges_of(node, edges: tuple) -> tuple:
    """``node``'s ``next_functions`` as PyTorch's graph has them, from the tape's ``edges``."""
    shown = _SHOWN.get(node) if _SHOWN else None
    if shown is not None:
        return shown[1]
    fix = PYTORCH_EDGES.get(node.op)
    return edges if fix is None else fix(node, edges)


def show_as(out, name: str, inputs):
    """Print ``out``'s node as ``name`` (``"MseLossBackward0"``), its edges those of the
    call's ``inputs`` (tensors or None): what PyTorch's single node for the call shows.
    Returns ``out``; a tensor without a node is left alone."""
    node = getattr(out, "_node", None)
    if node is not None and not any(out is t for t in inputs):  # (an op that returned x)
        _SHOWN[node] = (name, tuple(edge_to(t) for t in inputs))
    return out


def shows(name: str):
    """Decorate a composite ``fn(x, ...)`` whose result PyTorch records as one node ``name``:
    the result prints so, with its first argument as its edge (:func:`show_as`)."""

    def decorate(fn):
        @functools.wraps(fn)
        def call(*args, **kwargs):
            first = args[0] if args else next(iter(kwargs.values()), None)
            return show_as(fn(*args, **kwargs), name, (first,))

        return call

    return decorate
