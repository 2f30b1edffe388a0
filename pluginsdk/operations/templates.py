"""Template operations that read: list, show, validate.

The writes live in `template_writes`, so a scheduler's `templates list` builds only these classes.
"""

from typing import Any

from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError

from ..models import TemplateList, TemplateResult, TemplateValidation
from ..models.identifiers import TemplateId, identifier_problem
from ._base import Cli, Policy, Query, Rest

__all__ = ["GetTemplateQuery", "ListTemplatesQuery", "ValidateTemplateQuery"]

TEMPLATE_POLICY = Policy(object_type="template", fields={"templateId": "template_id"}, category="templates")
"""One template, by id (the writes use it too)."""


class ListTemplatesQuery(Query[TemplateList]):
    """List templates (stored and loaded from the templates directory)."""

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


class GetTemplateQuery(Query[TemplateResult]):
    """Show one template."""

    rest = Rest("GET", "/api/v1/templates/{template_id}")
    cli = Cli("templates", "show", args=("template_id",))
    policy = TEMPLATE_POLICY._replace(stored="template_id")

    template_id: TemplateId
    """Template to show."""
    provider_name: str | None = None
    include_config: bool = True
    """Include the provider configuration dictionary."""


class ValidateTemplateQuery(Query[TemplateValidation]):
    """Validate a template configuration (errors and warnings); stores nothing."""

    rest = Rest("POST", "/api/v1/templates/validate", body_field="template_config", query=("template_id",))
    cli = Cli("templates", "validate")
    policy = TEMPLATE_POLICY._replace(stored="template_id", stored_unless="template_config")

    template_config: dict[str, Any] | None = None
    """Raw template configuration to check (keys in snake or camel case)."""
    template_id: TemplateId | None = None
    """Validate this stored template (or name the config's id)."""

    @field_validator("template_config")
    @classmethod
    def _config_id(cls, config: dict[str, Any] | None) -> dict[str, Any] | None:
        """The configuration's own id follows the template id rules too (a create would refuse it)."""
        for key in ("template_id", "templateId"):
            value = (config or {}).get(key)
            problem = identifier_problem("template id", value) if isinstance(value, str) else None
            if problem is not None:
                raise PydanticCustomError("identifier", "{key}: {problem}", {"key": key, "problem": problem})
        return config
