"""Every catalog operation that names an object of a permission object type says in its own `Policy` how tier 2
decides on it: an operation on an existing object (`stored`, decided on the stored object), a rule of its own
(`rule`), or a create (POST, decided on the input). The catalog refuses, when it compiles the class, an
operation that is none of these, instead of silently skipping the stored-object check."""

from __future__ import annotations

from typing import Any

import pytest

from backends.local.auth.objects import KINDS
from pluginsdk.errors import HandlerDiscoveryError
from pluginsdk.models import Template
from pluginsdk.models.auth_vocabulary import OBJECT_TYPES
from pluginsdk.operations import CATALOG, STORED_RULES, OperationSpec, Policy, Query, Rest


def test_every_operation_naming_an_object_is_classified() -> None:
    unclassified = [
        name
        for name, spec in sorted(CATALOG.items())
        if spec.policy.object_type
        and spec.policy.fields
        and spec.policy.stored is None
        and spec.policy.rule is None
        and spec.method != "POST"
    ]
    assert unclassified == []


def test_plans_name_real_fields_and_known_kinds() -> None:
    for name, spec in CATALOG.items():
        policy = spec.policy
        if policy.stored is not None:
            assert policy.object_type in KINDS and KINDS[policy.object_type].object_type == policy.object_type, name
            assert policy.stored in spec.input_fields, name
            assert policy.object_type in OBJECT_TYPES, name
        assert policy.rule is None or policy.rule in STORED_RULES, name


def _compile(bound: Policy, route: Rest | None = None) -> Any:
    class Probe(Query[Template]):  # not named ...Query: compiled here, never registered in the catalog
        """Probe."""

        policy = bound
        rest = route

        item_id: str

    return OperationSpec.compile(Probe)


@pytest.mark.parametrize(
    "policy",
    [
        Policy(object_type="template", fields={"templateId": "item_id"}),  # a read of an object, undeclared
        Policy(object_type="template", fields={"templateId": "item_id"}, stored="nope"),
        Policy(object_type="template", stored="item_id", changes={"providerApi": "nope"}),
        Policy(object_type="template", rule="unknown"),
        Policy(stored="item_id"),
        Policy(object_type="template", stored_unless="item_id"),
    ],
)
def test_a_policy_binding_that_does_not_say_how_tier_2_decides_is_refused_at_compile(policy: Policy) -> None:
    with pytest.raises(HandlerDiscoveryError):
        _compile(policy)


def test_listing_b_names_a_path_of_the_route() -> None:
    with pytest.raises(HandlerDiscoveryError):
        _compile(Policy(), Rest("GET", "/probe", listing_b=("/other",)))
    assert _compile(Policy(), Rest("GET", "/probe", listing_b=("/probe",))).rest.listing_b == ("/probe",)
