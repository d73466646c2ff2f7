"""`hycloud status`: which controller the client would use, and how far behind the standby is."""

from __future__ import annotations

from typing import Any

from hycloud_core.errors import HyCloudError

from .output import emit


def _report(http: Any) -> dict[str, Any]:
    try:
        return http.json("GET", "/v1/replication")
    except HyCloudError as err:
        return {"error": {"code": err.code, "message": err.message}}


def _line(name: str, report: dict[str, Any]) -> str:
    if "error" in report:
        return f"{name}: unreachable ({report['error']['code']})"
    lag = "never in step yet" if report.get("lag_s") is None else f"{report['lag_s']:.1f}s"
    paused = ", replication paused" if report.get("paused") else ""
    records = report.get("records_lag_s")
    stream = "no change streamed yet" if records is None else f"{records:.1f}s"
    failing = " (failing)" if report.get("records_ok") is False else ""
    return f"{name}: standby lag: namespaces {lag}{paused}, records {stream}{failing}"


def status_command() -> None:
    """Show the controllers (primary, standby) and the standby's replication lag."""
    from ..failover import FailoverHttp
    from ..sdk.client import HyCloud

    http = HyCloud.from_config().http
    if not isinstance(http, FailoverHttp):
        report = _report(http)
        emit({"primary": report, "standby": None}, _line("primary", report) + "\nno standby configured")
        return
    primary, standby = _report(http.primary), _report(http.standby)
    emit(
        {"primary": primary, "standby": standby},
        "\n".join([_line("primary", primary), _line("standby", standby)]),
    )
