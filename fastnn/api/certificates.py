"""Conformance certificates: what ``fastnn conformance --backend NAME`` proved, kept.

A certificate is a JSON file recording one run of the whole conformance suite on one
backend and device: the backend's distribution and version, the library it wraps
(``record.version``), the fastnn version, the device's description, the dtypes, the
counts, the failures and expected failures, the suite's version hash (of its
sources) and the date, sealed with a SHA-256 of its own content. It lives in the
user's cache (``FASTNN_CACHE``, else the platform's cache folder) under
``certificates/``; a backend may also ship some in its package, in a folder named
``fastnn_certificates``.

A certificate counts only for the backend version, fastnn version, suite and device it
names: any change makes it outdated. The seal is an integrity check against a file cut
short or edited by hand, not a security boundary: anyone who can write the file can
write a valid seal.

``fnn.use(name)`` warns once per backend and device without a passing certificate
(:class:`UncertifiedBackendWarning`); ``FASTNN_STRICT=1`` makes that an error and
``FASTNN_TRUST=name[,name...]`` (or ``*``) silences it. fastnn's own NumPy backend, the
default, is trusted without one: its conformance is checked by fastnn's own tests.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import sys
import threading
import warnings
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from fastnn.api.errors import BackendError

FORMAT = 1
FOLDER = "fastnn_certificates"  # inside a backend's package: certificates it ships
# the default backend, when it is fastnn's own distribution: trusted without a certificate
TRUSTED = {"cpu": "fastnn-backend-cpu"}
_SUITE = Path(__file__).resolve().parent.parent / "conformance"
_lock = threading.Lock()
_checked: set = set()


class UncertifiedBackendWarning(UserWarning):
    """``fnn.use`` of a backend with no passing conformance certificate for this fastnn
    version and device (see :mod:`fastnn.api.certificates`)."""


def cache_dir() -> Path:
    """fastnn's per-user cache: ``FASTNN_CACHE``, else the platform's cache folder."""
    if os.environ.get("FASTNN_CACHE"):
        return Path(os.environ["FASTNN_CACHE"])
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local"
        return Path(base) / "fastnn" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "fastnn"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "fastnn"


@lru_cache(maxsize=1)
def suite_hash() -> str:
    """The conformance suite's version: a hash of its source files (names and bytes)."""
    digest = hashlib.sha256()
    for path in sorted(_SUITE.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


@lru_cache(maxsize=1)
def fastnn_version() -> str:
    try:
        return version("fastnn-core")
    except PackageNotFoundError:
        return getattr(sys.modules.get("fastnn"), "__version__", "unknown")


def identity(record, index: int = 0) -> dict:
    """What a certificate of backend ``record``'s device ``index`` must match today."""
    devices = list(record.devices)
    return {
        "backend": record.name,
        "distribution": record.distribution,
        "backend_version": record.distribution_version,
        "driver": record.version,  # the library under the backend: numpy, pyopencl, cupy
        "device_index": index,
        "device": devices[index] if index < len(devices) else "",
        "fastnn_version": fastnn_version(),
        "suite": suite_hash(),
    }


def _seal(body: dict) -> str:
    text = json.dumps({k: v for k, v in body.items() if k != "sha256"}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def path_for(record, index: int = 0) -> Path:
    """Where this machine keeps the certificate of ``record``'s device ``index``."""
    device = hashlib.sha256(identity(record, index)["device"].encode()).hexdigest()[:10]
    return cache_dir() / "certificates" / f"{record.name}-{index}-{device}.json"


def make(record, summary: dict, index: int = 0) -> dict:
    """The sealed certificate of a whole-suite run (``summary``: the conformance report)."""
    body = dict(identity(record, index), format=FORMAT,
                date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                dtypes=list(summary.get("dtypes", [])), counts=dict(summary.get("counts", {})),
                passed=bool(summary.get("passed")),
                failures=[{k: f.get(k) for k in ("primitive", "dtype", "check", "nodeid")}
                          for f in summary.get("failures", [])],
                xfails=sorted({f"{name} {dtype}" for name, row in summary.get("cells", {}).items()
                               for dtype, cell in row.items() if cell == "xfail"}))
    body["sha256"] = _seal(body)
    return body


def write(record, summary: dict, index: int = 0, path=None) -> Path:
    """Write the certificate of this run (atomically) and return where."""
    path = Path(path) if path is not None else path_for(record, index)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(make(record, summary, index), indent=1))
    os.replace(tmp, path)
    with _lock:
        _checked.clear()  # fnn.use asks again
    return path


def _shipped(record) -> list:
    """Certificates a backend's package ships in its ``fastnn_certificates`` folder."""
    if not record.package_dir:
        return []
    folder = Path(record.package_dir) / FOLDER
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def _read(path: Path):
    """(certificate, None) or (None, why it is unusable)."""
    try:
        body = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        return None, f"corrupt ({path}: {type(exc).__name__})"
    if not isinstance(body, dict) or body.get("sha256") != _seal(body):
        return None, f"corrupt ({path}: its content does not match its sha256)"
    return body, None


def _outdated(body: dict, now: dict) -> str:
    names = {"backend_version": "backend version", "driver": "driver",
             "fastnn_version": "fastnn version", "suite": "conformance suite"}
    changed = [f"{label} {body.get(key)} -> {now[key]}" for key, label in names.items()
               if body.get(key) != now[key]]
    return ", ".join(changed)


def status(record, index: int = 0) -> tuple[str, str]:
    """(kind, text) of backend ``record``'s device ``index``: kind is "conforms",
    "failed", "outdated", "corrupt", "trusted" or "none"."""
    now = identity(record, index)
    found = []
    for path in [path_for(record, index)] + _shipped(record):
        if not path.exists():
            continue
        body, problem = _read(path)
        if problem:
            found.append(("corrupt", problem))
            continue
        if (body.get("backend"), body.get("device")) != (record.name, now["device"]):
            continue
        changed = _outdated(body, now)
        if changed:
            found.append(("outdated", f"outdated certificate ({changed}): run fastnn "
                                      f"conformance --backend {record.name}"))
        elif body.get("passed"):
            xfails = len(body.get("xfails", []))
            extra = f"; {xfails} expected failure{'s' * (xfails != 1)}" if xfails else ""
            found.append(("conforms", f"conforms (fastnn {body['fastnn_version']}, suite "
                                      f"{body['suite']}, {body['date'][:10]}{extra})"))
        else:
            failed = body.get("counts", {}).get("fail", len(body.get("failures", [])))
            found.append(("failed", f"failed {failed} checks (fastnn {body['fastnn_version']}, "
                                    f"suite {body['suite']}, {body['date'][:10]})"))
    for kind in ("conforms", "failed", "outdated", "corrupt"):
        best = next((text for k, text in found if k == kind), None)
        if best is not None:
            return kind, best
    if TRUSTED.get(record.name) == record.distribution:
        return "trusted", "trusted (fastnn's own default backend)"
    return "none", "not certified on this device"


def statuses(record) -> list:
    """One status text per device of ``record`` (none when it is unavailable)."""
    if not record.available:
        return []
    return [status(record, i)[1] for i in range(max(1, len(record.devices)))]


def _trusted_by_user(name: str) -> bool:
    names = {n.strip() for n in os.environ.get("FASTNN_TRUST", "").split(",")}
    return name in names or "*" in names


def check_use(device) -> None:
    """Warn once (per backend and device) when ``device`` has no passing certificate;
    raise BackendError instead under ``FASTNN_STRICT=1``; nothing under FASTNN_TRUST."""
    key = (device.backend.name, device.index)
    if key in _checked:
        return
    with _lock:
        _checked.add(key)
    if _trusted_by_user(key[0]):
        return
    kind, text = status(device.backend.record, device.index)
    if kind in ("conforms", "trusted"):
        return
    message = (f"backend {key[0]!r} ({device}) has no passing conformance certificate for "
               f"fastnn {fastnn_version()} on this device: {text}. Check it with `fastnn "
               f"conformance --backend {key[0]}`; FASTNN_TRUST={key[0]} silences this")
    if os.environ.get("FASTNN_STRICT") == "1":
        with _lock:
            _checked.discard(key)
        raise BackendError(message.replace("FASTNN_TRUST", "unset FASTNN_STRICT or set "
                                                           "FASTNN_TRUST", 1))
    warnings.warn(UncertifiedBackendWarning(message), stacklevel=3)
