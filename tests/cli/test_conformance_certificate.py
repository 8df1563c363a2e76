"""`fastnn conformance --backend NAME` writes a certificate only for a whole-suite run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from fastnn.api import certificates, registry
from tests.fake_backends import forget
from tests.shadowing import faulty

ROOT = Path(__file__).resolve().parents[2]


def _conformance(tmp_path, backend, *extra, pythonpath=()):
    path = [*pythonpath, str(ROOT), os.environ.get("PYTHONPATH", "")]
    env = dict(os.environ, FASTNN_CACHE=str(tmp_path / "cache"), PYTHONPATH=os.pathsep.join(path))
    argv = [sys.executable, "-m", "fastnn.cli", "conformance", "--backend", backend, "--report",
            "-", "--against", "none", *extra]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=1200,
                          cwd=tmp_path)


class _Reporter:
    def __init__(self, deselected=()):
        self.stats = {"deselected": list(deselected)} if deselected else {}
        self.lines = []

    def write_line(self, line):
        self.lines.append(line)


def _config(**options):
    values = {"keyword": "", "markexpr": "", "--conformance-certificate": None, **options}
    return SimpleNamespace(getoption=lambda name, default=None: values.get(name, default))


@pytest.mark.parametrize("options, deselected, why", [
    ({"keyword": "exp"}, (), "only part of the suite ran (-k 'exp')"),
    ({"markexpr": "not slow"}, (), "only part of the suite ran (-m 'not slow')"),
    ({}, ("x",), "only part of the suite ran (deselection)"),
    ({"--conformance-certificate": "-"}, (), "--conformance-certificate -"),
])
def test_a_narrowed_run_writes_no_certificate(tmp_path, monkeypatch, options, deselected, why):
    from fastnn.conformance import plugin

    monkeypatch.setenv("FASTNN_CACHE", str(tmp_path))
    reporter = _Reporter(deselected)
    plugin._certify(reporter, _config(**options), None, {})
    assert reporter.lines == [f"no conformance certificate written: {why}"]
    assert not any(tmp_path.iterdir())


def test_a_whole_run_writes_where_it_says(tmp_path, monkeypatch):
    from fastnn.api.device import as_device
    from fastnn.conformance import plugin

    monkeypatch.setenv("FASTNN_CACHE", str(tmp_path))
    state = SimpleNamespace(record=registry.get_backend("cpu").record, device=as_device("cpu"))
    reporter = _Reporter()
    plugin._certify(reporter, _config(), state, {"passed": True, "counts": {"pass": 1}})
    path = certificates.path_for(state.record)
    assert reporter.lines[0].startswith(f"conformance certificate written to {path}")
    assert certificates.status(state.record)[0] == "conforms"


@pytest.mark.slow
def test_a_whole_run_certifies_the_backend(tmp_path, monkeypatch):
    name = faulty.install(tmp_path, "healthy")
    try:
        done = _conformance(tmp_path, name, "--examples", "1",
                            pythonpath=[str(tmp_path / name)])
        assert done.returncode == 0, done.stdout[-3000:]
        monkeypatch.setenv("FASTNN_CACHE", str(tmp_path / "cache"))
        record = registry.get_backend(name).record
        path = certificates.path_for(record)
        assert f"conformance certificate written to {path}" in done.stdout
        kind, text = certificates.status(record)
        assert kind == "conforms", text
    finally:
        forget()
