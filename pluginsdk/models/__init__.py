"""Data objects shared by every interface and backend.

The submodules load on first use (PEP 562): a CLI call that needs only the provisioning models does not
pay for building the auth-service result models' classes.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._base import BaseModel as BaseModel
    from ._base import utcnow as utcnow
    from .auth import OBJECT_TYPES as OBJECT_TYPES
    from .auth import OPERATORS as OPERATORS
    from .auth import PERMISSION_TYPES as PERMISSION_TYPES
    from .auth import PERMISSIONS as PERMISSIONS
    from .auth import Constraint as Constraint
    from .auth import Criterion as Criterion
    from .auth import GroupPermission as GroupPermission
    from .auth import UserPermission as UserPermission
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

_SUBMODULES = ("_base", "provisioning", "results", "auth", "auth_results")
"""Searched in this order for a name; each is imported only when a name is asked for."""

__all__ = [
    "MACHINE_TRANSITIONS",
    "REQUEST_TRANSITIONS",
    "ActiveMachineCount",
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
    "BaseModel",
    "CleanupResult",
    "ConfigurationView",
    "ConstraintImported",
    "ConstraintItems",
    "ConstraintList",
    "ConstraintWritten",
    "FilteredObjects",
    "Jwks",
    "LabelValue",
    "LoginProfile",
    "Machine",
    "MachineHealth",
    "MachineList",
    "MachineResult",
    "MachineStatus",
    "ManagedUser",
    "ManagedUserList",
    "ManagedUserWritten",
    "Metrics",
    "MfaSetup",
    "ObjectTypeInfo",
    "PermissionObjects",
    "PermissionObjectsBody",
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
    "Role",
    "RoleItems",
    "RoleList",
    "RoleWritten",
    "SecureConfig",
    "SessionTokens",
    "SkippedMachine",
    "SystemStatus",
    "Template",
    "TemplateList",
    "TemplateRefresh",
    "TemplateResult",
    "TemplateValidation",
    "TemplateWritten",
    "UserRoleAssignment",
    "UserRoleItems",
    "UserRoleList",
    "UserRolesWritten",
    "VersionInfo",
    "WebRoute",
    "WebRoutesAllowed",
    "can_transition",
    "utcnow",
]

__all__ += [
    "OBJECT_TYPES",
    "OPERATORS",
    "PERMISSIONS",
    "PERMISSION_TYPES",
    "Constraint",
    "Criterion",
    "GroupPermission",
    "UserPermission",
    "validate_constraint",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        for sub in _SUBMODULES:
            module = import_module(f".{sub}", __name__)
            if name in getattr(module, "__all__", ()):
                value = getattr(module, name)
                globals()[name] = value
                return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
