"""Eight model training steps (issue 22): fastnn cpu against PyTorch CPU, against its NumPy
floor, and opencl against cpu, one thread, interleaved in one process:

    python benchmarks/bench_models.py [--models MLP,CNN] [--rounds 3] [--no-opencl] [--json F]
        [--clock wall|cpu] [--no-memory]

Every contender starts from the same weights (the PyTorch model's state dict) and batch,
and takes SGD steps (lr 0.01) on cross-entropy. The NumPy floors (``benchmarks/floors/``)
are the same steps written as bare NumPy calls, forward and backward. The machine is
shared: the ratios come from one interleaved run (the contenders' steps taken in turn,
one each), each a median over rounds
(``--clock cpu`` times the process's CPU time instead of the wall clock: on a loaded
machine it leaves out the time spent waiting for a core).

The compiled columns (issue 23) are the same cpu step through ``fnn.compile``: its time
over eager's; the *host time* of each, compiled over eager: eager's is the step's time
minus the time its backend calls take when run bare (the recorded program's hooks as
straight-line calls on the same arrays), the compiled step's is its time with every hook
call answered at once from a stored result (a subtraction of two step times would drown
it in noise); and the peak memory of a step (tracemalloc, which
sees NumPy's arrays, counting everything allocated since the model was built: weights,
optimizer state, a compiled program's kept buffers), compiled over eager.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # before NumPy's import: one BLAS thread for every contender

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from blas_info import describe as describe_blas  # noqa: E402
from floors import FLOORS  # noqa: E402

D, HEADS, VOCAB, SEQ = 64, 4, 64, 64


def define(lib, F):
    """{name: model factory} with ``lib`` torch or fastnn (their nn and F), its classes
    made once per library: a peak-memory measure (``peak_memory``) then counts the step,
    not the class registry growing by eight classes a model (measured: ~4.6 KB of
    ``nn.Module``'s subclass table landed in one contender's window, not the other's)."""
    found = _DEFINED.get(lib.__name__)
    if found is None:
        found = _DEFINED[lib.__name__] = _define(lib, F)
    return found


_DEFINED: dict = {}


def _define(lib, F):
    nn = lib.nn

    class Conv1dNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv1d(16, 32, 5, padding=2)
            self.conv2 = nn.Conv1d(32, 32, 5, padding=2)
            self.head = nn.Linear(32, 10)

        def forward(self, x):
            return self.head(F.relu(self.conv2(F.relu(self.conv1(x)))).mean(axis=2))

    class Block(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(c)
            self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(c)

        def forward(self, x):
            return F.relu(x + self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x))))))

    class ResNet(nn.Module):
        def __init__(self, c=16, blocks=3):
            super().__init__()
            self.stem = nn.Conv2d(3, c, 3, padding=1, bias=False)
            self.bn = nn.BatchNorm2d(c)
            self.blocks = nn.Sequential(*[Block(c) for _ in range(blocks)])
            self.head = nn.Linear(c, 10)

        def forward(self, x):
            h = self.blocks(F.relu(self.bn(self.stem(x))))
            return self.head(h.mean(axis=(2, 3)))

    class Recurrent(nn.Module):
        def __init__(self, kind):
            super().__init__()
            self.rnn = getattr(nn, kind)(16, 64, batch_first=True)
            self.head = nn.Linear(64, 10)

        def forward(self, x):
            return self.head(self.rnn(x)[0].mean(axis=1))

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            layer = nn.TransformerEncoderLayer(D, HEADS, 2 * D, dropout=0.0, batch_first=True)
            extra = {"enable_nested_tensor": False} if lib.__name__ == "torch" else {}
            self.enc = nn.TransformerEncoder(layer, 2, **extra)
            self.head = nn.Linear(D, 10)

        def forward(self, x):
            return self.head(self.enc(x).mean(axis=1))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(VOCAB, D), nn.Embedding(SEQ, D)
            self.ln1, self.ln2, self.lnf = nn.LayerNorm(D), nn.LayerNorm(D), nn.LayerNorm(D)
            self.c_attn, self.c_proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
            self.fc, self.proj = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)
            self.head = nn.Linear(D, VOCAB, bias=False)

        def forward(self, idx):
            b, t = idx.shape
            x = self.wte(idx) + self.wpe.weight[:t]
            q, k, v = (z.view(b, t, HEADS, D // HEADS).transpose(1, 2)
                       for z in self.c_attn(self.ln1(x)).split(D, dim=2))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.c_proj(y.transpose(1, 2).contiguous().view(b, t, D))
            x = x + self.proj(F.gelu(self.fc(self.ln2(x))))
            return self.head(self.lnf(x)).view(b * t, VOCAB)

    def cnn():
        return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                             nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1),
                             nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                             nn.Linear(32 * 7 * 7, 10))

    def mlp():
        return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                             nn.Linear(512, 10))

    return {"MLP": mlp, "Conv1d": Conv1dNet, "CNN": cnn, "ResNet": ResNet,
            "LSTM": lambda: Recurrent("LSTM"), "GRU": lambda: Recurrent("GRU"),
            "Transformer": Encoder, "nanoGPT": GPT}


def batch(name, seed=0, small=False):
    """(x, y) NumPy arrays for model ``name``; ``small``: a batch of 3 and short sequences
    and images (for the smoke test)."""
    rng = np.random.default_rng(seed)
    shapes = {"MLP": (128, 784), "Conv1d": (32, 16, 256), "CNN": (64, 1, 28, 28),
              "ResNet": (32, 3, 32, 32), "LSTM": (32, 64, 16), "GRU": (32, 64, 16),
              "Transformer": (32, SEQ, D), "nanoGPT": (16, SEQ)}
    if small:
        small_shapes = {"Conv1d": (3, 16, 12), "ResNet": (3, 3, 6, 5), "LSTM": (3, 5, 16),
                        "GRU": (3, 5, 16), "Transformer": (3, 5, D), "nanoGPT": (3, 7)}
        shapes = {k: small_shapes.get(k, (3,) + v[1:]) for k, v in shapes.items()}
    if name == "nanoGPT":
        idx = rng.integers(0, VOCAB, (shapes[name][0], shapes[name][1] + 1))
        return idx[:, :-1], idx[:, 1:].reshape(-1)
    x = rng.standard_normal(shapes[name]).astype(np.float32)
    return x, rng.integers(0, 10, shapes[name][0])


def start(name, small=False):
    """(the PyTorch model, its state dict as NumPy arrays, x, y): every contender's start."""
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(0)
    theirs = define(torch, torch.nn.functional)[name]()
    state = {k: v.detach().numpy().copy() for k, v in theirs.state_dict().items()}
    x, y = batch(name, small=small)
    return theirs, state, x, y


def fastnn_step(name, state, x, y, device="cpu", compiled=False, lr=0.01):
    """fastnn's SGD step of model ``name`` from ``state`` on (x, y): ``step()`` returns the
    loss; ``step.compiled`` is the (compiled) function, ``step.args`` its arguments."""
    import fastnn as fnn
    import fastnn.functional as fF
    from fastnn import optim

    model = define(fnn, fF)[name]().to(device)
    model.load_state_dict(state)
    opt = optim.SGD(list(model.parameters()), lr=lr)
    fx, fy = fnn.tensor(x, device=device), fnn.tensor(y, device=device)

    def one(a, b):
        opt.zero_grad()
        loss = fF.cross_entropy(model(a), b)
        loss.backward()
        opt.step()
        return loss.detach()

    run = fnn.compile(one) if compiled else one

    def step():
        return run(fx, fy)

    step.compiled, step.args = run, (fx, fy)
    return step


def contenders(name, lr=0.01, opencl=True, torch_too=True, small=False, compiled=True):
    """{contender: step()} for model ``name``, every one from the same weights and batch."""
    import torch

    theirs, state, x, y = start(name, small)
    steps = {}

    def ours(device, compiled=False):
        return fastnn_step(name, state, x, y, device, compiled, lr)

    steps["fastnn cpu"] = ours("cpu")
    if compiled:
        steps["compiled"] = ours("cpu", compiled=True)
    if torch_too:
        t_opt = torch.optim.SGD(list(theirs.parameters()), lr=lr)
        tx, ty = torch.tensor(x), torch.tensor(y)

        def theirs_step():
            t_opt.zero_grad(set_to_none=True)
            loss = torch.nn.functional.cross_entropy(theirs(tx), ty)
            loss.backward()
            t_opt.step()
            return loss.detach()

        steps["torch"] = theirs_step
    floor = FLOORS.get(name)
    if floor is not None:
        steps["floor"] = floor({k: v.copy() for k, v in state.items()
                                if "running" not in k and "num_batches" not in k}, x, y, lr)
    if opencl:
        try:
            steps["opencl"] = ours("opencl")
        except Exception as exc:  # noqa: BLE001 - report and go on without it
            print(f"{name}: opencl unavailable ({type(exc).__name__}: {exc})")
    return steps


def timed(step, seconds, clock=time.perf_counter):
    """Median seconds per call over calls lasting about ``seconds`` in all; each call reads
    its loss back to the host (so an asynchronous device has finished the step)."""
    float(step())
    times, spent = [], 0.0
    while spent < seconds or len(times) < 3:
        start = clock()
        float(step())
        times.append(clock() - start)
        spent += times[-1]
    return float(np.median(times))


def interleaved(steps, seconds, clock=time.perf_counter):
    """{contender: median seconds per call}, the contenders' calls taken in turn, one
    each, until each has run about ``seconds`` (at least 3 calls): a change of load on a
    shared machine meets every contender alike, not the one whose block it fell in."""
    for step in steps.values():
        float(step())
    times = {k: [] for k in steps}
    spent = dict.fromkeys(steps, 0.0)
    while min(spent.values()) < seconds or min(map(len, times.values())) < 3:
        for k, step in steps.items():
            start = clock()
            float(step())
            times[k].append(clock() - start)
            spent[k] += times[k][-1]
    return {k: float(np.median(v)) for k, v in times.items()}


def host_times(compiled_step, clock, steps=20):
    """(ms of the compiled step's hook calls run bare, ms of the compiled step with every
    hook call answered from a stored result: its host time); see bench_compile.py."""
    import bench_compile

    bench_compile.CLOCK[0] = clock
    fn = compiled_step.compiled
    floor, hollow = bench_compile.floor_and_hollow(fn, *compiled_step.args, steps)
    return floor * 1e3, hollow * 1e3


def peak_memory(name, compiled, small=False, steps=4):
    """Bytes tracemalloc saw at most during one cpu step, counting from before the model
    was built (so a compiled program's kept buffers count)."""
    import gc
    import tracemalloc

    _, state, x, y = start(name, small)
    warm = fastnn_step(name, state, x, y, compiled=compiled)  # imports and caches, untraced
    for _ in range(steps):
        warm()
    del warm
    gc.collect()
    tracemalloc.start()
    try:
        step = fastnn_step(name, state, x, y, compiled=compiled)
        for _ in range(steps):
            step()
        gc.collect()  # the recording's cycles: garbage, not the step's memory
        tracemalloc.reset_peak()
        float(step())
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def run(names, rounds=3, seconds=0.3, opencl=True, small=False, clock=time.perf_counter,
        memory=True):
    rows = {}
    for name in names:
        steps = contenders(name, opencl=opencl, small=small)
        samples = {k: [] for k in steps}
        for _ in range(rounds):  # interleaved: load on the machine hits every contender alike
            for k, median in interleaved(steps, seconds, clock).items():
                samples[k].append(median)
        rows[name] = {k: float(np.median(v)) * 1e3 for k, v in samples.items()}
        if "compiled" in steps:  # recorded and checked by now
            rows[name]["hooks"], rows[name]["hollow"] = host_times(steps["compiled"], clock)
        if memory and "compiled" in steps:
            rows[name]["peak eager"] = peak_memory(name, False, small) / 2**20
            rows[name]["peak compiled"] = peak_memory(name, True, small) / 2**20
    return rows


def table(rows):
    def ratio(row, a, b):
        return f"{row[a] / row[b]:.2f}" if a in row and b in row else "-"

    def host_ratio(row):
        if "hollow" not in row:
            return "-"
        eager, comp = row["fastnn cpu"] - row["hooks"], row["hollow"]
        return (f"{comp / eager:.2f} ({comp:.3f} / {eager:.2f} ms)" if eager > 0 else
                f"- ({comp:.3f} / {eager:.2f} ms)")

    lines = ["| model | cpu ms | fastnn cpu / PyTorch | fastnn cpu / NumPy floor | "
             "opencl / cpu | compiled / eager | host compiled / eager | "
             "peak memory compiled / eager |", "|---|---|---|---|---|---|---|---|"]
    for name, row in rows.items():
        memory = (f"{row['peak compiled'] / row['peak eager']:.2f} "
                  f"({row['peak compiled']:.1f} / {row['peak eager']:.1f} MiB)"
                  if "peak eager" in row else "-")
        lines.append(f"| {name} | {row['fastnn cpu']:.1f} | {ratio(row, 'fastnn cpu', 'torch')}"
                     f" | {ratio(row, 'fastnn cpu', 'floor')} | "
                     f"{ratio(row, 'opencl', 'fastnn cpu')} | "
                     f"{ratio(row, 'compiled', 'fastnn cpu')} | {host_ratio(row)} | "
                     f"{memory} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(define_names()))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=0.3,
                        help="time per contender per round")
    parser.add_argument("--no-opencl", action="store_true")
    parser.add_argument("--json", help="also write the step times (ms) to this file")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="time the wall clock, or the process's CPU time")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak memory")
    args = parser.parse_args(argv)
    clock = time.perf_counter if args.clock == "wall" else time.process_time
    rows = run(args.models.split(","), args.rounds, args.seconds, not args.no_opencl,
               clock=clock, memory=not args.no_memory)
    print(describe_blas())
    print(table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return rows


def define_names():
    return ["MLP", "Conv1d", "CNN", "ResNet", "LSTM", "GRU", "Transformer", "nanoGPT"]


if __name__ == "__main__":
    main()
