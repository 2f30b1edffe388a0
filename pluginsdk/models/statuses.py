"""Lifecycle statuses of requests and machines, and the legal moves between them.

Statuses are closed enums (`decisions.md`); the legal transitions live in one
table here so every backend enforces the same rules. Plain enums, apart from
the models, so code that only compares statuses does not build model classes.
"""

from enum import StrEnum

__all__ = [
    "MACHINE_TRANSITIONS",
    "RECLAIMED",
    "REQUEST_TRANSITIONS",
    "RETURNED_BEFORE_RUNNING",
    "MachineStatus",
    "RequestStatus",
    "RequestType",
    "can_transition",
]


class RequestStatus(StrEnum):
    """Lifecycle of a provisioning or return request."""

    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    PARTIAL = "partial"
    """Terminal: finished, but some machines failed."""
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def terminal(self) -> bool:
        return self in _TERMINAL_REQUEST


class MachineStatus(StrEnum):
    """Lifecycle of one machine."""

    PENDING = "pending"
    RUNNING = "running"
    STOPPING = "stopping"
    STOPPED = "stopped"
    SHUTTING_DOWN = "shutting-down"
    TERMINATED = "terminated"
    FAILED = "failed"

    @property
    def active(self) -> bool:
        """Counts against capacity: exists (or is coming up) at the provider."""
        return self in (MachineStatus.PENDING, MachineStatus.RUNNING, MachineStatus.STOPPING, MachineStatus.STOPPED)

    @property
    def gone(self) -> bool:
        return self in (MachineStatus.TERMINATED, MachineStatus.FAILED)


class RequestType(StrEnum):
    PROVISION = "provision"
    RETURN = "return"


_TERMINAL_REQUEST = frozenset(
    {RequestStatus.COMPLETED, RequestStatus.PARTIAL, RequestStatus.FAILED, RequestStatus.CANCELLED}
)

R = RequestStatus
REQUEST_TRANSITIONS: dict[RequestStatus, frozenset[RequestStatus]] = {
    R.PENDING: frozenset({R.RUNNING, R.COMPLETED, R.PARTIAL, R.FAILED, R.CANCELLED}),
    R.RUNNING: frozenset({R.COMPLETED, R.PARTIAL, R.FAILED, R.CANCELLED}),
    R.COMPLETED: frozenset(),
    R.PARTIAL: frozenset(),
    R.FAILED: frozenset(),
    R.CANCELLED: frozenset(),
}
"""Request status -> statuses it may move to. Terminal statuses move nowhere."""

M = MachineStatus
MACHINE_TRANSITIONS: dict[MachineStatus, frozenset[MachineStatus]] = {
    M.PENDING: frozenset({M.RUNNING, M.SHUTTING_DOWN, M.TERMINATED, M.FAILED, M.STOPPING}),
    M.RUNNING: frozenset({M.STOPPING, M.SHUTTING_DOWN, M.TERMINATED, M.FAILED}),
    M.STOPPING: frozenset({M.STOPPED, M.SHUTTING_DOWN, M.TERMINATED}),
    M.STOPPED: frozenset({M.PENDING, M.SHUTTING_DOWN, M.TERMINATED}),
    M.SHUTTING_DOWN: frozenset({M.TERMINATED}),
    M.TERMINATED: frozenset(),
    M.FAILED: frozenset({M.TERMINATED}),
}
"""Machine status -> statuses it may move to (a provider may skip intermediate states)."""
del R, M


def can_transition(current: RequestStatus | MachineStatus, new: RequestStatus | MachineStatus) -> bool:
    """True when `current -> new` is legal (staying put is always legal)."""
    if current == new:
        return True
    if isinstance(current, RequestStatus) and isinstance(new, RequestStatus):
        return new in REQUEST_TRANSITIONS[current]
    if isinstance(current, MachineStatus) and isinstance(new, MachineStatus):
        return new in MACHINE_TRANSITIONS[current]
    return False


RETURNED_BEFORE_RUNNING = "returned before it was running"
"""`status_reason` of a machine returned while it was still starting: its launch was stopped, so it
was withdrawn, not failed (the engine records it; the scheduler strategies read it)."""

RECLAIMED = "Reclaimed by the provider"
"""Start of the `status_reason` of a machine the cloud took back on its own (spot interruption)."""
