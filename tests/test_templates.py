"""Templates: create, read, update, delete, validate, refresh — on both backends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pluginsdk import (
    AlreadyExistsError,
    InvalidTemplateError,
    NotFoundError,
    PluginSDK,
    StateConflictError,
    ValidationError,
)
from tests.support.backends import open_sdk

T = {"template_id": "web", "image_id": "ami-0abc", "instance_type": "t3.small", "tags": {"team": "hpc"}}


async def test_create_then_get_returns_spec_defaults(sdk: PluginSDK) -> None:
    res = await sdk.create_template(**T)
    assert res.success and res.template_id == "web"
    t = (await sdk.get_template("web")).template
    assert t.provider_api == "aws" and t.version == "1.0"
    assert t.instance_type == "t3.small" and t.tags == {"team": "hpc"}
    assert t.created_at is not None


async def test_camel_case_input_is_accepted(sdk: PluginSDK) -> None:
    await sdk.create_template(templateId="camel", imageId="ami-1", instanceType="t3.nano", subnetIds=["s-1"])
    t = (await sdk.get_template("camel")).template
    assert t.instance_type == "t3.nano" and t.subnet_ids == ["s-1"]


async def test_duplicate_create_is_already_exists_and_keeps_the_first(sdk: PluginSDK) -> None:
    await sdk.create_template(**T)
    with pytest.raises(AlreadyExistsError) as exc:
        await sdk.create_template(template_id="web", image_id="ami-other")
    assert exc.value.error_code == "ALREADY_EXISTS"
    assert (await sdk.get_template("web")).template.image_id == "ami-0abc"


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ({"template_id": "x"}, "image_id"),
        ({"image_id": "ami-1"}, "template_id"),
        ({"template_id": "", "image_id": "ami-1"}, "template_id"),
        ({"template_id": "x", "image_id": "ami-1", "max_number": 0}, "max_number"),
        ({"template_id": "x", "image_id": "ami-1", "tags": "notadict"}, "tags"),
        ({"template_id": "x", "image_id": "ami-1", "no_such_field": 1}, "no_such_field"),
    ],
)
async def test_bad_create_input_is_rejected_and_nothing_is_written(
    sdk: PluginSDK, bad: dict[str, object], field: str
) -> None:
    with pytest.raises(ValidationError) as exc:
        await sdk.create_template(**bad)
    assert exc.value.error_code == "VALIDATION_ERROR"
    assert exc.value.details["field"] == field
    assert (await sdk.list_templates()).total_count == 0


async def test_invalid_template_rules_give_invalid_template(sdk: PluginSDK) -> None:
    with pytest.raises(InvalidTemplateError) as exc:
        await sdk.create_template(template_id="x", image_id="ami-1", price_type="free", provider_api="aws")
    assert exc.value.error_code == "INVALID_TEMPLATE"
    assert any("price_type" in e for e in exc.value.details["errors"])
    with pytest.raises(InvalidTemplateError):
        await sdk.create_template(template_id="y", image_id="ami-1", provider_api="NoSuchApi")
    assert (await sdk.list_templates()).total_count == 0


async def test_validate_only_stores_nothing(sdk: PluginSDK) -> None:
    res = await sdk.create_template(**T, validate_only=True)
    assert "nothing was stored" in res.message
    with pytest.raises(NotFoundError):
        await sdk.get_template("web")


async def test_get_unknown_template_is_template_not_found(sdk: PluginSDK) -> None:
    with pytest.raises(NotFoundError) as exc:
        await sdk.get_template("nope")
    assert exc.value.error_code == "TEMPLATE_NOT_FOUND"
    assert exc.value.entity_type == "template" and exc.value.entity_id == "nope"


async def test_update_changes_only_given_fields(sdk: PluginSDK) -> None:
    await sdk.create_template(**T, description="first")
    await sdk.update_template("web", name="Web tier", configuration={"active": True})
    t = (await sdk.get_template("web")).template
    assert t.name == "Web tier" and t.description == "first" and t.image_id == "ami-0abc"
    assert t.configuration == {"active": True}
    assert t.updated_at is not None and t.created_at is not None and t.updated_at >= t.created_at


async def test_update_errors(sdk: PluginSDK) -> None:
    with pytest.raises(NotFoundError):
        await sdk.update_template("nope", name="x")
    await sdk.create_template(**T)
    with pytest.raises(ValidationError):
        await sdk.update_template("web")  # nothing to change
    with pytest.raises(InvalidTemplateError):
        await sdk.update_template("web", price_type="bogus")
    assert (await sdk.get_template("web")).template.price_type == "ondemand"


async def test_delete_and_delete_again(sdk: PluginSDK) -> None:
    await sdk.create_template(**T)
    res = await sdk.delete_template("web")
    assert res.template_id == "web"
    with pytest.raises(NotFoundError):
        await sdk.get_template("web")
    with pytest.raises(NotFoundError):
        await sdk.delete_template("web")


async def test_delete_refuses_while_requests_are_active_unless_forced(sdk: PluginSDK) -> None:
    await sdk.create_template(**T)
    await sdk.create_request("web", 1)
    with pytest.raises(StateConflictError):
        await sdk.delete_template("web")
    await sdk.delete_template("web", force=True)
    with pytest.raises(NotFoundError):
        await sdk.get_template("web")


async def test_list_filters_and_pages(sdk: PluginSDK) -> None:
    for i in range(5):
        await sdk.create_template(template_id=f"t{i}", image_id="ami-1", provider_api="aws" if i % 2 else "local")
    all_ = await sdk.list_templates()
    assert all_.total_count == 5 and [t.template_id for t in all_.templates] == ["t0", "t1", "t2", "t3", "t4"]
    aws = await sdk.list_templates(provider_api="aws")
    assert [t.template_id for t in aws.templates] == ["t1", "t3"]
    page = await sdk.list_templates(limit=2, offset=2)
    assert [t.template_id for t in page.templates] == ["t2", "t3"] and page.total_count == 5
    with pytest.raises(ValidationError):
        await sdk.list_templates(limit=0)


async def test_validate_reports_errors_and_warnings(sdk: PluginSDK) -> None:
    ok = await sdk.validate_template(
        template_config={"templateId": "v", "imageId": "ami-1", "instanceType": "t3.micro"}
    )
    assert ok.valid and ok.template_id == "v" and ok.validation_errors == []
    bad = await sdk.validate_template(template_config={"template_id": "v", "maxNumber": -1, "surprise": True})
    assert not bad.valid
    assert any("image_id" in e for e in bad.validation_errors)
    assert any("surprise" in w for w in bad.validation_warnings)
    warn = await sdk.validate_template(
        template_config={"template_id": "w", "image_id": "img", "provider_api": "EC2Fleet"}
    )
    assert warn.valid and len(warn.validation_warnings) >= 2  # no subnets, not an AMI id, no instance type
    with pytest.raises(ValidationError):
        await sdk.validate_template()
    assert (await sdk.list_templates()).total_count == 0


async def test_validate_stored_template_by_id(sdk: PluginSDK) -> None:
    await sdk.create_template(**T)
    res = await sdk.validate_template(template_id="web")
    assert res.valid and res.template_id == "web"


async def test_templates_load_from_files_with_cache_stats(backend_kind: str, tmp_path: Path) -> None:
    tdir = tmp_path / "templates"
    tdir.mkdir()
    (tdir / "a.json").write_text(
        json.dumps({"templates": [{"templateId": "hf-1", "imageId": "ami-1", "vmType": "m5.large", "maxNumber": 4}]})
    )
    (tdir / "b.yaml").write_text("template_id: y-1\nimage_id: ami-2\ninstance_type: t3.small\n")
    (tdir / "broken.json").write_text("{not json")
    async with open_sdk(backend_kind, tmp_path, templates={"dir": str(tdir)}) as sdk:
        ids = [t.template_id for t in (await sdk.list_templates()).templates]
        assert ids == ["hf-1", "y-1"]
        hf = (await sdk.get_template("hf-1")).template
        assert hf.instance_type == "m5.large" and hf.max_number == 4 and hf.source.endswith("a.json")
        with pytest.raises(ValidationError):
            await sdk.update_template("hf-1", name="x")  # defined in a file
        (tdir / "c.json").write_text(json.dumps({"template_id": "c-1", "image_id": "ami-3"}))
        refreshed = await sdk.refresh_templates()
        assert refreshed.template_count == 3
        assert set(refreshed.cache_stats) == {"cache_hits", "cache_misses", "files_loaded"}
        assert refreshed.cache_stats["cache_hits"] >= 2 and "error" in refreshed.message
        forced = await sdk.refresh_templates(force=True)
        assert forced.cache_stats["files_loaded"] > refreshed.cache_stats["files_loaded"]
        with pytest.raises(AlreadyExistsError):
            await sdk.create_template(template_id="hf-1", image_id="ami-9")
