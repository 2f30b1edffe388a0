"""The attributes tier 2 decides on, read off the provisioning objects: one function per object type.

Below both the auth service and the handlers: a listing filters with these (`deps.access`), and the
authorizer decides on one stored object with the same function (`auth/objects.py`), so a listing and a single
read agree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pluginsdk.models import Machine, Request, Template

__all__ = ["machine_attrs", "request_attrs", "template_attrs"]


def request_attrs(r: Request) -> dict[str, Any]:
    return {"requestId": r.request_id, "templateId": r.template_id, "userId": r.created_by}


def machine_attrs(m: Machine) -> dict[str, Any]:
    return {"machineId": m.machine_id, "templateId": m.template_id, "requestId": m.request_id}


def template_attrs(t: Template) -> dict[str, Any]:
    return {"templateId": t.template_id, "providerApi": t.provider_api}
