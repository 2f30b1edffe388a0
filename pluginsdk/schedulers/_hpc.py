"""What HostFactory and LSF share: the five provider calls, their input and their camelCase output.

The scheduler polls these calls and acts on them, so the rules favour a scheduler that keeps going:
an unknown request id reads `complete_with_error` (never `running`, which would be polled forever),
a terminal non-success maps to `complete_with_error`, a machine the scheduler returned after it ran
stays `succeed` on its provisioning request, and a template whose instance type says nothing about its
CPUs and memory is left out with a warning rather than given made-up values. A field IBM's format types as
a string is never `null`: a machine without an address (failed, or returned before it got one) reads `""`.
The full table of `result` and `status` values is in docs/schedulers.md; `machine_result` and
`request_status` are it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from ..models.statuses import StatusReason
from ._base import Strategy
from .instance_types import Shape, resolve_shape

if TYPE_CHECKING:
    from ..config import Settings
    from ..models import Machine, Request, Template

__all__ = ["HpcStrategy"]

log = logging.getLogger("pluginsdk.schedulers")

_AWS_APIS = frozenset({"aws", "RunInstances", "EC2Fleet", "SpotFleet", "ASG"})

_ATTRIBUTE_KINDS = ("String", "Numeric", "Boolean")

MACHINE_STATUSES = ("running", "stopped", "terminated", "shutting-down", "stopping")
"""The machine `status` values IBM's contract lists (a starting machine has none: the field is optional)."""


def _items(data: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    value = data.get(key) or []
    if isinstance(value, Mapping):
        value = [value]
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _first(data: Mapping[str, Any], *keys: str) -> Any:
    return next((data[k] for k in keys if data.get(k) not in (None, "")), None)


def _given(data: Mapping[str, Any], key: str, *names: str) -> list[str]:
    """The ids of the entries under `key`, each under the first of `names` it has (entries without one dropped)."""
    given = (_first(entry, *names) for entry in _items(data, key))
    return [str(g) for g in given if g is not None]


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
            return self.request_input(data)
        if operation == "create_return_request":
            # `name` is the one mandatory key; the engine resolves an entry that is no machine id as a host
            # name. The scheduler has no force flag: returning a starting machine stops its launch.
            return {"machine_ids": _given(data, "machines", "machineId", "machine_id", "name"), "force_return": True}
        if operation == "get_request_status":
            return {"request_ids": _given(data, "requests", "requestId", "request_id"), "report_missing": True}
        if operation == "list_return_requests":
            names = {str(v) for m in _items(data, "machines") for v in (m.get("name"), m.get("machineId")) if v}
            return {"machine_names": sorted(names), "limit": 10000}
        return dict(data)

    def request_input(self, data: Mapping[str, Any]) -> dict[str, Any]:
        """A requestMachines input (the template may be nested under `template`) as create_request parameters."""
        inner = data.get("template")
        spec: Mapping[str, Any] = inner if isinstance(inner, Mapping) else data
        params: dict[str, Any] = {}
        if (tid := _first(spec, "templateId", "template_id")) is not None:
            params["template_id"] = tid
        if (count := _first(spec, "machineCount", "machine_count", "count")) is not None:
            params["requested_count"] = count
        return params | self.request_extras(data)

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
            entries = self.return_entries(result.requests, wanted, settings)
            message = (
                f"{len(entries)} machines are being returned or were reclaimed by the provider."
                if entries
                else "No machine is being returned or reclaimed."
            )
            return {"status": "complete", "message": message, "requests": entries}
        return super().render(operation, params, result, settings)

    def render_error(self, envelope: dict[str, Any]) -> dict[str, Any]:
        return {"message": envelope["error"], **envelope}

    # templates
    def templates(self, templates: Iterable[Template], settings: Settings) -> dict[str, Any]:
        table = _type_table(settings.group("scheduler.instance_types"))
        out: list[dict[str, Any]] = []
        skipped: list[str] = []
        refused: list[str] = []
        for t in templates:
            if self.refuse_template(t.template_id):
                refused.append(t.template_id)
                continue
            declared = self.declared_attributes(t)
            shape = self.shape_of(t, table)
            if shape is None and not self.required_attributes <= set(declared):
                skipped.append(t.template_id)
                continue
            out.append(self.template_entry(t, shape, declared, settings))
        message = f"{len(out)} templates"
        if skipped:
            message += (
                f"; skipped {', '.join(skipped)}: CPUs and memory of the instance type are unknown "
                "(declare the attributes in the templates file, set configuration.ncpus and "
                "configuration.memory_mb on the template, or scheduler.instance_types)"
            )
        if refused:
            message += f"; skipped {', '.join(refused)}: {self.template_id_rule}"
        message += "".join(f"; {e['protected']}" for e in out if e.get("protected"))
        if skipped or refused:
            log.warning("%s", message)
        return {"templates": out, "message": message}

    required_attributes: ClassVar[frozenset[str]] = frozenset({"type", "ncpus", "nram"})
    template_id_rule: ClassVar[str] = ""

    def refuse_template(self, template_id: str) -> bool:
        """True when the scheduler cannot take this template id (LSF: underscores)."""
        return False

    @staticmethod
    def declared_attributes(t: Template) -> dict[str, list[str]]:
        """The `attributes` the templates file declares, as `[kind, text]` pairs (others are dropped with a warning)."""
        raw = t.configuration.get("attributes")
        out: dict[str, list[str]] = {}
        for key, value in (raw if isinstance(raw, Mapping) else {}).items():
            if (
                isinstance(value, (list, tuple))
                and len(value) == 2
                and value[0] in _ATTRIBUTE_KINDS
                and isinstance(value[1], (str, int, float))
                and not isinstance(value[1], bool)
            ):
                out[str(key)] = [str(value[0]), str(value[1])]
            else:
                log.warning("template %s: attribute %r is not a [kind, value] pair; ignored", t.template_id, key)
        return out

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

    def template_entry(
        self, t: Template, shape: Shape | None, declared: Mapping[str, list[str]], settings: Settings
    ) -> dict[str, Any]:
        # declared attributes win over derived ones; extra declared resources (an LSF `zone`) pass through
        derived = self.attributes(t, shape) if shape is not None else {}
        entry: dict[str, Any] = {
            "templateId": t.template_id,
            "maxNumber": t.max_number or settings.provider.max_machines_per_request,
            "attributes": derived | dict(declared),
            "imageId": t.image_id,
            "vmType": t.instance_type or ",".join(t.instance_types),
            "instanceTags": ";".join(f"{k}={v}" for k, v in t.tags.items()),
            "priceType": t.price_type,
            "providerApi": t.provider_api,
        }
        if t.protected:  # bootstrap failures: the scheduler may ask for none (docs/providers.md)
            entry["availableNumber"] = 0
            entry["protected"] = t.protected
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
        """running / complete / complete_with_error (the table in docs/schedulers.md)."""
        if not r.status.terminal:
            return "running"
        if r.status.value == "completed":
            return "complete"
        if r.status.value == "cancelled" and r.machines and all(_withdrawn(m) for m in r.machines):
            return "complete"  # the scheduler itself returned every machine before it ran
        return "complete_with_error"

    @staticmethod
    def machine_result(m: Machine, returning: bool) -> str:
        """executing / succeed / fail of one machine on a provisioning or return request."""
        status = m.status.value
        if returning:
            return "succeed" if m.status.gone else "executing"
        if m.status_reason == StatusReason.RETURNED_BEFORE_RUNNING or (m.status_reason or "").startswith(
            StatusReason.RECLAIMED
        ):
            return "fail"
        if status == "pending":
            return "executing"
        if status in ("running", "stopping", "stopped"):
            return "succeed"
        if status in ("shutting-down", "terminated") and m.return_request_id:
            return "succeed"  # delivered, returned by the scheduler since
        return "fail"

    @staticmethod
    def machine_status(m: Machine) -> str | None:
        """The machine `status` within the contract's values (None: leave the optional field out)."""
        status = m.status.value
        if status == "failed":
            return "terminated"  # a failed launch holds nothing at the provider
        return status if status in MACHINE_STATUSES else None

    @staticmethod
    def machine_message(m: Machine, result: str) -> str:
        if m.status_reason:
            return m.status_reason
        return f"Machine is {m.status.value}." if result == "fail" else ""

    def machine_entry(self, m: Machine, r: Request) -> dict[str, Any]:
        result = self.machine_result(m, r.request_type.value == "return")
        entry: dict[str, Any] = {
            "machineId": m.machine_id,
            "name": m.name or m.ip_address or m.machine_id,
            "result": result,
        }
        if (status := self.machine_status(m)) is not None:
            entry["status"] = status
        entry |= {
            "privateIpAddress": m.ip_address or "",
            "publicIpAddress": m.public_ip_address or "",
            "launchtime": int(m.created_at.timestamp()),
            "message": self.machine_message(m, result),
        }
        if m.instance_type:
            entry["instanceType"] = m.instance_type
        entry["providerName"] = m.provider_name  # the provider instance that made it (docs/providers.md)
        if r.request_type.value == "provision":
            if price := r.provider_data.get("price_type"):
                entry["priceType"] = price
            entry["instanceTags"] = ";".join(f"{k}={v}" for k, v in r.tags.items())
        return entry

    def refused_entries(self, r: Request) -> list[dict[str, Any]]:
        """Machines the provider refused to take back on a return request: result `fail`, and why; they still
        run, so they keep their addresses (IBM's contract makes `privateIpAddress` mandatory)."""
        refused = r.provider_data.get("failed_machines") or {}
        return [
            {
                "machineId": mid,
                "name": info.get("name") or mid,
                "result": "fail",
                "privateIpAddress": info.get("ip") or "",
                "publicIpAddress": info.get("public_ip") or "",
                "launchtime": int(r.created_at.timestamp()),
                "message": f"The provider failed to take the machine back: {info.get('reason')}",
            }
            for mid, info in refused.items()
        ]

    def request_entry(self, r: Request) -> dict[str, Any]:
        machines = [self.machine_entry(m, r) for m in r.machines]
        if r.request_type.value == "return":
            machines += self.refused_entries(r)
        return {
            "requestId": r.request_id,
            "status": self.request_status(r),
            "message": r.message or f"Request is {r.status.value}.",
            "machines": machines,
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
        prior = [
            s.reason.rpartition(" by ")[2]
            for s in result.skipped_machines
            if s.reason.startswith(("already being returned by ", "already returned by "))
        ]
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
        now = time.time()
        for r in requests:
            for m in r.machines:
                if m.machine_id in seen or (wanted and not wanted & {m.machine_id, m.name}):
                    continue
                seen.add(m.machine_id)
                out.append(self.return_entry(m, r, settings, now))
        return out

    @staticmethod
    def grace_left(m: Machine, r: Request, settings: Settings, now: float) -> int:
        """Seconds left before the host is reclaimed: the configured grace counted down from the return, 0 once gone."""
        if m.status.gone:
            return 0
        return max(0, int(settings.scheduler.grace_period - (now - r.created_at.timestamp())))

    def return_entry(self, m: Machine, r: Request, settings: Settings, now: float) -> dict[str, Any]:
        return {"machine": m.name or m.machine_id, "gracePeriod": self.grace_left(m, r, settings, now)}

    @staticmethod
    def is_aws(t: Template) -> bool:
        return t.provider_api in _AWS_APIS


def _withdrawn(m: Machine) -> bool:
    """Returned by the scheduler before it ran (its launch stopped)."""
    return m.status_reason == StatusReason.RETURNED_BEFORE_RUNNING
