"""Result objects of the template operations."""

from .results import Result
from .templates import Template

__all__ = ["TemplateList", "TemplateRefresh", "TemplateResult", "TemplateValidation", "TemplateWritten"]


class TemplateList(Result):
    templates: list[Template] = []
    total_count: int = 0

    def page_items(self) -> list[Template]:
        return self.templates


class TemplateResult(Result):
    template: Template


class TemplateWritten(Result):
    """Answer of create, update and delete template."""

    template_id: str


class TemplateValidation(Result):
    valid: bool
    template_id: str | None = None
    validation_errors: list[str] = []
    validation_warnings: list[str] = []


class TemplateRefresh(Result):
    template_count: int = 0
    cache_stats: dict[str, int] = {}
    """cache_hits, cache_misses, files_loaded."""
