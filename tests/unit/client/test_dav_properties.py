"""Dead properties follow a whole folder when the gateway copies or removes it in one call."""

from hycloud.webdav.properties import TreePropertyManager


def _manager() -> TreePropertyManager:
    manager = TreePropertyManager()
    for url in ("/a/", "/a/f%20x", "/a/sub/", "/a/sub/g", "/ab/h"):
        manager.write_property(url, "{urn:t}p", f"v{url}")
    return manager


def test_copy_tree_copies_everything_below_and_nothing_beside():
    manager = _manager()
    manager.copy_tree("/a/", "/c")
    assert manager.get_property("/c/f%20x", "{urn:t}p") == "v/a/f%20x"
    assert manager.get_property("/c/sub/g", "{urn:t}p") == "v/a/sub/g"
    assert manager.get_property("/c/", "{urn:t}p") == "v/a/"
    assert manager.get_properties("/ch") == [] and manager.get_property("/a/sub/g", "{urn:t}p") == "v/a/sub/g"


def test_remove_tree_leaves_siblings_with_a_common_prefix():
    manager = _manager()
    manager.remove_tree("/a/")
    assert all(manager.get_properties(u) == [] for u in ("/a/", "/a/f%20x", "/a/sub/", "/a/sub/g"))
    assert manager.get_property("/ab/h", "{urn:t}p") == "v/ab/h"
