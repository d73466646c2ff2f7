"""`hycloud status` shows both lags: the namespaces' (Merkle job) and the records' (stream)."""

from hycloud.cli.status import _line


def test_both_lags_are_shown_and_a_failing_stream_says_so():
    report = {"lag_s": 4.25, "records_lag_s": 1.5, "records_ok": True, "paused": False}
    assert _line("standby", report) == "standby: standby lag: namespaces 4.2s, records 1.5s"
    late = {"lag_s": None, "records_lag_s": None, "paused": True}
    assert _line("primary", late) == (
        "primary: standby lag: namespaces never in step yet, replication paused, records no change streamed yet"
    )
    assert _line("standby", {**report, "records_ok": False}).endswith("records 1.5s (failing)")
