"""The cpu backend keeps freed temporaries' pages in the process (fastnn_cpu.allocator)."""

import os
import platform
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("fastnn_cpu")

# A step's pattern: a big temporary freed at the heap's top, then the same size again.
# glibc by default gives the freed pages back and faults them in anew (zeroed) each time.
_CHILD = textwrap.dedent("""
    import resource, sys
    import numpy as np
    if sys.argv[1] == "1":
        import fastnn_cpu  # noqa: F401 - its import configures malloc when asked
    keep = []
    for _ in range(3):  # warm up: the heap grows to its working size
        a = np.ones(2**21, np.float32); b = np.ones(2**21, np.float32); del a, b
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(20):
        a = np.ones(2**21, np.float32); b = np.ones(2**21, np.float32); del a, b
    print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
""")


def _faults(configured: bool) -> int:
    env = {k: v for k, v in os.environ.items()
           if k not in ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "FASTNN_CPU_MALLOPT")}
    env["FASTNN_CPU_MALLOPT"] = "1"
    out = subprocess.run([sys.executable, "-c", _CHILD, "1" if configured else "0"], env=env,
                         capture_output=True, text=True, check=True)
    return int(out.stdout.split()[-1])


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc only")
def test_freed_arrays_are_not_faulted_in_again():
    plain, configured = _faults(False), _faults(True)
    # 20 rounds of two 8 MB arrays: ~80k page faults when the pages go back each time
    assert configured < 1000 < plain, (configured, plain)


def test_opt_out_and_user_settings_win(monkeypatch):
    from fastnn_cpu import allocator

    for env in ({"FASTNN_CPU_MALLOPT": "0"}, {"MALLOC_TRIM_THRESHOLD_": "1000"}):
        with monkeypatch.context() as m:
            for k, v in env.items():
                m.setenv(k, v)
            assert allocator._set_thresholds() is False


def test_off_unless_asked(monkeypatch):
    from fastnn_cpu import allocator

    monkeypatch.delenv("FASTNN_CPU_MALLOPT", raising=False)
    assert allocator.configure_if_asked() is False
