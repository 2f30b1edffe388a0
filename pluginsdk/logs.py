"""Structured logs: JSON lines, each carrying the request id of the call that caused it.

The request id lives in a context variable: the server sets it per HTTP request (the incoming X-Request-ID
or a new one), the CLI once per invocation (and sends it to a server as X-Request-ID), so every line a call
causes — engine, store, provider, auth — carries the same id without being passed around. Standard library
only (the CLI imports this on its cold path only when `logging.format` is json or a level is asked for).
"""

from __future__ import annotations

import json
import logging
import sys
import time
from contextvars import ContextVar
from random import getrandbits
from typing import Any, TextIO

__all__ = ["JsonFormatter", "configure", "new_request_id", "request_id"]

request_id: ContextVar[str | None] = ContextVar("pluginsdk_request_id", default=None)
"""The id of the request being served (server) or of this invocation (CLI)."""

_RESERVED = set(vars(logging.makeLogRecord({})))


def new_request_id() -> str:
    """32 random hex digits (as `uuid4().hex` reads), one per request served. A correlation id, not a secret: from
    `random`'s generator (reseeded in a forked worker), which costs no system call, where `os.urandom` costs one."""
    return f"{getrandbits(128):032x}"


class JsonFormatter(logging.Formatter):
    """One JSON object per record: ts (UTC, RFC 3339), level, logger, msg, request_id, extra fields, exc."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        rid = getattr(record, "request_id", None) or request_id.get()
        if rid:
            out["request_id"] = rid
        for key, value in vars(record).items():
            if key not in _RESERVED and key not in out and not key.startswith("_"):
                out[key] = value if isinstance(value, str | int | float | bool | type(None)) else repr(value)
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False, default=str)


def configure(level: str, fmt: str = "text", file: str | None = None, stream: TextIO | None = None) -> None:
    """The root logger's one handler: to `file`, else to stderr; JSON lines or plain text."""
    handler: logging.Handler = logging.FileHandler(file) if file else logging.StreamHandler(stream or sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
