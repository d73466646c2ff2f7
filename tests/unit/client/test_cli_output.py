"""What the CLI prints: human sizes as `ls -h`, ISO 8601 times, columns that never cut a name."""

from __future__ import annotations

import pytest

from hycloud.cli.output import columns, human_size, iso_time, long_listing, stat_lines


@pytest.mark.parametrize(
    ("n", "text"),
    [(0, "0"), (1023, "1023"), (1024, "1.0K"), (1536, "1.5K"), (10 * 1024, "10K"), (5 * 1024**3 + 1, "5.0G")],
)
def test_human_size_reads_like_ls_h(n, text):
    assert human_size(n) == text


def test_iso_time_is_utc_to_the_second():
    assert iso_time(978307200.7) == "2001-01-01T00:00:00Z"


def test_columns_align_all_but_the_last_which_is_never_padded_or_cut():
    name = "x" * 300
    lines = columns([["file", "5", name], ["dir", "12345", "d/"]], right=frozenset({1}))
    assert lines == ["file      5  " + name, "dir   12345  d/"]


def test_long_listing_and_stat_lines():
    entries = [
        {"name": "a", "type": "file", "size": 2048, "mtime": 0},
        {"name": "d", "type": "dir", "size": 0, "mtime": 0},
    ]
    assert long_listing(entries, human=True) == [
        "file  2.0K  1970-01-01T00:00:00Z  a",
        "dir      -  1970-01-01T00:00:00Z  d/",
    ]
    lines = stat_lines({"path": "/a", "type": "file", "size": 2048, "mtime": 0, "mode": 0o755}, human=False)
    assert lines == ["path: /a", "type: file", "size: 2048", "mtime: 1970-01-01T00:00:00Z", "mode: 0755"]


def test_rich_tables_to_a_pipe_keep_each_row_on_one_line(capsys):
    from rich.table import Table

    from hycloud.cli.output import stdout_console

    table = Table(box=None)
    table.add_column("id")
    table.add_column("name")
    table.add_row("k1", "x" * 300)
    stdout_console().print(table)
    rows = capsys.readouterr().out.splitlines()
    assert len(rows) == 2 and rows[1].rstrip().endswith("x" * 300)
