"""Data objects shared by every interface and backend."""

from ._base import BaseModel as BaseModel
from ._base import utcnow as utcnow
from .provisioning import MACHINE_TRANSITIONS as MACHINE_TRANSITIONS
from .provisioning import REQUEST_TRANSITIONS as REQUEST_TRANSITIONS
from .provisioning import Machine as Machine
from .provisioning import MachineStatus as MachineStatus
from .provisioning import Request as Request
from .provisioning import RequestStatus as RequestStatus
from .provisioning import RequestType as RequestType
from .provisioning import SkippedMachine as SkippedMachine
from .provisioning import Template as Template
from .provisioning import can_transition as can_transition
from .results import *  # noqa: F403
from .results import __all__ as _results_all

__all__ = [
    "MACHINE_TRANSITIONS",
    "REQUEST_TRANSITIONS",
    "BaseModel",
    "Machine",
    "MachineStatus",
    "Request",
    "RequestStatus",
    "RequestType",
    "SkippedMachine",
    "Template",
    "can_transition",
    "utcnow",
    *_results_all,
]
