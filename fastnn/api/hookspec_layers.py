"""The optional hooks (``@op``) of whole layers: attention, max pooling, both conv2d
gradients at once, batch and layer normalisation, and the LSTM and GRU over a whole
sequence, each with its backward pass.

Kept beside :mod:`fastnn.api.hookspec_ops` so that each spec module stays small;
:mod:`fastnn.api.hookspec` takes these into its namespace as it takes those. Each has a
composite of the same name in :mod:`fastnn.api.composite` (written in
``composite_attention``, ``composite_pool``, ``composite_norm`` and
``composite_recurrent``).
"""

from __future__ import annotations

from fastnn.api.spec_marks import Array, Shape, op

# ---------------------------------------------------------------- attention


@op
def attention(q: Array, k: Array, v: Array, mask: Array | None,
              scale: float) -> tuple[Array, Array]:
    """Scaled dot-product attention over the last two axes: weights = softmax(q k^T * scale)
    along S, with the scores where ``mask`` is False taken as -inf; out = weights v.

    q (..., L, E), k (..., S, E), v (..., S, Ev) with one leading shape, L and S at least 1,
    any strides. ``mask`` is None or a bool array broadcastable to (..., L, S), True where
    the query may attend, with at least one True in every row (the core passes the causal
    mask). Returns (out (..., L, Ev), weights (..., L, S)); the core saves the weights for
    ``attention_backward`` and never writes to either."""


@op
def attention_backward(q: Array, k: Array, v: Array, weights: Array, grad: Array,
                       scale: float) -> tuple[Array, Array, Array]:
    """The backward pass of ``attention`` from the weights it returned, given grad =
    dL/dout (..., L, Ev) (possibly a broadcast view). With dw = grad v^T and ds = weights *
    (dw - rowsum(dw * weights)) * scale: (dq, dk, dv) = (ds k, ds^T q, weights^T grad).
    A masked score needs no argument: its weight, so its ds, is 0."""


@op
def attention_packed(qkv: Array, mask: Array | None, scale: float) -> tuple[Array, Array]:
    """``attention`` of q, k, v = qkv[0], qkv[1], qkv[2]: qkv (3, ..., L, E) holds
    self-attention's three projections along its first axis, with any strides (the core
    passes a transposed view of the one projection, see ``attention_packed_backward``).
    Returns ``attention``'s (out, weights). One hook where its composite makes seven calls
    (a slice and a reshape for each of q, k and v, then ``attention``)."""


@op
def attention_packed_backward(qkv: Array, weights: Array, grad: Array, scale: float,
                              order: Shape) -> Array:
    """dL/dqkv (qkv's shape) of ``attention_packed``: ``attention_backward``'s dq, dk and
    dv stacked along the first axis. ``order`` says how qkv lies in memory: it is its
    storage transposed by ``order``. The result should lie the same way, so that the
    core's reshape back to the projection's layout is a view; any layout is correct, only
    slower. One hook where its composite makes fifteen calls."""


# ---------------------------------------------------------------- pooling


@op
def max_pool2d(x: Array, kernel: Shape, stride: Shape, padding: Shape, dilation: Shape,
               output_size: Shape) -> Array:
    """Max over windows of x (N, C, H, W): (N, C, OH, OW) = ``output_size``, where
    out[n, c, i, j] is the max of x[n, c, i*sh - ph + a*dh, j*sw - pw + b*dw] over the
    (a, b) < ``kernel`` whose position lies inside the input (the padding, and the part of
    a ``ceil_mode`` window past the end, take no part). Every window holds at least one
    input position (the core checks). A NaN in a window makes its output NaN."""


@op
def max_pool2d_backward(x: Array, out: Array, grad: Array, kernel: Shape, stride: Shape,
                        padding: Shape, dilation: Shape) -> Array:
    """dL/dx (x's shape) of ``out = max_pool2d(x, ...)`` given grad = dL/dout: each window's
    gradient goes whole to one input position, the one PyTorch's ``return_indices`` names:
    the first in the window's row-major order equal to its max (ties do not share), or,
    in a window whose max is NaN, its last NaN; where windows overlap, the gradients
    routed to a position add up. Elsewhere dx is +0.0."""


# ---------------------------------------------------------------- convolution


@op
def conv2d_backward(x: Array, weight: Array, grad_out: Array, stride: Shape, padding: tuple,
                    dilation: Shape, groups: int) -> tuple[Array, Array]:
    """Both gradients of ``conv2d(x, weight, stride, padding, dilation, groups)`` given
    grad_out = dL/dout (N, C_out, H_out, W_out): returns (dx (x's shape), dweight (weight's
    shape)), what ``conv2d_grad_input(grad_out, weight, (H, W), ...)`` and
    ``conv2d_grad_weight(x, grad_out, (KH, KW), ...)`` return. The core calls it where it
    needs both, so that a backend can share work between them (the cpu backend's im2col
    of the gradient); NaN and Inf propagate as in those two hooks."""


# ---------------------------------------------------------------- batch normalisation


@op
def batch_norm_train(x: Array, weight: Array, bias: Array,
                     eps: float) -> tuple[Array, Array, Array]:
    """Training-mode batch normalisation of x (N, C, ...) over every axis but 1, with the
    batch's statistics: returns (out, mean, var), out = (x - mean) / sqrt(var + eps) *
    weight + bias (weight, bias (C,) broadcast along axis 1), mean and var (C,) the
    per-channel mean and biased variance. x may be any strided view; N * (spatial size)
    is at least 2 (the core checks)."""


@op
def batch_norm_backward(x: Array, weight: Array, mean: Array, var: Array, grad: Array,
                        eps: float) -> tuple[Array, Array, Array]:
    """The backward pass of ``batch_norm_train``: (dx, dweight, dbias) given grad = dL/dout
    (x's shape, possibly a broadcast view) and the mean and var that call returned.
    With xhat = (x - mean) / sqrt(var + eps) and m = N * (spatial size): dbias = sum(grad),
    dweight = sum(grad * xhat) (sums over every axis but 1), dx = weight / sqrt(var + eps)
    / m * (m * grad - dbias - xhat * dweight)."""


@op
def layer_norm_train(x: Array, weight: Array, bias: Array,
                     eps: float) -> tuple[Array, Array, Array]:
    """Layer normalisation of x (..., D) over its last axis: returns (out, mean, rstd), out =
    (x - mean) * rstd * weight + bias with rstd = 1 / sqrt(var + eps) (the biased variance),
    weight and bias (D,), mean and rstd (..., 1). x may be any strided view."""


@op
def layer_norm_backward(x: Array, weight: Array, mean: Array, rstd: Array,
                        grad: Array) -> tuple[Array, Array, Array]:
    """The backward pass of ``layer_norm_train``: (dx, dweight, dbias) given grad = dL/dout
    (x's shape, possibly a broadcast view) and the mean and rstd that call returned. With
    xhat = (x - mean) * rstd and g = grad * weight: dbias = sum(grad), dweight = sum(grad *
    xhat) (sums over every axis but the last), dx = rstd * (g - mean(g) - xhat * mean(g *
    xhat)) (means over the last axis)."""


# ---------------------------------------------------------------- recurrent layers


@op
def lstm_layer(x: Array, h0: Array, c0: Array, w_ih: Array, w_hh: Array,
               bias: Array) -> tuple[Array, Array, Array]:
    """One LSTM layer over a whole sequence, as PyTorch's (gates i, f, g, o in that order).

    x (T, N, I) time-major, h0 and c0 (N, H), w_ih (4H, I), w_hh (4H, H), bias (4H,) (the
    sum of PyTorch's b_ih and b_hh; zeros without bias). With a = x_t w_ih^T + h w_hh^T +
    bias: i, f, o = sigmoid, g = tanh of their quarters, c' = f c + i g, h' = o tanh(c').
    Returns (out, gates, cells): out (T, N, H) every step's h, gates (T, N, 4H) the
    activated i, f, g, o, cells (T, N, H) every step's c; h_T is out[-1], c_T cells[-1].
    The input projection of all steps may be one GEMM."""


@op
def lstm_layer_backward(x: Array, h0: Array, c0: Array, w_ih: Array, w_hh: Array,
                        out: Array, gates: Array, cells: Array, grad_out: Array,
                        grad_c: Array, needs_dx: bool
                        ) -> tuple[Array | None, Array, Array, Array, Array, Array]:
    """The backward pass of ``lstm_layer`` from its outputs: grad_out (T, N, H) = dL/dout
    (the gradient of h_T included in its last step), grad_c (N, H) = dL/dc_T. Returns
    (dx, dh0, dc0, dw_ih, dw_hh, dbias), dbias (4H,) the gradient of each of PyTorch's
    two biases; dx is None when ``needs_dx`` is False (x needs no gradient: the core
    passes its node's ``needs[0]``), and may be skipped then."""


@op
def gru_layer(x: Array, h0: Array, w_ih: Array, w_hh: Array, b_ih: Array,
              b_hh: Array) -> tuple[Array, Array]:
    """One GRU layer over a whole sequence, as PyTorch's (gates r, z, n in that order).

    x (T, N, I), h0 (N, H), w_ih (3H, I), w_hh (3H, H), b_ih and b_hh (3H,) (zeros without
    bias). With p = x_t w_ih^T + b_ih and q = h w_hh^T + b_hh: r, z = sigmoid(p + q) of
    their thirds, n = tanh(p_n + r q_n), h' = (1 - z) n + z h. Returns (out, saved):
    out (T, N, H) every step's h, saved (T, N, 4H) the r, z, n and q_n of every step."""


@op
def gru_layer_backward(x: Array, h0: Array, w_ih: Array, w_hh: Array, out: Array,
                       saved: Array, grad_out: Array, needs_dx: bool
                       ) -> tuple[Array | None, Array, Array, Array, Array, Array]:
    """The backward pass of ``gru_layer``: grad_out (T, N, H) = dL/dout (h_T's gradient
    included in its last step). Returns (dx, dh0, dw_ih, dw_hh, db_ih, db_hh); dx is None
    when ``needs_dx`` is False (as ``lstm_layer_backward``'s)."""
