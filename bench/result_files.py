"""Where every benchmark leaves its figures: bench/results/<name>.json (the data), <name>.md (the
report) and <name>.png (its tables drawn, bench/plots.py)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from plots import plot_report

RESULTS = Path(__file__).resolve().parent / "results"
RULES = {"l": "---", "r": "---:"}


def write(name: str, doc: dict, text: str, out: Path = RESULTS) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(doc, indent=2) + "\n")
    (out / f"{name}.md").write_text(text)
    plot_report(name, text, out)


def table(header: Sequence[str], align: str, rows: Iterable[Sequence[object]]) -> list[str]:
    """A report's markdown table as lines, laid out one way in every report so bench/plots.py reads
    them all alike. `align` has a letter a column: `l` (text, left) or `r` (figures, right)."""
    if len(align) != len(header):
        raise ValueError(f"{len(header)} columns, {len(align)} alignments")
    return [_row(header), _row(RULES[a] for a in align), *(_row(r) for r in rows)]


def _row(cells: Iterable[object]) -> str:
    """`| a | b |`; an empty cell is `| |`."""
    return " ".join(["|", *(f"{c} |".lstrip() for c in cells)])
