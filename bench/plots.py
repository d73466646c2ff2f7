"""A PNG beside every benchmark's table: bench/results/<name>.png drawn from <name>.md.

Each benchmark's report is markdown tables whose rows are cases and whose numeric columns are
the figures compared (ours beside the peer's). Every table becomes panels of grouped horizontal
bars, one bar per numeric column and one panel per unit (`ms` figures together, percentages
apart, columns without a unit together); a panel whose values span more than two orders of magnitude is drawn on a log scale. Drawing from the report
rather than from each benchmark's JSON keeps one plotter for all of them, and a benchmark too
slow to rerun gets its picture from the results already committed:

Run:  python bench/plots.py [NAME ...]   (default: every bench/results/*.md)
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
MAX_ROWS = 24  # a taller panel is unreadable; the table itself has every row
MAX_BARS = 6
UNIT = re.compile(r"\$/[\w-]+|\$|%|\bms\b|\(s\)|\bMiB/s\b|\bMB/s\b|\bGiB\b|\bMiB\b|\bKiB\b|\bbytes\b", re.I)
NUMBER = re.compile(r"^[+\-]?[$]?[+\-]?\d[\d,]*(\.\d+)?(e[+\-]?\d+)?\s*(%|x|×|ms|s|MB/s|MiB/s|GB/s)?$", re.I)


@dataclass
class Table:
    title: str
    header: list[str]
    rows: list[list[str]]


def number(cell: str) -> float | None:
    """A cell's value when it is a plain figure (`1,234`, `$0.02`, `+6.8%`, `12 ms`), else None."""
    text = cell.strip().replace("**", "")
    if not NUMBER.match(text):
        return None
    return float(re.sub(r"[^\d.eE+\-]", "", text.replace("e+", "E+").replace("e-", "E-")) or "nan")


def tables(markdown: str) -> list[Table]:
    """Every markdown table of a report, titled by the heading or text line above it."""
    found, title, current = [], "", None
    for line in markdown.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if current is None:
                current = Table(title, cells, [])
            elif not all(set(c) <= set(":- ") for c in cells):
                current.rows.append(cells)
            continue
        if current is not None:
            found.append(current)
            current = None
        if line.strip():
            title = line.lstrip("# ").strip()
    if current is not None:
        found.append(current)
    return [t for t in found if t.rows]


def unit(header: str, cells: list[str]) -> str:
    """What a column measures, so that only like figures share a panel: `%` when most of its
    cells are percentages, else the unit its header names (`ms`, `(s)`, `$/mo`...), else ``."""
    filled = [c for c in cells if number(c) is not None]
    if filled and sum(c.strip().endswith("%") for c in filled) * 2 > len(filled):
        return "%"
    found = UNIT.search(header)
    return found.group(0) if found else ""


def panels(table: Table) -> list[tuple[str, list[str], dict[str, list[float]]]]:
    """(title, row labels, {column: values}) per unit of the table's figures."""
    rows = [r for r in table.rows if len(r) == len(table.header)][:MAX_ROWS]
    numeric = [
        i
        for i in range(1, len(table.header))
        if rows
        and all(number(r[i]) is not None or r[i] in ("", "-") for r in rows)
        and any(number(r[i]) is not None for r in rows)
    ]
    labels = [" · ".join(r[i] for i in range(len(r)) if i not in numeric and r[i]) or r[0] for r in rows]
    groups: dict[str, dict[str, list[float]]] = {}
    for i in numeric:
        kind = unit(table.header[i], [r[i] for r in rows])
        values = [_value(r[i], kind) for r in rows]
        groups.setdefault(kind, {})[table.header[i]] = values
    out = []
    for kind, columns in groups.items():
        keep = [y for y in range(len(rows)) if any(vs[y] == vs[y] for vs in columns.values())]
        kept = {name: [vs[y] for y in keep] for name, vs in columns.items()}
        for start in range(0, len(kept), MAX_BARS):
            chunk = dict(list(kept.items())[start : start + MAX_BARS])
            out.append((table.title + (f" [{kind}]" if kind else ""), [labels[y] for y in keep], chunk))
    return out


def _value(cell: str, kind: str) -> float:
    """A cell's figure; a percentage in a column of other figures (a summary row) is left out."""
    value = number(cell)
    if value is None or (kind != "%" and cell.strip().endswith("%")):
        return float("nan")
    return value


def plain(text: str) -> str:
    """Text as written: matplotlib reads `$...$` as mathematics."""
    return text.replace("$", r"\$")


def draw_panel(ax, title: str, labels: list[str], columns: dict[str, list[float]]) -> None:
    n, width = len(columns), 0.8 / max(1, len(columns))
    for k, (name, values) in enumerate(columns.items()):
        ax.barh([y + k * width for y in range(len(labels))], values, height=width, label=plain(name))
    ax.set_yticks([y + width * (n - 1) / 2 for y in range(len(labels))])
    ax.set_yticklabels([plain(label[:48]) for label in labels], fontsize=7)
    ax.invert_yaxis()
    positive = [v for vs in columns.values() for v in vs if v == v and v > 0]
    if (
        positive
        and max(positive) / min(positive) > 100
        and all(v >= 0 for vs in columns.values() for v in vs if v == v)
    ):
        ax.set_xscale("log")
    ax.set_title(plain(title[:110]), fontsize=8)
    ax.legend(fontsize=6, loc="best")
    ax.tick_params(axis="x", labelsize=7)
    ax.grid(axis="x", alpha=0.3)


def plot_report(name: str, markdown: str, out: Path = RESULTS) -> Path | None:
    """Write <name>.png for a report; None when it has no numeric table."""
    drawn = [p for t in tables(markdown) for p in panels(t)]
    if not drawn:
        return None
    heights = [0.8 + 0.22 * len(labels) * max(1, len(cols) / 2) for _, labels, cols in drawn]
    fig, axes = plt.subplots(
        len(drawn), 1, figsize=(10, sum(heights) + 0.5), height_ratios=heights, squeeze=False
    )
    for ax, (title, labels, columns) in zip(axes[:, 0], drawn, strict=True):
        draw_panel(ax, title, labels, columns)
    fig.suptitle(f"bench/{name}", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.3 / fig.get_figheight()))
    path = out / f"{name}.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="result names (default: all)")
    args = parser.parse_args()
    names = args.names or sorted(p.stem for p in RESULTS.glob("*.md"))
    for name in names:
        path = plot_report(name, (RESULTS / f"{name}.md").read_text())
        print(f"{name}: {path.relative_to(RESULTS.parent.parent) if path else 'no numeric table'}")


if __name__ == "__main__":
    main()
