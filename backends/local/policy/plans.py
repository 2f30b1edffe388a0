"""Query plans: the rules a decision tests, stated as one condition tree (`pluginsdk.models.AccessPlan`).

A subject's decision on an object is "some allow rule matches and no deny rule does", each rule "every
criteriaAnd entry holds and, when criteriaOr is given, one of its entries does". The plan is that sentence
over the very rules `CompiledPolicy` tests for the subject (`plan_of`: the grants of its roles and its user
permissions, MFA roles and the default role applied, unknown fields and operators already dropped), so it agrees
with the decision by construction. Constant parts fold away: a `*_one_of` whose list names no pattern holds
never (positive) or always (negated), and `and`/`or`/`not` of constants simplify, so a subject without allow
rules gets `never`.

Speed: each role's grants are stated once per policy version (`_sides`, kept on the `Grants`) and a subject's
plan merges its few grants. The rules of one positive criterion join per field in one `is_one_of` leaf (each
pattern once), since "some of these rules holds" is "the field matches one of their patterns"; a pattern that a
comma list would split or trim (a comma, edge spaces) keeps a leaf of its own. So a subject holding 10,000
`equals` constraints gets a tree of a few leaves, in well under a millisecond.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal, TypeAlias, cast

from pluginsdk.models.plans import AccessPlan, PlanCondition
from pluginsdk.principal import Principal

from .evaluator import CompiledPolicy, Grants, Rule, gc_paused
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


def _clean(text: str) -> bool:
    """Whether a pattern keeps its meaning as an item of an `is_one_of` list (which is split on commas, trimmed)."""
    return "," not in text and text == text.strip() and text != ""


_Form: TypeAlias = "tuple[str, tuple[str, ...], tuple[str, str]] | _Node"
"""A rule as a plan states it: (field, pattern texts, (operator, value)) for one positive criterion whose patterns
can join other rules' in one `is_one_of` leaf, else its condition."""


def _form(rule: Rule) -> _Form:
    if rule.plan is None:
        all_of, any_of = rule.terms
        form: _Form | None = None
        if len(all_of) + len(any_of) == 1:
            field, value, operator = (all_of or any_of)[0]
            texts = tuple([p.text for p in operator_patterns(operator, value) or ()])
            if operator not in NEGATED_OPERATORS and texts and all(map(_clean, texts)):
                form = (field, texts, (operator, value))
        rule.plan = (_rule(rule) if form is None else form,)
    return cast("_Form", rule.plan[0])


_Group: TypeAlias = "tuple[dict[str, None], tuple[str, str] | None]"
"""One field's pattern texts, in order, and the one criterion (operator, value) they all come from, if one."""
_Side: TypeAlias = "tuple[dict[str, _Group], dict[int, _Node]]"
"""The allow (or deny) rules of some grants as a plan states them: each field's group of one-criterion rules, and
every other rule's condition by rule."""


def _side(grants: Grants, deny: bool) -> _Side:
    groups: dict[str, _Group] = {}
    others: dict[int, _Node] = {}
    for rule, is_deny in grants:
        if is_deny is not deny:
            continue
        form = _form(rule)
        if isinstance(form, tuple):
            field, patterns, leaf = form
            texts, single = groups.get(field, (None, leaf))
            if texts is None:
                texts = {}
            texts.update(dict.fromkeys(patterns))
            groups[field] = (texts, single if single == leaf else None)
        else:
            others[rule.index] = form
    return groups, others


def _sides(grants: Grants) -> tuple[_Side, _Side]:
    """(allow, deny) of one role's or user's grants, stated once and shared by every subject holding them."""
    if grants.plan is None:
        with gc_paused():  # many small long-lived objects, nothing to collect (as when the policy is compiled)
            grants.plan = (_side(grants, False), _side(grants, True))
    return cast("tuple[_Side, _Side]", grants.plan)


def _any(sides: Iterable[_Side]) -> _Node:
    """Some rule of these sides holds: one leaf per field for the one-criterion rules (`is_one_of` of their
    patterns, equal patterns once; the criterion itself when one rule gives them all), `or` the other rules."""
    groups: dict[str, _Group] = {}
    others: dict[int, _Node] = {}
    for by_field, rest in sides:
        for field, (texts, single) in by_field.items():
            mine = groups.get(field)
            if mine is None:
                groups[field] = (texts, single)  # the grants' own dict: merged into a copy, never changed
            else:
                groups[field] = ({**mine[0], **texts}, single if single == mine[1] else None)
        others.update(rest)
    leaves: list[_Node] = []
    for field, (texts, single) in groups.items():
        if single is not None:
            leaves.append(_leaf(field, single[1], single[0]))
        else:  # patterns known to be clean and many: no need to split them again
            leaves.append(
                PlanCondition.model_construct(
                    op="match", operands=(), field=field, operator="is_one_of", value=",".join(texts)
                )
            )
    return _join("or", (*leaves, *others.values()))


def plan_condition(grants: Sequence[Grants]) -> _Node:
    """Some allow rule of the grants holds and no deny rule does, folded: True (always), False (never) or a
    condition."""
    sides = [_sides(g) for g in grants]
    allowed = _any(s[0] for s in sides)
    if allowed is False or not any(s[1][0] or s[1][1] for s in sides):
        return allowed
    return _join("and", (allowed, _not(_any(s[1] for s in sides))))


def plan_access(
    policy: CompiledPolicy, principal: Principal, object_type: str, method: str, revision: int
) -> AccessPlan:
    """The plan of `principal` (roles resolved) using `method` on objects of `object_type`. Constructed, not
    validated, like its condition's nodes: every value is made here, of its field's type, and a listing that
    only filters by the plan never builds the model's validator."""
    node = policy.plan_of(principal, object_type, method.upper(), plan_condition)
    return AccessPlan.model_construct(
        object_type=object_type,
        method=method.upper(),
        user_id=principal.user_id or None,
        mfa=principal.mfa,
        kind="always" if node is True else "never" if node is False else "conditional",
        condition=None if isinstance(node, bool) else node,
        revision=revision,
    )
