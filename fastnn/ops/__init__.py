"""The tensor and its ops: the layer above the backend contract and the tape.

Importing this package binds the operators and methods onto :class:`Tensor`.
"""

from fastnn.ops import activations as _activations
from fastnn.ops import activations_more as _activations_more  # noqa: F401
from fastnn.ops import aliases as _aliases  # noqa: F401  (each op module fills the op table)
from fastnn.ops import arranging as _arranging  # noqa: F401
from fastnn.ops import attention as _attention  # noqa: F401
from fastnn.ops import attention_mha as _attention_mha  # noqa: F401
from fastnn.ops import conv as _conv  # noqa: F401
from fastnn.ops import creation as _creation  # noqa: F401
from fastnn.ops import creation_more as _creation_more  # noqa: F401
from fastnn.ops import ctc as _ctc  # noqa: F401
from fastnn.ops import dense_only as _dense_only  # noqa: F401
from fastnn.ops import dtype_info as _dtype_info  # noqa: F401
from fastnn.ops import einsum as _einsum  # noqa: F401
from fastnn.ops import elementwise_more as _elementwise_more  # noqa: F401
from fastnn.ops import embedding_bag as _embedding_bag  # noqa: F401
from fastnn.ops import extrema as _extrema  # noqa: F401
from fastnn.ops import foreach as _foreach  # noqa: F401
from fastnn.ops import gathering as _gathering  # noqa: F401
from fastnn.ops import indexing as _indexing  # noqa: F401
from fastnn.ops import joining as _joining  # noqa: F401
from fastnn.ops import legacy_tensors as _legacy_tensors  # noqa: F401
from fastnn.ops import linalg_cholesky as _linalg_cholesky  # noqa: F401
from fastnn.ops import linalg_decomp as _linalg_decomp  # noqa: F401
from fastnn.ops import linalg_derived as _linalg_derived  # noqa: F401
from fastnn.ops import linalg_lowrank as _linalg_lowrank  # noqa: F401
from fastnn.ops import linalg_lu as _linalg_lu  # noqa: F401
from fastnn.ops import linalg_matfun as _linalg_matfun  # noqa: F401
from fastnn.ops import linalg_more as _linalg_more  # noqa: F401
from fastnn.ops import linalg_solve as _linalg_solve  # noqa: F401
from fastnn.ops import linear_cross_entropy as _linear_cross_entropy  # noqa: F401
from fastnn.ops import losses as _losses  # noqa: F401
from fastnn.ops import losses_regression as _losses_regression  # noqa: F401
from fastnn.ops import mathops as _mathops  # noqa: F401
from fastnn.ops import normalization as _normalization  # noqa: F401
from fastnn.ops import pooling as _pooling  # noqa: F401
from fastnn.ops import pooling3d as _pooling3d  # noqa: F401
from fastnn.ops import pooling3d_max as _pooling3d_max  # noqa: F401
from fastnn.ops import pooling_fractional as _pooling_fractional  # noqa: F401
from fastnn.ops import pooling_lp as _pooling_lp  # noqa: F401
from fastnn.ops import pooling_max as _pooling_max  # noqa: F401
from fastnn.ops import products as _products  # noqa: F401
from fastnn.ops import random_ops as _random_ops  # noqa: F401
from fastnn.ops import reduction as _reduction  # noqa: F401
from fastnn.ops import scans as _scans  # noqa: F401
from fastnn.ops import scatter_reduce as _scatter_reduce  # noqa: F401
from fastnn.ops import selection as _selection  # noqa: F401
from fastnn.ops import shaping as _shaping  # noqa: F401
from fastnn.ops import shifts as _shifts  # noqa: F401
from fastnn.ops import sorting as _sorting  # noqa: F401
from fastnn.ops import special as _special  # noqa: F401
from fastnn.ops import special_bessel as _special_bessel  # noqa: F401
from fastnn.ops import special_bessel_j as _special_bessel_j  # noqa: F401
from fastnn.ops import special_gamma as _special_gamma  # noqa: F401
from fastnn.ops import special_gammainc as _special_gammainc  # noqa: F401
from fastnn.ops import special_more as _special_more  # noqa: F401
from fastnn.ops import special_poly as _special_poly  # noqa: F401
from fastnn.ops import special_zeta as _special_zeta  # noqa: F401
from fastnn.ops import statistics as _statistics  # noqa: F401
from fastnn.ops import structure as _structure  # noqa: F401
from fastnn.ops import structure_grid as _structure_grid  # noqa: F401
from fastnn.ops import view_scatter as _view_scatter  # noqa: F401
from fastnn.ops import windows as _windows  # noqa: F401

# isort: split
# issue 21's vision, normalisation, distance and loss ops
from fastnn.ops import conv3d as _conv3d  # noqa: F401
from fastnn.ops import conv_transpose as _conv_transpose  # noqa: F401
from fastnn.ops import conv_transpose3d as _conv_transpose3d  # noqa: F401
from fastnn.ops import distance as _distance  # noqa: F401
from fastnn.ops import dropout as _dropout  # noqa: F401
from fastnn.ops import losses_more as _losses_more  # noqa: F401
from fastnn.ops import norms as _norms  # noqa: F401
from fastnn.ops import resample as _resample  # noqa: F401

# isort: split
# PyTorch names composed from the ops above: sampling, integration, integer math
from fastnn.ops import differences as _differences  # noqa: F401
from fastnn.ops import divisors as _divisors  # noqa: F401
from fastnn.ops import grid_sampling as _grid_sampling  # noqa: F401
from fastnn.ops import gumbel as _gumbel  # noqa: F401
from fastnn.ops import integrate as _integrate  # noqa: F401

# isort: split
# last: binds the table's methods and the operators onto Tensor, so every op module first
from fastnn.ops import tensor_facts as _tensor_facts  # noqa: F401
from fastnn.ops import torch_forms as _torch_forms  # noqa: F401
from fastnn.ops import torch_names as _torch_names  # noqa: F401  (names ops of every module)

# isort: split
from fastnn.ops import inplace_more as _inplace_more  # noqa: F401  (reads the names above)
from fastnn.ops import methods as _methods  # noqa: F401
from fastnn.ops import out as _out
from fastnn.ops.tensor import Tensor

_activations.add_table_kinds()  # activation kinds made of other modules' ops (sin, cos)
_out.install()

__all__ = ["Tensor"]
