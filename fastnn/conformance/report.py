"""The end-of-run table (primitive x dtype) and the JSON report.

Each cell sums up every check of one primitive at one dtype:

- ``pass``: every check passed;
- ``FAIL``: some check failed on its own;
- ``dep:X,Y``: every failing check reached X or Y (other hooks whose own
  forward checks fail), so the cause is most likely there, not here;
- ``xfail`` / ``xpass``: listed in the backend's xfail file, and failed /
  passed (an xpass means the entry can go);
- ``-``: no check at that dtype (e.g. finite differences run in float64).
"""

from __future__ import annotations

import json
import os
import tempfile

from fastnn.api import hookspec
from fastnn.api.registry import install_hint
from fastnn.checkpoint_files import file_mode

# a broken transfer shows up in both transfer checks; blame each on itself
_TRANSFER = {"from_numpy", "to_numpy"}
_FORWARD_CHECKS = {"forward", "edges"}


def _forward_failures(results) -> dict:
    """dtype -> hooks whose own forward or edge checks failed (or were expected to)."""
    broken: dict = {}
    for r in results:
        if r["check"] in _FORWARD_CHECKS and r["outcome"] in ("fail", "xfail"):
            broken.setdefault(r["dtype"], set()).add(r["primitive"])
    return broken


def _suspects(result, broken) -> list:
    ignore = {result["primitive"]}
    if result["primitive"] in _TRANSFER:
        ignore |= _TRANSFER
    suspects = broken.get(result["dtype"], set())
    if "astype" in result["used"]:  # it converted (float16 computed in float32: linalg):
        suspects = set().union(*broken.values())  # its hooks ran at other dtypes too
    return sorted((set(result["used"]) - ignore) & suspects)


def _cell(results) -> str:
    outcomes = {r["outcome"] for r in results}
    if "fail" in outcomes:
        failing = [r for r in results if r["outcome"] == "fail"]
        if all(r["depends_on"] for r in failing):
            return "dep:" + ",".join(sorted({d for r in failing for d in r["depends_on"]}))
        return "FAIL"
    for status in ("xpass", "xfail", "pass"):
        if status in outcomes:
            return status
    return "skip" if outcomes else "-"


def build(state, results) -> dict:
    """The summary: cells[primitive][dtype], every failure with its suspects, and counts."""
    broken = _forward_failures(results)
    for r in results:
        r["depends_on"] = _suspects(r, broken) if r["outcome"] == "fail" else []
    # checks of integer semantics add their dtypes; layer and thread checks their rows
    dtypes = list(state.dtypes) + sorted({r["dtype"] for r in results} - set(state.dtypes))
    cells = {}
    hooks = hookspec.HOOKS
    extra_rows = sorted({r["primitive"] for r in results} - set(hooks))
    for name in hooks + extra_rows:
        mine = [r for r in results if r["primitive"] == name]
        cells[name] = {d: _cell([r for r in mine if r["dtype"] == d]) for d in dtypes}
    counts: dict = {}
    for r in results:
        counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
    failing = sorted(n for n, row in cells.items() if "FAIL" in row.values())
    cross_skipped = sum(1 for r in results if r["check"] == "cross" and r["outcome"] == "skip")
    return {
        "backend": state.name,
        "distribution": state.record.distribution,
        "version": state.record.version,
        "devices": list(state.record.devices),
        "dtypes": dtypes,
        "fused_hooks_implemented": [h for h in hookspec.OPS if h in state.implemented],
        "other_backends": list(state.others),
        "cells": cells,
        "failing_primitives": failing,
        "dependent_failures": sorted(n for n, row in cells.items()
                                     if any(v.startswith("dep:") for v in row.values())),
        "counts": counts,
        "cross_checks_skipped": cross_skipped,
        "failures": [r for r in results if r["outcome"] == "fail"],
        "passed": not failing and not counts.get("fail"),
    }


def table_lines(summary) -> list:
    dtypes = summary["dtypes"]
    width = max(len(n) for n in summary["cells"]) + 4  # room for the fused marker " *"
    col = max(10, *(len(v) + 2 for row in summary["cells"].values() for v in row.values()))
    lines = ["primitive".ljust(width) + "".join(d.ljust(col) for d in dtypes)]
    lines.append("-" * len(lines[0].rstrip()))
    fused = set(hookspec.OPS)
    for name, row in summary["cells"].items():
        label = name + (" *" if name in fused else "")
        lines.append(label.ljust(width) + "".join(row[d].ljust(col) for d in dtypes).rstrip())
    lines.append("* optional fused hook (checked through the core's composite when not "
                 "implemented); implemented here: "
                 + (", ".join(summary["fused_hooks_implemented"]) or "none"))
    if summary["other_backends"]:
        lines.append("cross-checked against: " + ", ".join(summary["other_backends"]))
    skipped = summary.get("cross_checks_skipped", 0)
    if skipped and not summary["other_backends"]:
        lines.append(f"NOT cross-checked: {skipped} cross-backend checks skipped, no other "
                     f"available backend to compare with (or --against none); "
                     f"{_second_backend_hint(summary['backend'])}")
    elif skipped:
        lines.append(f"{skipped} cross-backend checks skipped (a dtype the other backend "
                     "lacks)")
    counts = ", ".join(f"{v} {k}" for k, v in sorted(summary["counts"].items()))
    verdict = "CONFORMS" if summary["passed"] else (
        "FAILS on: " + (", ".join(summary["failing_primitives"]) or "dependent checks only"))
    lines.append(f"backend {summary['backend']!r}: {verdict} ({counts})")
    return lines


def _second_backend_hint(name: str) -> str:
    """How to get a backend to cross-check ``name`` against, from the fastnn repository."""
    if name == "cpu":
        return f"install another, e.g. opencl: {install_hint('opencl')}"
    return f"install the cpu backend: {install_hint('cpu')}"


def write_json(summary, path) -> None:
    """Write atomically, so a reader never sees half a report."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(summary, handle, indent=1, sort_keys=False)
        os.chmod(tmp, file_mode(path))  # mkstemp's 0600 would make the report private
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
