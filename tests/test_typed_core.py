"""The typed core as a user's type checker sees it, and the typed call forms at run time on both backends.

An operation class names its result type (`class ListTemplatesQuery(Query[TemplateList])`), so mypy follows
`PluginSDK.execute` / `call` / `iterate`, a backend's `execute` and `create_app` to what they return, and a
wrong use is an error. mypy runs programmatically (`mypy.api`) on a snippet with the project's configuration
(strict, pydantic plugin); the snippet's line numbers of the expected errors are asserted exactly.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pluginsdk import PluginSDK
from pluginsdk.models import Template, TemplateList
from pluginsdk.operations import ListTemplatesQuery, get_spec

ROOT = Path(__file__).resolve().parents[1]

SNIPPET = """\
from collections.abc import AsyncIterator
from typing import Any, assert_type

from backends.local import LocalBackend
from backends.remote import RemoteBackend
from pluginsdk import PluginSDK
from pluginsdk.config import Settings
from pluginsdk.models import Constraint, RequestCreated, Template, TemplateList, TemplateResult
from pluginsdk.operations import CreateRequestCommand, GetTemplateQuery, ListConstraintsQuery, ListTemplatesQuery
from pluginsdk.operations import OperationSpec, get_spec
from pluginsdk.server import create_app
from pluginsdk.server.app import PluginApp


async def facade(sdk: PluginSDK) -> None:  # the same class whether local or remote
    assert_type(await sdk.execute(ListTemplatesQuery(limit=5)), TemplateList)
    assert_type(await sdk.execute(GetTemplateQuery(template_id="web")), TemplateResult)
    assert_type(await sdk.call(ListTemplatesQuery, limit=5), TemplateList)
    assert_type(await sdk.call(get_spec(CreateRequestCommand), template_id="web", count=1), RequestCreated)
    assert_type(get_spec(ListTemplatesQuery), OperationSpec[TemplateList])
    assert_type(await sdk.list_templates(limit=5), TemplateList)
    assert_type(sdk.iterate(ListTemplatesQuery), AsyncIterator[Template])
    assert_type(sdk.iterate(get_spec(ListConstraintsQuery)), AsyncIterator[Constraint])
    assert_type(sdk.iterate("list_templates"), AsyncIterator[Any])
    assert_type(await sdk.call("list_templates"), Any)  # by name: the name is data


async def backends(local: LocalBackend, remote: RemoteBackend, settings: Settings) -> None:
    assert_type(await local.execute(ListTemplatesQuery()), TemplateList)
    assert_type(await remote.execute(ListTemplatesQuery()), TemplateList)
    assert_type(await remote.call(GetTemplateQuery(template_id="web")), TemplateResult)
    assert_type(await PluginSDK(backend=remote).backend.execute(ListTemplatesQuery()), TemplateList)
    assert_type(create_app(settings), PluginApp)
    assert_type(create_app(local), PluginApp)


async def wrong(sdk: PluginSDK, remote: RemoteBackend) -> None:
    created: RequestCreated = await sdk.execute(ListTemplatesQuery())  # line 41
    (await sdk.call(ListTemplatesQuery)).requests  # line 39
    await remote.execute(TemplateList())  # line 40
    create_app("http://127.0.0.1:8000")  # line 41
"""

WRONG = {38, 39, 40, 41}


def test_mypy_follows_a_call_to_its_result_and_flags_a_wrong_use(tmp_path: Path) -> None:
    api = pytest.importorskip("mypy.api")
    (tmp_path / "snippet.py").write_text(SNIPPET)
    limit = sys.getrecursionlimit()  # mypy raises the interpreter's limit to 2**14 and keeps it
    try:
        out, err, _ = api.run(
            [
                str(tmp_path / "snippet.py"),
                "--config-file",
                str(ROOT / "pyproject.toml"),
                "--cache-dir",
                str(ROOT / ".mypy_cache"),
                "--no-error-summary",
                "--hide-error-context",
                "--show-error-codes",
            ]
        )
    finally:  # later tests in this process (a too-deep JSON file refused by the CLI) rely on the default
        sys.setrecursionlimit(limit)
    errors = [line for line in out.splitlines() if ": error:" in line and "snippet.py" in line]
    assert not [e for e in errors if "snippet.py:" in e and int(e.split(":")[1]) not in WRONG], out + err
    assert {int(e.split(":")[1]) for e in errors} == WRONG, out + err
    assert any('type "ListTemplatesQuery"; expected "Operation[RequestCreated]"' in e for e in errors), out
    assert any('"TemplateList" has no attribute "requests"' in e for e in errors), out


async def test_typed_call_forms_run_on_both_backends(sdk: PluginSDK) -> None:
    await sdk.create_template(template_id="tpl-typed", image_id="ami-12345678", instance_type="t3.small")
    by_class = await sdk.call(ListTemplatesQuery, limit=50)
    by_spec = await sdk.call(get_spec(ListTemplatesQuery), limit=50)
    by_object = await sdk.execute(ListTemplatesQuery(limit=50))
    by_name = await sdk.call("list_templates", limit=50)
    for result in (by_class, by_spec, by_object, by_name):
        assert isinstance(result, TemplateList)
        assert "tpl-typed" in [t.template_id for t in result.templates]
    items = [t async for t in sdk.iterate(ListTemplatesQuery, limit=1)]
    assert all(isinstance(t, Template) for t in items)
    assert [t.template_id for t in items] == [t.template_id for t in by_class.templates]
