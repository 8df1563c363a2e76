"""``torch.nn.modules``' layout, for code that imports layers and their bases from it:
``from fastnn.nn.modules.loss import _Loss``, ``from fastnn.nn.modules.utils import
_pair``, ``from fastnn.nn.modules.batchnorm import _BatchNorm``.

Each of PyTorch's submodules (``conv``, ``loss``, ``batchnorm``, ...) is here one
namespace holding every layer of :mod:`fastnn.nn` and the bases that custom layers
subclass (``_Loss``, ``_WeightedLoss``, ``_BatchNorm``, ``_NormBase``, ``_InstanceNorm``,
``LazyModuleMixin``, ``RNNBase``, ``RNNCellBase``, the pooling and padding families'
``_MaxPoolNd``, ``_ReflectionPadNd``, ...), so a name found where PyTorch has it
is found here; ``utils`` is :mod:`fastnn.nn.modules.utils` itself.
"""

import sys
import types

from fastnn import nn as _nn
from fastnn.nn.bases import _ConvNd, _DropoutNd
from fastnn.nn.batchnorm import RunningStats as _NormBase
from fastnn.nn.batchnorm import _BatchNorm
from fastnn.nn.conv_transpose import _ConvTranspose
from fastnn.nn.lazy import LazyModuleMixin
from fastnn.nn.loss import _Loss, _WeightedLoss
from fastnn.nn.module_state import IncompatibleKeys
from fastnn.nn.modules import utils
from fastnn.nn.multihead_attention import NonDynamicallyQuantizableLinear
from fastnn.nn.norm_groups import _InstanceNorm
from fastnn.nn.padding import _CircularPadNd, _ConstantPadNd, _ReflectionPadNd, _ReplicationPadNd
from fastnn.nn.pooling import (
    _AdaptiveAvgPoolNd,
    _AdaptiveMaxPoolNd,
    _AvgPoolNd,
    _LPPoolNd,
    _MaxPoolNd,
    _MaxUnpoolNd,
)

# PyTorch's submodules of torch.nn.modules (utils is a module of its own, above)
SUBMODULES = ("activation", "adaptive", "batchnorm", "channelshuffle", "container", "conv",
              "distance", "dropout", "flatten", "fold", "instancenorm", "lazy", "linear",
              "loss", "module", "normalization", "padding", "pixelshuffle", "pooling", "rnn",
              "sparse", "transformer", "upsampling")

_NAMES = {name: getattr(_nn, name) for name in _nn.__all__
          if isinstance(getattr(_nn, name), type)}
_NAMES.update(_Loss=_Loss, _WeightedLoss=_WeightedLoss, _BatchNorm=_BatchNorm,
              _NormBase=_NormBase, _InstanceNorm=_InstanceNorm, LazyModuleMixin=LazyModuleMixin,
              # MultiheadAttention's out_proj, which the word language model example lists
              NonDynamicallyQuantizableLinear=NonDynamicallyQuantizableLinear,
              # the bases that PyTorch code tests layers against (fastnn.nn.bases)
              _ConvNd=_ConvNd, _ConvTransposeNd=_ConvTranspose, _DropoutNd=_DropoutNd,
              _MaxPoolNd=_MaxPoolNd, _AvgPoolNd=_AvgPoolNd, _AdaptiveAvgPoolNd=_AdaptiveAvgPoolNd,
              _AdaptiveMaxPoolNd=_AdaptiveMaxPoolNd, _MaxUnpoolNd=_MaxUnpoolNd,
              _LPPoolNd=_LPPoolNd, _ConstantPadNd=_ConstantPadNd,
              _ReflectionPadNd=_ReflectionPadNd, _ReplicationPadNd=_ReplicationPadNd,
              _CircularPadNd=_CircularPadNd)
globals().update(_NAMES)

# the helpers PyTorch's submodules hold beside the layers, that scripts import from there
_HELPERS = {
    "module": {"_addindent": utils._addindent, "_IncompatibleKeys": IncompatibleKeys},
    "container": {"_addindent": utils._addindent},
    "transformer": {"_get_clones": utils._get_clones,
                    "_get_activation_fn": utils._get_activation_fn,
                    "_generate_square_subsequent_mask":
                        _nn.Transformer.generate_square_subsequent_mask},
}

for _name in SUBMODULES:
    _module = types.ModuleType(f"{__name__}.{_name}", f"torch.nn.modules.{_name}'s names "
                               f"(every layer of fastnn.nn and the bases; see "
                               f"fastnn.nn.modules)")
    _module.__dict__.update(_NAMES)
    _module.__dict__.update(_HELPERS.get(_name, {}))
    sys.modules[_module.__name__] = _module
    globals()[_name] = _module

__all__ = sorted(_NAMES) + ["utils", *SUBMODULES]
