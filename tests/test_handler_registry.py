"""Handlers are registered explicitly: each module's table, registered by the engine's registry on first use."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from backends.local.engine import HANDLER_MODULES, HandlerRegistry
from backends.local.registry import HandlerTable
from pluginsdk.errors import HandlerDiscoveryError
from pluginsdk.operations import CATALOG
from pluginsdk.operations.auth_sessions import LoginCommand
from pluginsdk.operations.bootstrap import GetVersionQuery
from pluginsdk.operations.requests import (
    CleanupOldRequestsCommand,
    CreateRequestCommand,
    CreateReturnRequestCommand,
    ListRequestsQuery,
)
from pluginsdk.operations.templates import ListTemplatesQuery


async def _one(engine: Any, op: Any, principal: Any) -> None:
    return None


async def _other(engine: Any, op: Any, principal: Any) -> None:
    return None


def test_every_catalog_operation_has_exactly_one_handler() -> None:
    registry = HandlerRegistry()
    missing = [spec.name for spec in CATALOG.values() if registry.get(spec.cls) is None]
    assert not missing, f"operations without a handler: {missing}"


def test_each_operation_is_served_by_a_module_its_table_names() -> None:
    """Loading only the handler modules `HANDLER_MODULES` lists for an operation's module finds its handler."""
    for spec in CATALOG.values():
        group = spec.cls.__module__.rsplit(".", 1)[-1]
        handler = HandlerRegistry().get(spec.cls)
        assert handler is not None and handler.__module__ in HANDLER_MODULES[group], spec.name


def test_a_registry_finds_the_module_its_table_names() -> None:
    registry = HandlerRegistry()
    handler = registry.get(ListTemplatesQuery)
    assert handler is not None and handler.__module__ == "backends.local.handlers.templates"
    version = registry.get(GetVersionQuery)  # found in the second package
    assert version is not None and version.__module__ == "backends.local.auth.handlers.bootstrap"
    login = registry.get(LoginCommand)  # `auth_sessions` is served by `sessions`
    assert login is not None and login.__module__ == "backends.local.auth.handlers.sessions"
    assert "backends.local.handlers.templates" in sys.modules
    assert HandlerRegistry().get(ListTemplatesQuery) is handler  # the table lives in the module, not a global


def test_the_request_operations_are_found_in_their_own_modules() -> None:
    """The registry has no scan of every handler module: `HANDLER_MODULES` names where each is."""
    assert not hasattr(HandlerRegistry, "_load_all")
    registry = HandlerRegistry()
    for op, module in (
        (ListRequestsQuery, "request_queries"),
        (CreateRequestCommand, "provisioning"),
        (CreateReturnRequestCommand, "returns"),
        (CleanupOldRequestsCommand, "request_cleanup"),
    ):
        handler = registry.get(op)
        assert handler is not None and handler.__module__ == f"backends.local.handlers.{module}"


def test_two_handlers_for_one_operation_are_an_error() -> None:
    table = HandlerTable(object)
    table.on(ListTemplatesQuery)(_one)
    with pytest.raises(HandlerDiscoveryError, match="Two handlers for ListTemplatesQuery"):
        table.on(ListTemplatesQuery)(_other)
    other = HandlerTable(object)
    other.on(ListTemplatesQuery)(_other)
    registry = HandlerRegistry(modules={})
    registry.register(table)
    registry.register(table)  # the same table again changes nothing
    with pytest.raises(HandlerDiscoveryError, match="Two handlers for ListTemplatesQuery"):
        registry.register(other)
    assert registry.get(ListTemplatesQuery) is _one
