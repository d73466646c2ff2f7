"""A Progress that keeps the notes a transfer gives the user (a resumed upload, a queue place),
for tests that assert what the user is told."""

from __future__ import annotations

from hycloud.transfer import Progress


class Notes(Progress):
    def __init__(self) -> None:
        super().__init__()
        self.notes: list[str] = []

    def note(self, message: str) -> None:
        self.notes.append(message)
