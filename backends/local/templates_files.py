"""Templates loaded from *.json / *.yaml files in a directory, cached by file stamp.

A file holds one template, a list of them, or `{"templates": [...]}` (the
HostFactory/LSF layout; `vmType`, `maxNumber` and `instanceTags` are understood). Files are
re-read only when their size or mtime changes; `load(force=True)` re-reads all.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pydantic

from pluginsdk.models import Template

__all__ = ["TemplateFiles", "template_from_mapping"]

log = logging.getLogger("pluginsdk.templates")

_HF_KEYS = {"vmType": "instance_type", "vmTypes": "instance_types", "keyName": "key_name", "subnetId": "subnet_ids"}


def template_from_mapping(data: dict[str, Any], source: str = "store") -> Template:
    """Build a Template from snake_case, camelCase or HostFactory-style keys."""
    data = dict(data)
    for hf, ours in _HF_KEYS.items():
        if hf in data and ours not in data:
            value = data.pop(hf)
            data[ours] = [value] if ours == "subnet_ids" and isinstance(value, str) else value
    tags = data.pop("instanceTags", None)
    if isinstance(tags, str) and "tags" not in data:  # HostFactory/LSF "k=v;k=v"
        data["tags"] = dict(kv.split("=", 1) for kv in tags.split(";") if "=" in kv)
    attributes = data.pop("attributes", None)
    if isinstance(attributes, dict):  # the scheduler attributes declared in the file win over derived ones
        data["configuration"] = {**(data.get("configuration") or {}), "attributes": attributes}
    if isinstance(data.get("subnet_ids"), str):
        data["subnet_ids"] = [s.strip() for s in data["subnet_ids"].split(",") if s.strip()]
    data["source"] = source
    return Template.model_validate(data)


class TemplateFiles:
    def __init__(self, directory: str | None) -> None:
        self.directory = Path(directory).expanduser() if directory else None
        self._stamps: dict[Path, tuple[int, int]] = {}
        self._by_file: dict[Path, list[Template]] = {}
        self.stats = {"cache_hits": 0, "cache_misses": 0, "files_loaded": 0}
        self.errors: dict[str, str] = {}
        self._checked = False

    def load(self, *, force: bool = False) -> dict[str, Template]:
        """Templates by id from every file (first file in name order wins on a duplicate id)."""
        if self.directory is None:
            return {}
        if self._checked and not force:
            self.stats["cache_hits"] += len(self._by_file)
            return self._merged()
        self._checked = True
        files = sorted(p for p in self.directory.glob("*") if p.suffix.lower() in (".json", ".yaml", ".yml"))
        live = set(files)
        for gone in [p for p in self._by_file if p not in live]:
            self._by_file.pop(gone, None)
            self._stamps.pop(gone, None)
        for path in files:
            try:
                st = path.stat()
            except OSError:
                continue
            stamp = (st.st_mtime_ns, st.st_size)
            if not force and self._stamps.get(path) == stamp:
                self.stats["cache_hits"] += 1
                continue
            self.stats["cache_misses"] += 1
            self._by_file[path] = self._read(path)
            self._stamps[path] = stamp
            self.stats["files_loaded"] += 1
        return self._merged()

    def invalidate(self) -> None:
        self._checked = False

    def _merged(self) -> dict[str, Template]:
        out: dict[str, Template] = {}
        for path in sorted(self._by_file):
            for t in self._by_file[path]:
                out.setdefault(t.template_id, t)
        return out

    def _read(self, path: Path) -> list[Template]:
        from pluginsdk.files import load_json, load_yaml, read_bounded

        try:
            text = read_bounded(path)  # bounded like every file read (docs/input.md)
            data: Any = load_json(text) if path.suffix.lower() == ".json" else load_yaml(text, str(path))
        except (OSError, ValueError) as exc:
            self.errors[str(path)] = str(exc)
            log.warning("template file %s skipped: %s", path, exc)
            return []
        items = data.get("templates", [data]) if isinstance(data, dict) else data
        out: list[Template] = []
        for item in items if isinstance(items, list) else []:
            try:
                out.append(template_from_mapping(item, source=str(path)))
            except (pydantic.ValidationError, TypeError, AttributeError) as exc:
                self.errors[str(path)] = str(exc).splitlines()[0]
                log.warning("template in %s skipped: %s", path, exc)
        self.errors.pop(str(path), None) if out else None
        return out
