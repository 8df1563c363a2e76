"""The pytest plugin that runs the conformance suite against one backend.

Run it with::

    pytest -p fastnn.conformance.plugin --pyargs fastnn.conformance --backend NAME
    fastnn conformance --backend NAME          # the same, plus a JSON report

Options: ``--backend NAME`` (required), ``--conformance-examples N``
(hypothesis examples per randomised test, default 10),
``--conformance-report PATH`` (write the JSON report there),
``--conformance-xfail PATH`` (an extra xfail file). The plugin parametrises
the suite's tests by case, dtype and other backend, marks the backend's
expected failures, records which hooks each check reached, and ends the run
with the primitive x dtype table (see :mod:`fastnn.conformance.report`).
"""

from __future__ import annotations

import zlib
from importlib.metadata import entry_points

import numpy as np
import pytest

from fastnn.api import dtypes, registry
from fastnn.conformance import layers, options
from fastnn.conformance import report as report_mod
from fastnn.conformance.cases import CASES
from fastnn.conformance.harness import recording
from fastnn.conformance.xfail import XfailList

STATE = pytest.StashKey()
USED = pytest.StashKey()
INFO = pytest.StashKey()
DEFAULT_EXAMPLES = options.DEFAULT_EXAMPLES
_RESULTS: list[dict] = []  # one entry per finished check, for the table (reset per session)


def pytest_addoption(parser):
    # Normally the light entry-point plugin (fastnn.conformance.options) has added
    # these already; with plugin autoloading disabled, `-p` on this module does.
    try:
        options.add_options(parser)
    except ValueError:
        pass


class State:
    """What the suite knows about the backend under test."""

    def __init__(self, config):
        from fastnn.api.device import as_device

        name = config.getoption("--backend")
        if not name:
            installed = ", ".join(sorted(ep.name for ep in entry_points(group=registry.GROUP)))
            raise pytest.UsageError(
                f"the fastnn conformance suite needs --backend NAME; installed backends: "
                f"{installed or 'none'}")
        try:
            backend = registry.get_backend(name)
        except Exception as exc:
            raise pytest.UsageError(f"cannot check backend {name!r}: {exc}") from None
        self.name = name
        self.record = backend.record
        self.device = as_device(name)
        self.implemented = sorted(backend.implemented)
        # float32 is required of every backend, listed or not; the others where listed
        self.dtypes = [d for d in ("float32", "float64", "float16", "bfloat16")
                       if d == "float32" or d in self.record.dtypes]
        if "bfloat16" in self.dtypes:  # NumPy's (ml_dtypes'), for the inputs and references
            dtypes.numpy_bfloat16()
        self.others = self._others(config.getoption("--conformance-against"))
        self.xfail = XfailList.for_backend(name, config.getoption("--conformance-xfail"))
        self.examples = config.getoption("--conformance-examples")

    def _others(self, against: str | None) -> list:
        available = [r.name for r in registry.backends() if r.available and r.name != self.name]
        if against is None:
            return available
        wanted = [n.strip() for n in against.split(",") if n.strip() and n.strip() != "none"]
        for other in wanted:
            try:
                registry.get_backend(other)
            except Exception as exc:
                raise pytest.UsageError(f"--conformance-against {other}: {exc}") from None
        return [n for n in wanted if n != self.name]


def pytest_configure(config):
    config.addinivalue_line("markers", "conformance_cases(kind): which cases a test runs on")
    config.addinivalue_line("markers", "conformance_row(name): the report row of a test that "
                                       "checks no single case (threads, integer semantics)")
    _RESULTS.clear()
    if config.getoption("--backend", None) is not None:
        config.stash[STATE] = State(config)
        # edge cases overflow and divide by zero on purpose; results are checked instead
        config.addinivalue_line("filterwarnings", "ignore::RuntimeWarning")


def _state(config) -> State:
    if STATE not in config.stash:
        raise pytest.UsageError("the fastnn conformance suite needs --backend NAME")
    return config.stash[STATE]


def _select(kind: str):
    cases = list(CASES.values())
    if kind == "run":
        return [c for c in cases if not c.custom]
    if kind == "diff":
        return [c for c in cases if c.differentiable]
    if kind == "fd":
        return [c for c in cases if c.differentiable and c.grad_check == "both"]
    return cases


def pytest_generate_tests(metafunc):
    if "layer_spec" in metafunc.fixturenames:
        state = _state(metafunc.config)
        found = layers.specs() or [None]
        metafunc.parametrize("layer_spec", found, ids=[s[0] if s else "none" for s in found])
        metafunc.parametrize("dtype", [d for d in state.dtypes
                                       if d not in ("float16", "bfloat16")])
        return
    if "case" not in metafunc.fixturenames:
        return
    state = _state(metafunc.config)
    marker = metafunc.definition.get_closest_marker("conformance_cases")
    cases = _select(marker.args[0] if marker else "all")
    metafunc.parametrize("case", cases, ids=[c.name for c in cases])
    if "dtype" in metafunc.fixturenames:
        metafunc.parametrize("dtype", state.dtypes)
    if "other_name" in metafunc.fixturenames:
        others = state.others or [None]
        metafunc.parametrize("other_name", others, ids=[str(o) for o in others])


def pytest_collection_modifyitems(config, items):
    if STATE not in config.stash:
        return
    state = config.stash[STATE]
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        case = params.get("case")
        if case is None and params.get("layer_spec") is not None:
            item.stash[INFO] = {"primitive": "nn." + params["layer_spec"][0], "check": "layer",
                                "dtype": params["dtype"], "other": None}
            continue
        row = item.get_closest_marker("conformance_row")
        if case is None and row is not None:
            dtype = params.get("dtype", "float32")
            item.stash[INFO] = {"primitive": row.args[0], "dtype": dtype, "other": None,
                                "check": item.originalname.removeprefix("test_")}
            reason = state.xfail.reason(row.args[0], dtype)
            if reason is not None:
                item.add_marker(pytest.mark.xfail(reason=f"listed in {reason}", strict=False))
            continue
        if case is None:
            continue
        dtype = params.get("dtype", "float64")
        info = {"primitive": case.name, "dtype": dtype, "check": item.originalname.removeprefix(
            "test_"), "other": params.get("other_name")}
        item.stash[INFO] = info
        reason = state.xfail.reason(case.name, dtype)
        if reason is not None:
            item.add_marker(pytest.mark.xfail(reason=f"listed in {reason}", strict=False))


@pytest.fixture
def device(request):
    """The device under test; records every hook the test reaches."""
    state = _state(request.config)
    used = request.node.stash.setdefault(USED, set())
    with recording(state.device.ops, used):
        yield state.device


@pytest.fixture
def other(request, other_name):
    """Another available backend's device (for cross-backend agreement)."""
    if other_name is None:
        pytest.skip("cross-backend agreement needs a second available backend")
    from fastnn.api.device import as_device

    dev = as_device(other_name)
    used = request.node.stash.setdefault(USED, set())
    with recording(dev.ops, used):
        yield dev


@pytest.fixture
def rng(request):
    """A generator seeded from the test id: every run draws the same inputs."""
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


@pytest.fixture
def examples(request):
    return _state(request.config).examples


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    info = item.stash.get(INFO, None)
    if info is None or STATE not in item.config.stash:
        return
    # a check skipped in setup (no second backend to cross-check with) is counted too,
    # so that the summary says what was not checked
    if call.when == "call" or (call.when == "setup" and (report.failed or report.skipped)):
        used = sorted(item.stash.get(USED, set()))
        state = item.config.stash[STATE]
        listed = [u for u in used if u != info["primitive"]
                  and state.xfail.reason(u, info["dtype"]) is not None]
        if report.failed and listed:
            # a failure inherited from a primitive the backend declares broken
            report.outcome = "skipped"
            report.wasxfail = f"reached {', '.join(listed)}, listed in the xfail file"
        report.user_properties.append(("conformance", dict(info, used=used)))


def pytest_runtest_logreport(report):
    props = dict(report.user_properties).get("conformance")
    if props is None or (report.when != "call" and not (report.failed or report.skipped)):
        return
    if hasattr(report, "wasxfail"):
        outcome = "xpass" if report.passed else "xfail"
    else:
        outcome = report.outcome if report.outcome != "passed" else "pass"
        outcome = {"failed": "fail", "skipped": "skip"}.get(outcome, outcome)
    message = ""
    if report.failed:
        message = str(getattr(report.longrepr, "reprcrash", None) and
                      report.longrepr.reprcrash.message or report.longreprtext)[:2000]
    _RESULTS.append(dict(props, outcome=outcome, nodeid=report.nodeid, message=message))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if STATE not in config.stash or not _RESULTS:
        return
    state = config.stash[STATE]
    summary = report_mod.build(state, _RESULTS)
    terminalreporter.write_sep("=", f"fastnn conformance: backend {state.name!r}")
    for line in report_mod.table_lines(summary):
        terminalreporter.write_line(line)
    path = config.getoption("--conformance-report")
    if path:
        report_mod.write_json(summary, path)
        terminalreporter.write_line(f"JSON report written to {path}")
    _certify(terminalreporter, config, state, summary)


def _certify(terminalreporter, config, state, summary) -> None:
    """Record the run as the backend's certificate on this device, if it was the whole
    suite (a run narrowed with -k, -m or deselection proves too little)."""
    from fastnn.api import certificates

    narrowed = [f"-{flag} {value!r}" for flag, value in
                (("k", config.getoption("keyword", "")), ("m", config.getoption("markexpr", "")))
                if value] + (["deselection"] if terminalreporter.stats.get("deselected") else [])
    if narrowed or config.getoption("--conformance-certificate") == "-":
        why = f"only part of the suite ran ({', '.join(narrowed)})" if narrowed else \
            "--conformance-certificate -"
        terminalreporter.write_line(f"no conformance certificate written: {why}")
        return
    path = certificates.write(state.record, summary, state.device.index,
                              config.getoption("--conformance-certificate"))
    terminalreporter.write_line(f"conformance certificate written to {path} (fnn.backends() "
                                f"and `fastnn info` show it)")
