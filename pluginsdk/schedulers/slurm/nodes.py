"""Which template a node is launched from: the `slurm.nodesets` table, expanded once per process."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...config import SlurmSettings

__all__ = ["NodeMap"]


class NodeMap:
    """Node name -> template id, from the configured node sets (the first set naming a node wins)."""

    def __init__(self, settings: SlurmSettings) -> None:
        from .programs import expand

        self.template: dict[str, str] = {}
        self.partition: dict[str, str] = {}
        for nodeset in settings.nodesets:
            for node in expand(nodeset.nodes):
                self.template.setdefault(node, nodeset.template)
                self.partition.setdefault(node, nodeset.partition or nodeset.template)

    def by_template(self, nodes: Iterable[str]) -> tuple[dict[str, list[str]], list[str]]:
        """({template: its nodes, in order}, nodes no set names)."""
        groups: dict[str, list[str]] = {}
        unknown: list[str] = []
        for node in nodes:
            template = self.template.get(node)
            if template is None:
                unknown.append(node)
            else:
                groups.setdefault(template, []).append(node)
        return groups, unknown
