"""``torch.onnx``'s names, so that scripts importing it run: fastnn does not export ONNX
graphs (``export`` raises, saying so); ``is_in_onnx_export()`` is always False."""

from __future__ import annotations

__all__ = ["export", "is_in_onnx_export"]


def export(model, args=(), f=None, *unused, **kwargs):
    """Not available: fastnn has no ONNX exporter. Save the weights with
    ``fnn.save(model.state_dict(), path)`` (safetensors), which PyTorch can load into the
    same architecture and export from."""
    raise NotImplementedError("fastnn.onnx.export: fastnn does not export ONNX graphs; save "
                              "the weights with fnn.save(model.state_dict(), path) "
                              "(safetensors), load them into the PyTorch model and export "
                              "from there")


def is_in_onnx_export() -> bool:
    """False: fastnn never traces for ONNX."""
    return False
