"""``fastnn conformance [--backend NAME]``: run the conformance suite against a backend.

The same as ``pytest -p fastnn.conformance.plugin --pyargs fastnn.conformance
--backend NAME``, with the project's own pytest configuration left out, and a
JSON report written by default; a run of the whole suite also writes the backend's
certificate for this device to the user's cache (:mod:`fastnn.api.certificates`) and
says where. Without ``--backend``, every available backend in
turn, each in its own process (one pytest run per process). Exit status: 0 when
every backend checked conforms.
"""

from __future__ import annotations

import os
import subprocess
import sys

PLUGIN = "fastnn.conformance.plugin"
# the suite runs on pytest and draws random inputs with hypothesis; neither is a core dependency
NEEDS = {"pytest": "pytest>=7", "hypothesis": "hypothesis>=6"}
INSTALL_HINT = ("pip install -e '.[conformance]' in a checkout of the fastnn repository "
                "(or: pip install {requirements})")
SUITE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "conformance")


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "conformance", help="run the conformance suite against a backend (default: each "
        "available one) and print a table", description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default=None,
                        help="backend name (see `fastnn info`; default: every available one)")
    parser.add_argument("--examples", type=int, default=None,
                        help="hypothesis examples per randomised test (default 10)")
    parser.add_argument("--report", default=None, metavar="PATH",
                        help="JSON report path (default conformance-NAME.json; '-' for none)")
    parser.add_argument("--certificate", default=None, metavar="PATH",
                        help="where to write the certificate of a whole-suite run (default: "
                             "the user's cache, FASTNN_CACHE overrides; '-' for none)")
    parser.add_argument("--xfail", default=None, metavar="PATH",
                        help="an extra xfail file (the backend's own is read automatically)")
    parser.add_argument("--against", default=None, metavar="NAMES",
                        help="comma-separated backends to cross-check with (default: all "
                             "available; 'none' to skip)")
    parser.add_argument("-k", default=None, metavar="EXPR", help="pytest -k expression")
    parser.add_argument("-v", "--verbose", action="store_true", help="one line per check")
    parser.set_defaults(func=run)


def pytest_args(args) -> list:
    """The pytest command line that runs the suite for these CLI arguments."""
    argv = ["-p", PLUGIN, "--pyargs", "fastnn.conformance", "--backend", args.backend,
            # the suite's own settings, not the current project's pytest.ini/pyproject
            # rootdir = the suite's folder, so that test ids name real files
            "-c", os.devnull, "--rootdir", SUITE_DIR,
            "-p", "no:cacheprovider", "-v" if args.verbose else "-q", "--tb=short"]
    report = args.report or f"conformance-{args.backend}.json"
    if report != "-":
        argv += ["--conformance-report", report]
    if args.examples is not None:
        argv += ["--conformance-examples", str(args.examples)]
    if args.xfail:
        argv += ["--conformance-xfail", args.xfail]
    if getattr(args, "certificate", None):
        argv += ["--conformance-certificate", args.certificate]
    if args.against:
        argv += ["--conformance-against", args.against]
    if args.k:
        argv += ["-k", args.k]
    return argv


def missing_requirements() -> list:
    """The suite's requirements (pip specifiers) that are not installed."""
    import importlib.util

    missing = []
    for module, requirement in NEEDS.items():
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(requirement)
    return missing


def run(args) -> int:
    missing = missing_requirements()
    if missing:
        quoted = " ".join(f'"{r}"' for r in missing)
        print(f"fastnn conformance: the conformance suite needs {' and '.join(missing)}, "
              f"not installed here; install with: {INSTALL_HINT.format(requirements=quoted)}",
              file=sys.stderr)
        return 2
    if args.backend is None:
        return run_each(args)
    import pytest

    code = int(pytest.main(pytest_args(args)))
    sys.stdout.flush()
    return code


def run_each(args) -> int:
    """The suite on every available backend, one process each; a line per backend at the
    end. Returns the first non-zero exit status, or 0."""
    import fastnn as fnn

    names = [record.name for record in fnn.backends() if record.available]
    if not names:
        print("fastnn conformance: no available backend to check; see `fastnn info`",
              file=sys.stderr)
        return 2
    if args.report not in (None, "-") and len(names) > 1:
        print(f"fastnn conformance: --report {args.report} names one file for "
              f"{len(names)} backends ({', '.join(names)}); give --backend NAME, or leave "
              "--report out (each writes conformance-NAME.json)", file=sys.stderr)
        return 2
    print(f"fastnn conformance: checking {', '.join(names)} (--backend NAME checks one)")
    sys.stdout.flush()
    codes = {name: subprocess.run(one_backend_argv(args, name)).returncode for name in names}
    print("\n" + "\n".join(f"{name}: {'conforms' if code == 0 else f'FAILED (exit {code})'}"
                            for name, code in codes.items()))
    return next((code for code in codes.values() if code != 0), 0)


def one_backend_argv(args, name: str) -> list:
    """The command line of ``fastnn conformance`` for backend ``name`` with ``args``' other
    options."""
    argv = [sys.executable, "-m", "fastnn.cli", "conformance", "--backend", name]
    for option, value in (("--examples", args.examples), ("--report", args.report),
                          ("--certificate", getattr(args, "certificate", None)),
                          ("--xfail", args.xfail), ("--against", args.against), ("-k", args.k)):
        if value is not None:
            argv += [option, str(value)]
    return argv + (["-v"] if args.verbose else [])
