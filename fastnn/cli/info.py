"""``fastnn info``: which backends are installed, usable, and why not."""

from __future__ import annotations

import sys
import textwrap

COLUMNS = ("name", "distribution", "version", "available", "reason", "devices")
REASON_WIDTH = 40  # longer reasons (install hints) go below the table, one per line
# a PoCL device describes itself in ~200 characters; the table shows the start of it and
# the whole description goes below, wrapped
DEVICE_WIDTH = 48


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "info", help="list installed backends, their devices, and why any is unavailable"
    )
    parser.set_defaults(func=run)


def table(rows: list[list[str]], header: tuple[str, ...]) -> str:
    """Left-aligned text columns separated by two spaces, with a rule under the header."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    lines = ["  ".join(str(cell).ljust(w) for cell, w in zip(header, widths)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        lines.append("  ".join(str(cell).ljust(w) for cell, w in zip(row, widths)).rstrip())
    return "\n".join(lines)


def rows_of(records) -> list[list[str]]:
    """One table row per backend record; several devices go one per line below the first."""
    rows = []
    for record in records:
        devices = [f"{i}: {d}" for i, d in enumerate(record.devices)] or ["-"]
        rows.append([
            record.name, record.distribution, record.version,
            "yes" if record.available else "no", _one_line(record.reason) or "-", devices[0],
        ])
        rows.extend([["", "", "", "", "", device] for device in devices[1:]])
    return rows


def _one_line(text: str) -> str:
    """A reason on one line (a plugin's load error may span several)."""
    return " ".join(str(text).split())


def shorten_reasons(rows: list[list[str]], width: int = REASON_WIDTH) -> list[str]:
    """Replace reasons longer than ``width`` in place by "see below"; return them as notes."""
    notes = []
    for row in rows:
        if len(row[4]) > width:
            notes.append(f"{row[0]}: {row[4]}")
            row[4] = "see below"
    return notes


def shorten_devices(rows: list[list[str]], width: int = DEVICE_WIDTH) -> list[str]:
    """Cut device descriptions longer than ``width`` in place (ending in "..."); return the
    whole descriptions as notes, each named by its backend."""
    notes, backend = [], ""
    for row in rows:
        backend = row[0] or backend  # a backend's further devices have an empty name cell
        if len(row[5]) > width:
            notes.append(f"{backend} {row[5]}")
            row[5] = row[5][:width - 3].rstrip() + "..."
    return notes


def _print_notes(title: str, notes: list[str], wrap: bool) -> None:
    """Notes below the table; reasons stay on one line, so that their commands copy whole."""
    print(f"\n{title}:")
    for note in notes:
        print(textwrap.fill(note, 78, initial_indent="  ", subsequent_indent="    ")
              if wrap else f"  {note}")


def run(args) -> int:
    import fastnn as fnn
    from fastnn.api.registry import install_hint

    records = fnn.backends()
    print(f"fastnn {fnn.__version__}, Python {sys.version.split()[0]}")
    if not records:
        print(f"no backends installed; the NumPy one: {install_hint('cpu')}")
        return 1
    rows = rows_of(records)
    notes, devices = shorten_reasons(rows), shorten_devices(rows)
    print(table(rows, COLUMNS))
    if devices:
        _print_notes("devices in full", devices, wrap=True)
    if notes:
        _print_notes("why unavailable", notes, wrap=False)
    certified = [f"{record.name}:{i}: {text}" for record in records
                 for i, text in enumerate(record.certificates)]
    if certified:
        _print_notes("conformance certificates (fastnn conformance --backend NAME writes "
                     "one)", certified, wrap=False)
    try:
        print(f"default device: {fnn.get_device()}")
    except fnn.BackendError as exc:
        print(f"no default device: {exc}")
    return 0
