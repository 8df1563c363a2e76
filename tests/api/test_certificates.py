"""Conformance certificates: written, shown, invalidated, checked for corruption, and the
warning of fnn.use exactly once."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import pytest

import fastnn as fnn
from fastnn.api import certificates, registry
from fastnn.api.device import as_device
from fastnn.cli import main
from tests.fake_backends import forget
from tests.shadowing import faulty

PASSED = {"dtypes": ["float32", "float64"], "counts": {"pass": 120, "xfail": 1},
          "passed": True, "failures": [],
          "cells": {"exp": {"float32": "pass", "float64": "xfail"}}}
FAILED = {"dtypes": ["float32"], "counts": {"pass": 100, "fail": 3}, "passed": False,
          "failures": [{"primitive": "exp", "dtype": "float32", "check": "forward",
                        "nodeid": "test_forward.py::x", "message": "..."}] * 3, "cells": {}}


@pytest.fixture
def backend(tmp_path, monkeypatch):
    """A fresh throw-away backend, an empty cache, and no blanket trust."""
    monkeypatch.setenv("FASTNN_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("FASTNN_TRUST", raising=False)
    monkeypatch.delenv("FASTNN_STRICT", raising=False)
    name = faulty.install(tmp_path, "healthy")
    certificates._checked.clear()
    yield registry.get_backend(name).record
    certificates._checked.clear()
    forget()


def _status(record):
    return certificates.status(record)


def test_a_certificate_is_written_to_the_cache_and_shown(backend, capsys):
    path = certificates.write(backend, PASSED)
    assert path.parent == certificates.cache_dir() / "certificates"
    body = json.loads(path.read_text())
    for key in ("backend", "distribution", "backend_version", "driver", "device",
                "fastnn_version", "suite", "dtypes", "counts", "failures", "xfails", "date",
                "sha256"):
        assert key in body, key
    assert body["backend_version"] == "0.1" and body["xfails"] == ["exp float64"]
    kind, text = _status(backend)
    assert kind == "conforms"
    assert text.startswith(f"conforms (fastnn {fnn.__version__}, suite "
                           f"{certificates.suite_hash()}, ")
    record = next(r for r in fnn.backends() if r.name == backend.name)
    assert record.certificates == [text]
    assert main(["info"]) == 0
    assert f"{backend.name}:0: {text}" in capsys.readouterr().out


def test_a_failed_run_and_no_run_are_shown_as_such(backend):
    assert _status(backend) == ("none", "not certified on this device")
    certificates.write(backend, FAILED)
    kind, text = _status(backend)
    assert kind == "failed" and text.startswith("failed 3 checks")


@pytest.mark.parametrize("change", ["backend_version", "fastnn_version", "suite", "driver"])
def test_each_kind_of_version_change_invalidates(backend, monkeypatch, change):
    certificates.write(backend, PASSED)
    now = certificates.identity(backend)
    changed = dict(now, **{change: "9.9-changed"})
    monkeypatch.setattr(certificates, "identity", lambda record, index=0: changed)
    kind, text = _status(backend)
    assert kind == "outdated" and "9.9-changed" in text and str(now[change]) in text


def test_another_device_is_not_certified(backend, monkeypatch):
    certificates.write(backend, PASSED)
    monkeypatch.setattr(backend, "devices", ["another device"])
    assert _status(backend)[0] == "none"


def test_a_certificate_edited_or_cut_short_is_corrupt(backend):
    path = certificates.write(backend, FAILED)
    body = json.loads(path.read_text())
    body["passed"] = True  # an edit that does not redo the seal
    path.write_text(json.dumps(body))
    kind, text = _status(backend)
    assert kind == "corrupt" and "does not match its sha256" in text
    path.write_text(path.read_text()[:40])
    assert _status(backend)[0] == "corrupt"


def test_a_certificate_shipped_in_the_backend_package(backend):
    folder = Path(faulty.module(backend.name).__file__).parent / certificates.FOLDER
    try:
        certificates.write(backend, PASSED, path=folder / "cert.json")
        assert _status(backend)[0] == "conforms"
        assert not certificates.path_for(backend).exists()  # not from the cache
    finally:
        shutil.rmtree(folder)


def test_use_warns_exactly_once_without_a_certificate(backend):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            fnn.use(backend.name)
            with fnn.use(backend.name):
                pass
        fnn.use("cpu")  # the default backend is trusted
    mine = [w for w in caught if issubclass(w.category, fnn.UncertifiedBackendWarning)]
    assert len(mine) == 1
    assert f"fastnn conformance --backend {backend.name}" in str(mine[0].message)
    assert mine[0].filename == __file__


def test_use_is_silent_with_a_passing_certificate_or_trust(backend, monkeypatch):
    certificates.write(backend, PASSED)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fnn.use(backend.name)
        certificates._checked.clear()
        certificates.write(backend, FAILED)
        monkeypatch.setenv("FASTNN_TRUST", f"other,{backend.name}")
        fnn.use(backend.name)
    fnn.use("cpu")


def test_strict_makes_it_an_error(backend, monkeypatch):
    monkeypatch.setenv("FASTNN_STRICT", "1")
    with pytest.raises(fnn.BackendError, match="no passing conformance certificate"):
        fnn.use(backend.name)
    with pytest.raises(fnn.BackendError):  # every time, not once
        fnn.use(backend.name)
    certificates.write(backend, PASSED)
    fnn.use(backend.name)
    assert as_device(backend.name) == fnn.get_device()
    fnn.use("cpu")


def test_the_cache_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("FASTNN_CACHE", str(tmp_path))
    assert certificates.cache_dir() == tmp_path
    monkeypatch.delenv("FASTNN_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(certificates.sys, "platform", "linux")
    assert certificates.cache_dir() == tmp_path / "xdg" / "fastnn"
