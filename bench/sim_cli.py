"""The command line every simulation here (sim_*.py) starts from: the script's summary as its
description, a seed so that a run can be repeated, and the folder its results go to."""

from __future__ import annotations

import argparse
from pathlib import Path

import result_files


def parser(doc: str) -> argparse.ArgumentParser:
    """`doc` is the script's docstring; the script adds its own options to what this returns."""
    found = argparse.ArgumentParser(description=doc.splitlines()[0])
    found.add_argument("--seed", type=int, default=0)
    found.add_argument("--out", type=Path, default=result_files.RESULTS)
    return found
