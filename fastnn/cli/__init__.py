"""fastnn: train a model on a real data set, list the installed backends and their devices,
time them side by side, and run the conformance suite against one or all of them.

Each subcommand is one module in this package that defines ``add_parser(subparsers)``
(which registers its arguments and sets ``func``) and is listed in ``SUBCOMMANDS``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import textwrap

SUBCOMMANDS = ("train", "info", "bench", "conformance")
EXAMPLES = """examples:
  fastnn train                          an MLP on scikit-learn's digits, ~97% in ~1 s
  fastnn info                           backends, devices, and why one is unavailable
  fastnn bench                          side-by-side timings of the available backends
  fastnn conformance --backend opencl   check a backend against the conformance suite

`fastnn COMMAND --help` describes each command's options."""


def int_at_least(low: int):
    """An argparse ``type``: an integer >= ``low``, or argparse's usage error that says so
    (``--seed -1`` reached manual_seed and ended in a traceback)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer >= {low}, got {text!r}") \
                from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be an integer >= {low}, got {value}")
        return value

    return parse


def build_parser() -> argparse.ArgumentParser:
    import fastnn

    parser = argparse.ArgumentParser(
        prog="fastnn", description=textwrap.fill(" ".join(__doc__.split("\n\n")[0].split()), 78),
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"fastnn {fastnn.__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in SUBCOMMANDS:
        try:
            module = importlib.import_module(f"fastnn.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"fastnn.cli.{name}":
                raise
            continue
        module.add_parser(sub)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        return code
    except KeyboardInterrupt as exc:
        # a subcommand that ended its own output line passes its whole note (one note:
        # `fastnn train` printed one of its own as well before)
        print(exc.args[0] if exc.args else "\ninterrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return _reader_went_away()


def _reader_went_away() -> int:
    """`fastnn train | head`: the reader closed the pipe. Stop quietly, as Unix tools do,
    following Python's recipe (the signal module's "Note on SIGPIPE"): point stdout at
    devnull so that the flush at exit does not raise again, and exit 1, as Python does."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout without a file descriptor (a test's capture)
        pass
    return 1


if __name__ == "__main__":
    sys.exit(main())
