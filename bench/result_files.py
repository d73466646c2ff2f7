"""Where every benchmark leaves its figures: bench/results/<name>.json (the data), <name>.md (the
report) and <name>.png (its tables drawn, bench/plots.py)."""

from __future__ import annotations

import json
from pathlib import Path

from plots import plot_report

RESULTS = Path(__file__).resolve().parent / "results"


def write(name: str, doc: dict, text: str, out: Path = RESULTS) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(doc, indent=2) + "\n")
    (out / f"{name}.md").write_text(text)
    plot_report(name, text, out)
