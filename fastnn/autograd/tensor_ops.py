"""The backend hook table on Tensors, each call recorded: what rules run on for create_graph.

A backward rule is written against ``ops``, the backend's hook table of raw
arrays. :class:`TensorOps` has the same method names but takes and returns
Tensors and records every call on the tape (under the op name whose rule is
in :data:`~fastnn.autograd.rules.RULES`, with the saved arrays and attributes
that rule reads, as the tensor ops of :mod:`fastnn.ops` record them), so the
same rule, run under ``create_graph=True``, leaves a differentiable graph of
the gradient. An operand that is a raw array (an index, a mask, a constant) is
a constant; a call with no Tensor operand returns a raw array.

:func:`view` gives a rule the node with its saved arrays replaced by the tensors
they are the data of (the node's inputs and its output), so that a gradient
that uses ``x`` or ``out`` depends on them on the tape.
"""

from __future__ import annotations

import functools

from fastnn.api import composite, composite_norm, composite_pool, dtypes, hookspec
from fastnn.autograd.rules import RULES
from fastnn.autograd.rules_attention import TENSOR_RULES as ATTENTION_TENSOR_RULES
from fastnn.autograd.saved import saved_for_grad

_UNARY_SAVES = {  # op -> (save the input, save the output), as fastnn.ops records them
    "neg": (False, False), "exp": (False, True), "log": (True, False), "sqrt": (False, True),
    "abs": (True, False), "erf": (True, False), "sin": (True, False), "cos": (True, False),
    "floor": (False, False), "sign": (False, False),
}
_BINARY_SAVES = {
    "add": lambda a, b, out: (), "sub": lambda a, b, out: (),
    "mul": lambda a, b, out: (a, b), "div": lambda a, b, out: (a, b),
    "pow": lambda a, b, out: (a, b, out if hasattr(b, "shape") else None),
    "maximum": lambda a, b, out: (a, b),
    "minimum": lambda a, b, out: (a, b),
}
_ACTIVATIONS = tuple(k for k in hookspec.ACTIVATION_HOOKS if k != "leaky_relu")  # no slope


class TensorOps:
    """Backend hooks on Tensors (or raw arrays, as constants), recorded on the tape.

    ``ops`` is the backend's resolved hook table, ``cls`` the Tensor class and
    ``attach`` the engine's recorder (passed in: this module sits below the engine).
    """

    def __init__(self, ops, cls, attach):
        self.raw, self._cls, self._attach = ops, cls, attach

    # ------------------------------------------------------------ plumbing
    def _data(self, x):
        return x._data if isinstance(x, self._cls) else x

    def _tensor(self, x):
        return x if isinstance(x, self._cls) else None

    def _record(self, op, data, operands, saved=(), attrs=None, dtype=None):
        """A Tensor of ``data`` recorded as ``op`` on ``operands`` (raw ones constant),
        or ``data`` itself when no operand is a Tensor."""
        inputs = tuple(self._tensor(x) for x in operands)
        like = next((t for t in inputs if t is not None), None)
        if like is None:
            return data
        out = self._cls._make(data, like._dtype if dtype is None else dtype, like._device)
        if op is None:
            return out
        return self._attach(out, op, inputs, saved, attrs)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        raise NotImplementedError(
            f"create_graph: the backward of an op uses the hook {name!r}, which has no "
            f"backward rule, so its gradient cannot be differentiated again; use "
            f"create_graph=False, or write that op with differentiable primitives")

    # ------------------------------------------------------------ elementwise
    def _unary(self, op, x):
        x_data = self._data(x)
        data = getattr(self.raw, op)(x_data)
        save_in, save_out = _UNARY_SAVES[op]
        saved = ((x_data,) if save_in else ()) + ((data,) if save_out else ())
        return self._record(op, data, (x,), saved)

    def _binary(self, op, a, b):
        a_data, b_data = self._data(a), self._data(b)
        data = getattr(self.raw, op)(a_data, b_data)
        return self._record(op, data, (a, b), _BINARY_SAVES[op](a_data, b_data, data))

    def _activation(self, op, x, slope=None):
        x_data = self._data(x)
        hook = getattr(self.raw, op)
        data = hook(x_data) if slope is None else hook(x_data, slope)
        return self._record(op, data, (x,), saved_for_grad(op, x_data, data), slope)

    def leaky_relu(self, x, slope):
        return self._activation("leaky_relu", x, slope)

    def _constant(self, op, *args, dtype=None):
        """A hook whose result carries no gradient (comparisons, sign, one_hot)."""
        data = getattr(self.raw, op)(*(self._data(a) for a in args))
        return self._record(None, data, args, dtype=dtype)

    def greater(self, a, b):
        return self._constant("greater", a, b, dtype=dtypes.bool_)

    def less(self, a, b):
        return self._constant("less", a, b, dtype=dtypes.bool_)

    def equal(self, a, b):
        return self._constant("equal", a, b, dtype=dtypes.bool_)

    def sign(self, x):
        return self._constant("sign", x)

    def one_hot(self, indices, num_classes, dtype):
        return self.raw.one_hot(self._data(indices), num_classes, dtype)

    def full(self, shape, value, dtype, device_index):
        return self.raw.full(shape, value, dtype, device_index)

    def where(self, cond, a, b):
        a_data, b_data = self._data(a), self._data(b)
        data = self.raw.where(self._data(cond), a_data, b_data)
        out = self._record(None, data, (a, b))
        if out is data:
            return data
        inputs = (self._tensor(cond), self._tensor(a), self._tensor(b))  # (as the op)
        return self._attach(out, "where", inputs, (self._data(cond),))

    def astype(self, x, dtype):
        # a composite names the dtype as str(a.dtype): "float32" for an array, but
        # "fastnn.float32" for a Tensor here; the hook takes the plain name
        if isinstance(dtype, str):
            dtype = dtype.removeprefix("fastnn.")
        target = dtypes.as_dtype(dtype)
        data = self.raw.astype(self._data(x), target.name)
        if not isinstance(x, self._cls):
            return data
        if not (target.is_floating and x._dtype.is_floating):
            return self._record(None, data, (x,), dtype=target)
        return self._record("astype", data, (x,), (), x._dtype.name, dtype=target)

    # ------------------------------------------------------------ reductions and shapes
    def _reduce(self, op, x, axis, keepdims):
        x_data = self._data(x)
        data = getattr(self.raw, op)(x_data, axis, keepdims)
        if not isinstance(x, self._cls):
            return data
        if axis is not None:  # as fastnn.ops records it: sorted non-negative axes
            axis = tuple(sorted(a % max(len(x_data.shape), 1) for a in axis))
        shape = tuple(x_data.shape)
        if op in ("max", "prod"):
            attrs = (shape, axis, keepdims) + ((x._dtype.name,) if op == "max" else ())
            return self._record(op, data, (x,), (x_data, data), attrs)
        return self._record(op, data, (x,), (), (shape, axis, keepdims))

    def sum(self, x, axis, keepdims):
        return self._reduce("sum", x, axis, keepdims)

    def mean(self, x, axis, keepdims):
        return self._reduce("mean", x, axis, keepdims)

    def max(self, x, axis, keepdims):
        return self._reduce("max", x, axis, keepdims)

    def prod(self, x, axis, keepdims):
        return self._reduce("prod", x, axis, keepdims)

    def cumsum(self, x, axis):
        return self._record("cumsum", self.raw.cumsum(self._data(x), axis), (x,), (), axis)

    def reshape(self, x, shape):
        x_data = self._data(x)
        data = self.raw.reshape(x_data, shape)
        return self._record("reshape", data, (x,), (), tuple(x_data.shape))

    def transpose(self, x, axes):
        return self._record("transpose", self.raw.transpose(self._data(x), axes), (x,), (), axes)

    def broadcast_to(self, x, shape):
        return self._record("broadcast_to", self.raw.broadcast_to(self._data(x), shape), (x,))

    def contiguous(self, x):
        return self._record("contiguous", self.raw.contiguous(self._data(x)), (x,))

    def matmul(self, a, b):
        a_data, b_data = self._data(a), self._data(b)
        return self._record("matmul", self.raw.matmul(a_data, b_data), (a, b), (a_data, b_data))

    def linalg_solve(self, a, b):
        a_data, b_data = self._data(a), self._data(b)
        x, info = self.raw.linalg_solve(a_data, b_data)
        return self._record("linalg_solve", x, (a, b), (a_data, x)), info

    def softmax(self, x, axis):
        data = self.raw.softmax(self._data(x), axis)
        return self._record("softmax", data, (x,), (data,), axis)

    def log_softmax(self, x, axis):
        data = self.raw.log_softmax(self._data(x), axis)
        return self._record("log_softmax", data, (x,), (data,), axis)

    # ------------------------------------------------------------ convolutions
    def _conv(self, op, a, b, attrs, *size):
        """``op(a, b, *size, *attrs)`` recorded with a and b saved (every conv rule's
        saved pair) and attrs = (stride, padding, dilation, groups)."""
        a_data, b_data = self._data(a), self._data(b)
        data = getattr(self.raw, op)(a_data, b_data, *size, *attrs)
        return self._record(op, data, (a, b), (a_data, b_data), attrs)

    def conv1d(self, x, weight, *attrs):
        return self._conv("conv1d", x, weight, attrs)

    def conv1d_grad_input(self, grad, weight, length, *attrs):
        return self._conv("conv1d_grad_input", grad, weight, attrs, length)

    def conv1d_grad_weight(self, x, grad, kernel_size, *attrs):
        return self._conv("conv1d_grad_weight", x, grad, attrs, kernel_size)

    def conv2d(self, x, weight, *attrs):
        return self._conv("conv2d", x, weight, attrs)

    def conv2d_grad_input(self, grad, weight, size, *attrs):
        return self._conv("conv2d_grad_input", grad, weight, attrs, size)

    def conv2d_grad_weight(self, x, grad, kernel_size, *attrs):
        return self._conv("conv2d_grad_weight", x, grad, attrs, kernel_size)

    def conv2d_backward(self, x, weight, grad, *attrs):
        """The fused hook as its two primitives, each on the tape."""
        return (self.conv2d_grad_input(grad, weight, tuple(x.shape[2:]), *attrs),
                self.conv2d_grad_weight(x, grad, tuple(weight.shape[2:]), *attrs))

    # ------------------------------------------------------------ indexing
    def slice(self, x, starts, stops, steps):
        x_data = self._data(x)
        data = self.raw.slice(x_data, starts, stops, steps)
        if not isinstance(x, self._cls):
            return data
        spec = (x._dtype.name, x._device.index)
        return self._record("slice", data, (x,), (), (tuple(x_data.shape), starts, stops, steps,
                                                      spec))

    def cat(self, xs, axis):
        data = self.raw.cat([self._data(x) for x in xs], axis)
        return self._record("cat", data, tuple(xs), (),
                            (tuple(self._data(x).shape[axis] for x in xs), axis))

    def slice_scatter(self, base, src, starts, stops, steps):
        data = self.raw.slice_scatter(self._data(base), self._data(src), starts, stops, steps)
        return self._record("slice_scatter", data, (base, src), (), (starts, stops, steps))

    def gather(self, x, axis, index):
        x_data, index_data = self._data(x), self._data(index)
        data = self.raw.gather(x_data, axis, index_data)
        if not isinstance(x, self._cls):
            return data
        spec = (x._dtype.name, x._device.index)
        out = self._record(None, data, (x,))
        return self._attach(out, "gather", (x, None), (index_data, x_data),
                            (tuple(x_data.shape), axis, spec))

    def scatter_add(self, base, axis, index, src):
        index_data = self._data(index)
        data = self.raw.scatter_add(self._data(base), axis, index_data, self._data(src))
        out = self._record(None, data, (base, src))
        if out is data:
            return data
        inputs = (self._tensor(base), None, self._tensor(src))
        return self._attach(out, "scatter_add", inputs, (index_data,), axis)

    # ------------------------------------------------------------ fused backward hooks
    def bias_act_backward(self, x, bias, out, grad, kind, slope):
        """The fused hook's composite: the activation's gradient at z = x + bias; the
        engine sums the bias gradient over the broadcast axes."""
        grad_z = composite.activation_grad(self, kind, self.add(x, bias), out, grad, slope)
        return grad_z, grad_z

    def linear_grad_weight(self, x, grad):
        """The hook's composite: its reshapes, transpose and matmul on the tape."""
        return composite.linear_grad_weight(self, x, grad)

    def gelu_backward(self, x, out, grad):
        """The hook's composite: its gradient on the tape through erf and exp."""
        return composite.activation_grad(self, "gelu", x, out, grad)

    def max_pool2d_backward(self, x, out, grad, *attrs):
        """The hook's composite: grad routed to each window's maximum by masks of x and
        out (constants: the maxima's positions are piecewise constant), on the tape."""
        return composite_pool.max_pool2d_backward(self, x, out, grad, *attrs)

    def relu_backward(self, out, grad):
        """The hook's composite: a select on the tape (its gradient flows to grad)."""
        return composite.relu_backward(self, out, grad)


for _op in _UNARY_SAVES:
    setattr(TensorOps, _op, lambda self, x, _op=_op: self._unary(_op, x))
for _op in _BINARY_SAVES:
    setattr(TensorOps, _op, lambda self, a, b, _op=_op: self._binary(_op, a, b))
for _op in _ACTIVATIONS:
    setattr(TensorOps, _op, lambda self, x, _op=_op: self._activation(_op, x))


class View:
    """A node as a rule sees it under create_graph: saved arrays replaced by tensors."""

    __slots__ = ("op", "inputs", "needs", "saved", "attrs", "ops")

    def __init__(self, node, saved):
        self.op, self.inputs, self.needs = node.op, node.inputs, node.needs
        self.saved, self.attrs, self.ops = saved, node.attrs, node.ops


def view(node, out):
    """``node`` with each saved array that is the data of one of its inputs or of its
    output ``out`` (a Tensor, or None when unknown) replaced by that tensor.

    NOTE: two inputs may share one data array (``x * x.detach()``), and only one of
    them carries the graph. Ops that save their inputs first, in order (mul, pow,
    matmul, the activations...; mul None for a factor it does not need), are matched by
    position; the others by identity.
    """
    inputs, saved = node.inputs, node.saved
    by_data = {} if out is None else {id(out._data): out}
    for t in inputs:
        if t is not None:
            by_data[id(t._data)] = t
    tensors = [by_data.get(id(s), s) for s in saved]
    if len(saved) >= len(inputs) and all(
            t is None or s is None or s is t._data for t, s in zip(inputs, saved)):
        for k, t in enumerate(inputs):  # (None: a factor mul did not need to keep)
            if t is not None and saved[k] is not None:
                tensors[k] = t
    return View(node, tuple(tensors))


def _softmax_cross_entropy(ops, node, grad):
    """The fused rule with the probabilities recomputed from the logits on the tape
    (the forward saved them as a raw array, which would be a constant)."""
    logits = node.inputs[0]
    _, targets = node.saved
    probs = ops.softmax(logits, 1)
    return composite.softmax_cross_entropy_backward(ops, probs, targets, grad), None


def _cross_entropy_loss(ops, node, grad):
    """The hook's composite, with the probabilities recomputed from the logits on the tape
    as above (the targets, the ignored rows' mask and the total are constants)."""
    probs = ops.softmax(node.inputs[0], 1)
    _, targets, total = node.saved
    hard = functools.partial(composite.softmax_cross_entropy_backward, ops)
    return composite.cross_entropy_loss_grad(ops, probs, targets, grad, *node.attrs, total,
                                             hard), None


def _transfer(ops, node, grad):
    """The gradient copied back to the source device, recorded as a transfer."""
    source = node.attrs  # the Device the input lives on
    data = source.ops.from_numpy(ops.raw.to_numpy(ops._data(grad)), source.index)
    if not isinstance(grad, ops._cls):
        return (data,)
    out = ops._cls._make(data, grad._dtype, source)
    return (ops._attach(out, "transfer", (grad,), (), grad._device),)


def _unsupported(why):
    def rule(ops, node, grad):
        raise NotImplementedError(
            f"create_graph: the backward of {node.op!r} cannot be differentiated again "
            f"({why}); use create_graph=False, or build the model from differentiable "
            f"primitives")

    return rule


def _layer_norm(ops, node, grad):
    """The hook's composite with the mean and rstd recomputed from x on the tape (the
    forward saved them as raw arrays, which would be constants)."""
    x, weight = node.saved[:2]
    last = (len(x.shape) - 1,)
    mean = ops.mean(x, last, True)
    centered = ops.sub(x, mean)
    rstd = ops.pow(ops.add(ops.mean(ops.mul(centered, centered), last, True), node.attrs), -0.5)
    return composite_norm.layer_norm_backward(ops, x, weight, mean, rstd, grad)


def _batch_norm(ops, node, grad):
    """The hook's composite with the batch's mean and (biased) variance recomputed from x
    on the tape, as :func:`_layer_norm`'s."""
    x, weight = node.saved[:2]
    axes = (0,) + tuple(range(2, len(x.shape)))
    channels = (x.shape[1],)
    mean = ops.mean(x, axes, True)
    centered = ops.sub(x, mean)
    var = ops.mean(ops.mul(centered, centered), axes, False)
    return composite_norm.batch_norm_backward(ops, x, weight, ops.reshape(mean, channels), var,
                                              grad, node.attrs)


TENSOR_RULES = dict(RULES)  # the rules run under create_graph: the same, but these
TENSOR_RULES.update(
    softmax_cross_entropy=_softmax_cross_entropy,
    cross_entropy_loss=_cross_entropy_loss,
    transfer=_transfer,
    layer_norm_train=_layer_norm,
    batch_norm_train=_batch_norm,
    rms_div=_unsupported("its saved reciprocal RMS is a raw array"),
)
TENSOR_RULES.update(ATTENTION_TENSOR_RULES)
