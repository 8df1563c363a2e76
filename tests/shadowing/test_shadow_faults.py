"""Shadow mode names the planted fault, its op and the user's source line, and nothing else."""

from __future__ import annotations

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from fastnn import nn
from tests.fake_backends import forget
from tests.shadowing import faulty
from tests.source_lines import line_in

HERE = __file__.rstrip("c")


def line_of(marker: str) -> int:
    """The line of this file that ends with ``# marker``."""
    return line_in(HERE, marker)


@pytest.fixture(autouse=True)
def _clean():
    yield
    forget()


class Deep(nn.Module):
    """Conv2d, BatchNorm, attention and an LSTM: over a thousand hook calls a step."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.attn = nn.MultiheadAttention(8, 2, batch_first=True)
        # NOTE: proj_size keeps the LSTM on its step-by-step tape (a few hooks per step);
        # without it each layer is one fused lstm_layer call
        self.lstm = nn.LSTM(8, 8, batch_first=True, proj_size=4)
        self.head = nn.Linear(4, 3)

    def forward(self, x):
        h = self.bn(self.conv(x)).relu()  # (N, 4, 4, 8)
        seq = h.reshape(x.shape[0], 16, 8)
        seq = seq + self.attn(seq, seq, seq)[0]
        out, _ = self.lstm(seq)  # lstm line
        return self.head(out[:, -1])


def _deep_step(model, opt, x, y):
    loss = F.cross_entropy(model(x), y)  # forward line
    opt.zero_grad()
    loss.backward()  # backward line
    opt.step()  # step line
    return loss


def _deep_setup(device):
    fnn.manual_seed(0)
    rng = np.random.default_rng(0)
    with fnn.use(device):
        model = Deep()
        opt = fnn.optim.Adam(model.parameters(), lr=1e-2)
        x = fnn.tensor(rng.normal(size=(4, 1, 4, 8)).astype(np.float32))
        y = fnn.tensor(rng.integers(0, 3, 4))
    return model, opt, x, y


def test_a_wrong_op_once_deep_in_a_long_step_is_named_with_its_line(tmp_path):
    name = faulty.install(tmp_path, "tanh_once")
    model, opt, x, y = _deep_setup(name)
    with fnn.shadow("cpu", mode="record") as healthy_step:
        _deep_step(model, opt, x, y)  # one clean step, counted
    report = healthy_step.report()
    calls = sum(row["calls"] for row in report.rows)
    tanh_calls = sum(row["calls"] for row in report.rows if row["op"] == "tanh")
    assert calls > 1000 and report.mismatches == 0, report
    # the fault strikes once, on a tanh call in the middle of the next step's forward
    faulty.module(name).FAULT_AT = faulty.module(name).calls[0] + tanh_calls // 2
    with pytest.raises(fnn.ShadowMismatch) as caught, fnn.shadow("cpu"):
        _deep_step(model, opt, x, y)
    err = caught.value
    assert err.op == "tanh" and err.backend == name and err.reference == "cpu"
    assert err.source[0] == HERE and err.source[1] == line_of("lstm line")
    assert err.step == 0 and 0 < err.op_in_step < calls and err.backward_of is None
    assert err.kind == "value" and err.max_rel == pytest.approx(0.01, rel=1e-4)
    assert err.producers and all(p is not None for p in err.producers)
    text = str(err)
    for part in ("tanh", name, "cpu", f"{HERE}:{line_of('lstm line')}", "worst value at",
                 "max abs err", "max rel err", "float32", "from call"):
        assert part in text, (part, text)


def test_isolation_blames_the_one_bad_call_not_what_follows(tmp_path):
    name = faulty.install(tmp_path, "tanh_once")
    model, opt, x, y = _deep_setup(name)
    faulty.module(name).FAULT_AT = faulty.module(name).calls[0] + 5
    with fnn.shadow("cpu", mode="record") as session:
        for _ in range(2):
            _deep_step(model, opt, x, y)
    bad = [row for row in session.report().rows if row["mismatches"]]
    assert [(row["op"], row["mismatches"]) for row in bad] == [("tanh", 1)], session.report()


@pytest.mark.parametrize("fault, node", [("conv2d_grad_weight", "conv2d"),
                                         ("linear_grad_weight", "linear")])
def test_a_wrong_gradient_kernel_is_named_at_the_backward_line(tmp_path, fault, node):
    name = faulty.install(tmp_path, fault)
    model, opt, x, y = _deep_setup(name)
    with pytest.raises(fnn.ShadowMismatch) as caught, fnn.shadow("cpu"):
        _deep_step(model, opt, x, y)
    err = caught.value
    assert err.op == fault and err.backward_of == node
    assert err.source[:2] == (HERE, line_of("backward line"))
    assert f"in the backward of '{node}'" in str(err)
    if fault == "linear_grad_weight":  # (it drops all but one position of a 3-d input)
        # the first one backward meets: out_proj's, on (L, N, E) as PyTorch's attention runs
        assert err.input_shapes == [(16, 4, 8), (16, 4, 8)] and err.shape == (8, 8)


@pytest.mark.parametrize("reentrant", [True, False])
def test_a_gradient_kernel_after_a_nested_pass_names_the_outer_node(tmp_path, reentrant):
    # a reentrant checkpoint runs a backward pass inside its rule; once it is done, the
    # outer pass's calls are blamed on the outer pass's node again (conv2d, run after the
    # checkpoint's rule in backward order), not on the inner pass's last node
    from fastnn.utils.checkpoint import checkpoint

    name = faulty.install(tmp_path, "conv2d_grad_weight")
    fnn.manual_seed(0)
    with fnn.use(name):
        conv, head = nn.Conv2d(1, 2, 3, padding=1), nn.Linear(2 * 4 * 4, 3)
        x = fnn.tensor(np.random.default_rng(0).normal(size=(2, 1, 4, 4)).astype(np.float32))
    with pytest.raises(fnn.ShadowMismatch) as caught, fnn.shadow("cpu"):
        h = conv(x)
        out = checkpoint(lambda t: head(t.tanh().reshape(2, -1)), h, use_reentrant=reentrant)
        out.sum().backward()
    assert caught.value.op == "conv2d_grad_weight" and caught.value.backward_of == "conv2d"


def test_a_wrong_fused_optimizer_update_is_named_at_the_step_line(tmp_path):
    name = faulty.install(tmp_path, "adam_step")
    model, opt, x, y = _deep_setup(name)
    before = [p.numpy().copy() for p in model.parameters()]
    with pytest.raises(fnn.ShadowMismatch) as caught, fnn.shadow("cpu"):
        _deep_step(model, opt, x, y)
    err = caught.value
    assert err.op == "adam_step" and err.source[:2] == (HERE, line_of("step line"))
    # in place: the reference ran on the values before the update, so the error is the
    # fault's (bias correction of step 2 instead of 1), not the whole update
    assert err.output.startswith("[0]") and err.max_abs < 0.1
    assert any(not np.array_equal(b, p.numpy()) for b, p in zip(before, model.parameters()))


def test_an_op_right_only_for_contiguous_inputs(tmp_path):
    name = faulty.install(tmp_path, "exp_contiguous")
    x = fnn.tensor(np.arange(12.0).reshape(3, 4) / 10, device=name)
    with fnn.shadow("cpu"):
        x.exp()  # contiguous: right
        with pytest.raises(fnn.ShadowMismatch) as caught:
            x.T.exp()  # transposed line
    err = caught.value
    assert err.op == "exp" and err.source[1] == line_of("transposed line")
    assert err.input_shapes == [(4, 3)] and err.shape == (4, 3)
    want = np.exp(np.arange(12.0).reshape(3, 4).T / 10)
    assert err.expected == pytest.approx(want[err.worst])


def test_a_nan_for_some_shapes_only(tmp_path):
    name = faulty.install(tmp_path, "sqrt_nan")
    with fnn.shadow("cpu"):
        fnn.tensor(np.ones((3, 5)), device=name).sqrt()
        with pytest.raises(fnn.ShadowMismatch) as caught:
            fnn.tensor(np.ones((3, 7)), device=name).sqrt()  # nan line
    err = caught.value
    assert err.op == "sqrt" and err.kind == "NaN/Inf placement" and err.worst == (0, 6)
    assert np.isnan(err.got) and err.expected == 1.0
    assert err.source[1] == line_of("nan line") and err.bad == 3


def test_the_healthy_clone_passes_the_deep_step(tmp_path):
    name = faulty.install(tmp_path, "healthy")
    model, opt, x, y = _deep_setup(name)
    with fnn.shadow("cpu"):
        for _ in range(2):
            _deep_step(model, opt, x, y)
    assert fnn.shadow_report().mismatches == 0


def test_line_at_agrees_with_f_lineno():
    """blame.walk keeps the user's frame's f_lasti; line_at makes it the line f_lineno
    gave, wherever in the code the frame stood (and a call spread over lines)."""
    import sys

    from fastnn.api.frames import line_at

    seen = []

    def here():
        frame = sys._getframe(1)
        seen.append((frame.f_code, frame.f_lasti, frame.f_lineno))

    here()
    for _ in range(2):
        here()
    value = [1,
             here()]
    assert value and len(seen) == 4
    assert [line_at(code, offset) for code, offset, _ in seen] == [s[2] for s in seen]
