"""The NumPy floors of ``benchmarks/bench_models.py``: each model's training step written
as bare NumPy calls (forward, backward, SGD), from the same weights (a PyTorch state dict
as NumPy arrays) and batch. ``FLOORS[name](params, x, y, lr)`` returns the step."""

from floors.conv import cnn_step, conv1d_step, resnet_step
from floors.dense import mlp_step
from floors.recurrent import gru_step, lstm_step
from floors.transformer import gpt_step, transformer_step

FLOORS = {"MLP": mlp_step, "Conv1d": conv1d_step, "CNN": cnn_step, "ResNet": resnet_step,
          "LSTM": lstm_step, "GRU": gru_step, "Transformer": transformer_step,
          "nanoGPT": gpt_step}
