"""DataLoader(num_workers=N): the same batches as in-process loading, PyTorch's seeding,
errors re-raised with the worker's traceback, and no processes left behind."""

import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import fastnn as fnn
from fastnn.data import DataLoader, Dataset, IterableDataset, TensorDataset, get_worker_info

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="fork-based worker tests")


class Noisy(Dataset):
    """Sample i and a draw from NumPy's global generator (seeded per worker)."""

    def __len__(self):
        return 12

    def __getitem__(self, i):
        info = get_worker_info()
        return i, np.random.randint(0, 2**31), -1 if info is None else info.id


class Failing(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 5:
            raise KeyError(f"sample {i} is broken")
        return np.float32(i)


class Shards(IterableDataset):
    """0..n-1, split over the workers by get_worker_info as PyTorch's docs show."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))


def _no_children():
    deadline = time.monotonic() + 5
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.05)
    return not multiprocessing.active_children()


@pytest.mark.parametrize("num_workers", [1, 2, 3])
def test_workers_give_the_in_process_batches(num_workers):
    x = np.arange(60, dtype=np.float32).reshape(30, 2)
    y = np.arange(30)
    eager = DataLoader(TensorDataset(x, y), 4, shuffle=True, seed=7)
    pooled = DataLoader(TensorDataset(x, y), 4, shuffle=True, seed=7, num_workers=num_workers,
                        prefetch_factor=1 + num_workers % 2)
    for _ in range(2):  # two epochs
        a, b = list(eager), list(pooled)
        assert len(a) == len(b) == len(pooled)
        for (xa, ya), (xb, yb) in zip(a, b):
            np.testing.assert_array_equal(xa.numpy(), xb.numpy())
            np.testing.assert_array_equal(ya.numpy(), yb.numpy())
            assert xb.dtype == fnn.float32 and xb.device == fnn.get_device()
    assert _no_children()


def test_worker_seeds_are_pytorchs_rule_and_reproducible():
    def draws():
        fnn.manual_seed(3)
        return [tuple(int(t.item()) for t in b) for b in DataLoader(Noisy(), 1, num_workers=2)]

    first, again = draws(), draws()
    assert first == again  # fnn.manual_seed fixes the workers' base seed
    assert [w for _, _, w in first] == [0, 1] * 6  # tasks go round-robin, in order
    assert [i for i, _, _ in first] == list(range(12))
    per_worker = {w: [d for _, d, ww in first if ww == w] for w in (0, 1)}
    assert per_worker[0] != per_worker[1]  # each worker has its own seed


def test_worker_info_and_init_fn():
    seen = multiprocessing.get_context("fork").Queue()

    def init(worker_id):
        info = get_worker_info()
        seen.put((worker_id, info.id, info.num_workers, info.seed))

    list(DataLoader(Noisy(), 4, num_workers=2, worker_init_fn=init))
    got = sorted(seen.get(timeout=5) for _ in range(2))
    assert [g[:3] for g in got] == [(0, 0, 2), (1, 1, 2)]
    assert got[1][3] == got[0][3] + 1  # base_seed + worker id


def test_a_workers_error_is_reraised_with_its_traceback():
    loader = DataLoader(Failing(), 2, num_workers=2)
    it = iter(loader)
    np.testing.assert_array_equal(next(it).numpy(), [0, 1])
    np.testing.assert_array_equal(next(it).numpy(), [2, 3])
    with pytest.raises(KeyError) as info:
        next(it)
    text = str(info.value)
    assert "Caught KeyError in DataLoader worker process 0" in text
    assert "sample 5 is broken" in text and "in __getitem__" in text
    assert _no_children()


def test_an_iterable_dataset_split_over_workers():
    got = sorted(v for b in DataLoader(Shards(23), 4, num_workers=3) for v in b.numpy())
    assert got == list(range(23))
    one = [b.numpy().tolist() for b in DataLoader(Shards(7), 3, num_workers=1)]
    assert one == [[0, 1, 2], [3, 4, 5], [6]]


def test_persistent_workers_stay_and_are_stopped_with_the_loader():
    loader = DataLoader(TensorDataset(np.arange(10)), 3, num_workers=2, persistent_workers=True)
    assert [b[0].numpy().tolist() for b in loader][-1] == [9]
    pids = {p.pid for p in multiprocessing.active_children()}
    assert len(pids) == 2
    assert [b[0].numpy().tolist() for b in loader][0] == [0, 1, 2]
    assert {p.pid for p in multiprocessing.active_children()} == pids  # the same workers
    del loader
    assert _no_children()


def test_breaking_off_an_epoch_leaves_no_workers():
    loader = DataLoader(TensorDataset(np.arange(100)), 2, num_workers=2)
    for i, _ in enumerate(loader):
        if i == 3:
            break
    assert _no_children()


def test_ctrl_c_leaves_no_workers(tmp_path):
    script = tmp_path / "slow.py"
    script.write_text(textwrap.dedent("""
        import sys, time
        import numpy as np
        from fastnn.data import DataLoader, Dataset

        class Slow(Dataset):
            def __len__(self):
                return 1000

            def __getitem__(self, i):
                time.sleep(0.05)
                return np.float32(i)

        import multiprocessing
        loader = DataLoader(Slow(), 2, num_workers=2)
        try:
            for i, b in enumerate(loader):
                if i == 1:
                    print(" ".join(str(p.pid) for p in multiprocessing.active_children()),
                          flush=True)
        except KeyboardInterrupt:
            print("interrupted", flush=True)
            sys.exit(3)
    """))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    pids = [int(p) for p in proc.stdout.readline().split()]
    assert len(pids) == 2
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 3 and "interrupted" in proc.stdout.read()
    time.sleep(0.2)
    for pid in pids:  # reaped: no process, and no zombie, with that pid
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_the_dataloader_benchmark_runs(tmp_path):
    script = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks",
                          "bench_dataloader.py")
    out = subprocess.run([sys.executable, script, "--batches", "2", "--rounds", "1",
                          "--batch-size", "4", "--decode-ms", "0.1"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "speed-up of 2 workers over 0" in out.stdout
