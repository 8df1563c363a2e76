"""``fastnn train``: train a small model on a real data set and report held-out accuracy.

Defaults: an MLP (64-128-128-10, ReLU) on scikit-learn's handwritten digits
with Adam, on the ``cpu`` backend. ``--data trace --model conv1d`` trains a
small Conv1d net on UCR Trace. Two ways to train, which must agree:

* tape (default): ``loss.backward()`` then ``optimizer.step()``;
* ``--reverse``: no tape; ``grad_x, grads = model.reverse(x, dL/dlogits)``
  then ``model.apply(optimizer, grads)``, with dL/dlogits of the mean softmax
  cross-entropy written out: ``(softmax(logits) - one_hot(y)) / batch``.

Reproducible: ``--seed`` fixes the initial weights and the batch order, and
epoch ``e`` shuffles with ``default_rng([seed, e])`` (``fastnn.data.DataLoader``),
so a run resumed from a checkpoint sees the same batches as one that never stopped.

On N ranks (``mpiexec -n N fastnn train ...``, or ``--distributed``) every
rank trains the same model on its shard (``DataLoader(shard=(rank, N))``, as
PyTorch's DistributedSampler) in batches of ``--batch-size / N``: each step
takes the global batch one process takes, and the gradients are averaged
over the ranks. Rank 0 alone prints and writes the checkpoint; ``--resume``
works with any N.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from fastnn.cli import int_at_least, seq_models
from fastnn.cli import train_ranks as ranks
from fastnn.cli.bench import thread_limit
from fastnn.cli.cnn import build_cnn
from fastnn.cli.plot import plot, require_matplotlib
from fastnn.cli.progress import Progress
from fastnn.cli.train_resume import History, held_interrupt, interrupted_note, restore_run, save_run
from fastnn.cli.train_state import SCHEDULES, make_schedule

# per data set: the model and the hyper-parameters that reach the target accuracy
DEFAULTS = {
    "digits": {"model": "mlp", "epochs": 20, "batch_size": 32, "lr": 1e-3, "optimizer": "adam"},
    "trace": {"model": "conv1d", "epochs": 30, "batch_size": 10, "lr": 3e-3,
              "optimizer": "adam"},
}
# appended only: a checkpoint stores the index
OPTIMIZERS = ("sgd", "adam", "adamw", "rmsprop", "adagrad", "radam", "nadam")
MODELS = ("mlp", "conv1d") + seq_models.MODELS + ("cnn",)
# the options a checkpoint records (as indices) and a resumed run must repeat
CHOICES = {"data": sorted(DEFAULTS), "model": MODELS, "optimizer": OPTIMIZERS,
           "schedule": SCHEDULES}


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("train", help="train a model on a real data set (default: digits)")
    p.add_argument("--data", choices=sorted(DEFAULTS), default="digits",
                   help="data set (default digits)")
    p.add_argument("--model", choices=MODELS, default=None,
                   help="model (default: mlp for digits, conv1d for trace; gru, lstm and "
                        "transformer are for trace too; cnn: Conv2d, BatchNorm and pooling on "
                        "the digits as 8x8 images)")
    p.add_argument("--backend", default="cpu", help="backend/device, e.g. cpu, opencl, cuda:1")
    p.add_argument("--epochs", type=int, default=None, help="total number of epochs")
    p.add_argument("--batch-size", type=int, default=None)
    p.add_argument("--lr", type=float, default=None, help="learning rate")
    p.add_argument("--optimizer", choices=OPTIMIZERS, default=None)
    p.add_argument("--schedule", choices=SCHEDULES, default="constant",
                   help="learning-rate schedule over the run, stepped per batch "
                        "(default constant)")
    p.add_argument("--dropout", type=float, default=0.0,
                   help="Dropout probability after each hidden layer (default 0: none)")
    p.add_argument("--seed", type=int_at_least(0), default=0,
                   help="seed of the weights and batch order (an integer >= 0)")
    p.add_argument("--checkpoint", type=Path, default=None,
                   help="save model, optimizer state and epoch here after every epoch "
                        "(atomically: an interrupted run keeps its finished epochs)")
    p.add_argument("--resume", action="store_true",
                   help="continue from --checkpoint up to --epochs in total")
    p.add_argument("--reverse", action="store_true",
                   help="train with per-layer reverse/apply instead of the autograd tape")
    p.add_argument("--threads", type=int_at_least(0), default=1,
                   help="host BLAS threads (default 1: these models are too small to gain "
                        "from more; 0 = the library's default). More than 1 can be very "
                        "slow on a busy machine: with other processes on the cores, a 0.8 s "
                        "run took 34-72 s with --threads 2")
    p.add_argument("--distributed", action="store_true",
                   help="train data-parallel over MPI (implied under mpiexec with several "
                        "ranks); an error if mpi4py or MPI is missing")
    p.add_argument("--compile", action="store_true",
                   help="record the training step once per batch shape and replay it "
                        "(fnn.compile): the same numbers, less host time per step")
    p.add_argument("--plot", type=Path, default=None,
                   help="write a PNG of the loss and accuracy curves (needs matplotlib)")
    p.set_defaults(func=run)


def resolve(args):
    """Fill the per-data-set defaults into ``args`` and check the values."""
    if args.model is None:
        args.model = DEFAULTS[args.data]["model"]
    defaults = {**DEFAULTS[args.data], **seq_models.DEFAULTS.get(args.model, {})}
    for name, value in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if args.data == "digits" and args.model not in ("mlp", "cnn"):
        raise SystemExit(f"fastnn train: --model {args.model} needs sequence data: use "
                         f"--data trace")
    if args.data != "digits" and args.model == "cnn":
        raise SystemExit("fastnn train: --model cnn needs the digits as 8x8 images: use "
                         "--data digits")
    for name in ("epochs", "batch_size"):
        if getattr(args, name) < 1:
            raise SystemExit(f"fastnn train: --{name.replace('_', '-')} must be >= 1")
    if args.lr <= 0:
        raise SystemExit(f"fastnn train: --lr must be > 0, got {args.lr}")
    if not 0.0 <= args.dropout < 1.0:
        raise SystemExit(f"fastnn train: --dropout must be in [0, 1), got {args.dropout}")
    if args.resume and args.checkpoint is None:
        raise SystemExit("fastnn train: --resume needs --checkpoint PATH to resume from")
    if args.resume and not args.checkpoint.is_file():
        raise SystemExit(f"fastnn train: --resume: no checkpoint at {args.checkpoint}")
    for name in ("checkpoint", "plot"):  # say so now, not after the training is done
        path = getattr(args, name)
        if path is not None and not path.resolve().parent.is_dir():
            raise SystemExit(f"fastnn train: --{name} {path}: directory {path.parent} does not "
                             "exist; create it first")
    return args


def build_model(kind: str, input_shape: tuple, num_classes: int, dropout: float = 0.0):
    """The MLP or Conv1d network, initialised from fastnn's seeded host generator;
    ``dropout`` > 0 adds Dropout after each hidden layer of the MLP (before the head
    of the Conv1d net)."""
    from fastnn import nn

    if kind in seq_models.MODELS:
        return seq_models.build(kind, input_shape, num_classes)
    if kind == "cnn":
        return build_cnn(input_shape, num_classes)
    def drop():  # a layer of its own at each place
        return [nn.Dropout(dropout)] if dropout > 0 else []

    if kind == "mlp":
        features = int(np.prod(input_shape))
        layers = [nn.Flatten()] if len(input_shape) > 1 else []
        return nn.Sequential(
            *layers,
            nn.Linear(features, 128), nn.Activation("relu"), *drop(),
            nn.Linear(128, 128), nn.Activation("relu"), *drop(),
            nn.Linear(128, num_classes),
        )
    channels, _ = input_shape
    # a mean over time makes the net shift-invariant, which Trace's classes need (the same
    # transient appears at different times); flattening instead of pooling reached only ~90%
    return nn.Sequential(
        nn.Conv1d(channels, 16, 7, stride=2), nn.Activation("relu"),
        nn.Conv1d(16, 32, 5, stride=2), nn.Activation("relu"),
        nn.Conv1d(32, 32, 3), nn.Activation("relu"),
        nn.GlobalAvgPool1d(), *drop(),
        nn.Linear(32, num_classes),
    )


MINIDX_DECAY = ("connective",)


def make_optimizer(name: str, params, lr: float):
    """``name`` with PyTorch's defaults (SGD: momentum 0.9) at learning rate ``lr``, and
    minidx's weight-decay rule: only connective parameters (weights) decay, never biases
    or norms (``decay_classes``)."""
    from fastnn import optim

    if name == "sgd":
        return optim.SGD(params, lr=lr, momentum=0.9, decay_classes=MINIDX_DECAY)
    cls = {"adam": optim.Adam, "adamw": optim.AdamW, "rmsprop": optim.RMSprop,
           "adagrad": optim.Adagrad, "radam": optim.RAdam, "nadam": optim.NAdam}[name]
    return cls(params, lr=lr, decay_classes=MINIDX_DECAY)


def tape_step(model, optimizer, x, y):
    """One step on the autograd tape; returns the logits (detached) and the loss."""
    import fastnn.functional as F

    optimizer.zero_grad()
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    loss.backward()
    optimizer.step()
    return logits.detach(), loss


def reverse_step(model, optimizer, x, y, num_classes: int):
    """One step through ``model.reverse`` / ``model.apply``, with no tape at all."""
    import fastnn as fnn
    import fastnn.functional as F

    with fnn.no_grad():
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        # d(mean cross-entropy)/d(logits) = (softmax - one_hot) / batch
        grad_logits = (F.softmax(logits, dim=1) - F.one_hot(y, num_classes)) * (1.0 / x.shape[0])
        _, grads = model.reverse(x, grad_logits)
        model.apply(optimizer, grads)
    return logits, loss


def evaluate(model, x: np.ndarray, y: np.ndarray, device, batch: int = 512) -> float:
    """Fraction of ``x`` that ``model`` classifies as ``y``."""
    import fastnn as fnn

    correct, training = 0, model.training
    model.eval()  # Dropout off (no draw from the host generator); BatchNorm's running stats
    try:
        with fnn.no_grad():
            for start in range(0, len(x), batch):
                logits = model(fnn.tensor(x[start:start + batch], device=device))
                correct += int((logits.numpy().argmax(axis=1) == y[start:start + batch]).sum())
    finally:
        model.train(training)
    return correct / len(x)


def fit(args, out=None) -> History:
    """Train as ``args`` says; print progress to ``out``; return the per-epoch history."""
    import fastnn as fnn
    from fastnn.data import load

    out = sys.stdout if out is None else out
    args = resolve(args)
    if args.plot is not None:
        require_matplotlib()
    comm = ranks.communicator(args)
    if comm.rank != 0:
        out = ranks.Discard()
    data = load(args.data)
    with fnn.use(ranks.rank_device(args.backend, comm)) as device, thread_limit(args.threads):
        return _fit(args, data, device, out, comm)


def _fit(args, data, device, out, comm) -> History:
    import fastnn as fnn
    from fastnn import distributed as dist

    fnn.manual_seed(args.seed)
    model = build_model(args.model, data.input_shape, data.num_classes, args.dropout)
    optimizer = make_optimizer(args.optimizer, model.parameters(), args.lr)
    if comm.size > 1:
        dist.broadcast_parameters(model, comm)
        optimizer = dist.DistributedOptimizer(optimizer, comm)
    loader = make_loader(args, data, comm)
    schedule = make_schedule(args.schedule, optimizer, args.lr, args.epochs * len(loader))
    history, first_epoch = History(), 1
    if args.resume:
        first_epoch, history, schedule = restore_run(args.checkpoint, args, model, optimizer,
                                                     loader, schedule, CHOICES)
    # two short lines: one that wrapped in an 80-column terminal read as cut off
    print(f"training {args.model} on {args.data} ({len(data.x_train)} train, "
          f"{len(data.x_test)} held out) on {device}\n  {args.optimizer} lr {args.lr:g}, "
          f"batch {args.batch_size}, {'reverse/apply' if args.reverse else 'tape'}, "
          f"{'' if args.schedule == 'constant' else args.schedule + ' schedule, '}"
          f"seed {args.seed}{ranks.describe(comm)}", file=out)
    if first_epoch > args.epochs:
        print(f"checkpoint is at epoch {first_epoch - 1} >= --epochs {args.epochs}: "
              "nothing to train", file=out)
    progress = Progress(args.epochs, loader.num_samples(), stream=out)
    started, epoch, saved = time.perf_counter(), first_epoch - 1, None
    steps = _steps(args)
    try:
        for epoch in range(first_epoch, args.epochs + 1):
            _train_epoch(args, model, optimizer, data, loader, schedule, epoch, progress,
                         steps)
            if comm.size > 1:
                ranks.sum_over_ranks(progress, comm)
            test_acc = evaluate(model, data.x_test, data.y_test, device)
            history.loss.append(progress.loss)
            history.train_acc.append(progress.accuracy)
            history.test_acc.append(test_acc)
            if args.checkpoint is not None and comm.rank == 0:  # before the line is printed
                with held_interrupt():  # (the file and `saved` agree, whenever Ctrl-C comes)
                    save_run(args, (model, optimizer, loader, schedule), epoch, history,
                             CHOICES)
                    saved = epoch
            progress.end_epoch(f"held-out acc {test_acc:6.2%}")
    except KeyboardInterrupt:
        progress.close()
        # the whole note, printed once by fastnn.cli.main
        raise KeyboardInterrupt(interrupted_note(args, epoch, saved)) from None
    elapsed = time.perf_counter() - started
    final = history.test_acc[-1] if history.test_acc else evaluate(
        model, data.x_test, data.y_test, device)
    done = max(args.epochs, first_epoch - 1)
    print(f"held-out accuracy {final:.2%} ({round(final * len(data.x_test))}/"
          f"{len(data.x_test)}) after {done} epoch{'' if done == 1 else 's'}; "
          f"{elapsed:.1f} s", file=out)
    if saved is not None:
        print(f"saved checkpoint {args.checkpoint} (epoch {saved})", file=out)
    if args.plot is not None and comm.rank == 0:
        plot(history, args.plot, f"{args.model} on {args.data}")
        print(f"saved plot {args.plot}", file=out)
    return history


def make_loader(args, data, comm=None):
    """The training batches: epoch ``e`` shuffled with ``default_rng([seed, e])``; on N
    ranks this rank's shard of it, in batches of its part of the global batch."""
    from fastnn.data import DataLoader, TensorDataset

    size = 1 if comm is None else comm.size
    shard = None if size == 1 else (comm.rank, size)
    return DataLoader(TensorDataset(data.x_train, data.y_train),
                      batch_size=args.batch_size // size, shuffle=True, seed=args.seed,
                      shard=shard)


def _steps(args) -> tuple:
    """(tape step, reverse step): compiled with ``--compile`` (fnn.compile; one program per
    batch shape, so the last, shorter batch of an epoch has its own; data parallel too,
    the gradients' allreduce a call of the program). A step that cannot be captured runs
    eagerly, and fnn.compile says why once."""
    if not getattr(args, "compile", False):
        return tape_step, reverse_step
    import fastnn as fnn

    return (fnn.compile(tape_step, fullgraph=False),
            fnn.compile(reverse_step, fullgraph=False))


def _train_epoch(args, model, optimizer, data, loader, schedule, epoch: int, progress,
                 steps=(tape_step, reverse_step)) -> None:
    import fastnn as fnn

    progress.begin_epoch(epoch)
    if loader.epoch != epoch:  # a restored loader already stands at its epoch (and batch)
        loader.set_epoch(epoch)
    for x, y in loader:  # on the current device: fit's `with fnn.use(...)`
        if args.reverse:
            logits, loss = steps[1](model, optimizer, x, y, data.num_classes)
        else:
            logits, loss = steps[0](model, optimizer, x, y)
        if schedule is not None:
            schedule.step()
        with fnn.no_grad():  # counted on the device: no read-back per batch
            correct = (logits.argmax(axis=1) == y).sum()
        progress.update(x.shape[0], loss, correct)  # Progress sums it detached


def run(args) -> int:
    import fastnn as fnn
    from fastnn.data import MissingDataError
    from fastnn.distributed import abort_at_exit, abort_on_failure

    # on several ranks, one that fails ends the job instead of leaving the others waiting
    with abort_on_failure():
        try:
            fit(args)
        except (fnn.BackendError, MissingDataError) as exc:
            print(f"fastnn train: {exc}", file=sys.stderr)
            abort_at_exit(2)
            return 2
    return 0
