"""IBM Spectrum LSF resource connector: attributes `type`, `ncpus`, `ncores`, `mem`; `rcAccount` on machines.

LSF takes template ids without underscores (its own rule), so such templates are left out of the
listing and refused by requestMachines, each time saying why.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from ._hpc import HpcStrategy
from .instance_types import Shape

if TYPE_CHECKING:
    from ..config import Settings
    from ..models import Machine, Request, Template

__all__ = ["LsfStrategy"]

_RULE = "LSF template ids may not contain underscores (rename the template, e.g. with dashes)"


class LsfStrategy(HpcStrategy):
    """The LSF resource connector contract (ebrokerd calls the same five scripts with `-f FILE`)."""

    name: ClassVar[str] = "lsf"
    memory_attribute: ClassVar[str] = "mem"
    required_attributes: ClassVar[frozenset[str]] = frozenset({"type", "ncpus", "mem"})
    template_id_rule: ClassVar[str] = _RULE

    def refuse_template(self, template_id: str) -> bool:
        return "_" in template_id

    def parse_input(self, operation: str, data: Mapping[str, Any]) -> dict[str, Any]:
        params = super().parse_input(operation, data)
        if operation == "create_request" and "_" in str(params.get("template_id", "")):
            from ..errors import ValidationError

            tid = params["template_id"]
            raise ValidationError(
                f"Template id {tid!r}: {_RULE}.",
                details={"field": "templateId", "value": tid, "expected": "no underscore"},
            )
        return params

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

    @staticmethod
    def rc_account(m: Machine, r: Request) -> str:
        """The account of the provisioning request that made the machine, also on its return request."""
        if r.request_type.value == "return":
            return str((r.provider_data.get("rc_accounts") or {}).get(m.machine_id, "default"))
        return r.tags.get("rc_account", "default")

    def machine_entry(self, m: Machine, r: Request) -> dict[str, Any]:
        return super().machine_entry(m, r) | {"rcAccount": self.rc_account(m, r)}

    def refused_entries(self, r: Request) -> list[dict[str, Any]]:
        accounts = r.provider_data.get("rc_accounts") or {}
        return [e | {"rcAccount": accounts.get(e["machineId"], "default")} for e in super().refused_entries(r)]

    def return_entry(self, m: Machine, r: Request, settings: Settings, now: float) -> dict[str, Any]:
        return {"machine": m.name or m.machine_id, "machineId": m.machine_id, "rcAccount": self.rc_account(m, r)}
