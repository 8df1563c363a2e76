"""PoCL's worker threads pinned one to a CPU (``pocl_env.pin_pocl_threads``): set where
it is safe, left alone where the user chose or where pinning could fail, and in effect
in a fresh process (its threads' affinity read from /proc)."""

import os
import subprocess
import sys
import textwrap

import pytest


@pytest.fixture
def pin(ocl):
    from fastnn_opencl.pocl_env import pin_pocl_threads

    return pin_pocl_threads


def _all_cpus(monkeypatch, cpus=4, allowed=None):
    monkeypatch.setattr(os, "cpu_count", lambda: cpus)
    allowed = set(range(cpus)) if allowed is None else allowed
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(allowed), raising=False)


def test_pins_where_the_process_may_use_every_cpu(pin, monkeypatch):
    _all_cpus(monkeypatch)
    env = {}
    assert pin(env) is True
    assert env == {"POCL_AFFINITY": "1"}
    env = {"POCL_MAX_PTHREAD_COUNT": "2"}
    assert pin(env) is True and env["POCL_AFFINITY"] == "1"


@pytest.mark.parametrize("value", ["0", "1", ""])
def test_the_users_choice_is_kept(pin, monkeypatch, value):
    _all_cpus(monkeypatch)
    env = {"POCL_AFFINITY": value}
    assert pin(env) is False
    assert env == {"POCL_AFFINITY": value}


def test_not_pinned_where_a_cpu_is_not_the_processes(pin, monkeypatch):
    # PoCL pins worker i to CPU i: under `taskset -c 2,3` that CPU may be refused
    _all_cpus(monkeypatch, cpus=4, allowed={2, 3})
    env = {}
    assert pin(env) is False and env == {}


@pytest.mark.parametrize("threads", ["8", "many"])
def test_not_pinned_with_more_threads_than_cpus_or_a_bad_count(pin, monkeypatch, threads):
    _all_cpus(monkeypatch, cpus=4)
    env = {"POCL_MAX_PTHREAD_COUNT": threads}
    assert pin(env) is False and "POCL_AFFINITY" not in env


def test_not_pinned_without_sched_getaffinity(pin, monkeypatch):
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    env = {}
    assert pin(env) is False and env == {}


_CHILD = textwrap.dedent("""
    import os, json, numpy as np, warnings
    warnings.simplefilter("ignore")
    import fastnn as fnn
    with fnn.use("opencl"):
        x = fnn.tensor(np.ones((256, 256), np.float32))
        (x @ x).sum().item()
    single = []
    for task in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{task}/status") as f:
            line = [ln for ln in f if ln.startswith("Cpus_allowed_list")][0]
        cpus = line.split(":")[1].strip()
        if cpus.isdigit():
            single.append(int(cpus))
    print(json.dumps({"env": os.environ.get("POCL_AFFINITY"), "single": sorted(single)}))
""")


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs Linux's /proc")
def test_a_fresh_process_runs_pocl_threads_pinned(ocl):
    import json

    cpus = os.cpu_count()
    if os.sched_getaffinity(0) != set(range(cpus)):
        pytest.skip("this process may not use every CPU: pinning is (rightly) not done")
    if "pthread" not in ocl.runtime.state(0).device.name:
        pytest.skip("the OpenCL device is not PoCL's CPU device")
    env = {k: v for k, v in os.environ.items()
           if k not in ("POCL_AFFINITY", "POCL_MAX_PTHREAD_COUNT")}
    out = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True,
                         text=True, timeout=300, check=True).stdout
    seen = json.loads(out.strip().splitlines()[-1])
    assert seen["env"] == "1"
    # the workers pinned, one to each of CPUs 0..n-1 (PoCL 3.1 starts two sets here)
    assert set(seen["single"]) == set(range(cpus)), seen
