"""Read-only views over the payloads HyCloud's functions receive; decoding happens here, once."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from .errors import BadRequestError


class DictWrapper(Mapping[str, Any]):
    def __init__(self, raw_event: dict[str, Any]) -> None:
        if not isinstance(raw_event, dict):
            raise BadRequestError("event must be a JSON object")
        self.raw_event = raw_event

    def __getitem__(self, key: str) -> Any:
        return self.raw_event[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.raw_event)

    def __len__(self) -> int:
        return len(self.raw_event)

    def _required(self, key: str) -> Any:
        if key not in self.raw_event:
            raise BadRequestError(f"event lacks '{key}'")
        return self.raw_event[key]


class RelayFetchRequest(DictWrapper):
    """Input of the relay fetch task: which S3 object goes to which cache file."""

    @property
    def bucket(self) -> str | None:
        return self.raw_event.get("bucket")

    @property
    def bucket_region(self) -> str | None:
        """The bucket's region, when it is another instance's (the home's, for a data instance)."""
        return self.raw_event.get("bucket_region")

    @property
    def key(self) -> str | None:
        """S3 key; defaults to the content-addressed key of `content_hash`."""
        key = self.raw_event.get("key")
        if key is None and not self.content_hash:
            raise BadRequestError("event needs 'key' or 'content_hash'")
        return key

    @property
    def cache_name(self) -> str:
        name = self._required("cache_name")
        if not isinstance(name, str) or not name or "/" in name or name in (".", ".."):
            raise BadRequestError("cache_name must be a plain file name")
        return name

    @property
    def size(self) -> int | None:
        return self.raw_event.get("size")

    @property
    def content_hash(self) -> str | None:
        return self.raw_event.get("content_hash")
