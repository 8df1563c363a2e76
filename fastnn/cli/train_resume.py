"""``fastnn train``'s checkpoints: what a run saves after each epoch (model, optimizer,
data order, schedule, host generator, history) and how ``--resume`` restores it, so that
a resumed run continues bit-for-bit."""

from __future__ import annotations

import contextlib
import signal
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fastnn.cli.train_state import make_schedule, rng_state, set_rng_state


@dataclass
class History:
    """Per-epoch training loss, training accuracy and held-out accuracy."""

    loss: list = field(default_factory=list)
    train_acc: list = field(default_factory=list)
    test_acc: list = field(default_factory=list)

    def as_arrays(self) -> dict:
        return {k: np.asarray(v, dtype=np.float64) for k, v in vars(self).items()}

    @classmethod
    def from_arrays(cls, state: dict) -> History:
        return cls(**{k: [float(v) for v in np.ravel(state[k])] for k in vars(cls())})



def save_run(args, run: tuple, epoch: int, history: History, choices: dict) -> None:
    """Checkpoint the run (model, optimizer, loader, schedule) after ``epoch`` (fnn.save is
    atomic: a Ctrl-C during the write leaves the previous epoch's file). The data order,
    the schedule and the host generator (Dropout's masks) go in too, so --resume continues
    bit-for-bit."""
    import fastnn as fnn
    from fastnn.ops.tensor import host_rng

    model, optimizer, loader, schedule = run
    fnn.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
              "epoch": epoch, "seed": args.seed, "config": run_config(args, choices),
              "history": history.as_arrays(), "data": loader.state_dict(),
              "rng": rng_state(host_rng()),
              **({} if schedule is None else {"schedule": schedule.state_dict()})},
             args.checkpoint)


@contextlib.contextmanager
def held_interrupt():
    """Ctrl-C inside the block is held until the block ends, then raised: a checkpoint
    written and the count of epochs it holds agree whenever Ctrl-C comes (one that came
    after the file was replaced but before the count was set had the note say one epoch
    fewer than the file held). Outside the main thread, where no signal handler can be
    set, the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT,
                      signal.default_int_handler if previous is None else previous)
    if caught:
        raise KeyboardInterrupt


def interrupted_note(args, epoch: int, saved: int | None) -> str:
    """What a Ctrl-C in ``epoch`` kept, and how to go on."""
    if args.checkpoint is None:
        return f"interrupted in epoch {epoch}; nothing saved (--checkpoint PATH keeps epochs)"
    if saved is None:
        return f"interrupted in epoch {epoch}; {args.checkpoint} was not written"
    return (f"interrupted in epoch {epoch}; {args.checkpoint} holds the first {saved} "
            f"epoch{'' if saved == 1 else 's'} (continue with --resume)")


def run_config(args, choices: dict) -> dict:
    """The choices a resumed run must repeat, as numbers (checkpoints hold no strings):
    each option's index in ``choices[option]``."""
    return {**{key: names.index(getattr(args, key)) for key, names in choices.items()},
            "dropout": args.dropout, "epochs": args.epochs}


def restore_run(path: Path, args, model, optimizer, loader, schedule, choices: dict):
    """Load the checkpoint into the run; returns (first epoch, history, schedule)."""
    import fastnn as fnn
    from fastnn.ops.tensor import host_rng

    try:
        state = fnn.load(path)
    except ValueError as exc:
        raise SystemExit(f"fastnn train: --resume: {exc}") from None
    for key in ("model", "optimizer", "epoch", "config"):
        if key not in state:
            raise SystemExit(f"fastnn train: {path} is not a `fastnn train` checkpoint "
                             f"(no {key!r} entry)")
    for key, names in choices.items():
        saved = names[int(state["config"].get(key, 0))]  # older checkpoints: constant
        if saved != getattr(args, key):
            raise SystemExit(f"fastnn train: {path} was saved with --{key} {saved}; resume "
                             f"with the same --{key} (got {getattr(args, key)})")
    saved_dropout = float(state["config"].get("dropout", 0.0))
    if saved_dropout != args.dropout:
        raise SystemExit(f"fastnn train: {path} was saved with --dropout {saved_dropout:g}; "
                         f"resume with the same --dropout (got {args.dropout:g})")
    try:
        model.load_state_dict(state["model"])
    except ValueError as exc:
        raise SystemExit(f"fastnn train: {path} was saved from another model "
                         f"(use the same --data/--model): {exc}") from None
    optimizer.load_state_dict(state["optimizer"])
    if "data" in state:
        loader.load_state_dict(state["data"])
    if schedule is not None and "schedule" in state:
        schedule = resume_schedule(args, optimizer, schedule, state, len(loader))
    if "rng" in state:  # Dropout's masks and every other draw continue where they stopped
        set_rng_state(host_rng(), state["rng"])
    history = History.from_arrays(state["history"]) if "history" in state else History()
    return int(np.asarray(state["epoch"])) + 1, history, schedule


def resume_schedule(args, optimizer, schedule, state, steps_per_epoch: int):
    """The schedule where the checkpoint left it: exactly, when the run keeps its --epochs;
    else the schedule over the new total, advanced to the same step (a longer run does not
    continue from a cosine that already reached zero)."""
    saved_epochs = int(np.asarray(state["config"].get("epochs", -1)))
    if saved_epochs == args.epochs:
        schedule.load_state_dict(state["schedule"])
        return schedule
    for group in optimizer.param_groups:
        group["lr"] = group["initial_lr"]
    schedule = make_schedule(args.schedule, optimizer, args.lr, args.epochs * steps_per_epoch)
    for _ in range(int(np.asarray(state["schedule"]["last_epoch"]))):
        schedule.step()
    return schedule
