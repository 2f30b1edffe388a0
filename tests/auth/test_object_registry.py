"""Every catalog operation that names an object of a permission object type is classified: an operation on
an existing object (decided on the stored object), a special rule, or a create. A new operation that is
none of these fails here instead of silently skipping the stored-object check."""

from __future__ import annotations

from backends.local.auth.objects import KINDS, OBJECT_OPERATIONS, SPECIAL_OPERATIONS
from pluginsdk.models.auth_vocabulary import OBJECT_TYPES
from pluginsdk.operations import CATALOG

CREATES = {"create_role", "create_template", "create_user_roles"}
"""New objects: decided on the attributes the input gives (the handlers answer 409 for a taken id)."""


def test_every_operation_naming_an_object_is_classified() -> None:
    unclassified = [
        name
        for name, spec in sorted(CATALOG.items())
        if spec.policy.object_type
        and spec.policy.fields
        and name not in OBJECT_OPERATIONS
        and name not in SPECIAL_OPERATIONS
        and name not in CREATES
    ]
    assert unclassified == []


def test_plans_name_real_fields_and_known_kinds() -> None:
    for name, plan in OBJECT_OPERATIONS.items():
        spec = CATALOG[name]
        assert plan.kind in KINDS and KINDS[plan.kind].object_type == spec.policy.object_type, name
        assert plan.field in spec.input_fields, name
        assert spec.policy.object_type in OBJECT_TYPES, name
    assert all(name in CATALOG for name in SPECIAL_OPERATIONS | CREATES)
