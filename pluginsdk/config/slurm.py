"""`slurm`: the cloud node sets Slurm's power saving launches from templates, and how the worker drives them
(docs/schedulers.md, "Slurm")."""

import re
from typing import Self

import pydantic
from pydantic import Field

from .fields import wrong
from .group import SettingsGroup

__all__ = ["SlurmNodeSet", "SlurmSettings"]


_NODE_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
"""A node name Slurm and a host name both accept (compiled on first use, by `re`'s cache)."""


class SlurmNodeSet(SettingsGroup):
    nodes: str
    """Node names as a Slurm hostlist expression (`cloud-cpu-[1-100]`)."""
    template: str
    """Template each of these nodes is launched from."""
    partition: str | None = None
    """Partition `pluginsdk slurm config` puts the nodes in (default: the template id)."""


class SlurmSettings(SettingsGroup):
    nodesets: list[SlurmNodeSet] = []
    """Which template each cloud node is launched from (docs/schedulers.md, "Slurm")."""
    all_or_nothing: bool = False
    """Per job: a job that cannot get all its nodes gives back what it got and its nodes go down (true), or
    keeps what came up (false: best effort, one launch per template for the whole resume)."""
    spool_dir: str | None = None
    """Where the power-saving programs leave their work for the worker (default: <user data dir>/slurm)."""
    log_file: str | None = None
    """The programs' and the worker's log (Slurm keeps none of their output; default: <spool_dir>/slurm.log)."""
    scontrol: str = "/usr/bin/scontrol"
    """The `scontrol` the worker runs to mark nodes down and set their addresses."""
    resume_timeout: int = Field(600, ge=10)
    """Seconds a resumed node has to come up and register (Slurm's ResumeTimeout; `slurm config` prints it)."""
    suspend_time: int = Field(300, ge=1)
    """Idle seconds before Slurm suspends a node (SuspendTime, printed by `slurm config`)."""
    reconcile_interval: float = Field(60.0, ge=0)
    """Seconds between the Slurm reconcile passes a long-lived process (the REST server) runs on the host of
    the controller, when node sets are configured; 0: only `pluginsdk slurm reconcile` runs it."""
    set_node_address: bool = False
    """Tell the controller each node's address (`scontrol update nodeaddr= nodehostname=`) once its machine
    runs; off: rely on `SlurmctldParameters=cloud_reg_addrs` (the address the node registers from)."""

    @pydantic.model_validator(mode="after")
    def _nodesets_readable(self) -> Self:
        """Each node set's hostlist reads, names host-like nodes, and shares none with another set: a node on two
        `NodeName` lines stops slurmctld (`fatal: Duplicated NodeName`), and a typo found only when Slurm asks for
        the node leaves its job waiting out ResumeTimeout."""
        if not self.nodesets:
            return self
        try:
            import hostlist
        except ImportError:
            expected = "python-hostlist installed to read node sets: pip install 'pluginsdk[slurm]'"
            raise wrong("nodesets", None, expected) from None
        owner: dict[str, int] = {}
        for i, nodeset in enumerate(self.nodesets):
            key = f"nodesets.{i}.nodes"
            try:
                names = hostlist.expand_hostlist(nodeset.nodes, allow_duplicates=True)
            except hostlist.BadHostlist as exc:
                raise wrong(key, nodeset.nodes, f"a Slurm hostlist expression such as cloud-[1-100] ({exc})") from None
            if not names:
                raise wrong(key, nodeset.nodes, "at least one node name")
            mine: set[str] = set()
            for name in names:
                if not re.match(_NODE_NAME, name):
                    raise wrong(key, nodeset.nodes, f"node names of letters, digits, '.', '-' or '_' (not {name!r})")
                if name in mine:
                    raise wrong(key, nodeset.nodes, f"each node once: {name} is listed twice")
                mine.add(name)
                first = owner.setdefault(name, i)
                if first != i:
                    where = f"slurm.nodesets.{first}.nodes ({self.nodesets[first].nodes})"
                    raise wrong(key, nodeset.nodes, f"node sets that do not overlap: {name} is also in {where}")
        return self
