"""The templates the engine serves: those in the store and those in files, one catalog."""

from __future__ import annotations

from pluginsdk.models import Template

from .store import Store
from .templates_files import TemplateFiles

__all__ = ["TemplateCatalog"]


class TemplateCatalog:
    """Stored templates and templates from files; a stored one wins on the same id."""

    __slots__ = ("_parsed", "files", "store")

    def __init__(self, store: Store, files: TemplateFiles) -> None:
        self.store = store
        self.files = files
        self._parsed: tuple[str | None, list[Template]] | None = None

    async def all(self, provider_api: str | None = None, *, force_refresh: bool = False) -> list[Template]:
        """Every template (of `provider_api` when given), sorted by id.

        Parsed stored templates are kept until the store's template version changes (one point read per call),
        so listing 1,000 templates does not re-parse 1,000 JSON documents.
        """
        version = await self.store.templates_version()
        if self._parsed is None or self._parsed[0] != version:
            self._parsed = (version, await self.store.list_templates())
        stored = {t.template_id: t for t in self._parsed[1]}
        for t in self.files.load(force=force_refresh).values():
            stored.setdefault(t.template_id, t)
        found = sorted(stored.values(), key=lambda t: t.template_id)
        return found if provider_api is None else [t for t in found if t.provider_api == provider_api]

    async def get(self, template_id: str) -> Template | None:
        """One template by id, stored or from a file; None when there is none."""
        return await self.store.get_template(template_id) or self.files.load().get(template_id)
