"""Query plans: the rules a decision tests, stated as one condition tree (`pluginsdk.models.AccessPlan`).

A subject's decision on an object is "some allow rule matches and no deny rule does", each rule "every
criteriaAnd entry holds and, when criteriaOr is given, one of its entries does". The plan is that sentence
over the very rules `CompiledPolicy` tests for the subject (`plan_of`: MFA roles, the default role and user
permissions already applied, unknown fields and operators already dropped), so it agrees with the decision
by construction. Constant parts fold away: a `*_one_of` whose list names no pattern holds never (positive)
or always (negated), and `and`/`or`/`not` of constants simplify, so a subject without allow rules gets `never`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal, TypeAlias

from pluginsdk.models.plans import AccessPlan, PlanCondition
from pluginsdk.principal import Principal

from .evaluator import CompiledPolicy, Rule
from .matching import NEGATED_OPERATORS, operator_patterns

__all__ = ["plan_access", "plan_condition"]

_Node: TypeAlias = "PlanCondition | bool"


def _leaf(field: str, value: str, operator: str) -> _Node:
    if not operator_patterns(operator, value):  # a list naming no pattern: no value matches it
        return operator in NEGATED_OPERATORS
    return PlanCondition.model_construct(op="match", operands=(), field=field, operator=operator, value=value)


def _join(op: Literal["and", "or"], nodes: Iterable[_Node]) -> _Node:
    """`and`/`or` of the nodes, constants folded and nested nodes of the same kind flattened."""
    unit = op == "and"  # the constant that changes nothing (True for and, False for or)
    kept: list[PlanCondition] = []
    for n in nodes:
        if n is unit:
            continue
        if n is (not unit):
            return not unit
        assert isinstance(n, PlanCondition)
        if n.op == op:
            kept += n.operands
        else:
            kept.append(n)
    if not kept:
        return unit
    return kept[0] if len(kept) == 1 else PlanCondition.model_construct(op=op, operands=tuple(kept))


def _not(node: _Node) -> _Node:
    if isinstance(node, bool):
        return not node
    if node.op == "not":
        return node.operands[0]
    return PlanCondition.model_construct(op="not", operands=(node,))


def _rule(rule: Rule) -> _Node:
    all_of, any_of = rule.terms
    parts = [_leaf(*t) for t in all_of]
    if any_of:
        parts.append(_join("or", (_leaf(*t) for t in any_of)))
    return _join("and", parts)


def plan_condition(allow: Sequence[Rule], deny: Sequence[Rule]) -> _Node:
    """Some allow rule holds and no deny rule does, folded: True (always), False (never) or a condition."""
    allowed = _join("or", (_rule(r) for r in allow))
    if allowed is False or not deny:
        return allowed
    return _join("and", (allowed, _not(_join("or", (_rule(r) for r in deny)))))


def plan_access(
    policy: CompiledPolicy, principal: Principal, object_type: str, method: str, revision: int
) -> AccessPlan:
    """The plan of `principal` (roles resolved) using `method` on objects of `object_type`."""
    node = policy.plan_of(principal, object_type, method.upper(), plan_condition)
    return AccessPlan(
        object_type=object_type,
        method=method.upper(),
        user_id=principal.user_id or None,
        mfa=principal.mfa,
        kind="always" if node is True else "never" if node is False else "conditional",
        condition=None if isinstance(node, bool) else node,
        revision=revision,
    )
