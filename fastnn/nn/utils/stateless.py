"""PyTorch's ``torch.nn.utils.stateless``: its ``functional_call``, deprecated there in
favour of ``torch.func.functional_call`` (:func:`fastnn.func.functional_call`), which it
runs, with PyTorch's FutureWarning."""

from __future__ import annotations

import warnings

__all__ = ["functional_call"]


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """:func:`fastnn.func.functional_call` under its old name."""
    # NOTE: imported here: fastnn.func imports fastnn.nn, whose package imports this module
    from fastnn.func.reparametrize import functional_call as call

    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch "
                  "2.0 and will be removed in a future version of PyTorch. Please use "
                  "`torch.func.functional_call` instead which is a drop-in replacement.",
                  FutureWarning, stacklevel=2)
    return call(module, parameters_and_buffers, args, kwargs,
                tie_weights=tie_weights, strict=strict)
