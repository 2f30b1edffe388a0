"""The CLI's exit codes (docs/cli.md lists them): what happened, not only whether an exception was raised.

Under a scheduler strategy (hostfactory, lsf) the caller knows only 0 and 1, so every failure is 1 there;
a request's outcome is in the JSON it reads.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ERROR",
    "INTERRUPTED",
    "NOT_DONE",
    "OK",
    "OUTPUT_FAILED",
    "PARTIAL",
    "TIMED_OUT",
    "USAGE",
    "missing_ids",
    "outcome",
]

OK = 0
ERROR = 1
"""The operation failed: the error envelope. Also a status read of several ids where some do not exist
(`requests status A B`, `machines status A B`): the ones found are printed, the others named on stderr."""
USAGE = 2
"""The command line is wrong (unknown option, bad value, missing argument)."""
NOT_DONE = 3
"""It ran, but did not do what was asked: a waited-for request failed or was cancelled, `machines return`
returned nothing, `templates validate` found the template invalid, `system health` found the provider
unhealthy; or the answer is no: `auth check`, `auth is-allowed` and `auth explain` decided deny (so a script
can write `if pluginsdk auth check ...; then`, as with test(1))."""
PARTIAL = 4
"""A waited-for request ended partial: some machines came up, some did not."""
TIMED_OUT = 5
"""`--wait` reached `--timeout` before the request completed (the timeout is also the request's deadline:
machines still starting then are given up; a request not yet settled goes on — `requests status`)."""
OUTPUT_FAILED = 6
"""The operation succeeded but `--output FILE` could not be written; the result went to stdout."""
INTERRUPTED = 130
"""Ctrl-C (SIGINT)."""


_DECISIONS = frozenset({"check_access", "is_allowed", "explain_access"})
"""Operations that answer one allow/deny decision."""


def outcome(operation: str, params: dict[str, Any], result: Any, *, timed_out: bool = False) -> int:
    """The exit code a successful call's `result` means (OK unless it reports that nothing was done).

    `timed_out`: the wait reached its timeout (a request not completed by then is TIMED_OUT, whatever
    status the deadline gave it).
    """
    if getattr(result, "dry_run", False) or params.get("dry_run"):
        return OK
    if missing_ids(operation, params, result):
        return ERROR
    if operation == "create_request" and params.get("wait"):
        return _waited_outcome(str(getattr(result, "status", "")), timed_out=timed_out)
    if operation == "create_return_request":
        return OK if getattr(result, "request_id", None) or getattr(result, "created_request_ids", None) else NOT_DONE
    if operation == "get_provider_health":
        return OK if getattr(result, "healthy", True) else NOT_DONE
    if operation == "validate_template":
        return OK if getattr(result, "valid", True) else NOT_DONE
    if operation in _DECISIONS:
        return OK if getattr(result, "allowed", True) else NOT_DONE
    return OK


def _waited_outcome(status: str, *, timed_out: bool) -> int:
    """A `machines request --wait`: completed, still going when the wait ended, partial, or not done."""
    if status == "completed":
        return OK
    if timed_out or status in ("submitted", "pending", "running"):
        return TIMED_OUT
    return PARTIAL if status == "partial" else NOT_DONE


def missing_ids(operation: str, params: dict[str, Any], result: Any) -> list[str]:
    """The ids a status read of several ids did not find (one unknown id is an error of its own)."""
    if operation == "get_request_status":
        return list(getattr(result, "not_found", None) or ())
    if operation == "get_machine_status":
        found = {getattr(m, "machine_id", None) for m in getattr(result, "machines", None) or ()}
        return [m for m in params.get("machine_ids") or () if m not in found]
    return []
