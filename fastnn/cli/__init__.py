"""The ``fastnn`` command: one subcommand per module in this package.

Each subcommand module defines ``add_parser(subparsers)`` (which registers its
arguments and sets ``func``) and is listed in ``SUBCOMMANDS``.
"""

from __future__ import annotations

import argparse
import importlib
import sys

SUBCOMMANDS = ("train", "info", "bench", "conformance")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fastnn", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
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
        return int(args.func(args) or 0)
    except KeyboardInterrupt as exc:
        # a subcommand that ended its own output line passes its whole note (one note:
        # `fastnn train` printed one of its own as well before)
        print(exc.args[0] if exc.args else "\ninterrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
