"""The per-op account of a shadowed run: calls, checked calls, worst errors, tolerances."""

from __future__ import annotations

import json
import math

COLUMNS = ("op", "dtype", "calls", "checked", "mismatches", "max_abs", "of_tolerance",
           "rtol", "atol")


class Row:
    """One hook at one output dtype."""

    __slots__ = ("op", "dtype", "calls", "checked", "mismatches", "max_abs", "of_tolerance",
                 "rtol", "atol", "equal_first")

    def __init__(self, op: str, dtype: str, rtol: float, atol: float):
        self.op, self.dtype, self.rtol, self.atol = op, dtype, rtol, atol
        # whether the last output compared was equal bit for bit: if not (a matmul on
        # another device), the next is compared without trying equality first
        self.equal_first = True
        self.calls = self.checked = self.mismatches = 0
        self.max_abs = self.of_tolerance = 0.0

    def passed(self, max_abs: float, of_tolerance: float, count: bool = True) -> None:
        """An output found passing (by :mod:`fastnn.shadowing.vector`) with these errors;
        ``count``: whether they join the row's worst ones."""
        self.equal_first = max_abs == 0.0
        if count:
            if max_abs > self.max_abs:
                self.max_abs = max_abs
            if of_tolerance > self.of_tolerance:
                self.of_tolerance = of_tolerance

    def add(self, diff) -> None:
        if not math.isnan(diff.max_abs):
            self.max_abs = max(self.max_abs, diff.max_abs)
        self.of_tolerance = max(self.of_tolerance, diff.ratio)

    def as_dict(self) -> dict:
        out = {name: getattr(self, name) for name in COLUMNS}
        if math.isinf(out["of_tolerance"]):
            out["of_tolerance"] = "inf"  # JSON has no Infinity
        return out


class ShadowReport:
    """What ``fnn.shadow_report()`` returns: rows per (op, dtype), a table and JSON.

    ``str(report)`` is the table; ``report.json()`` the same as JSON; ``report.rows`` a
    list of dicts (``of_tolerance`` is the worst error as a fraction of its tolerance:
    above 1 is a mismatch); ``report.mismatches`` the total.
    """

    def __init__(self, backend_rows: dict, reference: str, mode: str, sample: int,
                 tolerance_source: str):
        self.reference, self.mode, self.sample = reference, mode, sample
        self.tolerance_source = tolerance_source
        self.rows = [row.as_dict() for _, row in sorted(backend_rows.items())]
        self.mismatches = sum(row["mismatches"] for row in self.rows)

    def json(self) -> str:
        """The report as a JSON document."""
        return json.dumps({"reference": self.reference, "mode": self.mode,
                           "sample": self.sample, "tolerances": self.tolerance_source,
                           "mismatches": self.mismatches, "ops": self.rows}, indent=1)

    def table(self) -> str:
        """The report as a text table, one line per op and dtype."""
        head = [f"shadow report (reference {self.reference}, mode {self.mode}, every "
                f"{'' if self.sample == 1 else f'{self.sample}th '}call checked"
                f"{'' if self.sample == 1 else ' per op'})"]
        if not self.rows:
            return "\n".join(head + ["no backend hook was called while shadowing"])
        cells = [[_cell(row[c]) for c in COLUMNS] for row in self.rows]
        widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(COLUMNS)]
        lines = ["  ".join(c.ljust(w) for c, w in zip(COLUMNS, widths)).rstrip(),
                 "  ".join("-" * w for w in widths)]
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
        lines.append(f"{self.mismatches} mismatch{'es' if self.mismatches != 1 else ''}; "
                     f"tolerances: {self.tolerance_source}")
        return "\n".join(head + lines)

    def __str__(self) -> str:
        return self.table()

    def __repr__(self) -> str:
        return f"<ShadowReport: {len(self.rows)} ops, {self.mismatches} mismatches>"


def _cell(value) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)
