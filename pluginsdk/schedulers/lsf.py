"""IBM Spectrum LSF resource connector: attributes `type`, `ncpus`, `ncores`, `mem`; `rcAccount` on machines."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from ._hpc import HpcStrategy
from .instance_types import Shape

if TYPE_CHECKING:
    from ..config import Settings
    from ..models import Machine, Request, Template

__all__ = ["LsfStrategy"]


class LsfStrategy(HpcStrategy):
    """The LSF resource connector contract (ebrokerd calls the same five scripts with `-f FILE`)."""

    name: ClassVar[str] = "lsf"
    memory_attribute: ClassVar[str] = "mem"

    def request_extras(self, data: Mapping[str, Any]) -> dict[str, Any]:
        extras: dict[str, Any] = {}
        if data.get("rc_account"):
            extras["tags"] = {"rc_account": str(data["rc_account"])}
        if data.get("userData"):
            extras["additional_data"] = {"user_data": data["userData"]}
        return extras

    def attributes(self, t: Template, shape: Shape) -> dict[str, list[str]]:
        attrs = super().attributes(t, shape)
        attrs["ncores"] = ["Numeric", str(shape.ncores)]
        if self.is_aws(t):
            attrs["awshost"] = ["Boolean", "1"]
        return attrs

    def machine_entry(self, m: Machine, r: Request) -> dict[str, Any]:
        return super().machine_entry(m, r) | {"rcAccount": r.tags.get("rc_account", "default")}

    def return_entry(self, m: Machine, settings: Settings) -> dict[str, Any]:
        return {"machine": m.name or m.machine_id, "machineId": m.machine_id}
