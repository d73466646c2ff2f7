"""Fixtures for a module with a user of its own: `user = module_user("name")` and
`home = fresh_home("prefix")` in the test module make them (pytest names a fixture by the
attribute it is bound to)."""

from __future__ import annotations

import uuid

import pytest

from tests.e2e.conftest import User, _make_user


def module_user(prefix: str):
    """A module-scoped fixture: a new user named `prefix-<hex>`, for this module's tests only."""

    @pytest.fixture(scope="module")
    def user(deployment) -> User:
        return _make_user(deployment, prefix)

    return user


def fresh_home(prefix: str):
    """A fixture: a fresh remote folder `/prefix-<hex>` of the module's `user`, for one test."""

    @pytest.fixture
    def home(user) -> str:
        path = f"/{prefix}-{uuid.uuid4().hex[:8]}"
        user.sdk().mkdir(path)  # in-process: the folder is the setting, not what is tested
        return path

    return home
