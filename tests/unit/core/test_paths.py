"""Path normal form and namespace confinement."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hycloud_core import paths
from hycloud_core.errors import InvalidPathError

component = st.text(
    st.characters(blacklist_categories=("Cc", "Cs"), blacklist_characters="/\\"), min_size=1, max_size=20
)


@given(st.lists(st.one_of(component, st.just(""), st.just("."), st.just("..")), max_size=8))
@settings(max_examples=300, deadline=None)
def test_normal_form_is_idempotent_and_never_escapes(parts):
    raw = "/".join(parts)
    try:
        norm = paths.normalize(raw)
    except InvalidPathError:
        return
    assert norm.startswith("/") and paths.normalize(norm) == norm
    assert ".." not in norm.split("/") and "." not in norm.split("/") and "//" not in norm


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "..",
        "/a/..",
        "../x",
        "/a/./b",
        "a\\b",
        "a\x00b",
        "a%2E%2e/x",
        "%2f",
        "x%5cy",
        "/" + "a" * 256,
        "\x7f",
    ],
)
def test_refused(bad):
    with pytest.raises(InvalidPathError):
        paths.normalize(bad)


def test_accepted_forms():
    assert paths.normalize("a//b/") == "/a/b"
    assert paths.normalize("/") == "/"
    assert paths.normalize("/é/ü") == "/é/ü"
    assert paths.normalize("/" + "ä" * 127) == "/" + "ä" * 127  # 254 bytes


def test_confine_refuses_symlink_out(tmp_path):
    root, outside = tmp_path / "ns" / "alice", tmp_path / "ns" / "bob"
    root.mkdir(parents=True)
    outside.mkdir()
    os.symlink(outside, root / "link")
    with pytest.raises(InvalidPathError):
        paths.confine(str(root), "/link/file")
    assert paths.confine(str(root), "/a/b") == os.path.join(os.path.realpath(root), "a/b")


def test_related_and_cache_name():
    assert paths.is_related("/a", "/a/b/c") and paths.is_related("/a/b", "/a/b")
    assert not paths.is_related("/a/b", "/a/bc")
    assert paths.cache_name("alice", "/d/f.tar") == "alice#d#f.tar"
