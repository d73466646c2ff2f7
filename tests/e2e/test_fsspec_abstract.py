"""fsspec's own abstract test suite (Copy, Get, Put, Pipe, Open) against `hycloud://` on the
deployed cloud, subclassed as s3fs and gcsfs do: the exceptions and path habits Python code that
uses fsspec expects (FileNotFoundError, FileExistsError, "into a folder that does not exist yet").

Sized for a routine run on the local cloud, where a request takes 0.1-1 s:
- the remote source trees the Copy and Get tests read (and never change) are made once per class
  instead of once per test, each in its own folder;
- of the 28 glob edge cases each of Copy, Get and Put runs, GLOB_SAMPLE (each kind of pattern:
  `?`, `[]`, `*`, `**`, with and without recursion and depth) run by default, all of them with
  HYCLOUD_FSSPEC_FULL=1. Measured on a shared 2-core machine under a load of about 5: the
  default 53 tests in 9 min, all 137 in 26 min.
"""

from __future__ import annotations

import os
import posixpath
import uuid

import fsspec
import fsspec.tests.abstract as abstract
import pytest
from fsspec.tests.abstract.common import GLOB_EDGE_CASES_TESTS

pytestmark = pytest.mark.slow

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
def hycloud_fs(alice):
    fs = fsspec.filesystem(
        "hycloud", endpoint=alice.deployment.api_url, key=alice.key, skip_instance_cache=True
    )
    root = f"/fsspec-abstract-{uuid.uuid4().hex[:8]}"
    fs.makedirs(root, exist_ok=True)
    yield fs, root
    fs.rm(root, recursive=True)


class HyCloudFixtures(abstract.AbstractFixtures):
    """The fixtures the abstract suite asks a filesystem to provide, the read-only remote
    scenarios made once per class."""

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

    @pytest.fixture(scope="class")
    @classmethod
    def fs_bulk_operations_scenario_0(cls, fs, fs_join, fs_path):
        return cls()._bulk_operations_scenario_0(fs, fs_join, fs_join(fs_path, "bulk"))

    @pytest.fixture(scope="class")
    @classmethod
    def fs_glob_edge_cases_files(cls, fs, fs_join, fs_path):
        return cls()._glob_edge_cases_files(fs, fs_join, fs_join(fs_path, "glob"))

    @pytest.fixture(scope="class")
    @classmethod
    def fs_dir_and_file_with_same_name_prefix(cls, fs, fs_join, fs_path):
        return cls()._dir_and_file_with_same_name_prefix(fs, fs_join, fs_join(fs_path, "prefix"))

    @pytest.fixture(scope="class")
    @classmethod
    def fs_10_files_with_hashed_names(cls, fs, fs_join, fs_path):
        return cls()._10_files_with_hashed_names(fs, fs_join, fs_join(fs_path, "hashed"))


class TestHyCloudCopy(abstract.AbstractCopyTests, HyCloudFixtures):
    @pytest.mark.parametrize(*GLOB_ARGS)
    def test_copy_glob_edge_cases(
        self,
        path,
        recursive,
        maxdepth,
        expected,
        fs,
        fs_join,
        fs_glob_edge_cases_files,
        fs_target,
        fs_sanitize_path,
    ):
        super().test_copy_glob_edge_cases(
            path,
            recursive,
            maxdepth,
            expected,
            fs,
            fs_join,
            fs_glob_edge_cases_files,
            fs_target,
            fs_sanitize_path,
        )


class TestHyCloudGet(abstract.AbstractGetTests, HyCloudFixtures):
    @pytest.mark.parametrize(*GLOB_ARGS)
    def test_get_glob_edge_cases(
        self,
        path,
        recursive,
        maxdepth,
        expected,
        fs,
        fs_join,
        fs_glob_edge_cases_files,
        local_fs,
        local_join,
        local_target,
    ):
        super().test_get_glob_edge_cases(
            path,
            recursive,
            maxdepth,
            expected,
            fs,
            fs_join,
            fs_glob_edge_cases_files,
            local_fs,
            local_join,
            local_target,
        )


class TestHyCloudPut(abstract.AbstractPutTests, HyCloudFixtures):
    @pytest.mark.parametrize(*GLOB_ARGS)
    def test_put_glob_edge_cases(
        self,
        path,
        recursive,
        maxdepth,
        expected,
        fs,
        fs_join,
        fs_target,
        local_glob_edge_cases_files,
        local_join,
        fs_sanitize_path,
    ):
        super().test_put_glob_edge_cases(
            path,
            recursive,
            maxdepth,
            expected,
            fs,
            fs_join,
            fs_target,
            local_glob_edge_cases_files,
            local_join,
            fs_sanitize_path,
        )


class TestHyCloudPipe(abstract.AbstractPipeTests, HyCloudFixtures):
    pass


class TestHyCloudOpen(abstract.AbstractOpenTests, HyCloudFixtures):
    pass
