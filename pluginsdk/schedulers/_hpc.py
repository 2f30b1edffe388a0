"""What HostFactory and LSF share: the five provider calls, their input and their camelCase output.

The scheduler polls these calls and acts on them, so the rules favour a scheduler that keeps going:
an unknown request id reads `complete_with_error` (never `running`, which would be polled forever),
every terminal non-success status maps to `complete_with_error`, and a template whose instance type
says nothing about its CPUs and memory is left out with a warning rather than given made-up values.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from ._base import Strategy
from .instance_types import Shape, resolve_shape

if TYPE_CHECKING:
    from ..config import Settings
    from ..models import Machine, Request, Template

__all__ = ["HpcStrategy"]

log = logging.getLogger("pluginsdk.schedulers")

_AWS_APIS = frozenset({"aws", "RunInstances", "EC2Fleet", "SpotFleet", "ASG"})


def _items(data: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    value = data.get(key) or []
    if isinstance(value, Mapping):
        value = [value]
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _first(data: Mapping[str, Any], *keys: str) -> Any:
    return next((data[k] for k in keys if data.get(k) not in (None, "")), None)


def _type_table(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Mapping[str, Any]]:
    """`scheduler.instance_types` as type -> shape keys (configuration splits `m5.xlarge` at its dot)."""
    out: dict[str, Mapping[str, Any]] = {}
    for key, value in tree.items():
        if not isinstance(value, Mapping):
            continue
        name = f"{prefix}.{key}" if prefix else str(key)
        if "ncpus" in value:
            out[name] = value
        else:
            out.update(_type_table(value, name))
    return out


class HpcStrategy(Strategy):
    """Base of the HostFactory and LSF strategies; subclasses name their attribute keys and entries."""

    output_format: ClassVar[str | None] = "json"
    memory_attribute: ClassVar[str] = "nram"

    # -- input ----------------------------------------------------------------
    def parse_input(self, operation: str, data: Mapping[str, Any]) -> dict[str, Any]:
        if operation == "list_templates":
            return {"limit": 10000}
        if operation == "create_request":
            inner = data.get("template")
            spec: Mapping[str, Any] = inner if isinstance(inner, Mapping) else data
            params: dict[str, Any] = {}
            if (tid := _first(spec, "templateId", "template_id")) is not None:
                params["template_id"] = tid
            if (count := _first(spec, "machineCount", "machine_count", "count")) is not None:
                params["requested_count"] = count
            return params | self.request_extras(data)
        if operation == "create_return_request":
            machines = _items(data, "machines")
            return {"machine_ids": [str(_first(m, "machineId", "machine_id", "name")) for m in machines]}
        if operation == "get_request_status":
            ids = [_first(r, "requestId", "request_id") for r in _items(data, "requests")]
            return {"request_ids": [str(i) for i in ids if i is not None]}
        if operation == "list_return_requests":
            names = {str(v) for m in _items(data, "machines") for v in (m.get("name"), m.get("machineId")) if v}
            return {"machine_names": sorted(names), "limit": 10000}
        return dict(data)

    def request_extras(self, data: Mapping[str, Any]) -> dict[str, Any]:
        """Scheduler-specific fields of a requestMachines input (LSF: rc_account, userData)."""
        return {}

    # -- output ---------------------------------------------------------------
    def render(self, operation: str, params: Mapping[str, Any], result: Any, settings: Settings) -> Any:
        if operation == "list_templates":
            return self.templates(result.templates, settings)
        if operation == "create_request":
            return {"requestId": result.request_id, "message": result.message}
        if operation == "create_return_request":
            return self.return_created(result)
        if operation == "get_request_status":
            found = [self.request_entry(r) for r in result.requests]
            missing = [self.unknown_request(rid) for rid in result.not_found]
            return {"requests": found + missing}
        if operation == "list_return_requests":
            wanted = set(params.get("machine_names") or ())
            return {
                "status": "complete",
                "message": "",
                "requests": self.return_entries(result.requests, wanted, settings),
            }
        return super().render(operation, params, result, settings)

    def render_error(self, envelope: dict[str, Any]) -> dict[str, Any]:
        return {"message": envelope["error"], **envelope}

    # templates
    def templates(self, templates: Iterable[Template], settings: Settings) -> dict[str, Any]:
        table = _type_table(settings.group("scheduler.instance_types"))
        out: list[dict[str, Any]] = []
        skipped: list[str] = []
        for t in templates:
            shape = self.shape_of(t, table)
            if shape is None:
                skipped.append(t.template_id)
                continue
            out.append(self.template_entry(t, shape, settings))
        message = f"{len(out)} templates"
        if skipped:
            message += (
                f"; skipped {', '.join(skipped)}: CPUs and memory of the instance type are unknown "
                "(set configuration.ncpus and configuration.memory_mb on the template, or scheduler.instance_types)"
            )
            log.warning("%s", message)
        return {"templates": out, "message": message}

    @staticmethod
    def shape_of(t: Template, table: Mapping[str, Any]) -> Shape | None:
        types = [t.instance_type] if t.instance_type else list(t.instance_types)
        shapes = [resolve_shape(it, template_config=t.configuration, table=table) for it in types or [""]]
        # a fleet may launch any of its types: promise the scheduler only the smallest
        known = [s for s in shapes if s is not None]
        if not known or len(known) != len(shapes):
            return None
        return min(known, key=lambda s: (s.ncpus, s.memory_mb))

    def attributes(self, t: Template, shape: Shape) -> dict[str, list[str]]:
        return {
            "type": ["String", shape.arch],
            "ncpus": ["Numeric", str(shape.ncpus)],
            self.memory_attribute: ["Numeric", str(shape.memory_mb)],
        }

    def template_entry(self, t: Template, shape: Shape, settings: Settings) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "templateId": t.template_id,
            "maxNumber": t.max_number or settings.provider.max_machines_per_request,
            "attributes": self.attributes(t, shape),
            "imageId": t.image_id,
            "vmType": t.instance_type or ",".join(t.instance_types),
            "instanceTags": ";".join(f"{k}={v}" for k, v in t.tags.items()),
            "priceType": t.price_type,
            "providerApi": t.provider_api,
        }
        if t.subnet_ids:
            entry["subnetId"] = ",".join(t.subnet_ids)
        if t.key_name:
            entry["keyName"] = t.key_name
        if t.security_group_ids:
            entry["securityGroupIds"] = list(t.security_group_ids)
        return entry

    # requests
    @staticmethod
    def request_status(r: Request) -> str:
        if not r.status.terminal:
            return "running"
        return "complete" if r.status.value == "completed" else "complete_with_error"

    @staticmethod
    def machine_result(m: Machine, returning: bool) -> str:
        status = m.status.value
        if returning:
            return "succeed" if status == "terminated" else ("fail" if status == "failed" else "executing")
        if status == "running":
            return "succeed"
        return "executing" if status == "pending" else "fail"

    def machine_entry(self, m: Machine, r: Request) -> dict[str, Any]:
        return {
            "machineId": m.machine_id,
            "name": m.name or m.ip_address or m.machine_id,
            "result": self.machine_result(m, r.request_type.value == "return"),
            "status": m.status.value,
            "privateIpAddress": m.ip_address,
            "publicIpAddress": m.public_ip_address,
            "launchtime": int(m.created_at.timestamp()),
            "message": m.status_reason or "",
        }

    def request_entry(self, r: Request) -> dict[str, Any]:
        return {
            "requestId": r.request_id,
            "status": self.request_status(r),
            "message": r.message,
            "machines": [self.machine_entry(m, r) for m in r.machines],
        }

    @staticmethod
    def unknown_request(request_id: str) -> dict[str, Any]:
        return {
            "requestId": request_id,
            "status": "complete_with_error",
            "message": f"Request {request_id} not found.",
            "machines": [],
        }

    @staticmethod
    def return_created(result: Any) -> dict[str, Any]:
        if result.request_id:
            return {"requestId": result.request_id, "message": result.message}
        # every machine skipped: if they are already being returned, answer with that return request
        prefix = "already being returned by "
        prior = [s.reason[len(prefix) :] for s in result.skipped_machines if s.reason.startswith(prefix)]
        if prior and len(prior) == len(result.skipped_machines) and len(set(prior)) == 1:
            return {"requestId": prior[0], "message": f"Machines are already being returned by {prior[0]}."}
        from ..errors import NotFoundError

        reasons = "; ".join(f"{s.machine_id}: {s.reason}" for s in result.skipped_machines)
        raise NotFoundError(
            "machine", ",".join(s.machine_id for s in result.skipped_machines), f"No machine returned ({reasons})."
        )

    # return requests
    def return_entries(self, requests: Iterable[Request], wanted: set[str], settings: Settings) -> list[dict[str, Any]]:
        seen: set[str] = set()
        out: list[dict[str, Any]] = []
        for r in requests:
            for m in r.machines:
                if m.machine_id in seen or (wanted and not wanted & {m.machine_id, m.name}):
                    continue
                seen.add(m.machine_id)
                out.append(self.return_entry(m, settings))
        return out

    def return_entry(self, m: Machine, settings: Settings) -> dict[str, Any]:
        return {"machine": m.name or m.machine_id, "gracePeriod": settings.scheduler.grace_period}

    @staticmethod
    def is_aws(t: Template) -> bool:
        return t.provider_api in _AWS_APIS
