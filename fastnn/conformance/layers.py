"""Layer-level conformance: each ``fastnn.nn`` layer's ``reverse`` against the tape.

``layer.reverse(x, grad_out)`` derives dL/dx and dL/d(parameters) by hand;
the tape derives them from the backward rules. On a correct backend the two
agree. Each spec is ``(label, make(dtype, device) -> layer, input shape)``, or with a
fourth entry, a dict of ``call(layer, x)`` (the one-tensor function that ``reverse``
differentiates, when it is not ``layer(x)``: self-attention, a recurrent layer's output
sequence) and ``inputs(rng, shape)`` (a host input other than random floats: Embedding's
indices), and ``reverse(layer, x, grad_out)`` where reverse takes a second input (a
decoder's memory: the same fixed one ``call`` passes); layers with parameters get random
(non-default) values so that no gradient is trivially zero. :func:`uncovered` names every
layer class of ``fastnn.nn`` that no spec builds, so a new layer cannot be missed.
"""

from __future__ import annotations

import numpy as np


def specs() -> list:
    """The layer specs, or [] when ``fastnn.nn`` is not installed."""
    try:
        from fastnn import nn
    except ImportError:
        return []
    out = [
        ("Dense", lambda d, dev: nn.Dense(4, 3, dtype=d, device=dev), (5, 4)),
        ("Linear", lambda d, dev: nn.Linear(4, 3, dtype=d, device=dev), (2, 5, 4)),
        ("Bias1d", lambda d, dev: nn.Bias1d(4, dtype=d, device=dev), (5, 4)),
        ("Diag", lambda d, dev: nn.Diag(4, dtype=d, device=dev), (5, 4)),
        ("ScalarScale", lambda d, dev: nn.ScalarScale(0.7, dtype=d, device=dev), (5, 4)),
        ("RMSDiv", lambda d, dev: nn.RMSDiv(), (5, 4)),
        ("RMSNorm", lambda d, dev: nn.RMSNorm(4, dtype=d, device=dev), (5, 4)),
        ("LayerNorm", lambda d, dev: nn.LayerNorm(4, dtype=d, device=dev), (5, 4)),
        ("Softmax", lambda d, dev: nn.Softmax(), (5, 4)),
        ("Softmax(temperature=2)", lambda d, dev: nn.Softmax(temperature=2.0), (5, 4)),
        ("Swish", lambda d, dev: nn.Swish(4, dtype=d, device=dev), (5, 4)),
        ("Dropout(p=0)", lambda d, dev: nn.Dropout(0.0), (5, 4)),
        ("Conv1d", lambda d, dev: nn.Conv1d(2, 3, 3, padding=1, dtype=d, device=dev), (2, 2, 7)),
        ("Conv1d(stride=2, dilation=2)",
         lambda d, dev: nn.Conv1d(2, 4, 2, stride=2, dilation=2, dtype=d, device=dev), (2, 2, 9)),
        ("Residual(Linear)", lambda d, dev: nn.Residual(nn.Linear(4, 4, dtype=d, device=dev)),
         (5, 4)),
        ("DataParallel(Linear)",
         lambda d, dev: nn.DataParallel(nn.Linear(4, 3, dtype=d, device=dev)), (5, 4)),
        ("Sequential", lambda d, dev: nn.Sequential(
            nn.Linear(4, 6, dtype=d, device=dev), nn.Activation("tanh"),
            nn.RMSNorm(6, dtype=d, device=dev), nn.Linear(6, 3, dtype=d, device=dev)), (5, 4)),
    ]
    out += _sequence_specs(nn)
    out += _more_sequence_specs(nn)
    from fastnn.ops.activations import ACTIVATIONS

    for kind in sorted(ACTIVATIONS):
        out.append((f"Activation({kind})", lambda d, dev, k=kind: nn.Activation(k), (5, 4)))
    out += _vision_specs(nn)
    from fastnn.conformance import layers_vis

    out += layers_vis.specs(nn)
    from fastnn.conformance import layers_lazy

    out += layers_lazy.specs(nn)
    return out


def _self_attention(layer, x):
    return layer(x, x, x)[0]


def _output_sequence(layer, x):
    return layer(x)[0]


def _indices(rng, shape):
    return rng.integers(0, 7, size=shape).astype(np.int64)


def _second_input(x, features: int, length=None):
    """A fixed second input for x: (length or x's, ..., features), x's dtype and device."""
    import fastnn as fnn

    shape = ((length or x.shape[0]),) + x.shape[1:-1] + (features,)
    values = np.sin(np.arange(np.prod(shape)) * 0.7).reshape(shape)
    return fnn.tensor(values, dtype=x.dtype, device=x.device)


def _with_second(features: int, length=None) -> dict:
    """call/reverse options of a layer whose forward takes (x, second input)."""
    return {"call": lambda layer, x: layer(x, _second_input(x, features, length)),
            "reverse": lambda layer, x, g: layer.reverse(x, g,
                                                         _second_input(x, features, length))}


def _more_sequence_specs(nn) -> list:
    """Recurrent cells, RNN, the decoder, Transformer, EmbeddingBag and Bilinear (issue 21)."""
    rnn = {"call": _output_sequence}
    return [
        ("RNN(relu, 2 layers, bidirectional)", lambda d, dev: nn.RNN(
            3, 2, num_layers=2, nonlinearity="relu", bidirectional=True, dtype=d, device=dev),
         (4, 2, 3), rnn),
        ("LSTM(proj_size=2)", lambda d, dev: nn.LSTM(3, 4, proj_size=2, dtype=d, device=dev),
         (4, 2, 3), rnn),
        ("RNNCell", lambda d, dev: nn.RNNCell(3, 4, dtype=d, device=dev), (2, 3)),
        ("GRUCell", lambda d, dev: nn.GRUCell(3, 4, dtype=d, device=dev), (2, 3)),
        ("LSTMCell", lambda d, dev: nn.LSTMCell(3, 4, dtype=d, device=dev), (2, 3), rnn),
        ("TransformerDecoderLayer", lambda d, dev: nn.TransformerDecoderLayer(
            4, 2, 6, dropout=0.0, dtype=d, device=dev), (3, 2, 4), _with_second(4, 5)),
        ("TransformerDecoder(norm_first)", lambda d, dev: nn.TransformerDecoder(
            nn.TransformerDecoderLayer(4, 2, 6, dropout=0.0, norm_first=True, dtype=d,
                                       device=dev), 2), (3, 2, 4), _with_second(4, 5)),
        ("Transformer", lambda d, dev: nn.Transformer(
            4, 2, 1, 1, 6, dropout=0.0, dtype=d, device=dev), (5, 2, 4), _with_second(4, 3)),
        ("EmbeddingBag(sum)", lambda d, dev: nn.EmbeddingBag(7, 3, mode="sum", dtype=d,
                                                             device=dev), (2, 4),
         {"inputs": _indices}),
        ("EmbeddingBag(max)", lambda d, dev: nn.EmbeddingBag(7, 3, mode="max", dtype=d,
                                                             device=dev), (3, 2),
         {"inputs": _indices}),
        ("Bilinear", lambda d, dev: nn.Bilinear(3, 2, 4, dtype=d, device=dev), (5, 3),
         _with_second(2)),
    ]


def _sequence_specs(nn) -> list:
    """Sequence, attention, gated and activation layers (issue 14)."""
    mha = {"call": _self_attention}
    rnn = {"call": _output_sequence}
    out = [
        ("Embedding", lambda d, dev: nn.Embedding(7, 3, dtype=d, device=dev), (2, 5),
         {"inputs": _indices}),
        ("Embedding(padding_idx=2)",
         lambda d, dev: nn.Embedding(7, 3, padding_idx=2, dtype=d, device=dev), (2, 5),
         {"inputs": _indices}),
        ("MultiheadAttention", lambda d, dev: nn.MultiheadAttention(4, 2, dtype=d, device=dev),
         (3, 2, 4), mha),
        ("MultiheadAttention(batch_first, bias=False)", lambda d, dev: nn.MultiheadAttention(
            4, 1, bias=False, batch_first=True, dtype=d, device=dev), (2, 3, 4), mha),
        ("TransformerEncoderLayer", lambda d, dev: nn.TransformerEncoderLayer(
            4, 2, 6, dropout=0.0, dtype=d, device=dev), (3, 2, 4)),
        ("TransformerEncoder(norm_first, gelu)", lambda d, dev: nn.TransformerEncoder(
            nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0, activation="gelu",
                                       norm_first=True, batch_first=True, dtype=d, device=dev),
            2), (2, 3, 4)),
        ("LSTM", lambda d, dev: nn.LSTM(3, 4, dtype=d, device=dev), (5, 2, 3), rnn),
        ("LSTM(2 layers, bidirectional, batch_first)", lambda d, dev: nn.LSTM(
            3, 2, num_layers=2, bidirectional=True, batch_first=True, dtype=d, device=dev),
         (2, 4, 3), rnn),
        ("GRU", lambda d, dev: nn.GRU(3, 4, dtype=d, device=dev), (5, 2, 3), rnn),
        ("GRU(2 layers, bidirectional, no bias)", lambda d, dev: nn.GRU(
            3, 2, num_layers=2, bidirectional=True, bias=False, dtype=d, device=dev),
         (4, 2, 3), rnn),
        ("GLU", lambda d, dev: nn.GLU(), (5, 4)),
        ("GLU(dim=0)", lambda d, dev: nn.GLU(dim=0), (4, 3)),
        ("DyT", lambda d, dev: nn.DyT(4, dtype=d, device=dev), (5, 4)),
        ("GELU(approximate=tanh)", lambda d, dev: nn.GELU("tanh"), (5, 4)),
        ("Softplus(beta=2)", lambda d, dev: nn.Softplus(beta=2.0), (5, 4)),
        ("LeakyReLU(0.2)", lambda d, dev: nn.LeakyReLU(0.2), (5, 4)),
        ("ELU(alpha=0.5)", lambda d, dev: nn.ELU(0.5), (5, 4)),
        ("Hardtanh(-0.5, 1.5)", lambda d, dev: nn.Hardtanh(-0.5, 1.5), (5, 4)),
        ("LogSoftmax(dim=0)", lambda d, dev: nn.LogSoftmax(dim=0), (5, 4)),
    ]
    for gate in ("sigmoid", "silu", "tanh"):
        out.append((f"GatedLinear({gate})", lambda d, dev, g=gate: nn.GatedLinear(
            4, 3, gate=g, dtype=d, device=dev), (5, 4)))
    for name in ("ReLU", "Sigmoid", "Tanh", "GELU", "SiLU", "Softplus", "SELU", "Mish",
                 "Identity"):
        out.append((name, lambda d, dev, n=name: getattr(nn, n)(), (5, 4)))
    from fastnn.conformance import layers_act

    out += layers_act.specs(nn)
    return out


# layer classes that no spec needs: containers without a forward of their own, and the
# loss modules (two inputs; checked against PyTorch by fastnn's own tests)
NOT_LAYERS = ("Module", "ModuleList", "ModuleDict", "Parameter", "ParameterList", "ParameterDict",
              # two inputs, no parameters: checked against PyTorch by fastnn's own tests
              "CosineSimilarity", "PairwiseDistance")
# the unpooling layers take two inputs (values and indices): checked against PyTorch by
# tests/nn/test_pooling_torch.py
NOT_LAYERS += ("MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d")
# base classes under PyTorch's names (their subclasses, RNN, LSTM, GRU and the cells, have
# specs of their own)
NOT_LAYERS += ("RNNBase", "RNNCellBase")
# an input and a target in, (output, loss) out: checked against PyTorch by
# tests/nn/test_adaptive_softmax_torch.py
NOT_LAYERS += ("AdaptiveLogSoftmaxWithLoss",)


def uncovered() -> list:
    """Names of ``fastnn.nn`` layer classes that no spec builds (empty when all are)."""
    from fastnn import nn
    from fastnn.nn.loss import _Loss

    built = {type(make("float32", None)) for _, make, *_ in specs()}
    names = []
    for name in nn.__all__:
        cls = getattr(nn, name)
        if (isinstance(cls, type) and issubclass(cls, nn.Module) and name not in NOT_LAYERS
                and not issubclass(cls, _Loss) and cls not in built):
            names.append(name)
    return names


def _vision_specs(nn) -> list:
    """Convolution, pooling and batch-normalisation layers (and the shape layers)."""

    def bn_eval(cls, d, dev):
        layer = cls(3, dtype=d, device=dev)
        return layer.eval()

    return [
        ("Conv2d", lambda d, dev: nn.Conv2d(2, 3, 3, padding=1, dtype=d, device=dev),
         (2, 2, 5, 6)),
        ("Conv2d(stride=2, dilation=(1, 2), groups=2)", lambda d, dev: nn.Conv2d(
            2, 4, (2, 3), stride=2, dilation=(1, 2), groups=2, dtype=d, device=dev),
         (2, 2, 7, 8)),
        ("Conv2d(padding='same', even kernel)", lambda d, dev: nn.Conv2d(
            3, 2, 2, padding="same", dtype=d, device=dev), (2, 3, 4, 5)),
        ("Conv1d(causal=True)", lambda d, dev: nn.Conv1d(2, 3, 3, dilation=2, causal=True,
                                                          dtype=d, device=dev), (2, 2, 9)),
        ("Conv1d(padding='same', k=4)", lambda d, dev: nn.Conv1d(2, 3, 4, padding="same",
                                                                 dtype=d, device=dev),
         (2, 2, 7)),
        ("MaxPool1d", lambda d, dev: nn.MaxPool1d(2), (2, 3, 8)),
        ("MaxPool1d(3, stride=2, padding=1)", lambda d, dev: nn.MaxPool1d(3, 2, 1), (2, 3, 9)),
        ("MaxPool2d", lambda d, dev: nn.MaxPool2d(2), (2, 3, 4, 6)),
        ("MaxPool2d(3, stride=2, padding=1)", lambda d, dev: nn.MaxPool2d(3, 2, 1),
         (2, 2, 7, 6)),
        ("AvgPool1d(3, stride=2, padding=1)", lambda d, dev: nn.AvgPool1d(3, 2, 1), (2, 3, 9)),
        ("AvgPool2d", lambda d, dev: nn.AvgPool2d(2), (2, 3, 4, 6)),
        ("AvgPool2d(3, 2, 1, count_include_pad=False)", lambda d, dev: nn.AvgPool2d(
            3, 2, 1, count_include_pad=False), (2, 2, 7, 6)),
        ("AvgPool2d(3, 2, 1, ceil_mode=True)", lambda d, dev: nn.AvgPool2d(
            3, 2, 1, ceil_mode=True), (2, 2, 6, 7)),
        ("AvgPool1d(2, 3, ceil_mode, count_include_pad=False)", lambda d, dev: nn.AvgPool1d(
            2, 3, 1, ceil_mode=True, count_include_pad=False), (2, 3, 8)),
        ("AdaptiveAvgPool1d(3)", lambda d, dev: nn.AdaptiveAvgPool1d(3), (2, 3, 8)),
        ("AdaptiveAvgPool2d((3, 2))", lambda d, dev: nn.AdaptiveAvgPool2d((3, 2)),
         (2, 2, 7, 5)),
        ("AdaptiveAvgPool2d(1)", lambda d, dev: nn.AdaptiveAvgPool2d(1), (2, 2, 4, 4)),
        ("MaxPool3d(3, 2, 1)", lambda d, dev: nn.MaxPool3d(3, 2, 1), (2, 2, 5, 4, 6)),
        ("AvgPool3d((2, 3, 2), count_include_pad=False)", lambda d, dev: nn.AvgPool3d(
            (2, 3, 2), 1, 1, count_include_pad=False), (1, 2, 3, 4, 5)),
        ("AvgPool3d(2, 2, ceil_mode, divisor_override=3)", lambda d, dev: nn.AvgPool3d(
            2, 2, ceil_mode=True, divisor_override=3), (1, 2, 3, 5, 4)),
        ("AdaptiveAvgPool3d((2, None, 3))", lambda d, dev: nn.AdaptiveAvgPool3d((2, None, 3)),
         (2, 2, 5, 3, 7)),
        ("LPPool1d(2, 3)", lambda d, dev: nn.LPPool1d(2, 3), (2, 3, 9)),
        ("LPPool2d(2, 2)", lambda d, dev: nn.LPPool2d(2, 2), (2, 3, 4, 6)),
        ("LPPool3d(2, 2)", lambda d, dev: nn.LPPool3d(2, 2), (1, 2, 4, 4, 4)),
        ("BatchNorm1d", lambda d, dev: nn.BatchNorm1d(3, dtype=d, device=dev), (5, 3)),
        ("BatchNorm1d((N, C, L))", lambda d, dev: nn.BatchNorm1d(3, dtype=d, device=dev),
         (4, 3, 6)),
        ("BatchNorm2d", lambda d, dev: nn.BatchNorm2d(3, dtype=d, device=dev), (4, 3, 3, 5)),
        ("BatchNorm2d(eval)", lambda d, dev: bn_eval(nn.BatchNorm2d, d, dev), (4, 3, 3, 5)),
        # one process: BatchNorm's path (two ranks: tests/distributed/test_sync_batchnorm_mpi)
        ("SyncBatchNorm", lambda d, dev: nn.SyncBatchNorm(3, dtype=d, device=dev), (4, 3, 2, 3)),
        ("SyncBatchNorm(eval)", lambda d, dev: bn_eval(nn.SyncBatchNorm, d, dev), (5, 3)),
        ("Flatten", lambda d, dev: nn.Flatten(), (2, 3, 4)),
        ("GlobalAvgPool1d", lambda d, dev: nn.GlobalAvgPool1d(), (2, 3, 5)),
    ] + _pool_specs(nn)


def _first(layer, x):
    return layer(x)[0]


def _pool_specs(nn) -> list:
    """Max pooling's ceil_mode and return_indices, adaptive max pooling."""
    return [
        ("MaxPool2d(3, 2, 1, ceil_mode=True)", lambda d, dev: nn.MaxPool2d(3, 2, 1,
                                                                          ceil_mode=True),
         (2, 2, 8, 7)),
        ("MaxPool2d(2, return_indices=True)", lambda d, dev: nn.MaxPool2d(
            2, return_indices=True), (2, 3, 4, 6), {"call": _first}),
        ("AdaptiveMaxPool1d(3)", lambda d, dev: nn.AdaptiveMaxPool1d(3), (2, 3, 8)),
        ("AdaptiveMaxPool2d((3, 2))", lambda d, dev: nn.AdaptiveMaxPool2d((3, 2)), (2, 2, 7, 5)),
        ("AdaptiveMaxPool3d((2, None, 3))", lambda d, dev: nn.AdaptiveMaxPool3d((2, None, 3)),
         (2, 2, 5, 3, 7)),
        # fixed samples, so that reverse's second forward pools over the same windows
        ("FractionalMaxPool2d(2, (4, 3))", lambda d, dev: nn.FractionalMaxPool2d(
            2, (4, 3), _random_samples=_samples((2, 3, 2), d, dev)), (2, 3, 7, 5)),
        ("FractionalMaxPool3d((2, 1, 2), output_ratio=0.5, return_indices=True)",
         lambda d, dev: nn.FractionalMaxPool3d(
             (2, 1, 2), output_ratio=0.5, return_indices=True,
             _random_samples=_samples((2, 2, 3), d, dev)), (2, 2, 6, 4, 7), {"call": _first}),
    ]


def _samples(shape, dtype, device):
    """Fixed fractional-pooling samples in [0, 1)."""
    import fastnn as fnn

    values = np.random.default_rng(3).uniform(size=shape)
    return fnn.tensor(values, dtype=dtype, device=device)


def randomize(layer, rng) -> None:
    """Give every parameter random values of either sign, through ``load_state_dict``."""
    state = layer.state_dict()
    for name, param in layer.named_parameters():
        values = rng.uniform(0.5, 1.5, size=param.shape) * rng.choice([-1.0, 1.0], param.shape)
        state[name] = values.astype(param.dtype.numpy)
    layer.load_state_dict(state)


def away_from_kinks(rng, shape) -> np.ndarray:
    return rng.uniform(0.2, 2.0, size=shape) * rng.choice([-1.0, 1.0], size=shape)
