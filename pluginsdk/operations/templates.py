"""Template operations: create, read, update, delete, validate, refresh."""

from typing import Any

from pydantic import Field

from ..models import (
    TemplateList,
    TemplateRefresh,
    TemplateResult,
    TemplateValidation,
    TemplateWritten,
)
from ._base import Cli, Command, Policy, Query, Rest

__all__ = [
    "CreateTemplateCommand",
    "DeleteTemplateCommand",
    "GetTemplateQuery",
    "ListTemplatesQuery",
    "RefreshTemplatesCommand",
    "UpdateTemplateCommand",
    "ValidateTemplateQuery",
]

_TEMPLATE_POLICY = Policy(object_type="template", fields={"templateId": "template_id"}, category="templates")


class ListTemplatesQuery(Query):
    """List templates (stored and loaded from the templates directory)."""

    result_type = TemplateList
    rest = Rest("GET", "/api/v1/templates")
    cli = Cli("templates", "list")
    policy = Policy(object_type="template", category="templates")

    provider_api: str | None = None
    """Only templates for this provider API."""
    active_only: bool = True
    """Skip templates marked inactive."""
    limit: int = Field(50, ge=1, le=10000)
    """Most templates to return."""
    offset: int = Field(0, ge=0, le=1_000_000_000)
    """Templates to skip."""
    provider_name: str | None = None
    """Only templates usable by this provider."""
    force_refresh: bool = False
    """Reload template files before listing."""


class GetTemplateQuery(Query):
    """Show one template."""

    result_type = TemplateResult
    rest = Rest("GET", "/api/v1/templates/{template_id}")
    cli = Cli("templates", "show", args=("template_id",))
    policy = _TEMPLATE_POLICY

    template_id: str = Field(min_length=1)
    """Template to show."""
    provider_name: str | None = None
    include_config: bool = True
    """Include the provider configuration dictionary."""


class _TemplateFields(Command):
    name: str | None = None
    """Display name."""
    description: str | None = None
    """What the template is for."""
    instance_type: str | None = None
    """Instance type, e.g. t3.medium."""
    instance_types: dict[str, float] | None = None
    """Weighted instance types for fleet APIs (type -> weight)."""
    key_name: str | None = None
    """SSH key pair name."""
    security_group_ids: list[str] | None = None
    """Security group ids."""
    subnet_ids: list[str] | None = None
    """Subnet ids; machines are spread across them."""
    user_data: str | None = None
    """Startup script text."""
    tags: dict[str, str] | None = None
    """Tags put on every machine."""
    version: str | None = None
    """Template version (default 1.0)."""
    max_number: int | None = Field(None, ge=1, le=1_000_000)
    """Most machines one request may ask for."""
    price_type: str | None = None
    """ondemand, spot or heterogeneous."""
    allocation_strategy: str | None = None
    """Fleet allocation strategy."""
    fleet_type: str | None = None
    """EC2Fleet: instant, request or maintain; SpotFleet: request or maintain."""
    configuration: dict[str, Any] | None = None
    """Further provider-specific settings."""


class CreateTemplateCommand(_TemplateFields):
    """Create a template."""

    result_type = TemplateWritten
    rest = Rest("POST", "/api/v1/templates", status=201)
    cli = Cli("templates", "create")
    policy = _TEMPLATE_POLICY

    template_id: str = Field(min_length=1, max_length=255)
    """Unique template id."""
    image_id: str = Field(min_length=1)
    """Machine image (AMI id on AWS)."""
    provider_api: str = "aws"
    """Provider API (aws, RunInstances, EC2Fleet, SpotFleet, ASG, local)."""
    validate_only: bool = False
    """Validate and report, store nothing."""


class UpdateTemplateCommand(_TemplateFields):
    """Update a template: only the fields given change."""

    result_type = TemplateWritten
    rest = Rest("PUT", "/api/v1/templates/{template_id}")
    cli = Cli("templates", "update", args=("template_id",))
    policy = _TEMPLATE_POLICY

    template_id: str = Field(min_length=1)
    """Template to update."""
    image_id: str | None = None
    provider_api: str | None = None


class DeleteTemplateCommand(Command):
    """Delete a template."""

    result_type = TemplateWritten
    rest = Rest("DELETE", "/api/v1/templates/{template_id}")
    cli = Cli("templates", "delete", args=("template_id",))
    policy = _TEMPLATE_POLICY

    template_id: str = Field(min_length=1)
    """Template to delete."""
    force: bool = False
    """Delete even while active requests use it."""


class ValidateTemplateQuery(Query):
    """Validate a template configuration (errors and warnings); stores nothing."""

    result_type = TemplateValidation
    rest = Rest("POST", "/api/v1/templates/validate", body_field="template_config", query=("template_id",))
    cli = Cli("templates", "validate")
    policy = Policy(object_type="template", fields={"templateId": "template_id"}, category="templates")

    template_config: dict[str, Any] | None = None
    """Raw template configuration to check (snake_case or camelCase)."""
    template_id: str | None = None
    """Validate this stored template (or name the config's id)."""


class RefreshTemplatesCommand(Command):
    """Reload template files from the templates directory."""

    result_type = TemplateRefresh
    rest = Rest("POST", "/api/v1/templates/refresh")
    cli = Cli("templates", "refresh")
    policy = Policy(object_type="template", category="templates")

    force: bool = False
    """Re-read every file, even unchanged ones."""
