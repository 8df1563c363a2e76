"""A modern PyTorch training loop (AdamW with parameter groups, OneCycleLR, GradScaler and
autocast switched off on the cpu, label smoothing, clip_grad_norm_ logged with
``.item()``, f-string formatting of a loss tensor, ``F.relu(..., inplace=True)`` in a
residual block, ``random_split`` with a ``torch.Generator``, ``to(device,
non_blocking=True)``, ``torch.save``/``torch.load(map_location=..., weights_only=True)``,
``inference_mode``) runs on fastnn with only its imports changed. Each of those lines
broke before (see the commit that added this test); the script checks its own checkpoint
round trip."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

from tests.test_pytorch_scripts import _fastnn_as_torch

SCRIPT = r'''
import math
import os
import random
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import CosineAnnealingLR, OneCycleLR
from torch.utils.data import DataLoader, TensorDataset, random_split

torch.backends.cudnn.benchmark = True
torch.backends.cuda.matmul.allow_tf32 = True
torch.set_float32_matmul_precision("high")
random.seed(0); np.random.seed(0); torch.manual_seed(0); torch.cuda.manual_seed_all(0)

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
use_amp = device.type == "cuda"


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(c)

    def forward(self, x):
        return F.relu(x + self.bn(self.conv(x)), inplace=True)


class Net(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8),
                                  nn.ReLU(inplace=True))
        self.blocks = nn.Sequential(*[Block(8) for _ in range(2)])
        self.pool = nn.AdaptiveAvgPool2d((1, 1))
        self.head = nn.Linear(8, num_classes)
        self.apply(self._init)

    @staticmethod
    def _init(m):
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
        elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
            nn.init.constant_(m.weight, 1)
            nn.init.constant_(m.bias, 0)
        elif isinstance(m, nn.Linear):
            nn.init.trunc_normal_(m.weight, std=0.02)
            if m.bias is not None:
                nn.init.zeros_(m.bias)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        x = torch.flatten(self.pool(x), 1)
        return self.head(x)


def run(images, labels):
    data = TensorDataset(torch.from_numpy(images), torch.from_numpy(labels))
    train_set, val_set = random_split(data, [0.75, 0.25],
                                      generator=torch.Generator().manual_seed(42))
    train_loader = DataLoader(train_set, batch_size=32, shuffle=True, num_workers=0,
                              pin_memory=True, drop_last=True)
    val_loader = DataLoader(val_set, batch_size=64, shuffle=False)
    model = Net().to(device)
    n_params = sum(p.numel() for p in model.parameters() if p.requires_grad)
    print(f"{n_params:,} parameters on {device}")
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.ndim < 2]
    optimizer = optim.AdamW([{"params": decay, "weight_decay": 0.05},
                             {"params": no_decay, "weight_decay": 0.0}], lr=3e-3, betas=(0.9, 0.95))
    epochs = 2
    scheduler = OneCycleLR(optimizer, max_lr=3e-3, total_steps=epochs * len(train_loader))
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    history = []
    for epoch in range(epochs):
        model.train()
        running, seen = 0.0, 0
        for step, (inputs, targets) in enumerate(train_loader):
            inputs = inputs.to(device, non_blocking=True)
            targets = targets.to(device, non_blocking=True)
            with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=use_amp):
                outputs = model(inputs)
                loss = criterion(outputs, targets)
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            scaler.step(optimizer)
            scaler.update()
            scheduler.step()
            running += loss.item() * inputs.size(0)
            seen += inputs.size(0)
            if step % 5 == 0:
                print(f"epoch {epoch} step {step:3d} loss {loss:.4f} grad {grad_norm.item():.3f} "
                      f"lr {scheduler.get_last_lr()[0]:.2e}")
        val_loss, correct, total = evaluate(model, val_loader, criterion)
        history.append((running / seen, val_loss, correct / total))
        print("epoch {}: train {:.4f} val {:.4f} acc {:.2%}".format(epoch, *history[-1]))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "ckpt.pt")
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict(), "epoch": epochs}, path)
        ckpt = torch.load(path, map_location=device, weights_only=True)
        fresh = Net().to(device)
        fresh.load_state_dict(ckpt["model"])
        optimizer2 = optim.AdamW(fresh.parameters(), lr=1e-3)
        fresh.eval()
        with torch.inference_mode():
            a = model.eval()(torch.from_numpy(images[:8]).to(device))
            b = fresh(torch.from_numpy(images[:8]).to(device))
        assert torch.allclose(a, b), (a - b).abs().max()
    probs = F.softmax(a, dim=-1).detach().cpu().numpy()
    top = torch.topk(a, k=3, dim=1).indices.tolist()
    return history, probs, top


@torch.no_grad()
def evaluate(model, loader, criterion):
    model.eval()
    total_loss, correct, total = 0.0, 0, 0
    for inputs, targets in loader:
        outputs = model(inputs.to(device))
        total_loss += criterion(outputs, targets.to(device)).item() * targets.size(0)
        correct += (outputs.argmax(dim=1) == targets.to(device)).sum().item()
        total += targets.numel()
    return total_loss / total, correct, total
'''


def test_a_modern_pytorch_training_loop_runs_unchanged(monkeypatch, capsys):
    sklearn = pytest.importorskip("sklearn.datasets")
    digits = sklearn.load_digits()
    images = (digits.images[:192] / 16.0).astype(np.float32)[:, None]
    labels = digits.target[:192].astype(np.int64)
    _fastnn_as_torch(monkeypatch)
    import fastnn.optim.lr_scheduler

    monkeypatch.setitem(sys.modules, "torch.optim.lr_scheduler", fastnn.optim.lr_scheduler)
    namespace = {}
    exec(compile(SCRIPT, "<pytorch script>", "exec"), namespace)
    history, probs, top = namespace["run"](images, labels)
    assert len(history) == 2
    assert all(math.isfinite(v) for row in history for v in row)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)
    assert np.array(top).shape == (8, 3)
    printed = capsys.readouterr().out
    assert "parameters on cpu" in printed and "grad " in printed and "lr " in printed
