"""`hycloud usage` rendering: the report's figures reach the tables, and --json passes it through."""

from __future__ import annotations

import json

import pytest
from rich.console import Console

from hycloud.cli import usage as cli
from hycloud_core.cost import UsageBuilder, compare, deployment_shape, idle_monthly, load_prices

P = load_prices()
GiB = 1024**3
REGIONS = ["us-east-1", "eu-west-1"]


def report() -> dict:
    b = UsageBuilder(user="alice")
    b.add_dir()
    b.add_small(700, "/notes")
    b.add_large(3 * GiB, "h1", 220, "/a")
    b.add_large(3 * GiB, "h1", 220, "/b")
    usage = b.build()
    return {
        "user": "alice",
        "usage": usage.to_dict(),
        "shared": {
            "shared_objects": 1,
            "shared_bytes": 3 * GiB,
            "attributed_bytes": GiB,
            "attributed_s3_cost": 0.023,
        },
        "costs": {k: c.to_dict(P) for k, c in compare(usage, P).items()},
        "prices": {"region": P.region, "date": P.date},
    }


@pytest.fixture
def fake_client(monkeypatch):
    calls = []
    data = report()

    class FakeHttp:
        def json(self, method, route, **kw):
            calls.append((method, route))
            return data

    class FakeClient:
        http = FakeHttp()

        def instances(self):
            calls.append(("GET", "/v1/instances"))
            return [{"region": r} for r in REGIONS]

    monkeypatch.setattr(cli.HyCloud, "from_config", classmethod(lambda cls: FakeClient()))
    return calls, data


def test_tables_show_usage_and_three_costs(fake_client):
    calls, data = fake_client
    console = Console(record=True, width=160)
    cli.usage_command(False, console)
    text = console.export_text()
    assert calls == [("GET", "/v1/usage"), ("GET", "/v1/instances")]
    for layout in ("HyCloud (EFS + S3)", "all in S3", "all in EFS"):
        assert layout in text
    for cost in data["costs"].values():
        assert cli.dollars(cost["total"]) in text
    assert "6.00 GiB" in text and "3.00 GiB" in text  # logical vs stored after dedup
    assert "3.00 GiB saved" in text and "shared with other users" in text
    assert P.date in text


def test_the_trash_and_the_snapshots_have_their_own_lines(fake_client):
    _, data = fake_client
    data["trash"] = {"bytes": 2048, "files": 3, "items": 2}
    data["snapshots"] = {"bytes": 3 * GiB, "files": 40, "snapshots": 2}
    console = Console(record=True, width=160)
    cli.usage_command(False, console)
    text = console.export_text()
    assert "trash: 2 items, 3 files, 2.00 KiB (not in the quota" in text
    assert "snapshots: 2, 40 files, 3.00 GiB (not in the usage above" in text


def test_json_output_is_the_report(fake_client):
    _, data = fake_client
    console = Console(record=True, width=200)
    cli.usage_command(True, console)
    shown = json.loads(console.export_text())
    assert {k: v for k, v in shown.items() if k != "idle"} == data
    assert shown["idle"]["regions"] == REGIONS and shown["idle"]["shape"] == "deployment"


def test_idle_cost_of_the_deployments_regions(fake_client):
    console = Console(record=True, width=400)
    cli.usage_command(False, console)
    text = console.export_text()
    expected = idle_monthly(deployment_shape(REGIONS), P)
    assert (
        f"idle deployment (2 regions) at us-east-1 list prices: {cli.dollars(expected.total)}/month" in text
    )
    assert f"interface endpoints {cli.dollars(expected.lines['interface_endpoints'])}" in text


def test_idle_cost_with_a_standby_and_of_a_controller_that_lists_no_regions(monkeypatch):
    from hycloud.failover import FailoverHttp

    class Old:
        http = FailoverHttp.__new__(FailoverHttp)

        def instances(self):
            raise cli.HyCloud.NotFoundError("no route")

    idle = cli.deployment_idle(Old())
    expected = idle_monthly(deployment_shape(list(cli.DEFAULT_REGIONS), standby="standby"), P)
    assert idle["shape"] == "default" and idle["standby"] and idle["total"] == round(expected.total, 4)
    assert "the default deployment, 3 regions, standby" in cli.idle_line(idle)


@pytest.mark.parametrize(
    ("n", "text"), [(0, "0 B"), (1023, "1023 B"), (1536, "1.50 KiB"), (5 * GiB, "5.00 GiB")]
)
def test_human_bytes(n, text):
    assert cli.human_bytes(n) == text


def test_admin_report_lists_users_and_bucket_totals():
    from hycloud_core.cost.records import DeploymentUsage

    dep = DeploymentUsage()
    items = [
        {"pk": "OBJ#h1", "sk": "OBJ", "state": "live", "size": GiB},
        {"pk": "OBJ#h2", "sk": "OBJ", "state": "deleting", "size": 5},
        {"pk": "NS#alice", "sk": "F#/a", "kind": "large", "size": GiB, "content_hash": "h1"},
        {"pk": "NS#bob", "sk": "F#/b", "kind": "large", "size": GiB, "content_hash": "h1"},
        {"pk": "NS#bob", "sk": "F#/s", "kind": "small", "size": 10, "sha256": "x"},
        {"pk": "USER#bob", "sk": "PROFILE"},
    ]
    for item in items:
        dep.add(item)
    data = dep.report(P)
    console = Console(record=True, width=160)
    cli.show_deployment(data, False, console)
    text = console.export_text()
    assert "S3 holds 1 contents, 1.00 GiB for 2 references (1.00 GiB saved by dedup)" in text
    assert "alice" in text and "bob" in text
    assert data["users"]["bob"]["usage"]["files"] == 2 and data["all_users"]["usage"]["s3_bytes"] == GiB


def test_storage_classes_add_up_to_the_billed_bytes_of_each_store():
    b = UsageBuilder(user="alice")
    b.add_dir()
    for size, path in ((700, "/a"), (200 * 1024, "/b"), (1024 * 1024, "/c")):
        b.add_small(size, path)
    b.add_large(100 * 1024, "small-content", 220, "/d")  # a content under 128 KiB stays Standard
    b.add_large(3 * GiB, "h1", 220, "/e")
    usage = b.build().to_dict()
    rows = {(name, why.split(":")[0]): (n, nbytes) for name, why, n, nbytes in cli.class_rows(usage)}
    efs = [v for (name, _), v in rows.items() if name.startswith("EFS")]
    s3 = [v for (name, _), v in rows.items() if name.startswith("S3")]
    assert sum(nbytes for _, nbytes in efs) == usage["efs_metered_bytes"]
    assert sum(nbytes for _, nbytes in s3) == usage["s3_bytes"] == 100 * 1024 + 3 * GiB
    assert rows[("EFS Standard > IA > Archive", "small files of 128 KiB+")] == (2, 200 * 1024 + 1024 * 1024)
    assert rows[("EFS Standard", "small files under 128 KiB")] == (1, 4096)
    assert rows[("S3 Intelligent-Tiering", "contents of 128 KiB+")] == (1, 3 * GiB)
    assert rows[("S3 Standard", "contents under 128 KiB")] == (1, 100 * 1024)
    console = Console(record=True, width=160)
    console.print(cli.class_table(usage))
    text = console.export_text()
    assert "S3 Intelligent-Tiering" in text and "3.00 GiB" in text
