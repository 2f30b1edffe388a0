"""The operation catalog and the facade derived from it."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest

import pluginsdk
from pluginsdk import PluginSDK, ValidationError
from pluginsdk.operations import CATALOG, CreateRequestCommand, sdk_name

SPEC_METHODS = {
    "create_request", "create_return_request", "cancel_request", "update_request_status", "sync_request",
    "cleanup_old_requests", "cleanup_all_resources", "cleanup_terminated_machines", "complete_request",
    "populate_machine_ids", "create_template", "update_template", "delete_template", "get_request",
    "list_active_requests", "list_return_requests", "get_template", "list_templates", "validate_template",
    "get_machine", "list_machines", "get_active_machine_count", "get_configuration", "get_request_summary",
    "get_machine_health",
}  # fmt: skip
EXTRA = {"get_request_status", "get_provider_health", "list_providers"}


def test_spec_methods_exist_on_the_facade() -> None:
    assert set(CATALOG) >= SPEC_METHODS | EXTRA
    for name in SPEC_METHODS | EXTRA:
        assert inspect.iscoroutinefunction(getattr(PluginSDK, name)), name


@pytest.mark.parametrize(
    ("cls", "name"),
    [("CreateRequestCommand", "create_request"), ("GetActiveMachineCountQuery", "get_active_machine_count"),
     ("ListAPIKeysQuery", "list_api_keys"), ("GetMachineHealthQuery", "get_machine_health")],
)  # fmt: skip
def test_sdk_name_rule(cls: str, name: str) -> None:
    assert sdk_name(cls) == name


def test_every_operation_is_fully_declared() -> None:
    for name, spec in CATALOG.items():
        assert spec.summary, name
        assert spec.result_type is not dict, name
        assert spec.cli is not None, f"{name} has no CLI binding"
        assert spec.mcp_names, f"{name} has no MCP tool"
        assert spec.rest is not None, f"{name} has no REST binding"
        assert spec.name == name and set(spec.required_fields) <= set(spec.input_fields), name
    tools = [t for spec in CATALOG.values() for t in spec.mcp_names]
    assert len(tools) == len(set(tools)), "MCP tool names collide"
    routes = [(spec.rest.method, p) for spec in CATALOG.values() if spec.rest for p in spec.rest.paths]
    assert len(routes) == len(set(routes)), "two operations share a REST route"
    cli = [(spec.cli.group, spec.cli.action) for spec in CATALOG.values() if spec.cli]
    assert len(cli) == len(set(cli)), "two operations share a CLI command"


def test_derived_method_has_real_signature_and_docs() -> None:
    sig = inspect.signature(PluginSDK.create_request)
    params = list(sig.parameters)
    assert params[:4] == ["self", "template_id", "requested_count", "timeout"]
    assert sig.parameters["timeout"].default == 3600
    assert sig.parameters["template_id"].annotation is str
    assert sig.return_annotation.__name__ == "RequestCreated"
    doc = PluginSDK.create_request.__doc__ or ""
    assert doc.startswith("Request machines from a template.")
    assert "count -> requested_count" in doc and "created_request_id" in doc
    assert "create_request" in dir(PluginSDK())


async def test_positional_and_duplicate_arguments(local_sdk: PluginSDK) -> None:
    with pytest.raises(TypeError, match="at most"):
        await local_sdk.get_template("a", None, True, "extra")
    with pytest.raises(TypeError, match="multiple values"):
        await local_sdk.get_template("a", template_id="b")


def test_operation_objects_validate_on_construction() -> None:
    cmd = CreateRequestCommand(templateId="t", machine_count=2)  # type: ignore[call-arg]
    assert cmd.requested_count == 2 and cmd.template_id == "t"
    with pytest.raises(ValidationError):
        CreateRequestCommand.spec.build({"template_id": "t", "requested_count": 1, "bogus": 1})


def test_public_surface() -> None:
    for name in pluginsdk.__all__:
        assert getattr(pluginsdk, name) is not None, name
    from pluginsdk import NotFoundError, SDKError

    err = NotFoundError("request", "req-1")
    assert isinstance(err, SDKError) and err.entity_id == "req-1"
    assert err.to_envelope() == {
        "success": False,
        "error": "Request 'req-1' not found.",
        "error_code": "REQUEST_NOT_FOUND",
        "details": {"field": "request_id", "value": "req-1"},
    }


def test_models_export_exactly_what_their_submodules_define() -> None:
    """`pluginsdk.models` finds a name's module in the generated index: each name is its submodule's own."""
    import importlib

    import pluginsdk.models as models
    from pluginsdk._index import MODELS

    assert sorted(models.__all__) == sorted(MODELS)
    for module in set(MODELS.values()):
        sub = importlib.import_module(f"pluginsdk.models.{module}")
        assert sorted(sub.__all__) == sorted(n for n, m in MODELS.items() if m == module), module
        for name in sub.__all__:
            assert getattr(models, name) is getattr(sub, name)
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = models.Nope  # type: ignore[attr-defined]


def test_generated_stub_and_index_are_current() -> None:
    res = subprocess.run(
        [sys.executable, "-m", "pluginsdk._stubgen", "--check"], capture_output=True, text=True, check=False
    )
    assert res.returncode == 0, res.stderr


def test_generator_does_not_need_the_index_it_writes() -> None:
    """A missing or stale `_index.py` cannot stop `_stubgen` (the models' names are read from their source)."""
    code = (
        "import sys, types\nsys.modules['pluginsdk._index'] = types.ModuleType('pluginsdk._index')\n"
        "from pluginsdk import _stubgen\nsys.argv = ['_stubgen', '--check']\nraise SystemExit(_stubgen.main())\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr


def test_import_pluginsdk_stays_light() -> None:
    heavy = "('pydantic', 'sqlalchemy', 'fastapi', 'mcp', 'httpx')"
    code = f"import sys, pluginsdk; print(','.join(m for m in {heavy} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""
