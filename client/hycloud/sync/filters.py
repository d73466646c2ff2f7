"""--exclude / --include: gitignore-style patterns over paths relative to the synced root.

A path is left out when an --exclude pattern matches it and no --include pattern does, so
`--exclude '*.log' --include 'keep.log'` keeps keep.log. Directories match with a trailing "/"
as in .gitignore (`--exclude build/`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pathspec


@dataclass(frozen=True)
class PathFilter:
    exclude: pathspec.PathSpec | None
    include: pathspec.PathSpec | None

    @classmethod
    def of(cls, exclude: Sequence[str] = (), include: Sequence[str] = ()) -> PathFilter:
        def spec(patterns: Sequence[str]) -> pathspec.PathSpec | None:
            return pathspec.GitIgnoreSpec.from_lines(patterns) if patterns else None

        return cls(spec(exclude), spec(include))

    def keeps(self, rel: str, is_dir: bool = False) -> bool:
        """Whether `rel` ("a/b.txt", no leading slash) takes part in the sync."""
        if self.exclude is None:
            return True
        name = rel + "/" if is_dir else rel
        if not self.exclude.match_file(name):
            return True
        return self.include is not None and self.include.match_file(name)

    def keeps_file(self, rel: str) -> bool:
        """A file is in only if it and every folder above it are."""
        if self.exclude is None:
            return True  # no patterns: the scan of a large tree asks this once per file
        return self.keeps(rel) and self._folders_kept(rel.split("/")[:-1])

    def keeps_dir(self, rel: str) -> bool:
        return self.exclude is None or self._folders_kept(rel.split("/"))

    def _folders_kept(self, parts: list[str]) -> bool:
        return all(self.keeps("/".join(parts[:i]), is_dir=True) for i in range(1, len(parts) + 1))
