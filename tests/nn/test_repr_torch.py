"""Layers print as PyTorch prints them: ``print(model)`` of the same architecture gives
the same text (each layer's repr built from the same arguments in both libraries, torch
where it is installed), and a few literal reprs that hold without PyTorch."""

import pytest

from fastnn import nn

# constructor calls written once, evaluated in both libraries' nn
LAYERS = [
    'MaxPool1d(2)',
    'MaxPool2d(2, 1, 1)',
    'MaxPool3d(2, return_indices=True)',
    'AvgPool1d(2)',
    'AvgPool2d(3, 2, 1, ceil_mode=True)',
    'AvgPool3d(2)',
    'AdaptiveMaxPool1d(3)',
    'AdaptiveMaxPool2d((3, None))',
    'AdaptiveMaxPool3d(3)',
    'AdaptiveAvgPool1d(3)',
    'AdaptiveAvgPool2d(3)',
    'AdaptiveAvgPool3d(3)',
    'FractionalMaxPool2d(2, output_size=3)',
    'FractionalMaxPool3d(2, output_ratio=0.5, return_indices=True)',
    'LPPool1d(2, 3)',
    'LPPool2d(2, 3, 1)',
    'LPPool3d(1, 2)',
    'MaxUnpool1d(2)',
    'MaxUnpool2d(2)',
    'MaxUnpool3d(2, 1)',
    'Conv2d(1, 2, 3, padding="same", bias=False)',
    'Conv2d(1, 2, 3, padding="valid")',
    'Conv1d(1, 2, 3, padding="same")',
    'Conv3d(1, 2, 3, padding="same", padding_mode="reflect")',
    'ConvTranspose2d(1, 2, 3, stride=2, output_padding=1)',
    'Conv1d(1, 2, 3, padding_mode="circular", padding=1)',
    'Conv2d(2, 4, 3, padding=1, padding_mode="replicate", groups=2, dilation=2)',
    'LSTM(2, 3, dropout=0.1, num_layers=2, batch_first=True, bidirectional=True, bias=False, '
    'proj_size=2)',
    'GRU(2, 3, bidirectional=True)',
    'RNN(2, 3, nonlinearity="relu")',
    'LSTMCell(2, 3)',
    'GRUCell(2, 3, bias=False)',
    'RNNCell(2, 3, nonlinearity="relu")',
    'MultiheadAttention(4, 2)',
    'AdaptiveLogSoftmaxWithLoss(8, 10, [4, 6], head_bias=True)',
    'CrossEntropyLoss(weight=None, label_smoothing=0.1)',
    'MSELoss(reduction="sum")',
    'BCEWithLogitsLoss()',
    'NLLLoss()',
    'L1Loss()',
    'HuberLoss(delta=2.0)',
    'SmoothL1Loss()',
    'KLDivLoss(reduction="batchmean")',
    'CTCLoss()',
    'TripletMarginLoss()',
    'CosineEmbeddingLoss()',
    'MarginRankingLoss()',
    'HingeEmbeddingLoss()',
    'SoftMarginLoss()',
    'MultiLabelSoftMarginLoss()',
    'PoissonNLLLoss()',
    'GaussianNLLLoss()',
    'BCELoss()',
    'MultiMarginLoss()',
    'ConstantPad2d(1, 0.5)',
    'ConstantPad1d((1, 2), 3.0)',
    'ConstantPad3d(1, 0.0)',
    'ZeroPad2d(1)',
    'ZeroPad1d(2)',
    'ReflectionPad2d(1)',
    'ReplicationPad3d(1)',
    'CircularPad2d(1)',
    'CosineSimilarity()',
    'PairwiseDistance()',
    'TransformerEncoderLayer(4, 2, 8)',
    'TransformerEncoder(nn.TransformerEncoderLayer(4, 2, 8), 3, enable_nested_tensor=False)',
    'Embedding(3, 2, max_norm=1.0, sparse=False)',
    'EmbeddingBag(3, 2, mode="sum")',
    'Upsample(scale_factor=2, mode="bilinear")',
    'UpsamplingNearest2d(scale_factor=2)',
    'PixelShuffle(2)',
    'PixelUnshuffle(2)',
    'ChannelShuffle(2)',
    'Fold((4, 4), 2)',
    'Unfold(2, stride=2)',
    'Dropout1d(0.1)',
    'FeatureAlphaDropout()',
    'LayerNorm([2, 3], eps=1e-6)',
    'RMSNorm([3], eps=1e-6)',
    'LocalResponseNorm(2)',
    'Softmax2d()',
    'Softmin(1)',
    'Hardshrink()',
    'Softshrink(0.3)',
    'Tanhshrink()',
    'RReLU()',
    'GLU()',
    'Hardsigmoid()',
    'LogSigmoid()',
    'Softsign()',
    'CELU(0.5)',
    'SELU(inplace=True)',
    'Mish()',
    'SiLU()',
    'Sigmoid()',
    'Tanh()',
    'ReLU6()',
    'ELU(alpha=0.5)',
    'Identity()',
    'Flatten(0, 2)',
    'Unflatten(1, (2, 2))',
    'Bilinear(2, 3, 4, bias=False)',
    'Linear(2, 3)',
    'LazyLinear(3)',
    'Transformer(d_model=4, nhead=2, num_encoder_layers=1, num_decoder_layers=1, '
    'dim_feedforward=8)',
    # a hyperparameter given as an int prints as given, as PyTorch keeps it (fastnn printed
    # Softplus(beta=2.0))
    'Softplus(beta=2)',
    'Softplus(2, 10)',
    'ELU(alpha=2)',
    'CELU(3)',
    'Hardtanh(0, 6)',
    'Threshold(0.1, 20)',
    'Hardshrink(1)',
    'Softshrink(1)',
    'RReLU(0, 1)',
    'LocalResponseNorm(2, alpha=1, beta=1, k=2)',
    'BatchNorm2d(4, eps=1, momentum=1)',
    'InstanceNorm1d(4, eps=1, momentum=1)',
    'GroupNorm(2, 4, eps=1)',
    'LayerNorm(4, eps=1)',
    'TransformerEncoderLayer(4, 2, 8, layer_norm_eps=1)',
    # an embedding's norm settings print where they are not the defaults
    'Embedding(10, 3, padding_idx=0, max_norm=1.5, norm_type=1, scale_grad_by_freq=True)',
    'Embedding(10, 3, norm_type=2.5)',
    "EmbeddingBag(10, 3, max_norm=0.5, norm_type=4, scale_grad_by_freq=True, mode='sum', "
    "padding_idx=1)",
]


@pytest.mark.parametrize("call", LAYERS)
def test_a_layer_prints_as_pytorchs(call):
    torch = pytest.importorskip("torch")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (PyTorch's nested-tensor notice on Transformer)
        theirs = repr(eval("torch.nn." + call, {"torch": torch, "nn": torch.nn}))
    assert repr(eval("nn." + call, {"nn": nn})) == theirs


def test_reprs_that_once_differed_from_pytorchs():
    """The texts PyTorch prints, literally: pools without return_indices, AvgPool1d's
    tuples, LPPool's stride as given, losses by name alone, strings without quotes, the
    norms' bias flag, the LSTM's keyword order, MultiheadAttention's out_proj class."""
    assert repr(nn.MaxPool2d(2)) == ("MaxPool2d(kernel_size=2, stride=2, padding=0, "
                                     "dilation=1, ceil_mode=False)")
    assert repr(nn.AvgPool1d(2)) == "AvgPool1d(kernel_size=(2,), stride=(2,), padding=(0,))"
    assert repr(nn.LPPool2d(2, 3)) == ("LPPool2d(norm_type=2, kernel_size=3, stride=None, "
                                       "ceil_mode=False)")
    assert repr(nn.CrossEntropyLoss(label_smoothing=0.1)) == "CrossEntropyLoss()"
    assert repr(nn.Conv2d(1, 2, 3, padding="same", padding_mode="reflect", bias=False)) == (
        "Conv2d(1, 2, kernel_size=(3, 3), stride=(1, 1), padding=same, bias=False, "
        "padding_mode=reflect)")
    assert repr(nn.BatchNorm1d(2, bias=False)) == (
        "BatchNorm1d(2, eps=1e-05, momentum=0.1, affine=True, bias=False, "
        "track_running_stats=True)")
    assert [n for n, _ in nn.GroupNorm(2, 4, bias=False).named_parameters()] == ["weight"]
    assert repr(nn.LSTM(2, 3, num_layers=2, batch_first=True, proj_size=2)) == (
        "LSTM(2, 3, proj_size=2, num_layers=2, batch_first=True)")
    assert repr(nn.ConstantPad1d(2, 3.5)) == "ConstantPad1d(padding=(2, 2), value=3.5)"
    assert "(out_proj): NonDynamicallyQuantizableLinear(" in repr(nn.MultiheadAttention(4, 2))


def test_a_module_list_prints_runs_of_alike_modules_once():
    """PyTorch's ModuleList repr (nanoGPT's ``h``): ``(0-2): 3 x Linear(...)`` for a run of
    modules that print alike, each other module on its own line; Sequential lists all."""
    blocks = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 2), nn.ReLU(),
                            nn.Linear(2, 2), nn.Sequential(nn.Tanh(), nn.Tanh())])
    want = ("ModuleList(\n"
            "  (0-2): 3 x Linear(in_features=2, out_features=2, bias=True)\n"
            "  (3): ReLU()\n"
            "  (4): Linear(in_features=2, out_features=2, bias=True)\n"
            "  (5): Sequential(\n"
            "    (0): Tanh()\n"
            "    (1): Tanh()\n"
            "  )\n"
            ")")
    assert repr(blocks) == want
    assert repr(nn.ModuleList()) == "ModuleList()"
    torch = pytest.importorskip("torch")
    theirs = torch.nn.ModuleList([torch.nn.Linear(2, 2), torch.nn.Linear(2, 2),
                                  torch.nn.Linear(2, 2), torch.nn.ReLU(), torch.nn.Linear(2, 2),
                                  torch.nn.Sequential(torch.nn.Tanh(), torch.nn.Tanh())])
    assert repr(theirs) == want and repr(torch.nn.ModuleList()) == "ModuleList()"
