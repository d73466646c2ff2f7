"""The committed OpenAPI document is the one the routes generate (functions/controller/export_openapi.py)."""

from __future__ import annotations

import importlib
import json
import sys

import pytest

from tests.conftest import ROOT, load_function

CONTROLLER = ROOT / "functions" / "controller"


@pytest.fixture
def export(monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    load_function("controller")
    sys.modules.pop("export_openapi", None)
    monkeypatch.syspath_prepend(str(CONTROLLER))
    return importlib.import_module("export_openapi")


def test_committed_document_matches_the_routes(export):
    committed = (CONTROLLER / "openapi.json").read_text()
    assert committed == export.render(), (
        "functions/controller/openapi.json is stale: run .venv/bin/python functions/controller/export_openapi.py"
    )


def test_every_operation_documents_the_error_shape_and_no_powertools_422(export):
    doc = json.loads(export.render())
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            assert {"400", "401", "403"} <= set(op["responses"]), (method, path)
            assert ("422" in op["responses"]) == export.covers(method, path), (method, path)
            error = op["responses"]["400"]["content"]["application/json"]["schema"]
            assert error == {"$ref": "#/components/schemas/ErrorBody"}


def test_idempotency_key_is_documented_on_mutating_routes_only(export):
    doc = json.loads(export.render())
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            names = [p["name"] for p in op.get("parameters", [])]
            assert ("Idempotency-Key" in names) == export.covers(method, path), (method, path)
