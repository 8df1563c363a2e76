"""Autocast (PyTorch's mixed precision): the one table of ops that cast in an enabled
region, the thread-local region state, and the cast each op does at its public boundary.

In a region enabled for a device type (``fnn.autocast("cuda")``), an op listed here whose
tensors are on that device type casts its floating inputs first, by its policy:

- ``lower``: to the region's dtype (float16 by default; matmul, linear, convolutions...);
- ``float32``: to float32 (softmax, losses, norms, exp/log... where float16 loses too much);
- ``float32_dtype``: as ``float32``, unless the call gives ``dtype=`` (sum, softmax, ...);
- ``promote``: all to the widest floating input type (cat, stack, addcmul...);
- ``input``: the other floating inputs to the first one's dtype (a norm layer's float32
  weight meeting float16 activations, which PyTorch's CPU kernels take as they are);
- ``native``: nothing cast, inner ops below autocast: fastnn composes these from listed
  ops (var from sum, elu from exp...) where PyTorch has one kernel that autocast leaves be.

float64 tensors, integer tensors and tensors of another device type are never cast. The
op then runs with autocast off for its own inner ops (PyTorch runs an autocast op's kernel
below the autocast dispatch key), so each listed op casts once, at the boundary. Casts are
tape ops: gradients reach float32 parameters as float32. As PyTorch, the cast of a leaf
that requires grad (a parameter) is made once per outermost region and reused.

Two lists, as PyTorch keeps them: ``cpu`` for the cpu backend (PyTorch's AutocastCPU) and
``cuda`` for every other device type (PyTorch's CUDA list, which its other accelerators
share). Outside every region a listed op pays one test of a process-wide flag.
"""

from __future__ import annotations

import functools
import inspect
import threading

from fastnn.api import dtypes
from fastnn.autograd.grad_mode import switches
from fastnn.ops.core import astype
from fastnn.ops.tensor import Tensor

LOWER, FLOAT32, FLOAT32_DTYPE, PROMOTE, INPUT, NATIVE = (
    "lower", "float32", "float32_dtype", "promote", "input", "native")

_NORMS_INPUT = "layer_norm group_norm rms_norm batch_norm instance_norm"
TABLE = {  # device kind -> policy -> fastnn op names (each an op of the public op table)
    "cuda": {
        LOWER: "matmul mm bmm mv addmm addmv baddbmm einsum linear prelu "
               "conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d "
               "scaled_dot_product_attention recurrent",
        FLOAT32: "acos asin arccos arcsin cosh erfinv exp expm1 log log10 log2 log1p "
                 "reciprocal rsqrt sinh "
                 "tan pow softplus layer_norm rms_norm group_norm cosine_similarity "
                 "poisson_nll_loss cosine_embedding_loss nll_loss hinge_embedding_loss kl_div "
                 "l1_loss smooth_l1_loss huber_loss mse_loss margin_ranking_loss "
                 "multilabel_margin_loss soft_margin_loss triplet_margin_loss "
                 "multi_margin_loss binary_cross_entropy_with_logits cross_entropy dist cdist "
                 "renorm logsumexp interpolate upsample upsample_nearest upsample_bilinear "
                 "normalize",
        FLOAT32_DTYPE: "prod softmax softmin log_softmax cumprod cumsum sum norm",
        PROMOTE: "addcdiv addcmul atan2 bilinear cross dot vdot index_put tensordot "
                 "scatter_add grid_sample",
        INPUT: "batch_norm instance_norm",
        NATIVE: "var std nansum nanmean exp2 logit logsigmoid elu celu selu mish",
    },
    "cpu": {
        LOWER: "matmul mm bmm addmm baddbmm einsum tensordot linear prelu conv1d conv2d "
               "conv3d conv_transpose1d conv_transpose2d conv_transpose3d "
               "scaled_dot_product_attention",
        FLOAT32: "binary_cross_entropy prod quantile nanquantile cdist trace max_unpool2d "
                 "ctc_loss mse_loss cosine_embedding_loss nll_loss hinge_embedding_loss "
                 "poisson_nll_loss smooth_l1_loss cross_entropy l1_loss huber_loss "
                 "margin_ranking_loss soft_margin_loss triplet_margin_loss multi_margin_loss "
                 "kl_div multilabel_margin_loss binary_cross_entropy_with_logits "
                 "grid_sample fractional_max_pool2d fractional_max_pool3d "
                 "fractional_max_pool2d_with_indices fractional_max_pool3d_with_indices",
        PROMOTE: "cat stack index_copy",
        INPUT: _NORMS_INPUT,
    },
}


LAYER_ONLY = ("recurrent",)  # names layers cast by (cast_args), no public op's: the
#                               recurrent layers' input and state (PyTorch's cuDNN RNN and
#                               cell kernels)

KEEP = {  # op -> arguments (positions, names) its policy leaves as given
    "batch_norm": (1, 2, "running_mean", "running_var"),  # the running statistics
    "instance_norm": (1, 2, "running_mean", "running_var"),
}


def _policies() -> dict:
    """op name -> {device kind: policy}, from TABLE."""
    out: dict = {}
    for kind, lists in TABLE.items():
        for policy, names in lists.items():
            for name in names.split():
                if kind in out.setdefault(name, {}):
                    raise ValueError(f"autocast table: {name!r} is listed twice for {kind}")
                out[name][kind] = policy
    return out


POLICY = _policies()


class _State(threading.local):
    """Each thread's autocast state (class attributes: what a new thread starts with;
    the dicts are replaced, never changed in place, so threads share no state)."""

    on = False  # an enabled region is open here and no autocast op is running
    enabled: dict = {}  # device type -> True/False as set by the innermost region
    fast: dict = {}  # device type -> DType, for the enabled device types only
    dtypes: dict = {}  # device type -> DType set by set_autocast_dtype
    cache_enabled = True
    nesting = 0
    cache: dict = {}


state = _State()
ACTIVE = [0]  # threads with an enabled region (a thread that ends inside one leaves it > 0,
#               which only costs the thread-local test)
_active_lock = threading.Lock()


def default_dtype(device_type: str):
    """PyTorch's defaults: bfloat16 on cpu, float16 elsewhere."""
    return dtypes.bfloat16 if device_type == "cpu" else dtypes.float16


def set_region(device_type: str, enabled: bool, dtype) -> None:
    """Set one device type's flag and dtype in this thread and recompute the fast map."""
    state.enabled = {**state.enabled, device_type: bool(enabled)}
    state.dtypes = {**state.dtypes, device_type: dtype}
    was = bool(state.fast)
    state.fast = {d: state.dtypes.get(d) or default_dtype(d)
                  for d, flag in state.enabled.items() if flag}
    state.on = bool(state.fast)
    if state.on != was:
        with _active_lock:
            ACTIVE[0] += 1 if state.on else -1


def clear_cache() -> None:
    state.cache = {}


def _kind(device_type: str) -> str:
    return "cpu" if device_type == "cpu" else "cuda"


def _first_tensor(args, kwargs):
    for value in (*args, *kwargs.values()):
        if isinstance(value, Tensor):
            return value
        if type(value) in (list, tuple):
            for item in value:
                if isinstance(item, Tensor):
                    return item
    return None


def _eligible(t, device_type) -> bool:
    dtype = t._dtype
    return dtype.is_floating and dtype is not dtypes.float64 and t._device.type == device_type


def mixes(x, param) -> bool:
    """Whether an autocast region on x's device type casts between x and a layer's
    parameter (neither float64): the layer's dtype check lets such an input pass."""
    device_type = x._device.type
    return (device_type in state.fast and _eligible(x, device_type)
            and _eligible(param, device_type))


def _tensors(values):
    for value in values:
        if isinstance(value, Tensor):
            yield value
        elif type(value) in (list, tuple):
            yield from (v for v in value if isinstance(v, Tensor))


def _widest(target, values, device_type):
    """PyTorch's promote rule: float32 if any eligible input is, else the region's dtype."""
    for t in _tensors(values):
        if _eligible(t, device_type) and t._dtype is not target:
            return dtypes.float32
    return target


def _cast_tensor(t, dtype):
    if not (state.cache_enabled and t._requires_grad and t._node is None):
        return astype(t, dtype)
    key = (id(t), dtype.name, switches.grad)
    hit = state.cache.get(key)
    if hit is None or hit[0] is not t:
        hit = (t, astype(t, dtype))
        state.cache = {**state.cache, key: hit}
    return hit[1]


def _cast(value, dtype, device_type):
    if isinstance(value, Tensor):
        if value._dtype is not dtype and _eligible(value, device_type):
            return _cast_tensor(value, dtype)
        return value
    if type(value) in (list, tuple):
        return type(value)(_cast(v, dtype, device_type) for v in value)
    return value


def cast_args(name: str, *tensors) -> tuple:
    """``tensors`` (None allowed) cast as op ``name`` casts them in the current region: for
    layers that call an op's trusting internals instead of its public function."""
    if not state.on:
        return tensors
    casted, _ = _casted(name, tensors, {})
    return casted


def _casted(name: str, args, kwargs):
    """(args, kwargs) cast by op ``name``'s policy for the first tensor's device type."""
    first = _first_tensor(args, kwargs)
    if first is None:
        return args, kwargs
    device_type = first._device.type
    region_dtype = state.fast.get(device_type)
    policy = POLICY[name].get(_kind(device_type))
    if region_dtype is None or policy is None:
        return args, kwargs
    if policy == LOWER:
        target = region_dtype
    elif policy == FLOAT32 or policy == FLOAT32_DTYPE:
        if policy == FLOAT32_DTYPE and kwargs.get("dtype") is not None:
            return args, kwargs
        target = dtypes.float32
    elif policy == NATIVE:
        return args, kwargs
    elif policy == PROMOTE:
        target = _widest(region_dtype, (*args, *kwargs.values()), device_type)
    else:  # INPUT
        if not _eligible(first, device_type):
            return args, kwargs
        target = first._dtype
    keep = KEEP.get(name, ())
    args = tuple(v if i in keep else _cast(v, target, device_type) for i, v in enumerate(args))
    kwargs = {k: v if k in keep else _cast(v, target, device_type) for k, v in kwargs.items()}
    return args, kwargs


def below(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` with no autocast (PyTorch's rule for calls given out=)."""
    if not state.on:
        return fn(*args, **kwargs)
    state.on = False
    try:
        return fn(*args, **kwargs)
    finally:
        state.on = True


def _run(name: str, fn, args, kwargs):
    args, kwargs = _casted(name, args, kwargs)
    state.on = False  # the op's own inner ops: below autocast, as PyTorch's kernels
    try:
        return fn(*args, **kwargs)
    finally:
        state.on = True


def wrap(name: str, fn):
    """``fn`` with the autocast policy of ``name`` (TABLE); ``fn`` itself if unlisted.

    The wrapper is made with ``fn``'s own signature, so that a call outside every region
    costs one test of a process-wide flag and one plain call (no packing of
    ``*args, **kwargs``, no thread-local lookup)."""
    policies = POLICY.get(name)
    if policies is None:
        return fn
    names = {"_fn": fn, "_name": name, "_active": ACTIVE, "_state": state, "_run": _run}
    params, positional, lead, keywords, star = [], [], [], [], False
    kinds = inspect.Parameter
    for i, p in enumerate(inspect.signature(fn).parameters.values()):
        default = ""
        if p.default is not p.empty:
            names[f"_d{i}"] = p.default
            default = f"=_d{i}"
        if p.kind is kinds.VAR_POSITIONAL:  # the parameters before it go by position
            params.append(f"*{p.name}")
            positional += [*lead, f"*{p.name}"]
            lead, star = [], True
        elif p.kind is kinds.VAR_KEYWORD:
            params.append(f"**{p.name}")
            keywords.append(f"**{p.name}")
        else:
            if p.kind is kinds.KEYWORD_ONLY and not star:
                params.append("*")
                star = True
            params.append(p.name + default)
            if p.kind is kinds.POSITIONAL_ONLY:
                positional.append(p.name)
            elif p.kind is kinds.POSITIONAL_OR_KEYWORD:
                lead.append(p.name)
            else:
                keywords.append(p.name)
    passed = [k if k.startswith("**") else f"{k}={k}" for k in keywords]
    # _run gets the leading parameters by name: a policy finds dtype= and running_mean there
    as_dict = [k if k.startswith("**") else f"{k!r}: {k}" for k in lead + keywords]
    args = ", ".join(positional) + ("," if positional else "")
    source = (f"def {fn.__name__}({', '.join(params)}):\n"
              f"    if _active[0] and _state.on:\n"
              f"        return _run(_name, _fn, ({args}), {{{', '.join(as_dict)}}})\n"
              f"    return _fn({', '.join(positional + lead + passed)})\n")
    # compiled as this file's code, so that the frames that name a user's line (shadow
    # mode, errors) skip the wrapper as fastnn's own
    exec(compile(source, __file__, "exec"), names)  # noqa: S102  (see the docstring)
    op = functools.wraps(fn)(names[fn.__name__])
    op.autocast_policy = policies
    return op
