"""Handler: the audit log listing (paging by record id, filters, JSON-lines export)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from pluginsdk.models.policy_results import AuditPage, AuditRecord
from pluginsdk.operations.audit import ListAuditRecordsQuery

from ...registry import HandlerTable
from ..audit import page_records
from ..service import AuthService

if TYPE_CHECKING:
    from ...call import Call

handlers = HandlerTable(AuthService)

_LISTING = "audit"


@handlers.on(ListAuditRecordsQuery)
async def list_audit_records(svc: AuthService, op: ListAuditRecordsQuery, call: Call) -> AuditPage:
    pos = svc.decode_page(_LISTING, op.starting_token)
    filters = {
        "actor": op.actor,
        "action": op.action,
        "target_type": op.target_type,
        "target_id": op.target_id,
        "since": op.since,
        "until": op.until,
        "min_revision": op.min_revision,
    }
    rows = await page_records(svc.store, filters, str(pos["i"]) if pos else None, op.page_size + 1)
    more = len(rows) > op.page_size
    rows = rows[: op.page_size]
    records = [
        AuditRecord(
            record_id=r["record_id"],
            at=r["at"],
            actor=r["actor"],
            action=r["action"],
            target_type=r["target_type"],
            target_id=r["target_id"],
            before=json.loads(r["before_data"]) if r["before_data"] else None,
            after=json.loads(r["after_data"]) if r["after_data"] else None,
            revision=int(r["revision"]),
        )
        for r in rows
    ]
    token = svc.encode_page(_LISTING, {"i": rows[-1]["record_id"]}) if more and rows else None
    jsonl = "\n".join(json.dumps(rec.to_dict(), sort_keys=True) for rec in records) if op.jsonl else None
    return AuditPage(records=records, next_token=token, jsonl=jsonl)
