"""The controller's services sit below its routes: a service imports no route (so no route's
callback can be handed down and called back), and routes/ holds route modules only."""

from __future__ import annotations

import ast

from tests.conftest import ROOT

CONTROLLER = ROOT / "functions" / "controller"


def _imported(path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            names.add(("." * node.level) + (node.module or ""))
    return names


def test_no_service_imports_a_route():
    services = sorted((CONTROLLER / "services").glob("*.py"))
    assert len(services) >= 3
    for module in services:
        routes = {n for n in _imported(module) if n.split(".")[0] in ("routes", "..routes") or n == ".."}
        assert not routes, f"{module.name} imports {routes}"


def test_every_module_in_routes_defines_routes():
    for module in sorted((CONTROLLER / "routes").glob("*.py")):
        if module.name != "__init__.py":
            assert "router = APIGatewayRouter()" in module.read_text(), f"{module.name} defines no route"


def test_no_route_imports_another():
    """What two routes share is a service's (services/): a route module imports no other."""
    for module in sorted((CONTROLLER / "routes").glob("*.py")):
        others = {n for n in _imported(module) if n.startswith(".") or n.split(".")[0] == "routes"}
        assert not others, f"{module.name} imports {others}"


def test_no_route_queues_starts_or_looks_up_a_job_itself():
    """Jobs are the services' work (services/): a route imports neither the FOP queue, the
    dispatch pass, the job ledger nor Step Functions executions."""
    job_stores = {
        f"hycloud_core.jobs.{name}" for name in ("queue", "dispatch", "coded", "ledger", "executions")
    }
    for module in sorted((CONTROLLER / "routes").glob("*.py")):
        found = _imported(module) & job_stores
        assert not found, f"{module.name} imports {found}"
