"""The words constraints are written in: object types and their criterion fields, operators, permissions.

Plain constants, apart from the constraint models, so the engine's authorizer and default roles can
read them without building those models' classes on every CLI call.
"""

__all__ = ["OBJECT_TYPES", "OPERATORS", "PERMISSIONS", "PERMISSION_TYPES"]

OBJECT_TYPES: dict[str, tuple[str, ...]] = {
    "database": ("databaseId",),
    "asset": ("databaseId", "assetName", "assetType", "tags"),
    "pipeline": ("databaseId", "pipelineId", "pipelineType", "pipelineExecutionType"),
    "workflow": ("databaseId", "workflowId"),
    "metadataSchema": ("databaseId", "metadataSchemaName", "metadataSchemaEntityType"),
    "tag": ("tagName",),
    "tagType": ("tagTypeName",),
    "role": ("roleName",),
    "userRole": ("roleName", "userId"),
    "api": ("route__path",),
    "web": ("route__path",),
    "template": ("templateId", "providerApi"),
    "request": ("requestId", "templateId", "userId"),
    "machine": ("machineId", "templateId", "requestId"),
}
"""objectType -> the criterion fields valid for it (decisions.md, permissionObjects)."""

OPERATORS: tuple[str, ...] = (
    "equals",
    "contains",
    "does_not_contain",
    "starts_with",
    "ends_with",
    "is_one_of",
    "is_not_one_of",
)
"""Criterion operators; the two `*_one_of` take a comma-separated list of patterns."""

PERMISSIONS: tuple[str, ...] = ("GET", "PUT", "POST", "DELETE")
PERMISSION_TYPES: tuple[str, ...] = ("allow", "deny")
