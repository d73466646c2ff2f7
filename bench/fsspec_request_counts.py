"""A pytest plugin that counts the requests the in-process cloud answers, by method and route, over
a run of fsspec's abstract suite (tests/unit/client/test_fsspec_abstract.py): what `hycloud://`
costs, before and after a change to client/hycloud/fsspec_fs.py.

    COUNT_OUT=after.json PYTHONPATH=bench .venv/bin/python -m pytest \
        tests/unit/client/test_fsspec_abstract.py -q -p no:randomly -p fsspec_request_counts
    git show 2ff73d7:client/hycloud/fsspec_fs.py > /tmp/old_fsspec_fs.py   # before the routing
    ORIG_FSSPEC=/tmp/old_fsspec_fs.py COUNT_OUT=before.json PYTHONPATH=bench ... (the same)

With ORIG_FSSPEC the module at that path is loaded as hycloud.fsspec_fs, so both versions run on
the same tree. Results: bench/results/fsspec-encrypted-requests.md.
"""

from __future__ import annotations

import collections
import importlib.util
import json
import os
import sys
from urllib.parse import urlparse

import tests.unit.inprocess_cloud as ipc

COUNTS: collections.Counter[str] = collections.Counter()
_send = ipc.ControllerAdapter.send


def _counted(self, request, *args, **kwargs):
    route = urlparse(request.url).path.split("/v1/")[-1].split("/")[0]
    COUNTS[f"{request.method} {route}"] += 1
    return _send(self, request, *args, **kwargs)


ipc.ControllerAdapter.send = _counted  # type: ignore[method-assign]

if os.environ.get("ORIG_FSSPEC"):
    import hycloud  # noqa: F401 (the package the module is loaded into)

    spec = importlib.util.spec_from_file_location("hycloud.fsspec_fs", os.environ["ORIG_FSSPEC"])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["hycloud.fsspec_fs"] = module
    spec.loader.exec_module(module)


def pytest_sessionfinish(session, exitstatus) -> None:
    with open(os.environ["COUNT_OUT"], "w") as out:
        json.dump({"total": sum(COUNTS.values()), **COUNTS}, out, indent=1, sort_keys=True)
