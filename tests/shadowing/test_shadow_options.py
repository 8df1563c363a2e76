"""fnn.shadow's options, its report, the environment variable, and what it leaves behind."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn
from fastnn.api import hookspec
from fastnn.api.device import as_device
from fastnn.shadowing import calls
from tests.fake_backends import forget
from tests.shadowing import faulty

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _clean():
    yield
    forget()


def test_sample_checks_every_nth_call_of_each_hook(tmp_path):
    name = faulty.install(tmp_path, "healthy")
    x = fnn.tensor(np.ones((2, 3)), device=name)
    with fnn.shadow("cpu", sample=3) as session:
        for _ in range(7):
            x.exp()
    (row,) = [r for r in session.report().rows if r["op"] == "exp"]
    assert (row["calls"], row["checked"]) == (7, 3)  # calls 0, 3 and 6


def test_ops_limits_the_check_to_those_hooks(tmp_path):
    name = faulty.install(tmp_path, "sqrt_nan")
    x = fnn.tensor(np.ones((3, 7)), device=name)
    with fnn.shadow("cpu", ops=["exp"]) as session:
        x.sqrt()  # the fault, not checked
        x.exp()
    rows = {r["op"]: r for r in session.report().rows}
    assert rows["exp"]["checked"] == 1 and rows["sqrt"]["checked"] == 0
    assert rows["sqrt"]["calls"] == 1


def test_warn_mode_warns_once_per_op_and_counts_all(tmp_path):
    name = faulty.install(tmp_path, "sqrt_nan")
    x = fnn.tensor(np.ones((3, 7)), device=name)
    with warnings.catch_warnings(record=True) as caught, fnn.shadow("cpu", mode="warn"):
        warnings.simplefilter("always")
        y = x.sqrt()
        x.sqrt()
    shadow_warnings = [w for w in caught if issubclass(w.category, fnn.ShadowWarning)]
    assert len(shadow_warnings) == 1 and "sqrt" in str(shadow_warnings[0].message)
    assert np.isnan(y.numpy()[0, -1])  # the backend's own result goes on
    report = fnn.shadow_report()
    (row,) = [r for r in report.rows if r["op"] == "sqrt"]
    assert row["mismatches"] == 2 and report.mismatches == 2


def test_report_as_table_and_json(tmp_path):
    name = faulty.install(tmp_path, "healthy")
    x = fnn.tensor(np.linspace(0.1, 1, 6, dtype=np.float32), device=name)
    with fnn.shadow("cpu"):
        (x.exp() * x).sum()
    report = fnn.shadow_report()
    table = str(report)
    assert "exp" in table and "float32" in table and "0 mismatches" in table
    data = json.loads(report.json())
    rows = {(r["op"], r["dtype"]): r for r in data["ops"]}
    exp = rows[("exp", "float32")]
    # the suite's transcendental tolerance for float32, doubled as in its cross check
    assert (exp["rtol"], exp["atol"]) == (2e-5, 2e-6)
    assert rows[("mul", "float32")]["rtol"] == 0.0 and data["mismatches"] == 0


def test_bad_arguments_say_what_is_allowed():
    with pytest.raises(ValueError, match="mode must be one of raise, warn, record"):
        fnn.shadow("cpu", mode="loud")
    with pytest.raises(ValueError, match="sample must be an int >= 1"):
        fnn.shadow("cpu", sample=0)
    with pytest.raises(ValueError, match=r"unknown hooks \['expp'\]"):
        fnn.shadow("cpu", ops=["expp"])
    with fnn.shadow("cpu"), pytest.raises(RuntimeError, match="one shadow at a time"):
        fnn.shadow("cpu").start()


def test_the_hook_table_is_restored_and_composites_stay(tmp_path):
    name = faulty.install(tmp_path, "healthy")
    ops = as_device(name).ops
    before = {hook: getattr(ops, hook) for hook in hookspec.HOOKS}
    with fnn.shadow("cpu"):
        assert ops.exp is not before["exp"]
        # an op the backend lacks stays the core's composite: its primitives are shadowed
        lacking = [h for h in hookspec.OPS if h not in as_device(name).backend.implemented]
        assert all(getattr(ops, h) is before[h] for h in lacking)
    assert {hook: getattr(ops, hook) for hook in hookspec.HOOKS} == before


def test_a_backend_loaded_inside_the_block_is_shadowed(tmp_path):
    with fnn.shadow("cpu"):
        name = faulty.install(tmp_path, "exp_contiguous")
        x = fnn.tensor(np.arange(6.0).reshape(2, 3), device=name)
        with pytest.raises(fnn.ShadowMismatch, match="exp on shadow_exp_contiguous"):
            x.T.exp()


def test_tape_built_before_the_block_is_shadowed_in_backward(tmp_path):
    name = faulty.install(tmp_path, "conv2d_grad_weight")
    conv = nn.Conv2d(1, 2, 3).to(name)
    loss = conv(fnn.tensor(np.ones((1, 1, 5, 5), np.float32), device=name)).sum()
    with fnn.shadow("cpu"), pytest.raises(fnn.ShadowMismatch, match="conv2d_grad_weight"):
        loss.backward()


def test_data_parallel_step_in_one_process_is_shadowed(tmp_path, monkeypatch):
    from fastnn import distributed as dist
    from fastnn.distributed import comm as comm_module

    monkeypatch.setattr(comm_module, "_WORLD", None)
    name = faulty.install(tmp_path, "adam_step")
    comm = dist.init()
    fnn.manual_seed(0)
    model = nn.Linear(3, 2).to(name)
    opt = dist.DistributedOptimizer(fnn.optim.Adam(model.parameters(), lr=0.1), comm)
    model(fnn.tensor(np.ones((4, 3), np.float32), device=name)).sum().backward()
    with fnn.shadow("cpu", mode="record") as session:
        opt.step()
    rows = {r["op"]: r for r in session.report().rows}
    assert rows["allreduce"]["checked"] >= 1 and rows["allreduce"]["mismatches"] == 0
    assert rows["adam_step"]["mismatches"] == 1


def test_fastnn_shadow_environment_variable(tmp_path):
    faulty.install(tmp_path, "sqrt_nan")
    env = dict(os.environ, FASTNN_SHADOW="cpu",
               PYTHONPATH=os.pathsep.join([str(tmp_path / "shadow_sqrt_nan"), str(ROOT),
                                           os.environ.get("PYTHONPATH", "")]))
    script = ("import numpy as np, fastnn as fnn\n"
              "x = fnn.tensor(np.ones((2, 5)), device='shadow_sqrt_nan')\n"
              "x.sqrt()\n"
              "x = fnn.tensor(np.ones((2, 7)), device='shadow_sqrt_nan')\n"
              "x.sqrt()  # the line\n")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 1
    assert "ShadowMismatch: shadow: sqrt on shadow_sqrt_nan disagrees with cpu" in done.stderr
    assert '<string>:5' in done.stderr and "shadow report (reference cpu" in done.stderr


def test_a_call_the_reference_cannot_run_is_counted_not_blamed(tmp_path, monkeypatch):
    name = faulty.install(tmp_path, "healthy")
    x = fnn.tensor(np.ones((2, 3)), device=name)
    cpu = as_device("cpu").ops

    def refuse(x):
        raise TypeError("no exp here")

    monkeypatch.setattr(cpu, "exp", refuse)
    with pytest.warns(fnn.ShadowWarning, match="cannot run exp.*TypeError: no exp here"), \
            fnn.shadow("cpu") as session:
        y = x.exp()
        x.exp()
    np.testing.assert_allclose(y.numpy(), np.e)
    (row,) = [r for r in session.report().rows if r["op"] == "exp"]
    assert (row["calls"], row["checked"], row["mismatches"]) == (2, 0, 0)


def test_devices_see_a_new_table_identity_while_shadowed(tmp_path):
    """A captured step's replay resolves hooks once per table identity: inside the block
    the devices hold another table (of the same, shadowed, hooks), after it the old one."""
    name = faulty.install(tmp_path, "exp_contiguous")
    dev = as_device(name)
    before = dev.ops
    resolved = {id(before): before.exp}  # what a replay compiled before the block holds
    with fnn.shadow("cpu"):
        assert id(dev.ops) not in resolved and dev.ops.exp is before.exp
        x = fnn.tensor(np.arange(6.0).reshape(2, 3), device=name)
        with pytest.raises(fnn.ShadowMismatch, match="exp on shadow_exp_contiguous"):
            dev.ops.exp(x.T._data)
    assert dev.ops is before and before.exp is resolved[id(before)]


@pytest.mark.slow
def test_data_parallel_steps_on_two_ranks_are_shadowed(tmp_path):
    """Every rank shadows the same calls in the same order, so the reference's collective
    (the core's composite, over MPI) meets its peers."""
    from tests.distributed.mpi_run import launch

    try:
        fnn.Device("opencl")
    except fnn.BackendError as exc:
        pytest.skip(f"opencl unavailable: {exc}")
    launch(2, "-m", "tests.shadowing.mpi_shadow", "opencl", str(tmp_path))
    for rank in (0, 1):
        report = json.loads((tmp_path / f"report-{rank}.json").read_text())
        rows = {r["op"]: r for r in report["ops"]}
        assert report["mismatches"] == 0, report
        assert rows["allreduce"]["checked"] == 3 and rows["adam_step"]["checked"] == 3


def test_no_hook_hides_an_array_in_an_argument_shadow_mode_passes_as_a_value():
    """Shadow mode uploads the arguments annotated ``Array`` (or ``Array | None``) and
    ``list``; any other is passed to the reference as it is. Only these may hold
    something else than plain values: the communicator, a program, an expression, and
    ``from_numpy``'s host array."""
    opaque = set()
    for hook in hookspec.HOOKS:
        for name, param in inspect.signature(getattr(hookspec, hook)).parameters.items():
            if param.annotation == "Any":
                opaque.add((hook, name))
    assert opaque == {("from_numpy", "array"), ("allreduce", "comm"), ("broadcast", "comm"),
                      ("compile_program", "program"), ("fused_elementwise", "expr")}
    assert calls.SPECS["attention"].kinds[3] == "array"
