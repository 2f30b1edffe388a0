"""JSON schemas of the five provider-script outputs, written from IBM's documented format.

Source: IBM Spectrum Symphony 7.3.2, "Host provider plugin input/output specification" (a copy with
sample JSON is in finos/open-resource-broker, docs/root/hostfactory/input-output.md), and the LSF
resource connector's use of the same five scripts. Field names, types and enums are IBM's; where IBM
marks a field optional it is optional here. Three stricter rules are ours (docs/schedulers.md says why):
`message` of getReturnRequests is never empty, a machine whose `result` is `fail` carries a non-empty
`message` (IBM: "mandatory if result is fail"), and `launchtime` is an integer (IBM: numeric seconds).
"""

from __future__ import annotations

from typing import Any

import jsonschema

__all__ = ["MACHINE_STATUSES", "schema", "validate"]

MACHINE_STATUSES = ["running", "stopped", "terminated", "shutting-down", "stopping"]
"""IBM: "Status of machine. Expected values: running, stopped, terminated, shutting-down, stopping"."""

_PAIR = {"type": "array", "prefixItems": [{"enum": ["String", "Numeric", "Boolean"]}, {"type": "string"}],
         "minItems": 2, "maxItems": 2}  # fmt: skip
_NUMERIC = {"type": "array", "prefixItems": [{"const": "Numeric"}, {"type": "string", "pattern": r"^[0-9]+$"}],
            "minItems": 2, "maxItems": 2}  # fmt: skip
_STRING = {"type": "array", "prefixItems": [{"const": "String"}, {"type": "string", "minLength": 1}],
           "minItems": 2, "maxItems": 2}  # fmt: skip
_MESSAGE = {"type": "string"}
_NONEMPTY = {"type": "string", "minLength": 1}


def _templates(memory: str) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["templates"],
        "properties": {
            "message": _MESSAGE,
            "templates": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["templateId", "maxNumber", "attributes"],
                    "properties": {
                        "templateId": _NONEMPTY,
                        "maxNumber": {"type": "integer", "anyOf": [{"const": -1}, {"minimum": 1}]},
                        "availableNumber": {"type": "integer", "minimum": 0},
                        "requestedMachines": {"type": "array", "items": {"type": "string"}},
                        "instanceTags": {"type": "string"},
                        "attributes": {
                            "type": "object",
                            "required": ["type", "ncpus", memory],
                            "properties": {"type": _STRING, "ncpus": _NUMERIC, memory: _NUMERIC},
                            "additionalProperties": _PAIR,  # provider-specific attributes, [kind, text]
                        },
                    },
                },
            },
        },
    }


_CREATED = {
    "type": "object",
    "required": ["requestId"],
    "properties": {"requestId": _NONEMPTY, "message": _MESSAGE},
}


def _status(lsf: bool) -> dict[str, Any]:
    machine: dict[str, Any] = {
        "type": "object",
        "required": ["machineId", "name", "result", "privateIpAddress", "launchtime", "message"]
        + (["rcAccount"] if lsf else []),
        "properties": {
            "machineId": _NONEMPTY,
            "name": _NONEMPTY,
            "result": {"enum": ["executing", "succeed", "fail"]},
            "status": {"enum": MACHINE_STATUSES},
            # mandatory strings: a machine that failed to launch has the address "" (never null)
            "privateIpAddress": {"type": "string"},
            "publicIpAddress": {"type": "string"},
            "launchtime": {"type": "integer", "minimum": 0},
            "message": _MESSAGE,
            "instanceType": {"type": "string"},
            "priceType": {"enum": ["ondemand", "spot", "heterogeneous"]},
            "instanceTags": {"type": "string"},
            "cloudHostId": {"type": "string"},
            "rcAccount": _NONEMPTY,
        },
        "if": {"properties": {"result": {"const": "fail"}}},
        "then": {"properties": {"message": _NONEMPTY}},
    }
    return {
        "type": "object",
        "required": ["requests"],
        "properties": {
            "requests": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["requestId", "status", "machines"],
                    "properties": {
                        "requestId": _NONEMPTY,
                        "message": _MESSAGE,
                        "status": {"enum": ["running", "complete", "complete_with_error"]},
                        "machines": {"type": "array", "items": machine},
                    },
                },
            }
        },
    }


def _returns(lsf: bool) -> dict[str, Any]:
    entry: dict[str, Any] = (
        {"type": "object", "required": ["machine", "machineId"],
         "properties": {"machine": _NONEMPTY, "machineId": _NONEMPTY, "rcAccount": _NONEMPTY}}
        if lsf
        else {"type": "object", "required": ["machine", "gracePeriod"],
              "properties": {"machine": _NONEMPTY, "gracePeriod": {"type": "integer", "minimum": 0}}}
    )  # fmt: skip
    return {
        "type": "object",
        "required": ["message", "requests"],
        "properties": {
            "status": {"type": "string"},
            "message": _NONEMPTY,
            "requests": {"type": "array", "items": entry},
        },
    }


_SCHEMAS: dict[str, dict[str, dict[str, Any]]] = {
    "hostfactory": {
        "getAvailableTemplates": _templates("nram"),
        "requestMachines": _CREATED,
        "requestReturnMachines": _CREATED,
        "getRequestStatus": _status(lsf=False),
        "getReturnRequests": _returns(lsf=False),
    },
    "lsf": {
        "getAvailableTemplates": _templates("mem"),
        "requestMachines": _CREATED,
        "requestReturnMachines": _CREATED,
        "getRequestStatus": _status(lsf=True),
        "getReturnRequests": _returns(lsf=True),
    },
}


def schema(scheduler: str, script: str) -> dict[str, Any]:
    return _SCHEMAS[scheduler][script]


def validate(scheduler: str, script: str, output: Any) -> None:
    """Raise jsonschema.ValidationError when `output` of `script` breaks the documented format."""
    jsonschema.Draft202012Validator(schema(scheduler, script)).validate(output)
