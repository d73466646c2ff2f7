"""fsspec's own abstract test suite (Copy, Get, Put, Pipe, Open) against `hycloud://`,
subclassed as s3fs and gcsfs do: the exceptions and path habits Python code that uses fsspec
expects (FileNotFoundError, FileExistsError, "into a folder that does not exist yet").

What it proves is the client (fsspec_fs, the SDK) together with the controller's routes, so it
runs in-process (tests/unit/inprocess_cloud.py: the controller's handler behind a `requests`
adapter, moto for DynamoDB and S3, a temp dir for EFS): its thousands of small requests cost
a function call each instead of a trip through the local cloud's gateway and Lambda. That the
deployed cloud answers `hycloud://` the same way is proven by tests/e2e/test_fsspec.py.

- the remote source trees the Copy and Get tests read (and never change) are made once for the
  module instead of once per test, built locally and sent in one bundle request;
- of the 28 glob edge cases each of Copy, Get and Put runs, GLOB_SAMPLE (each kind of pattern:
  `?`, `[]`, `*`, `**`, with and without recursion and depth) run by default, all of them with
  HYCLOUD_FSSPEC_FULL=1.
"""

from __future__ import annotations

import functools
import os
import posixpath
import uuid

import fsspec
import fsspec.tests.abstract as abstract
import pytest
from fsspec.implementations.local import LocalFileSystem
from fsspec.tests.abstract.common import GLOB_EDGE_CASES_TESTS

from hycloud.sdk import bundles
from tests.unit.inprocess_cloud import InProcessCloud, inprocess_cloud  # noqa: F401 (a fixture)

pytestmark = pytest.mark.slow  # ~1,500 requests at ~0.1 s of CPU each (moto): minutes, out of `make fast`

FULL = os.environ.get("HYCLOUD_FSSPEC_FULL") == "1"
GLOB_SAMPLE = {  # each wildcard once, with and without recursion and a depth limit
    ("fil?1", False, None),
    ("*", True, 2),
    ("**/*1", True, 1),
    ("subdir[0-1]", True, None),
}
GLOB_CASES = [case for case in GLOB_EDGE_CASES_TESTS["argvalues"] if FULL or tuple(case[:3]) in GLOB_SAMPLE]
GLOB_ARGS = (GLOB_EDGE_CASES_TESTS["argnames"], GLOB_CASES)


@pytest.fixture(scope="module")
def hycloud_fs(inprocess_cloud: InProcessCloud):  # noqa: F811 (the imported fixture)
    fs = fsspec.filesystem(
        "hycloud", endpoint=inprocess_cloud.base, key=inprocess_cloud.key, skip_instance_cache=True
    )
    root = f"/fsspec-abstract-{uuid.uuid4().hex[:8]}"
    fs.makedirs(root, exist_ok=True)
    yield fs, root
    fs.rm(root, recursive=True)


SCENARIOS = {  # fixture name -> the abstract suite's method that makes its tree
    "bulk": "_bulk_operations_scenario_0",
    "glob": "_glob_edge_cases_files",
    "prefix": "_dir_and_file_with_same_name_prefix",
    "hashed": "_10_files_with_hashed_names",
}


@pytest.fixture(scope="module")
def remote_scenarios(hycloud_fs, tmp_path_factory) -> dict[str, str]:
    """The remote source trees the Copy and Get tests read (and never change), made once for the
    module: built locally by the suite's own methods, sent in one bundle request."""
    fs, root = hycloud_fs
    local, made = tmp_path_factory.mktemp("scenarios"), {}
    for name, method in SCENARIOS.items():
        source = getattr(abstract.AbstractFixtures(), method)(
            LocalFileSystem(auto_mkdir=True), os.path.join, str(local / name)
        )
        made[name] = posixpath.join(root, "scenarios", name, os.path.relpath(source, local / name))
    pairs = [
        (p, posixpath.join(root, "scenarios", p.relative_to(local).as_posix()))
        for p in sorted(local.rglob("*"))
        if p.is_file()
    ]
    results = bundles.put_files(fs.client, pairs)
    assert [r["status"] for r in results] == ["ok"] * len(pairs), results
    assert len(pairs) == 5 + 8 + 2 + 10  # every file of the four trees
    return made


def scenario_fixture(name: str):
    """A fixture answering the remote path of the shared scenario `name` (see SCENARIOS)."""

    @pytest.fixture
    def scenario(self, remote_scenarios):
        return remote_scenarios[name]

    return scenario


class HyCloudFixtures(abstract.AbstractFixtures):
    """The fixtures the abstract suite asks a filesystem to provide, the read-only remote
    scenarios shared by the module (`remote_scenarios`)."""

    @pytest.fixture(scope="class")
    @classmethod
    def fs(cls, hycloud_fs):
        return hycloud_fs[0]

    @pytest.fixture(scope="class")
    @classmethod
    def fs_path(cls, hycloud_fs, request):
        path = posixpath.join(hycloud_fs[1], request.cls.__name__)
        hycloud_fs[0].makedirs(path, exist_ok=True)
        return path

    @pytest.fixture(scope="class")
    @classmethod
    def fs_join(cls):
        return posixpath.join

    @pytest.fixture
    def supports_empty_directories(self):
        return True

    fs_bulk_operations_scenario_0 = scenario_fixture("bulk")
    fs_glob_edge_cases_files = scenario_fixture("glob")
    fs_dir_and_file_with_same_name_prefix = scenario_fixture("prefix")
    fs_10_files_with_hashed_names = scenario_fixture("hashed")


def sampled(base):
    """The abstract glob test `base`, parametrized with GLOB_CASES instead of all 28 (its own
    parametrize mark dropped; pytest reads the fixtures from `base`'s signature)."""

    @functools.wraps(base)
    def test(self, *args, **kwargs):
        return base(self, *args, **kwargs)

    test.pytestmark = [m for m in getattr(base, "pytestmark", []) if m.name != "parametrize"]  # type: ignore[attr-defined]
    return pytest.mark.parametrize(*GLOB_ARGS)(test)


class TestHyCloudCopy(abstract.AbstractCopyTests, HyCloudFixtures):
    test_copy_glob_edge_cases = sampled(abstract.AbstractCopyTests.test_copy_glob_edge_cases)


class TestHyCloudGet(abstract.AbstractGetTests, HyCloudFixtures):
    test_get_glob_edge_cases = sampled(abstract.AbstractGetTests.test_get_glob_edge_cases)


class TestHyCloudPut(abstract.AbstractPutTests, HyCloudFixtures):
    test_put_glob_edge_cases = sampled(abstract.AbstractPutTests.test_put_glob_edge_cases)


class TestHyCloudPipe(abstract.AbstractPipeTests, HyCloudFixtures):
    pass


class TestHyCloudOpen(abstract.AbstractOpenTests, HyCloudFixtures):
    pass
