"""Package names that load their module on first use (PEP 562), so importing a light piece of a
package (the CLI's `--help`, `hycloud.transfer.config`) does not import all of it."""

from __future__ import annotations

import sys
from collections.abc import Callable
from importlib import import_module
from typing import Any


def exports(
    package: str, where: dict[str, str], public: list[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for `package`: each name in `where` is imported from its module
    the first time it is asked for, then kept in the package like any other name."""
    names = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(where[name]), name)
        names[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(names) | set(public))

    return __getattr__, __dir__
