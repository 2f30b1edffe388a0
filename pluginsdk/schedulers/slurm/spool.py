"""Work the power-saving programs leave for the worker: one JSON file per program call, written atomically.

A file is deleted only once its work is recorded in the engine, and each file's provider requests carry ids
derived from the file's own id, so a worker that dies half way and the one that takes the file over make the
same requests (create_request is idempotent on its id): nothing is launched twice, nothing is lost.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

__all__ = ["Intent", "Job", "pending", "write"]

Action = Literal["resume", "suspend", "resume_fail", "reboot"]


@dataclass(slots=True)
class Job:
    """A job the resumed nodes are for (from SLURM_RESUME_FILE)."""

    job_id: int
    nodes: list[str]


@dataclass(slots=True)
class Intent:
    """One program call: what Slurm asked for, when."""

    action: Action
    nodes: list[str]
    jobs: list[Job] = field(default_factory=list)
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:16])
    at: float = field(default_factory=time.time)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Intent:
        return cls(
            action=data["action"],
            nodes=list(data["nodes"]),
            jobs=[Job(int(j["job_id"]), list(j["nodes"])) for j in data.get("jobs", [])],
            id=str(data["id"]),
            at=float(data["at"]),
        )


def write(spool: Path, intent: Intent) -> Path:
    """Write `intent` under `spool` (created owner-only): a temporary file renamed into place once synced."""
    spool.mkdir(mode=0o700, parents=True, exist_ok=True)
    final = spool / f"{intent.at:.6f}-{intent.id}.json"
    tmp = spool / f".{intent.id}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(asdict(intent), fh, separators=(",", ":"))
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, final)
    return final


def pending(spool: Path) -> Iterator[tuple[Path, Intent]]:
    """The intents waiting in `spool`, oldest first; an unreadable file is set aside as `*.bad`."""
    if not spool.is_dir():
        return
    for path in sorted(spool.glob("*.json")):
        try:
            intent = Intent.from_json(json.loads(path.read_text(encoding="utf-8")))
        except FileNotFoundError:  # another worker finished it
            continue
        except (ValueError, KeyError, TypeError):
            path.rename(path.with_suffix(".bad"))
            continue
        yield path, intent
