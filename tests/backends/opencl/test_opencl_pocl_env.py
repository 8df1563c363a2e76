"""PoCL's worker threads (``fastnn_opencl.pocl_env``): pinned one to a CPU where it is
safe, left alone where the user chose or where pinning could fail, and scheduled as
SCHED_BATCH once started (unless ``FASTNN_OPENCL_WORKER_POLICY=other``), each in effect in
a fresh process (its threads' affinity and policy read from /proc and the kernel)."""

import os
import subprocess
import sys
import textwrap
import threading
from types import SimpleNamespace

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



@pytest.fixture
def env_module(ocl):
    from fastnn_opencl import pocl_env

    return pocl_env


@pytest.mark.parametrize("text, policy", [(None, "batch"), ("", "batch"), (" Batch ", "batch"),
                                          ("other", "other")])
def test_the_workers_policy_is_read_from_the_environment(env_module, text, policy):
    env = {} if text is None else {"FASTNN_OPENCL_WORKER_POLICY": text}
    assert env_module.worker_policy(env) == policy


@pytest.mark.parametrize("text", ["fifo", "idle", "19"])
def test_a_bad_policy_is_refused_by_name(env_module, text):
    with pytest.raises(ValueError, match="FASTNN_OPENCL_WORKER_POLICY=.*'batch'.*'other'"):
        env_module.worker_policy({"FASTNN_OPENCL_WORKER_POLICY": text})


def test_a_bad_policy_makes_the_backend_unusable_with_the_reason(ocl, monkeypatch):
    import fastnn_opencl
    from fastnn_opencl import discovery

    monkeypatch.setattr(discovery, "_pyopencl", None)  # (as before the first use)
    monkeypatch.setenv("FASTNN_OPENCL_WORKER_POLICY", "fast")
    record = fastnn_opencl.probe()
    assert not record["available"]
    assert "FASTNN_OPENCL_WORKER_POLICY='fast'" in record["reason"]


def _policy(tid: int) -> int:
    return os.sched_getscheduler(tid)


@pytest.mark.skipif(not os.path.isdir("/proc/self/task") or not hasattr(os, "SCHED_BATCH"),
                    reason="needs Linux's /proc and SCHED_BATCH")
@pytest.mark.parametrize("platform, policy, batched", [
    ("Portable Computing Language", "batch", True), ("NVIDIA CUDA", "batch", False),
    ("Portable Computing Language", "other", False)])
def test_only_the_threads_started_since_are_batched_and_only_for_pocl(
        env_module, platform, policy, batched):
    before = env_module.thread_ids()
    started, stop = threading.Event(), threading.Event()
    tid = []

    def worker():
        tid.append(threading.get_native_id())
        started.set()
        stop.wait(30)

    thread = threading.Thread(target=worker)
    thread.start()
    try:
        started.wait(30)
        done = env_module.batch_pocl_threads(before, [SimpleNamespace(name=platform)], policy)
        assert done == (tid if batched else [])
        assert _policy(tid[0]) == (os.SCHED_BATCH if batched else os.SCHED_OTHER)
        assert _policy(threading.get_native_id()) == os.SCHED_OTHER
    finally:
        stop.set()
        thread.join()


_POLICY_CHILD = textwrap.dedent("""
    import os, json, threading, numpy as np, warnings
    warnings.simplefilter("ignore")
    main = threading.get_native_id()
    import fastnn as fnn
    with fnn.use("opencl"):
        x = fnn.tensor(np.ones((64, 64), np.float32))
        (x @ x).sum().item()
    seen = {int(t): os.sched_getscheduler(int(t)) for t in os.listdir("/proc/self/task")}
    print(json.dumps({"main": seen.pop(main), "others": sorted(seen.values()),
                      "batch": os.SCHED_BATCH, "other": os.SCHED_OTHER}))
""")


@pytest.mark.skipif(not os.path.isdir("/proc/self/task") or not hasattr(os, "SCHED_BATCH"),
                    reason="needs Linux's /proc and SCHED_BATCH")
@pytest.mark.parametrize("setting", [None, "other"])
def test_a_fresh_process_runs_pocl_threads_as_batch(ocl, setting):
    import json

    if "pthread" not in ocl.runtime.state(0).device.name:
        pytest.skip("the OpenCL device is not PoCL's CPU device")
    env = {k: v for k, v in os.environ.items() if k != "FASTNN_OPENCL_WORKER_POLICY"}
    if setting is not None:
        env["FASTNN_OPENCL_WORKER_POLICY"] = setting
    out = subprocess.run([sys.executable, "-c", _POLICY_CHILD], env=env, capture_output=True,
                         text=True, timeout=300, check=True).stdout
    seen = json.loads(out.strip().splitlines()[-1])
    want = seen["batch"] if setting is None else seen["other"]
    assert seen["main"] == seen["other"]
    # PoCL's threads (at least its workers, one a CPU) as ``want``; pyopencl's own, started
    # at its import before the platform query, is left alone
    assert seen["others"].count(want) >= os.cpu_count(), seen
    assert set(seen["others"]) <= {seen["other"], want}, seen
