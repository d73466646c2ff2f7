"""`hycloud sync`: one-way sync of a local folder and a cloud folder, differences found by the
Merkle exchange against the state the client keeps, transfers limited to those differences."""

from .run import SyncOptions, sync

__all__ = ["SyncOptions", "sync"]
