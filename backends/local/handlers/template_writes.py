"""Template write handlers: create, update, delete, refresh from files."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pluginsdk.errors import AlreadyExistsError, NotFoundError, StateConflictError, ValidationError
from pluginsdk.models import Template, TemplateRefresh, TemplateWritten, utcnow
from pluginsdk.operations import (
    CreateTemplateCommand,
    DeleteTemplateCommand,
    RefreshTemplatesCommand,
    UpdateTemplateCommand,
)
from pluginsdk.words import counted

from ..deps import Deps
from ..registry import HandlerTable
from .templates import check_template, invalid_template

if TYPE_CHECKING:
    from ..call import Call

handlers = HandlerTable(Deps)


@handlers.on(CreateTemplateCommand)
async def create_template(deps: Deps, op: CreateTemplateCommand, call: Call) -> TemplateWritten:
    data = op.model_dump(exclude={"validate_only"}, exclude_none=True)
    template, errors, _ = check_template(deps, data)
    if template is None:
        raise invalid_template(op.template_id, errors)
    if op.validate_only:
        return TemplateWritten(
            template_id=op.template_id, message="Template is valid; nothing was stored (validate_only)."
        )
    if deps.templates.files.load().get(op.template_id) is not None:
        raise AlreadyExistsError(
            "template", op.template_id, f"Template '{op.template_id}' is defined in a template file."
        )
    now = utcnow()
    await deps.store.insert_template(
        template.model_copy(update={"created_at": now, "updated_at": now, "source": "store"})
    )
    return TemplateWritten(template_id=op.template_id, message=f"Template '{op.template_id}' created.")


async def _stored(deps: Deps, template_id: str) -> Template:
    t = await deps.store.get_template(template_id)
    if t is not None:
        return t
    file_t = deps.templates.files.load().get(template_id)
    if file_t is not None:
        raise ValidationError(
            f"Template '{template_id}' comes from the file {file_t.source}; change the file and refresh the templates.",
            details={"field": "template_id", "value": template_id, "expected": "a stored template"},
        )
    raise NotFoundError("template", template_id, f"Template '{template_id}' not found.")


@handlers.on(UpdateTemplateCommand)
async def update_template(deps: Deps, op: UpdateTemplateCommand, call: Call) -> TemplateWritten:
    async with deps.store.transaction():
        current = await _stored(deps, op.template_id)
        changes = op.model_dump(exclude={"template_id"}, exclude_unset=True, exclude_none=True)
        if not changes:
            raise ValidationError(
                "Nothing to update: give at least one field.",
                details={"field": "body", "value": None, "expected": "at least one template field"},
            )
        merged = {**current.model_dump(), **changes}
        template, errors, _ = check_template(deps, merged)
        if template is None:
            raise invalid_template(op.template_id, errors)
        updated = template.model_copy(
            update={"created_at": current.created_at, "updated_at": utcnow(), "source": "store"}
        )
        await deps.store.replace_template(updated)
        cleared = await deps.boot.protection(op.template_id) is not None
        await deps.boot.clear([op.template_id])  # an operator's update clears bootstrap protection
    note = "; its bootstrap protection is cleared" if cleared else ""
    return TemplateWritten(template_id=op.template_id, message=f"Template '{op.template_id}' updated{note}.")


@handlers.on(DeleteTemplateCommand)
async def delete_template(deps: Deps, op: DeleteTemplateCommand, call: Call) -> TemplateWritten:
    async with deps.store.transaction():
        await _stored(deps, op.template_id)
        _, active = await deps.store.list_requests(statuses=("pending", "running"), template_id=op.template_id, limit=1)
        if active and not op.force:
            raise StateConflictError(
                f"Template '{op.template_id}' is used by {active} active request(s); wait for them or use force.",
                details={"field": "template_id", "value": op.template_id, "expected": "no active requests"},
            )
        await deps.store.delete_template(op.template_id)
    return TemplateWritten(template_id=op.template_id, message=f"Template '{op.template_id}' deleted.")


@handlers.on(RefreshTemplatesCommand)
async def refresh_templates(deps: Deps, op: RefreshTemplatesCommand, call: Call) -> TemplateRefresh:
    deps.templates.files.invalidate()
    loaded = deps.templates.files.load(force=op.force)
    await deps.boot.clear(list(loaded))  # an operator's refresh clears the files' templates' protection
    total = await deps.templates.count()
    return TemplateRefresh(
        template_count=total,
        cache_stats=dict(deps.templates.files.stats),
        message=f"{counted(len(loaded), 'template')} from files, {total} in all"
        + (f"; {len(deps.templates.files.errors)} file(s) with errors" if deps.templates.files.errors else ""),
    )
