"""GET /v1/whoami names the caller's user id as well as its name: `by` in the version history and
the trash is that id, and the web app shows "you" where it is the caller's own."""

from __future__ import annotations

from tests.unit.functions.test_versions_api import call, put  # noqa: F401 (a fixture)


def test_whoami_id_is_what_by_names_in_the_trash_and_the_history(call):  # noqa: F811
    status, me = call("GET", "/v1/whoami")
    assert status == 200 and me["user"] == "alice" and me["id"].startswith("u-")
    put(call, "/a.txt", b"one")
    put(call, "/a.txt", b"two")
    listed = call("GET", "/v1/versions", query={"path": "/a.txt"})[1]["versions"]
    assert [v["by"] for v in listed] == [me["id"]]
    assert call("DELETE", "/v1/files", query={"path": "/a.txt"})[1]["trash"]["by"] == me["id"]
