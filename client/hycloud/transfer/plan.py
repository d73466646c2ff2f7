"""Which way a file moves: one pure decision from what is known of the file, the link and what
the caller asked, so `put` and `get` (and `sync`, through them) choose the same way, and the
choice can be tested as a table.

A plan is the modes to try in order: a mode may decline (a small upload the API finds too large
after all, a delta the cloud cannot make or that eq. 2 says does not pay once computed), and the
next one is tried. The last mode of a plan never declines.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from hycloud_core.delta.decision import should_delta_download

from .auto import Rates

Mode = Literal["small", "direct", "relay", "delta", "coded", "same"]
Remote = Literal["large", "coded"]
RELAY_MARGIN = 1.1  # relay only when measured clearly faster than direct


@dataclass(frozen=True)
class Upload:
    """What an upload knows before it sends anything."""

    size: int
    small_threshold: int  # the deployment's: files up to this go through the API
    coded_threshold: int | None = None  # files above it are erasure-coded by default; None: none are
    via: str = "auto"  # 'auto', 'direct' or 'delta'
    coded: bool | None = None  # asked: True coded, False never, None as the deployment says
    base: bool = False  # a local copy of the version at the path was named: a delta against it
    signature: bool = False  # this client kept the checksum list of the version at the path


@dataclass(frozen=True)
class Download:
    """What a download knows: before the cloud named the file (`remote` None) or after."""

    size: int  # the file's; before the cloud named it, the local copy's (about the same)
    remote: Remote | None = None  # a large file in S3, or an erasure-coded one; None: not asked yet
    via: str = "auto"  # 'auto', 'direct', 'relay' or 'delta'
    base: bool = False  # an older local version was named to patch
    rsync: bool = False  # only an rsync-style delta (no version-aware one)
    local: bool = False  # the target exists locally (a base for a delta, with `via` auto or delta)
    held: bool = False  # this client knows which version the local target holds
    current: bool = False  # the base (named or the target) is known to hold the remote's version
    rates: Rates | None = None  # this client's measured rates; needed with `via="auto"`


@dataclass(frozen=True)
class TransferPlan:
    modes: tuple[Mode, ...]  # to try in order; empty before asking: nothing to try without asking
    version_aware: bool = True  # a delta download asks for a version-aware delta first
    force_delta: bool = False  # an upload's delta against a kept checksum list is sent, paying or not

    @property
    def first(self) -> Mode | None:
        return self.modes[0] if self.modes else None


def plan_transfer(facts: Upload | Download) -> TransferPlan:
    """The plan for an upload or a download (see the module's docstring)."""
    if isinstance(facts, Upload):
        return _upload(facts)
    return _download(facts) if facts.remote is not None else _before_asking(facts)


def eq2_choice(size: int, r: Rates, has_base: bool) -> Mode:
    """'delta' when a local base exists and eq. 2 says it pays, else 'relay' if measured clearly
    faster, else 'direct'."""
    if has_base and should_delta_download(size, r.down, r.compute, r.s3_efs, r.gamma, r.overhead_s):
        return "delta"
    if r.relay_down and r.relay_down > RELAY_MARGIN * r.down:
        return "relay"
    return "direct"


def _upload(f: Upload) -> TransferPlan:
    large = f.size > f.small_threshold
    if f.coded and large:
        return TransferPlan(("coded",))
    threshold = f.coded_threshold if f.coded is None and f.via == "auto" else None  # unasked, no way pinned
    whole: Mode = "coded" if threshold is not None and f.size > threshold else "direct"
    delta = f.base or (f.via in ("auto", "delta") and f.signature)
    modes: tuple[Mode, ...] = ("delta", whole) if delta else (whole,)
    if not large:
        modes = ("small", *modes)
    return TransferPlan(modes, force_delta=f.via == "delta")


def _before_asking(f: Download) -> TransferPlan:
    """A delta against the version this client knows the target holds, asked for at once (one
    request fewer than asking what the file is first), when a delta may be the way: the
    version-aware one, or (`rsync`) the checksum list sent straight away."""
    if f.via not in ("auto", "delta") or f.base or not f.held:
        return TransferPlan(())
    if f.via == "auto" and eq2_choice(f.size, _rates(f), True) != "delta":
        return TransferPlan(())
    return TransferPlan(("delta",), version_aware=not f.rsync)


def _download(f: Download) -> TransferPlan:
    coded = f.remote == "coded"
    asked = f.base or f.via == "delta"  # an explicit base or --via delta: a delta
    by_eq2 = f.via == "auto" and f.local  # a local copy: a delta may beat the coded download
    aware = not f.rsync
    if coded and not asked and f.via != "relay" and not by_eq2:  # jobs rebuild it
        return TransferPlan(("coded",), aware)
    has_base = f.base or (f.via in ("auto", "delta") and f.local)

    def whole(mode: str) -> Mode:
        return "relay" if mode == "relay" else "coded" if coded else "direct"

    if f.via == "auto" and not asked:
        if has_base and f.current:
            return TransferPlan(("same",), aware)
        mode: str = eq2_choice(f.size, _rates(f), has_base)
    else:
        mode = "delta" if asked else f.via
    if mode == "delta" and has_base:
        return TransferPlan(("delta", whole(f.via)), aware)  # no checksum list fits: the whole file
    return TransferPlan((whole(mode),), aware)


def _rates(f: Download) -> Rates:
    if f.rates is None:
        raise ValueError("an automatic download's plan needs the client's rates")
    return f.rates
