"""plan_transfer (transfer/plan.py): which way a file moves, as a decision table over what is
known of the file, the link and what the caller asked."""

from __future__ import annotations

import pytest

from hycloud.transfer.auto import Rates
from hycloud.transfer.plan import Download, TransferPlan, Upload, eq2_choice, plan_transfer
from hycloud_core.delta import should_delta_download
from tests.unit.client.cli_fake import LinkAnswer

MiB = 2**20
BIG = 200 * MiB
# a thin link (the paper's 50 Mbit/s) and a quick CPU: a delta of a large file pays
SLOW = Rates(
    down=50e6 / 8, up=50e6 / 8, relay_down=None, compute=200e6, s3_efs=100 * MiB, overhead_s=1.0, gamma=0.9
)
FAST = Rates(down=10e9, up=10e9, relay_down=None, compute=200e6, s3_efs=100 * MiB, overhead_s=1.0, gamma=0.9)
RELAYED = Rates(
    down=10e9, up=10e9, relay_down=20e9, compute=200e6, s3_efs=100 * MiB, overhead_s=1.0, gamma=0.9
)


def test_the_rates_say_what_the_table_says_they_do():
    assert should_delta_download(BIG, SLOW.down, SLOW.compute, SLOW.s3_efs, SLOW.gamma, SLOW.overhead_s)
    assert not should_delta_download(BIG, FAST.down, FAST.compute, FAST.s3_efs, FAST.gamma, FAST.overhead_s)
    assert (eq2_choice(BIG, SLOW, True), eq2_choice(BIG, SLOW, False)) == ("delta", "direct")
    assert (eq2_choice(BIG, FAST, True), eq2_choice(BIG, RELAYED, True)) == ("direct", "relay")
    barely = Rates(**{**RELAYED.__dict__, "relay_down": RELAYED.down * 1.05})
    assert eq2_choice(BIG, barely, False) == "direct"  # relay only when clearly faster


# --- uploads: small threshold 100, coded threshold (when the deployment codes) 1,000 -------------
def up(size: int, coded_threshold: int | None = 1000, **asked) -> Upload:
    return Upload(size, 100, coded_threshold, **asked)


@pytest.mark.parametrize(
    ("facts", "modes"),
    [
        (up(50), ("small", "direct")),  # too large for the API after all: the whole file to S3
        (up(100), ("small", "direct")),  # the threshold itself is small
        (up(50, signature=True), ("small", "delta", "direct")),
        (up(50, coded=True), ("small", "direct")),  # coding is for files the API does not take
        (up(101), ("direct",)),
        (up(101, coded=True), ("coded",)),
        (up(101, coded=True, signature=True), ("coded",)),  # asked for coded: no delta
        (up(1000), ("direct",)),  # the coded threshold itself is not coded
        (up(1001), ("coded",)),  # coded by default above the deployment's threshold
        (up(1001, None), ("direct",)),  # a deployment that codes nothing
        (up(1001, coded=False), ("direct",)),
        (up(1001, via="direct"), ("direct",)),  # a way pinned: not coded by default
        (up(1001, signature=True), ("delta", "coded")),  # an edit of a known file: a delta first
        (up(101, signature=True), ("delta", "direct")),
        (up(101, via="direct", signature=True), ("direct",)),
        (up(101, via="delta"), ("direct",)),  # no kept checksum list: nothing to patch against
        (up(101, via="delta", signature=True), ("delta", "direct")),
        (up(101, via="direct", base=True), ("delta", "direct")),  # a named base: a delta against it
        (up(1001, base=True), ("delta", "coded")),
    ],
)
def test_upload_table(facts, modes):
    assert plan_transfer(facts).modes == modes


def test_only_via_delta_forces_the_delta_against_a_kept_checksum_list():
    assert plan_transfer(up(101, via="delta", signature=True)).force_delta
    assert not plan_transfer(up(101, signature=True)).force_delta


# --- downloads before the cloud named the file ---------------------------------------------------
@pytest.mark.parametrize(
    ("facts", "modes"),
    [
        (Download(BIG, held=True, rates=SLOW), ("delta",)),  # asked for at once, by the version held
        (Download(BIG, held=True, rates=FAST), ()),  # eq. 2 says the whole file is quicker
        (Download(BIG, via="delta", held=True), ("delta",)),  # asked for: no rates needed
        (Download(BIG, rates=SLOW), ()),  # the local copy's version is not known
        (Download(BIG, held=True, base=True, rates=SLOW), ()),  # a named base: ask what the file is
        (Download(BIG, held=True, rsync=True, rates=SLOW), ("delta",)),  # the checksum list sent at once
        (Download(BIG, via="direct", held=True, rates=SLOW), ()),
        (Download(BIG, via="relay", held=True, rates=SLOW), ()),
    ],
)
def test_download_before_asking_table(facts, modes):
    assert plan_transfer(facts).modes == modes


def test_an_rsync_only_download_asked_at_once_is_not_version_aware():
    assert not plan_transfer(Download(BIG, held=True, rsync=True, rates=SLOW)).version_aware
    assert plan_transfer(Download(BIG, held=True, rates=SLOW)).version_aware


def test_an_automatic_choice_without_rates_is_a_mistake_not_a_guess():
    with pytest.raises(ValueError):
        plan_transfer(Download(BIG, held=True))
    with pytest.raises(ValueError):
        plan_transfer(Download(BIG, "large", local=True))


# --- downloads of a large file ---------------------------------------------------------------------
def large(**facts) -> Download:
    return Download(BIG, "large", **facts)


def coded(**facts) -> Download:
    return Download(BIG, "coded", **facts)


@pytest.mark.parametrize(
    ("facts", "modes"),
    [
        (large(rates=SLOW), ("direct",)),  # no local copy: nothing to patch
        (large(rates=RELAYED), ("relay",)),  # the relay measured clearly faster
        (large(local=True, rates=SLOW), ("delta", "direct")),
        (large(local=True, rates=FAST), ("direct",)),
        (large(local=True, rates=RELAYED), ("relay",)),
        (large(local=True, current=True, rates=SLOW), ("same",)),  # already held: nothing moves
        (large(via="direct", local=True), ("direct",)),
        (large(via="relay", local=True), ("relay",)),
        (large(via="delta", local=True), ("delta", "direct")),
        (large(via="delta"), ("direct",)),  # asked, but no base to patch
        (large(base=True), ("delta", "direct")),  # a named base: a delta, whatever eq. 2 says
        (large(base=True, current=True), ("delta", "direct")),  # (the delta finds them equal)
        (large(via="direct", base=True), ("delta", "direct")),
        (large(via="relay", base=True), ("delta", "relay")),
        # erasure-coded files: rebuilt from k instances unless a delta or the relay is the way
        (coded(), ("coded",)),
        (coded(via="direct"), ("coded",)),
        (coded(via="direct", local=True), ("coded",)),
        (coded(via="relay"), ("relay",)),
        (coded(local=True, rates=SLOW), ("delta", "coded")),
        (coded(local=True, rates=FAST), ("coded",)),
        (coded(local=True, rates=RELAYED), ("relay",)),
        (coded(local=True, current=True, rates=FAST), ("same",)),
        (coded(via="delta", local=True), ("delta", "coded")),
        (coded(via="delta"), ("coded",)),
        (coded(base=True), ("delta", "coded")),
        (coded(via="relay", base=True), ("delta", "relay")),
    ],
)
def test_download_table(facts, modes):
    plan = plan_transfer(facts)
    assert plan.modes == modes and plan.version_aware


def test_rsync_only_keeps_the_way_and_drops_the_version_aware_delta():
    assert plan_transfer(large(base=True, rsync=True)) == TransferPlan(
        ("delta", "direct"), version_aware=False
    )
    assert plan_transfer(large(local=True, rsync=True, rates=SLOW)).modes == ("delta", "direct")


def test_every_plan_ends_in_a_mode_that_never_declines():
    cases = [
        up(s, t, via=v, coded=c, base=b, signature=g)
        for s in (50, 101, 1001)
        for t in (None, 1000)
        for v in ("auto", "direct", "delta")
        for c in (None, True, False)
        for b in (False, True)
        for g in (False, True)
    ]
    cases += [
        Download(BIG, r, via=v, base=b, local=lo, current=cu, rates=SLOW)
        for r in ("large", "coded")
        for v in ("auto", "direct", "relay", "delta")
        for b in (False, True)
        for lo in (False, True)
        for cu in (False, True)
    ]
    for facts in cases:
        modes = plan_transfer(facts).modes
        assert modes and modes[-1] in ("direct", "relay", "coded", "same"), (facts, modes)
        assert modes.count("delta") <= 1 and ("small" not in modes[1:]), (facts, modes)


# --- the SDK follows its plan --------------------------------------------------------------------
@pytest.fixture
def sdk(tmp_path, monkeypatch):
    from hycloud.sdk import HyCloud

    monkeypatch.setenv("HYCLOUD_STATE", str(tmp_path / "s.sqlite3"))
    client = HyCloud("http://unused", "key")
    client._threshold, client._coded_threshold = 1000, None
    return client


def test_a_small_file_the_api_refuses_as_too_large_goes_straight_to_s3(sdk, tmp_path, monkeypatch):
    from hycloud.sdk import client as sdk_client
    from hycloud_core.errors import PayloadTooLargeError

    def too_large(*a, **k):
        raise PayloadTooLargeError("too large for the API")

    sent: list[str] = []

    def upload(http, local, remote, *a, **k):
        sent.append(remote)
        return {"path": remote, "content_hash": "h", "sent_bytes": 10}

    monkeypatch.setattr(sdk, "put_bytes", too_large)
    monkeypatch.setattr(sdk_client, "upload_large", upload)
    monkeypatch.setattr(sdk_client.auto, "remember", lambda *a: None)
    src = tmp_path / "f"
    src.write_bytes(b"x" * 10)
    assert sdk.put(src, "/f")["mode"] == "direct" and sent == ["/f"]


def test_a_get_of_the_version_held_moves_nothing(sdk, tmp_path, monkeypatch):
    from hycloud.sdk import client as sdk_client

    local = tmp_path / "f"
    local.write_bytes(b"x" * 100)
    sdk.store.remember("/f", "h", local, None)
    monkeypatch.setattr(
        sdk, "_fetch", lambda path: LinkAnswer({"path": path, "content_hash": "h", "size": 100})
    )
    monkeypatch.setattr(sdk_client.auto, "rates", lambda store: FAST)
    monkeypatch.setattr(sdk_client, "download_large", lambda *a, **k: pytest.fail("downloaded"))
    assert sdk.get("/f", local) == local and sdk.last_transfer == {"mode": "same"}


def test_a_delta_that_cannot_be_made_falls_back_to_the_way_asked(sdk, tmp_path, monkeypatch):
    from hycloud.sdk import client as sdk_client
    from hycloud.transfer import delta

    base, local = tmp_path / "old", tmp_path / "new"
    base.write_bytes(b"o" * 100)
    link = {"path": "/f", "content_hash": "h2", "size": 100}
    asked: list[str] = []
    monkeypatch.setattr(sdk, "_fetch", lambda path: LinkAnswer(link))
    monkeypatch.setattr(
        delta, "delta_download", lambda *a, **k: asked.append(k["mode"])
    )  # None: no list fits

    def relay(http, remote, target, *a):
        asked.append("relay")
        target.write_bytes(b"n" * 100)

    monkeypatch.setattr(sdk_client, "download_relay", relay)
    monkeypatch.setattr(sdk_client.auto, "remember", lambda *a: None)
    sdk.get("/f", local, via="relay", base=base, delta_mode="rsync")
    assert asked == ["rsync", "relay"] and sdk.last_transfer["mode"] == "relay"
