"""Template read handlers (list, show, validate) and the one set of template validation rules.

The write handlers are in `template_writes`, beside their operations.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pydantic

from pluginsdk.errors import InvalidTemplateError, NotFoundError, ValidationError
from pluginsdk.models import Template, TemplateList, TemplateResult, TemplateValidation
from pluginsdk.operations import GetTemplateQuery, ListTemplatesQuery, ValidateTemplateQuery
from pluginsdk.plans import predicate
from pluginsdk.words import counted

from ..attributes import template_attrs
from ..deps import Deps
from ..registry import HandlerTable
from ..templates_files import template_from_mapping

if TYPE_CHECKING:
    from pluginsdk.models.plans import AccessPlan

    from ..call import Call

handlers = HandlerTable(Deps)

PRICE_TYPES = ("ondemand", "spot", "heterogeneous")
MAX_OFFERINGS = 32
FLEET_APIS = ("EC2Fleet", "SpotFleet", "ASG")
FLEET_TYPES = {"EC2Fleet": ("instant", "request", "maintain"), "SpotFleet": ("request", "maintain")}


def check_template(deps: Deps, data: dict[str, Any]) -> tuple[Template | None, list[str], list[str]]:
    """Validate a raw configuration: (template or None, errors, warnings). Required fields, then the model,
    then the rules the model cannot say."""
    known = set(Template.model_fields) | {Template.model_fields[f].alias or f for f in Template.model_fields}
    known |= {"vmType", "vmTypes", "keyName", "subnetId", "attributes", "instanceTags"}
    warnings = [f"Unknown field '{key}' is ignored." for key in sorted(set(data) - known)]
    errors = _missing(data)
    if errors:
        return None, errors, warnings
    try:
        template = template_from_mapping(data)
    except pydantic.ValidationError as exc:
        return None, [f"'{'.'.join(map(str, e['loc']))}': {e['msg']}." for e in exc.errors(include_url=False)], warnings
    errors = _rule_errors(deps, template)
    warnings += _rule_warnings(deps, template)
    return (template if not errors else None), errors, warnings


def _missing(data: dict[str, Any]) -> list[str]:
    errors: list[str] = []
    for required in ("template_id", "image_id"):
        value = data.get(required, data.get(Template.model_fields[required].alias or required))
        if value is None or (isinstance(value, str) and not value.strip()):
            errors.append(f"'{required}' is required.")
    return errors


def _rule_errors(deps: Deps, template: Template) -> list[str]:
    errors: list[str] = []
    driver_apis = _apis(deps)
    if driver_apis and template.provider_api not in driver_apis:
        errors.append(
            f"provider_api '{template.provider_api}' is not served by the '{deps.settings.provider.type}' provider "
            f"(serves: {', '.join(driver_apis)})."
        )
    if template.max_number is not None and template.max_number < 1:
        errors.append("'max_number' must be at least 1.")
    from ..provisioning.readiness import rule_of  # the launch path's module: a listing need not load it

    try:
        rule_of(template)
    except ValueError as exc:
        errors.append(f"{exc}.")
    if template.price_type not in PRICE_TYPES:
        errors.append(f"'price_type' must be one of {', '.join(PRICE_TYPES)}.")
    kinds = FLEET_TYPES.get(template.provider_api)
    if template.fleet_type is not None and kinds is not None and template.fleet_type.lower() not in kinds:
        errors.append(f"'fleet_type' of {template.provider_api} must be one of {', '.join(kinds)}.")
    errors += [f"Weight of instance type '{t}' must be positive." for t, w in template.instance_types.items() if w <= 0]
    return errors + _candidate_errors(deps, template)


def _candidate_errors(deps: Deps, template: Template) -> list[str]:
    """The provider instance and the candidates name instances that exist, with valid price types."""
    from ..providers import provider_names

    known = {*deps.settings.provider.instance_names(), *provider_names()}
    errors = [
        f"provider '{name}' is not a configured provider instance (configured: "
        f"{', '.join(deps.settings.provider.instance_names())})."
        for name in dict.fromkeys([template.provider, *(o.provider for o in template.offerings)])
        if name is not None and name not in known
    ]
    if len(template.offerings) > MAX_OFFERINGS:
        errors.append(f"'offerings' holds at most {MAX_OFFERINGS} candidates.")
    errors += [
        f"'offerings[{i}].price_type' must be one of {', '.join(PRICE_TYPES)}."
        for i, o in enumerate(template.offerings)
        if o.price_type is not None and o.price_type not in PRICE_TYPES
    ]
    return errors


def _rule_warnings(deps: Deps, template: Template) -> list[str]:
    warnings: list[str] = []
    if template.max_number and template.max_number > deps.settings.provider.max_machines_per_request:
        warnings.append(
            f"max_number {template.max_number} exceeds the global limit "
            f"{deps.settings.provider.max_machines_per_request}; the lower one applies."
        )
    if not template.instance_type and not template.instance_types:
        warnings.append("No instance_type given; the provider's default applies.")
    if template.provider_api in FLEET_APIS and not template.subnet_ids:
        warnings.append(f"{template.provider_api} without subnet_ids launches in the default VPC only.")
    if template.provider_api != "local" and not template.image_id.startswith("ami-"):
        warnings.append(f"image_id '{template.image_id}' does not look like an AMI id (ami-...).")
    return warnings


def _apis(deps: Deps) -> tuple[str, ...]:
    driver = deps.providers.started(deps.settings.provider.type)
    if driver is not None:
        return driver.apis
    from ..providers import load_provider_class

    try:
        return tuple(load_provider_class(deps.settings.provider.type).apis)
    except Exception:
        return ()


def invalid_template(template_id: str | None, errors: list[str]) -> InvalidTemplateError:
    return InvalidTemplateError(
        f"Template '{template_id}' is invalid: {errors[0]}"
        + (f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""),
        details={"field": "template", "value": template_id, "expected": "a valid template", "errors": errors},
    )


@handlers.on(ListTemplatesQuery)
async def list_templates(deps: Deps, op: ListTemplatesQuery, call: Call) -> TemplateList:
    apis: tuple[str, ...] | None = (op.provider_api,) if op.provider_api else None
    if op.provider_name:
        served = (await deps.providers.get(op.provider_name)).apis
        apis = tuple(a for a in served if apis is None or a in apis)
    access = await deps.access.readable(call.principal, "template")
    page, total = await _page(deps, op, apis, access)
    shown = await deps.access.visible(call.principal, "template", page, template_attrs)
    total -= len(page) - len(shown)
    protected = await deps.boot.protected() if shown else {}
    shown = [  # a copy only where the protection differs from what the template holds (mostly none)
        t if t.protected == (p := protected.get(t.template_id)) else t.model_copy(update={"protected": p})
        for t in shown
    ]
    return TemplateList(templates=shown, total_count=total, message=counted(total, "template"))


async def _page(
    deps: Deps, op: ListTemplatesQuery, apis: tuple[str, ...] | None, access: AccessPlan
) -> tuple[list[Template], int]:
    """One page of the stored templates and the files' (a stored one hides a file's of the same id), by id, and
    the exact total of both. The store filters, counts and pages its own through the plan; the files' F templates
    (few, filtered with the plan's predicate) are merged in. At most F of them precede the page, so the store's
    rows from `offset - F`, `limit + F` of them, hold the page's stored ones, and the first of those rows places
    every file template between it and the last exactly."""
    extra = await _file_templates(deps, op, apis, access)
    start = max(0, op.offset - len(extra))
    window, stored = await deps.store.page_templates(
        provider_apis=apis, active_only=op.active_only, access=access, limit=op.limit + len(extra), offset=start
    )
    total = stored + len(extra)
    if start > 0 and not window:
        return [], total
    low = window[0].template_id if start > 0 else None
    high = window[-1].template_id if window and start + op.limit + len(extra) < stored else None
    between = [t for t in extra if (low is None or t.template_id > low) and (high is None or t.template_id < high)]
    merged = sorted([*window, *between], key=lambda t: t.template_id)
    first = start + sum(1 for t in extra if low is not None and t.template_id < low)  # position of merged[0]
    return merged[op.offset - first : op.offset - first + op.limit], total


async def _file_templates(
    deps: Deps, op: ListTemplatesQuery, apis: tuple[str, ...] | None, access: AccessPlan
) -> list[Template]:
    """The files' templates this listing shows (filters and the plan applied), less those the store hides."""
    allowed = predicate(access)
    found = [
        t
        for t in deps.templates.files.load(force=op.force_refresh).values()
        if (apis is None or t.provider_api in apis)
        and (not op.active_only or t.configuration.get("active", True) is not False)
        and allowed(template_attrs(t))
    ]
    hidden = await deps.store.stored_template_ids([t.template_id for t in found])
    return sorted((t for t in found if t.template_id not in hidden), key=lambda t: t.template_id)


@handlers.on(GetTemplateQuery)
async def get_template(deps: Deps, op: GetTemplateQuery, call: Call) -> TemplateResult:
    t = call.stored or await deps.templates.get(op.template_id)
    if t is None:
        raise NotFoundError("template", op.template_id, f"Template '{op.template_id}' not found.")
    if not op.include_config:
        t = t.model_copy(update={"configuration": {}})
    t = t.model_copy(update={"protected": await deps.boot.protection(t.template_id)})
    return TemplateResult(template=t, message="Template found")


@handlers.on(ValidateTemplateQuery)
async def validate_template(deps: Deps, op: ValidateTemplateQuery, call: Call) -> TemplateValidation:
    if op.template_config is None:
        if op.template_id is None:
            raise ValidationError(
                "Give template_config or template_id to validate.",
                details={"field": "template_config", "value": None, "expected": "an object"},
            )
        stored = await deps.templates.get(op.template_id)
        if stored is None:
            raise NotFoundError("template", op.template_id)
        config: dict[str, Any] = stored.model_dump(exclude={"source", "created_at", "updated_at"})
    else:
        config = dict(op.template_config)
        if op.template_id and not (config.get("template_id") or config.get("templateId")):
            config["template_id"] = op.template_id
    _, errors, warnings = check_template(deps, config)
    tid = config.get("template_id") or config.get("templateId") or op.template_id
    return TemplateValidation(
        valid=not errors,
        template_id=tid if isinstance(tid, str) else None,
        validation_errors=errors,
        validation_warnings=warnings,
        message="Template is valid." if not errors else f"Template is invalid: {counted(len(errors), 'error')}.",
    )
