"""Data objects shared by every interface and backend.

The submodules load on first use (PEP 562), each found by the name asked for: a CLI call that needs only
the template models does not pay for building the request, system or auth result classes.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._base import BaseModel as BaseModel
    from ._base import utcnow as utcnow
    from .auth import Constraint as Constraint
    from .auth import Criterion as Criterion
    from .auth import CriterionInput as CriterionInput
    from .auth import GroupPermission as GroupPermission
    from .auth import GroupPermissionInput as GroupPermissionInput
    from .auth import UserPermission as UserPermission
    from .auth import UserPermissionInput as UserPermissionInput
    from .auth import validate_constraint as validate_constraint
    from .auth_results import AllowedApiRoute as AllowedApiRoute
    from .auth_results import AllowedApiRoutes as AllowedApiRoutes
    from .auth_results import AllowedWebRoute as AllowedWebRoute
    from .auth_results import AmplifyConfig as AmplifyConfig
    from .auth_results import ApiKey as ApiKey
    from .auth_results import ApiKeyCreated as ApiKeyCreated
    from .auth_results import ApiKeyList as ApiKeyList
    from .auth_results import ApiKeyResult as ApiKeyResult
    from .auth_results import ApiRoute as ApiRoute
    from .auth_results import ApiRouteList as ApiRouteList
    from .auth_results import AuthorizationDecision as AuthorizationDecision
    from .auth_results import ConstraintImported as ConstraintImported
    from .auth_results import ConstraintItems as ConstraintItems
    from .auth_results import ConstraintList as ConstraintList
    from .auth_results import ConstraintWritten as ConstraintWritten
    from .auth_results import FilteredObjects as FilteredObjects
    from .auth_results import Jwks as Jwks
    from .auth_results import LabelValue as LabelValue
    from .auth_results import LoginProfile as LoginProfile
    from .auth_results import ManagedUser as ManagedUser
    from .auth_results import ManagedUserList as ManagedUserList
    from .auth_results import ManagedUserWritten as ManagedUserWritten
    from .auth_results import MfaSetup as MfaSetup
    from .auth_results import ObjectTypeInfo as ObjectTypeInfo
    from .auth_results import PermissionObjects as PermissionObjects
    from .auth_results import PermissionObjectsBody as PermissionObjectsBody
    from .auth_results import Role as Role
    from .auth_results import RoleItems as RoleItems
    from .auth_results import RoleList as RoleList
    from .auth_results import RoleWritten as RoleWritten
    from .auth_results import SecureConfig as SecureConfig
    from .auth_results import SessionTokens as SessionTokens
    from .auth_results import UserRoleAssignment as UserRoleAssignment
    from .auth_results import UserRoleItems as UserRoleItems
    from .auth_results import UserRoleList as UserRoleList
    from .auth_results import UserRolesWritten as UserRolesWritten
    from .auth_results import VersionInfo as VersionInfo
    from .auth_results import WebRoute as WebRoute
    from .auth_results import WebRoutesAllowed as WebRoutesAllowed
    from .auth_vocabulary import OBJECT_TYPES as OBJECT_TYPES
    from .auth_vocabulary import OPERATORS as OPERATORS
    from .auth_vocabulary import PERMISSION_TYPES as PERMISSION_TYPES
    from .auth_vocabulary import PERMISSIONS as PERMISSIONS
    from .machine_results import ActiveMachineCount as ActiveMachineCount
    from .machine_results import MachineHealth as MachineHealth
    from .machine_results import MachineList as MachineList
    from .machine_results import MachineResult as MachineResult
    from .policy_results import AccessQuestion as AccessQuestion
    from .policy_results import AuditPage as AuditPage
    from .policy_results import AuditRecord as AuditRecord
    from .policy_results import DecisionChange as DecisionChange
    from .policy_results import Explanation as Explanation
    from .policy_results import PolicyTest as PolicyTest
    from .policy_results import PolicyTestOutcome as PolicyTestOutcome
    from .policy_results import PolicyTestReport as PolicyTestReport
    from .policy_results import Reason as Reason
    from .policy_results import SubjectDecision as SubjectDecision
    from .policy_results import SubjectDecisions as SubjectDecisions
    from .policy_results import SubjectRoutes as SubjectRoutes
    from .policy_results import WhatIfReport as WhatIfReport
    from .policy_results import WhoCan as WhoCan
    from .provisioning import Machine as Machine
    from .provisioning import Request as Request
    from .provisioning import SkippedMachine as SkippedMachine
    from .request_results import CleanupResult as CleanupResult
    from .request_results import RequestCreated as RequestCreated
    from .request_results import RequestList as RequestList
    from .request_results import RequestStatusList as RequestStatusList
    from .request_results import RequestSummary as RequestSummary
    from .request_results import ReturnRequestCreated as ReturnRequestCreated
    from .results import Result as Result
    from .statuses import MACHINE_TRANSITIONS as MACHINE_TRANSITIONS
    from .statuses import REQUEST_TRANSITIONS as REQUEST_TRANSITIONS
    from .statuses import MachineStatus as MachineStatus
    from .statuses import RequestStatus as RequestStatus
    from .statuses import RequestType as RequestType
    from .statuses import can_transition as can_transition
    from .system_results import ConfigurationView as ConfigurationView
    from .system_results import Metrics as Metrics
    from .system_results import ProviderHealth as ProviderHealth
    from .system_results import ProviderInfo as ProviderInfo
    from .system_results import ProviderList as ProviderList
    from .system_results import SystemStatus as SystemStatus
    from .template_results import TemplateList as TemplateList
    from .template_results import TemplateRefresh as TemplateRefresh
    from .template_results import TemplateResult as TemplateResult
    from .template_results import TemplateValidation as TemplateValidation
    from .template_results import TemplateWritten as TemplateWritten
    from .templates import Template as Template

_EXPORTS: dict[str, tuple[str, ...]] = {
    "_base": (
        "BaseModel",
        "utcnow",
    ),
    "templates": ("Template",),
    "statuses": (
        "MACHINE_TRANSITIONS",
        "MachineStatus",
        "REQUEST_TRANSITIONS",
        "RequestStatus",
        "RequestType",
        "can_transition",
    ),
    "provisioning": ("Machine", "Request", "SkippedMachine"),
    "results": ("Result",),
    "template_results": (
        "TemplateList",
        "TemplateRefresh",
        "TemplateResult",
        "TemplateValidation",
        "TemplateWritten",
    ),
    "request_results": (
        "CleanupResult",
        "RequestCreated",
        "RequestList",
        "RequestStatusList",
        "RequestSummary",
        "ReturnRequestCreated",
    ),
    "machine_results": (
        "ActiveMachineCount",
        "MachineHealth",
        "MachineList",
        "MachineResult",
    ),
    "system_results": (
        "ConfigurationView",
        "Metrics",
        "ProviderHealth",
        "ProviderInfo",
        "ProviderList",
        "SystemStatus",
    ),
    "policy_results": (
        "AccessQuestion",
        "AuditPage",
        "AuditRecord",
        "DecisionChange",
        "Explanation",
        "PolicyTest",
        "PolicyTestOutcome",
        "PolicyTestReport",
        "Reason",
        "SubjectDecision",
        "SubjectDecisions",
        "SubjectRoutes",
        "WhatIfReport",
        "WhoCan",
    ),
    "auth_vocabulary": ("OBJECT_TYPES", "OPERATORS", "PERMISSIONS", "PERMISSION_TYPES"),
    "auth": (
        "Constraint",
        "Criterion",
        "CriterionInput",
        "GroupPermission",
        "GroupPermissionInput",
        "UserPermission",
        "UserPermissionInput",
        "validate_constraint",
    ),
    "auth_results": (
        "AllowedApiRoute",
        "AllowedApiRoutes",
        "AllowedWebRoute",
        "AmplifyConfig",
        "ApiKey",
        "ApiKeyCreated",
        "ApiKeyList",
        "ApiKeyResult",
        "ApiRoute",
        "ApiRouteList",
        "AuthorizationDecision",
        "ConstraintImported",
        "ConstraintItems",
        "ConstraintList",
        "ConstraintWritten",
        "FilteredObjects",
        "Jwks",
        "LabelValue",
        "LoginProfile",
        "ManagedUser",
        "ManagedUserList",
        "ManagedUserWritten",
        "MfaSetup",
        "ObjectTypeInfo",
        "PermissionObjects",
        "PermissionObjectsBody",
        "Role",
        "RoleItems",
        "RoleList",
        "RoleWritten",
        "SecureConfig",
        "SessionTokens",
        "UserRoleAssignment",
        "UserRoleItems",
        "UserRoleList",
        "UserRolesWritten",
        "VersionInfo",
        "WebRoute",
        "WebRoutesAllowed",
    ),
}
"""Submodule -> the names it exports."""

_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = list(_MODULE_OF)


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
