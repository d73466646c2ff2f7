"""bench/plots.py: every benchmark report's tables drawn as a PNG beside them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

import plots  # noqa: E402

REPORT = """# Transfer time

| size | path | HyCloud ms | boto3 ms | saved |
| --- | --- | ---: | ---: | ---: |
| 1 KiB | small | 84 | 7 | -1,100.5% |
| 32 MiB | large | 261 | 175 | +33% |

Notes without a table.
"""


@pytest.mark.parametrize(
    ("cell", "value"),
    [("1,234", 1234), ("$0.0230", 0.023), ("+6.79%", 6.79), ("12 ms", 12), ("-3.5", -3.5), ("1e-05", 1e-5)],
)
def test_figures_are_read_from_cells(cell, value):
    assert plots.number(cell) == pytest.approx(value)


@pytest.mark.parametrize("cell", ["small", "1 KiB", "hybrid over S3", "", "-"])
def test_labels_are_not_figures(cell):
    assert plots.number(cell) is None


def test_tables_columns_and_percent_panel():
    (table,) = plots.tables(REPORT)
    assert table.title == "Transfer time" and len(table.rows) == 2
    (figures, percents) = plots.panels(table)
    assert figures[1] == ["1 KiB · small", "32 MiB · large"]
    assert figures[2] == {"HyCloud ms": [84, 261], "boto3 ms": [7, 175]}
    assert percents[2] == {"saved": [-1100.5, 33]}


def test_report_becomes_a_png(tmp_path):
    path = plots.plot_report("t", REPORT, tmp_path)
    assert path == tmp_path / "t.png"
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 5000


def test_report_without_figures_has_no_png(tmp_path):
    assert plots.plot_report("t", "| a | b |\n| --- | --- |\n| x | y |\n", tmp_path) is None
    assert not (tmp_path / "t.png").exists()


def test_only_like_figures_share_a_panel():
    report = """| case | size GiB | files | cost $/mo | total $/mo |
| --- | ---: | ---: | ---: | ---: |
| a | 10 | 5 | $1.00 | $2.00 |
| a over b | | | | +6.8% |
"""
    (table,) = plots.tables(report)
    by_title = {title: (labels, columns) for title, labels, columns in plots.panels(table)}
    assert by_title[" [GiB]"] == (["a"], {"size GiB": [10]})
    assert by_title[""] == (["a"], {"files": [5]})
    assert by_title[" [$/mo]"] == (["a"], {"cost $/mo": [1.0], "total $/mo": [2.0]})  # the % row left out
