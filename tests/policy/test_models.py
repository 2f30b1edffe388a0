"""Constraint models: wire aliases, and the write-time rules of validate_constraint."""

from __future__ import annotations

from typing import Any

import pytest

from pluginsdk.errors import ValidationError
from pluginsdk.models import OBJECT_TYPES, OPERATORS, Constraint, validate_constraint


def body(**changes: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "constraintId": "c1",
        "name": "readers",
        "description": "Readers may read db1.",
        "objectType": "database",
        "criteriaAnd": [{"field": "databaseId", "operator": "equals", "value": "db1"}],
        "groupPermissions": [{"groupId": "reader", "permission": "GET", "permissionType": "allow"}],
    }
    out.update(changes)
    return out


def test_wire_aliases_round_trip() -> None:
    c = validate_constraint(
        body(userPermissions=[{"userId": "alice", "permission": "PUT", "permissionType": "deny"}], criteriaOr=[])
    )
    wire = c.to_dict(by_alias=True)
    assert set(wire) == {
        "constraintId",
        "name",
        "description",
        "objectType",
        "criteriaAnd",
        "criteriaOr",
        "groupPermissions",
        "userPermissions",
    }
    assert wire["groupPermissions"] == [{"groupId": "reader", "permission": "GET", "permissionType": "allow"}]
    assert wire["userPermissions"] == [{"userId": "alice", "permission": "PUT", "permissionType": "deny"}]
    assert Constraint.model_validate(wire) == c
    assert Constraint.model_validate(c.to_dict()) == c  # snake_case in works too


def test_description_is_trimmed_and_interior_whitespace_kept() -> None:
    c = validate_constraint(body(description="   two  words \n"))
    assert c.description == "two  words"


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"objectType": "spaceship"}, "objectType"),
        ({"criteriaAnd": [{"field": "assetName", "operator": "equals", "value": "x"}]}, "criteriaAnd[0].field"),
        (
            {"criteriaOr": [{"field": "databaseId", "operator": "matches", "value": "x"}], "criteriaAnd": []},
            "criteriaOr[0].operator",
        ),
        ({"criteriaAnd": [{"field": "databaseId", "operator": "equals", "value": ""}]}, "criteriaAnd[0].value"),
        ({"criteriaAnd": [{"field": "databaseId", "operator": "is_one_of", "value": " , "}]}, "criteriaAnd[0].value"),
        ({"criteriaAnd": [], "criteriaOr": []}, "criteriaAnd"),
        ({"description": "  ab  "}, "description"),
        ({"description": "x" * 257}, "description"),
        ({"name": "   "}, "name"),
        ({"groupPermissions": []}, "groupPermissions"),
        (
            {"groupPermissions": [{"groupId": "r", "permission": "PATCH", "permissionType": "allow"}]},
            "groupPermissions[0].permission",
        ),
        (
            {"groupPermissions": [{"groupId": "r", "permission": "GET", "permissionType": "maybe"}]},
            "groupPermissions[0].permissionType",
        ),
        (
            {"groupPermissions": [{"groupId": "bad/role", "permission": "GET", "permissionType": "allow"}]},
            "groupPermissions[0].groupId",
        ),
        (
            {"userPermissions": [{"userId": "x", "permission": "GET", "permissionType": "allow"}]},
            "userPermissions[0].userId",
        ),
    ],
)
def test_invalid_constraints_are_rejected_with_details(changes: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as info:
        validate_constraint(body(**changes))
    assert info.value.details["field"] == field
    assert "expected" in info.value.details
    assert info.value.http_status == 400


def test_shape_errors_become_validation_errors() -> None:
    with pytest.raises(ValidationError):
        validate_constraint({"name": "n"})


def test_every_object_type_field_is_accepted() -> None:
    for object_type, fields in OBJECT_TYPES.items():
        for field in fields:
            for operator in OPERATORS:
                validate_constraint(
                    body(objectType=object_type, criteriaAnd=[{"field": field, "operator": operator, "value": "v*"}])
                )
