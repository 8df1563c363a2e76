"""Layers as reversible modules (``fastnn.nn``).

Every layer runs forward on the tape (``layer(x)``) and also offers
``layer.reverse(x, grad_out) -> (grad_x, self_grads)`` and
``layer.apply(optimizer, self_grads)``; see :mod:`fastnn.nn.module`.
"""

import sys

from fastnn import functional
from fastnn.nn import attention, grad, init, utils
from fastnn.nn.activation import Activation, Dropout, Softmax, Swish
from fastnn.nn.activation_classes import (
    ELU,
    GELU,
    GLU,
    SELU,
    Hardtanh,
    Identity,
    LeakyReLU,
    LogSoftmax,
    Mish,
    ReLU,
    Sigmoid,
    SiLU,
    Softplus,
    Tanh,
)
from fastnn.nn.activation_more import (
    CELU,
    Hardshrink,
    Hardsigmoid,
    Hardswish,
    LogSigmoid,
    PReLU,
    ReLU6,
    RReLU,
    Softmin,
    Softshrink,
    Softsign,
    Tanhshrink,
    Threshold,
)
from fastnn.nn.adaptive import AdaptiveLogSoftmaxWithLoss
from fastnn.nn.batchnorm import BatchNorm1d, BatchNorm2d
from fastnn.nn.container import Residual, Sequential
from fastnn.nn.conv import Conv1d
from fastnn.nn.conv2d import Conv2d
from fastnn.nn.data_parallel import DataParallel
from fastnn.nn.embedding import Bilinear, Embedding, EmbeddingBag
from fastnn.nn.flatten import Flatten, GlobalAvgPool1d
from fastnn.nn.gated import DyT, GatedLinear
from fastnn.nn.linear import Bias1d, Dense, Diag, Linear, ScalarScale
from fastnn.nn.lists import ModuleDict, ModuleList
from fastnn.nn.loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    NLLLoss2d,
    SmoothL1Loss,
)
from fastnn.nn.module import PARAM_CLASSES, Buffer, Module, Parameter
from fastnn.nn.multihead_attention import MultiheadAttention
from fastnn.nn.norm import LayerNorm, RMSDiv, RMSNorm
from fastnn.nn.param_lists import ParameterDict, ParameterList
from fastnn.nn.pooling import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveAvgPool3d,
    AdaptiveMaxPool1d,
    AdaptiveMaxPool2d,
    AdaptiveMaxPool3d,
    AvgPool1d,
    AvgPool2d,
    AvgPool3d,
    LPPool1d,
    LPPool2d,
    LPPool3d,
    MaxPool1d,
    MaxPool2d,
    MaxPool3d,
    MaxUnpool1d,
    MaxUnpool2d,
    MaxUnpool3d,
)
from fastnn.nn.pooling_fractional import FractionalMaxPool2d, FractionalMaxPool3d
from fastnn.nn.recurrent import GRU, LSTM, RNN, RNNBase
from fastnn.nn.recurrent_cells import GRUCell, LSTMCell, RNNCell, RNNCellBase
from fastnn.nn.transformer import TransformerEncoder, TransformerEncoderLayer
from fastnn.nn.transformer_decoder import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
)

# isort: split
# issue 21's vision, normalisation, distance and loss layers
from fastnn.nn.batchnorm import BatchNorm3d
from fastnn.nn.conv3d import Conv3d
from fastnn.nn.conv_transpose import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from fastnn.nn.distance import CosineSimilarity, PairwiseDistance
from fastnn.nn.dropout import (
    AlphaDropout,
    Dropout1d,
    Dropout2d,
    Dropout3d,
    FeatureAlphaDropout,
)
from fastnn.nn.lazy import (
    LazyBatchNorm1d,
    LazyBatchNorm2d,
    LazyBatchNorm3d,
    LazyConv1d,
    LazyConv2d,
    LazyConv3d,
    LazyConvTranspose1d,
    LazyConvTranspose2d,
    LazyConvTranspose3d,
    LazyInstanceNorm1d,
    LazyInstanceNorm2d,
    LazyInstanceNorm3d,
    LazyLinear,
)
from fastnn.nn.loss_linear import LinearCrossEntropyLoss, LinearCrossEntropyOptions
from fastnn.nn.loss_more import (
    CosineEmbeddingLoss,
    CTCLoss,
    GaussianNLLLoss,
    HingeEmbeddingLoss,
    MarginRankingLoss,
    MultiLabelMarginLoss,
    MultiLabelSoftMarginLoss,
    MultiMarginLoss,
    PoissonNLLLoss,
    SoftMarginLoss,
    TripletMarginLoss,
    TripletMarginWithDistanceLoss,
)
from fastnn.nn.norm_groups import (
    GroupNorm,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    LocalResponseNorm,
)
from fastnn.nn.padding import (
    CircularPad1d,
    CircularPad2d,
    CircularPad3d,
    ConstantPad1d,
    ConstantPad2d,
    ConstantPad3d,
    ReflectionPad1d,
    ReflectionPad2d,
    ReflectionPad3d,
    ReplicationPad1d,
    ReplicationPad2d,
    ReplicationPad3d,
    ZeroPad1d,
    ZeroPad2d,
    ZeroPad3d,
)
from fastnn.nn.softmax_layers import Softmax2d
from fastnn.nn.sync_batchnorm import SyncBatchNorm
from fastnn.nn.uninitialized import UninitializedBuffer, UninitializedParameter
from fastnn.nn.upsample import (
    ChannelShuffle,
    Fold,
    PixelShuffle,
    PixelUnshuffle,
    Unflatten,
    Unfold,
    Upsample,
    UpsamplingBilinear2d,
    UpsamplingNearest2d,
)

# PyTorch's path to the functional ops: fastnn.nn.functional is fastnn.functional itself,
# so `import fastnn.nn.functional as F` finds it here
sys.modules[__name__ + ".functional"] = functional

__all__ = [
    "Activation", "Bias1d", "Conv1d", "Dense", "Diag", "Dropout", "Flatten", "GlobalAvgPool1d",
    "LayerNorm", "Linear", "Buffer",
    "Module", "PARAM_CLASSES", "Parameter", "RMSDiv", "RMSNorm", "Residual", "ScalarScale",
    "Sequential", "Softmax", "Swish",
    # sequence, attention, gated and activation layers, containers and losses
    "BCELoss", "BCEWithLogitsLoss", "CrossEntropyLoss", "DyT", "ELU", "Embedding", "GELU", "GLU",
    "GRU", "GatedLinear", "Hardtanh", "HuberLoss", "Identity", "KLDivLoss", "L1Loss", "LSTM",
    "LeakyReLU", "LogSoftmax", "MSELoss", "Mish", "ModuleDict", "ModuleList",
    "ParameterDict", "ParameterList", "MultiheadAttention", "NLLLoss", "NLLLoss2d", "ReLU",
    "SELU", "SiLU",
    "Sigmoid", "SmoothL1Loss",
    "Softplus", "Tanh", "TransformerEncoder", "TransformerEncoderLayer",
    "GRUCell", "LSTMCell", "RNN", "RNNBase", "RNNCell", "RNNCellBase", "Transformer",
    "TransformerDecoder",
    "TransformerDecoderLayer", "Bilinear", "EmbeddingBag",
    # vision layers
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AvgPool1d", "AvgPool2d", "BatchNorm1d",
    "BatchNorm2d", "Conv2d", "MaxPool1d", "MaxPool2d",
    # issue 21's vision, normalisation, distance and loss layers
    "AlphaDropout", "BatchNorm3d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "Dropout1d",
    "Dropout2d", "Dropout3d", "FeatureAlphaDropout", "GroupNorm", "InstanceNorm1d",
    "InstanceNorm2d", "InstanceNorm3d", "CosineSimilarity", "PairwiseDistance", "PixelShuffle",
    "PixelUnshuffle", "Softmax2d", "Unflatten", "Upsample", "UpsamplingBilinear2d",
    "UpsamplingNearest2d", "CosineEmbeddingLoss", "GaussianNLLLoss", "HingeEmbeddingLoss",
    "MarginRankingLoss", "MultiLabelMarginLoss", "MultiLabelSoftMarginLoss", "PoissonNLLLoss",
    "SoftMarginLoss", "TripletMarginLoss", "Fold", "Unfold", "CircularPad1d", "CircularPad2d",
    "CircularPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ReflectionPad1d",
    "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
    "ReplicationPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "MultiMarginLoss",
    "TripletMarginWithDistanceLoss", "ChannelShuffle", "LocalResponseNorm", "CTCLoss",
    # PyTorch's module layout
    "attention", "functional", "grad", "init", "utils",
]
__all__ += ["AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "LPPool1d", "LPPool2d", "LPPool3d",
            "MaxUnpool1d", "MaxUnpool2d"]
__all__ += ["AdaptiveAvgPool3d", "AvgPool3d", "MaxPool3d"]
__all__ += ["CELU", "Hardshrink", "Hardsigmoid", "Hardswish", "LogSigmoid", "PReLU", "RReLU",
            "ReLU6", "Softmin", "Softshrink", "Softsign", "Tanhshrink", "Threshold"]
__all__ += ["LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyConv1d", "LazyConv2d",
            "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d",
            "LazyInstanceNorm1d",
            "LazyInstanceNorm2d", "LazyInstanceNorm3d", "LazyLinear", "UninitializedBuffer",
            "UninitializedParameter"]
__all__ += ["ConvTranspose3d", "LinearCrossEntropyLoss", "LinearCrossEntropyOptions"]
__all__ += ["AdaptiveMaxPool3d", "MaxUnpool3d"]
__all__ += ["SyncBatchNorm", "DataParallel"]
__all__ += ["FractionalMaxPool2d", "FractionalMaxPool3d"]
__all__ += ["AdaptiveLogSoftmaxWithLoss"]

# torch.nn.modules' layout (needs the names above: loaded last)
from fastnn.nn import modules  # noqa: E402, F401
