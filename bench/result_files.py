"""Where every benchmark leaves its figures: bench/results/<name>.json (the data) and <name>.md (the report)."""

from __future__ import annotations

import json
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def write(name: str, doc: dict, text: str, out: Path = RESULTS) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(doc, indent=2) + "\n")
    (out / f"{name}.md").write_text(text)
