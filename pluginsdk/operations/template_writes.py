"""Template operations that write: create, update, delete, refresh from files."""

from typing import Annotated, Any

from pydantic import Field, WithJsonSchema

from ..models import TemplateRefresh, TemplateWritten
from ..models.identifiers import TemplateId
from ._base import Audit, Cli, Command, Policy, R_co, Rest
from .templates import TEMPLATE_POLICY

__all__ = ["CreateTemplateCommand", "DeleteTemplateCommand", "RefreshTemplatesCommand", "UpdateTemplateCommand"]


PriceType = Annotated[str, WithJsonSchema({"type": "string", "enum": ["ondemand", "spot", "heterogeneous"]})]
"""Checked with the provider's template rules (400 INVALID_TEMPLATE naming price_type); the document states
the values."""


class _TemplateFields(Command[R_co]):
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
    max_active: int | None = None
    """Most machines of it at once."""
    price_type: PriceType | None = None
    """ondemand, spot or heterogeneous."""
    allocation_strategy: str | None = None
    """Fleet allocation strategy."""
    fleet_type: str | None = None
    """EC2Fleet: instant, request or maintain; SpotFleet: request or maintain."""
    configuration: dict[str, Any] | None = None
    """Further provider-specific settings."""
    provider: str | None = None
    """Provider instance."""
    offerings: list[dict[str, Any]] | None = None
    """Fallback candidates."""


class CreateTemplateCommand(_TemplateFields[TemplateWritten]):
    """Create a template."""

    rest = Rest("POST", "/api/v1/templates", status=201, dry_run="validate_only")
    cli = Cli("templates", "create")
    policy = TEMPLATE_POLICY._replace(
        new_attributes={"providerApi": "provider_api"}, audit=Audit("template", ("template_id",), snapshot=True)
    )

    template_id: TemplateId
    """Unique template id (1-255 of letters, digits, _ - ., starting with a letter or digit)."""
    image_id: str = Field(min_length=1)
    """Machine image (AMI id on AWS)."""
    provider_api: str = "aws"
    """aws (RunInstances), EC2Fleet, SpotFleet or ASG; the local provider simulates each (and takes local)."""
    validate_only: bool = False
    """Validate and report, store nothing."""


class UpdateTemplateCommand(_TemplateFields[TemplateWritten]):
    """Update a template: only the fields given change."""

    rest = Rest("PUT", "/api/v1/templates/{template_id}")
    cli = Cli("templates", "update", args=("template_id",))
    policy = TEMPLATE_POLICY._replace(
        stored="template_id",
        changes={"providerApi": "provider_api"},
        audit=Audit("template", ("template_id",), snapshot=True),
    )

    template_id: TemplateId
    """Template to update."""
    image_id: str | None = None
    provider_api: str | None = None


class DeleteTemplateCommand(Command[TemplateWritten]):
    """Delete a template."""

    rest = Rest("DELETE", "/api/v1/templates/{template_id}")
    cli = Cli("templates", "delete", args=("template_id",))
    policy = TEMPLATE_POLICY._replace(stored="template_id", audit=Audit("template", ("template_id",), snapshot=True))

    template_id: TemplateId
    """Template to delete."""
    force: bool = False
    """Delete even while active requests use it."""


class RefreshTemplatesCommand(Command[TemplateRefresh]):
    """Reload template files from the templates directory."""

    rest = Rest("POST", "/api/v1/templates/refresh")
    cli = Cli("templates", "refresh")
    policy = Policy(object_type="template", category="templates", audit=Audit("template"))

    force: bool = False
    """Re-read every file, even unchanged ones."""
