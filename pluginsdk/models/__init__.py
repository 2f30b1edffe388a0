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
from .results import ActiveMachineCount as ActiveMachineCount
from .results import CleanupResult as CleanupResult
from .results import ConfigurationView as ConfigurationView
from .results import MachineHealth as MachineHealth
from .results import MachineList as MachineList
from .results import MachineResult as MachineResult
from .results import Metrics as Metrics
from .results import ProviderHealth as ProviderHealth
from .results import ProviderInfo as ProviderInfo
from .results import ProviderList as ProviderList
from .results import RequestCreated as RequestCreated
from .results import RequestList as RequestList
from .results import RequestStatusList as RequestStatusList
from .results import RequestSummary as RequestSummary
from .results import Result as Result
from .results import ReturnRequestCreated as ReturnRequestCreated
from .results import SystemStatus as SystemStatus
from .results import TemplateList as TemplateList
from .results import TemplateRefresh as TemplateRefresh
from .results import TemplateResult as TemplateResult
from .results import TemplateValidation as TemplateValidation
from .results import TemplateWritten as TemplateWritten

__all__ = [
    "MACHINE_TRANSITIONS",
    "REQUEST_TRANSITIONS",
    "ActiveMachineCount",
    "BaseModel",
    "CleanupResult",
    "ConfigurationView",
    "Machine",
    "MachineHealth",
    "MachineList",
    "MachineResult",
    "MachineStatus",
    "Metrics",
    "ProviderHealth",
    "ProviderInfo",
    "ProviderList",
    "Request",
    "RequestCreated",
    "RequestList",
    "RequestStatus",
    "RequestStatusList",
    "RequestSummary",
    "RequestType",
    "Result",
    "ReturnRequestCreated",
    "SkippedMachine",
    "SystemStatus",
    "Template",
    "TemplateList",
    "TemplateRefresh",
    "TemplateResult",
    "TemplateValidation",
    "TemplateWritten",
    "can_transition",
    "utcnow",
]
