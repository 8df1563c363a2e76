"""``import torch.onnx`` works with fastnn standing in (PyTorch's word_language_model
example imports it at the top); exporting says it is not available and what to do."""

import pytest

import fastnn as fnn


def test_onnx_names():
    import fastnn.onnx

    assert fnn.onnx is fastnn.onnx and fnn.onnx.is_in_onnx_export() is False
    with pytest.raises(NotImplementedError, match="does not export ONNX.*state_dict"):
        fnn.onnx.export(fnn.nn.Linear(2, 2), (fnn.ones(1, 2),), "model.onnx")
