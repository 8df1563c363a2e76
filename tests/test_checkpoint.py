"""fnn.save / fnn.load: round trips, atomic writes under SIGKILL, clear errors, exact resume."""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from fastnn import nn, optim
from fastnn.optim import lr_scheduler

pytest.importorskip("safetensors")


def _state(seed=0):
    rng = np.random.default_rng(seed)
    return {
        "model": {"0.weight": rng.standard_normal((4, 3)).astype(np.float32),
                  "0.bias": fnn.tensor(rng.standard_normal(4))},
        "optim": {"state": {"0": {"step": 3, "exp_avg": rng.standard_normal((4, 3))}},
                  "param_groups": [{"lr": 0.1, "betas": (0.9, 0.999), "class_lr": {}}]},
        "step": seed, "name": "mlp", "done": False, "nothing": None, "empty": {},
        "counts": np.arange(5, dtype=np.int64), "scalar": np.float32(2.5),
    }


def _assert_same(loaded, given):
    """``loaded`` is what fnn.load should make of ``given``: arrays for tensors, Python
    numbers for NumPy scalars, the same nesting (tuples as tuples, keys with their types)."""
    if isinstance(given, fnn.Tensor):
        given = given.numpy()
    if isinstance(given, dict):
        assert type(loaded) is dict and loaded.keys() == given.keys()
        for key in given:
            _assert_same(loaded[key], given[key])
    elif isinstance(given, (list, tuple)):
        assert type(loaded) is type(given) and len(loaded) == len(given)
        for a, b in zip(loaded, given):
            _assert_same(a, b)
    elif isinstance(given, np.ndarray):
        assert isinstance(loaded, np.ndarray) and loaded.dtype == given.dtype
        np.testing.assert_array_equal(loaded, given)
    else:
        assert type(loaded) is type(given.item() if isinstance(given, np.generic) else given)
        assert loaded == given


def test_round_trip_keeps_nesting_dtypes_and_numbers(tmp_path):
    path = tmp_path / "ckpt.safetensors"
    fnn.save(_state(), path)
    _assert_same(fnn.load(path), _state())
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]  # no temp left behind


def test_plain_safetensors_files_load_flat(tmp_path):
    from safetensors.numpy import save_file

    save_file({"w": np.ones((2, 2), np.float32)}, str(tmp_path / "plain.safetensors"))
    out = fnn.load(tmp_path / "plain.safetensors")
    assert list(out) == ["w"] and out["w"].shape == (2, 2)


def test_truncated_corrupt_and_foreign_files_raise_value_error_naming_the_path(tmp_path):
    good = tmp_path / "good.safetensors"
    fnn.save(_state(), good)
    data = good.read_bytes()
    cases = {"truncated": data[: len(data) - 7], "header-cut": data[:20], "empty": b"",
             "garbage": os.urandom(64), "pickle": b"\x80\x04\x95" + b"\x00" * 40}
    for name, payload in cases.items():
        bad = tmp_path / f"{name}.safetensors"
        bad.write_bytes(payload)
        with pytest.raises(ValueError, match=str(bad)):
            fnn.load(bad)


def test_unsupported_leaves_and_keys_raise(tmp_path):
    with pytest.raises(TypeError, match="cannot store object"):
        fnn.save({"x": object()}, tmp_path / "a")
    with pytest.raises(TypeError, match="keys must be strings, numbers, bools or None"):
        fnn.save({(1, 2): np.zeros(2)}, tmp_path / "a")
    assert not os.listdir(tmp_path)


NESTINGS = {
    "a tensor": fnn.tensor([[1.0, 2.0]], dtype=fnn.float64),
    "an int tensor": fnn.tensor([3, 4]),
    "an array": np.arange(6, dtype=np.int32).reshape(2, 3),
    "a number": 3.5, "an int": 7, "a string": "x", "a bool": True, "None": None,
    "a list": [fnn.tensor([1.0]), 2, "s", None, [], ()],
    "a tuple": (fnn.tensor([1.0]), (np.ones(2), [False]), {"k": 1}),
    "nested dicts": {"a": {"b": {"c": fnn.tensor([5.0])}}, "e": {}, "t": (1, (2, 3))},
    "non-string keys": {0: np.zeros(2), 1.5: "x", None: [1], True: {"k": np.ones(1)},
                        "s": fnn.tensor([2.0])},
    "keys with / and %": {"a/b": np.ones(2), "a": {"b": np.zeros(2)}, "50%": np.ones(1),
                          "a%2Fb": np.full(1, 3.0)},
    "a tensor at every depth": [{"x": (fnn.tensor([float(i)]),)} for i in range(4)],
}


@pytest.mark.parametrize("given", list(NESTINGS.values()), ids=list(NESTINGS))
def test_any_nesting_round_trips(tmp_path, given):
    """fnn.save takes a tensor alone or any nesting of dicts, lists and tuples of tensors,
    arrays, numbers, strings, bools and None; fnn.load gives the same nesting back, with
    NumPy arrays where tensors were."""
    fnn.save(given, tmp_path / "n.safetensors")
    _assert_same(fnn.load(tmp_path / "n.safetensors"), given)


def test_files_that_need_no_new_node_stay_version_1(tmp_path):
    """An older fastnn reads version 1 only: a state without tuples or non-string keys (what
    it could write) is still written as version 1; one with them as version 2, which an older
    fastnn refuses with "written by a newer fastnn" instead of misreading it."""
    import json

    from safetensors import safe_open

    def version(state):
        fnn.save(state, tmp_path / "v.safetensors")
        with safe_open(str(tmp_path / "v.safetensors"), "np") as f:
            return json.loads(f.metadata()["fastnn"])["version"]

    assert version({"w": np.ones(2), "l": [1, {"a": None}]}) == 1
    assert version({"w": np.ones(2), "l": [1, {"a": (1,)}]}) == 2
    assert version({"w": np.ones(2), "l": [{1: 2}]}) == 2


KILL_SCRIPT = """
import os, signal, sys
import numpy as np
import fastnn as fnn
target = sys.argv[2]
real = getattr(os, target)
def die(*args, **kwargs):
    if target == "fsync" and len(args) == 1 and not os.path.isfile(f"/proc/self/fd/{args[0]}"):
        return real(*args, **kwargs)
    os.kill(os.getpid(), signal.SIGKILL)
setattr(os, target, die)
fnn.save({"w": np.full((256, 1024), 7.0, np.float32), "step": 99}, sys.argv[1])
"""


@pytest.mark.parametrize("where", ["fsync", "replace"])
def test_sigkill_during_a_later_save_leaves_the_earlier_checkpoint_intact(tmp_path, where):
    path = tmp_path / "ckpt.safetensors"
    fnn.save(_state(1), path)
    proc = subprocess.run([sys.executable, "-c", KILL_SCRIPT, str(path), where],
                          capture_output=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    _assert_same(fnn.load(path), _state(1))


LOOP_SCRIPT = """
import sys
import numpy as np
import fastnn as fnn
big = [np.full((8, 1 << 20), float(i), np.float32) for i in (1, 2)]
print("saving", flush=True)
i = 0
while True:
    fnn.save({"w": big[i % 2], "i": i % 2}, sys.argv[1])
    i += 1
"""


def test_sigkill_at_a_random_moment_of_big_saves_leaves_a_whole_checkpoint(tmp_path):
    path = tmp_path / "big.safetensors"
    fnn.save({"w": np.full((8, 1 << 20), 1.0, np.float32), "i": 0}, path)
    proc = subprocess.Popen([sys.executable, "-c", LOOP_SCRIPT, str(path)],
                            stdout=subprocess.PIPE)
    assert proc.stdout.readline().strip() == b"saving"
    time.sleep(0.5)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    out = fnn.load(path)
    np.testing.assert_array_equal(out["w"], np.full((8, 1 << 20), out["i"] + 1.0, np.float32))


def _train(model, opt, sched, x, y, steps):
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
    return losses


def _setup(seed):
    fnn.manual_seed(seed)
    model = nn.Sequential(nn.Linear(5, 16), nn.Activation("gelu"), nn.LayerNorm(16),
                          nn.Linear(16, 3))
    opt = optim.AdamW(model.parameters(), lr=0.02, class_lr={"bias": 2.0})
    return model, opt, lr_scheduler.WarmupCosine(opt, warmup_steps=3, total_steps=12)


def test_resume_from_checkpoint_gives_the_same_loss_curve(tmp_path):
    rng = np.random.default_rng(0)
    x = fnn.tensor(rng.standard_normal((24, 5)).astype(np.float32))
    y = fnn.tensor(rng.integers(0, 3, 24))
    model, opt, sched = _setup(0)
    straight = _train(model, opt, sched, x, y, 12)

    model, opt, sched = _setup(0)
    first = _train(model, opt, sched, x, y, 5)
    fnn.save({"model": model.state_dict(), "optim": opt.state_dict(),
              "sched": sched.state_dict(), "step": 5}, tmp_path / "ckpt")

    model, opt, sched = _setup(123)  # different weights: everything must come from the file
    state = fnn.load(tmp_path / "ckpt")
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["optim"])
    sched.load_state_dict(state["sched"])
    assert state["step"] == 5
    resumed = first + _train(model, opt, sched, x, y, 7)
    assert resumed == straight  # bit for bit
