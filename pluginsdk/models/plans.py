"""A query plan: which objects of a type a subject may use a method on, as a condition a database can run.

`plan_access` answers `always`, `never`, or `conditional` with a condition tree over the object type's criterion
fields; `pluginsdk.plans` renders the tree as SQL, a SQLAlchemy expression or a Python predicate.
"""

from typing import Literal

from pydantic import ConfigDict

from ._base import BaseModel

__all__ = ["AccessPlan", "PlanCondition"]


class PlanCondition(BaseModel):
    """One node of a plan's condition tree.

    `op` is `and` / `or` of `operands`, `not` of its one operand, or `match`: a criterion in the constraint
    language's own terms (`field`, `operator`, `value`: literal text in which `*` matches any run of characters;
    a list attribute matches when an element does, an absent one has no values). Immutable: the engine keeps one
    tree per subject and policy version and hands the same one to every caller.
    """

    model_config = ConfigDict(frozen=True)

    op: Literal["and", "or", "not", "match"]
    operands: tuple["PlanCondition", ...] = ()
    field: str | None = None
    operator: str | None = None
    value: str | None = None


class AccessPlan(BaseModel):
    """Which objects of `object_type` the subject may use `method` on: `always` (every object), `never` (none), or
    `conditional` (exactly those `condition` holds for) — the decision `check_access` gives, object by object."""

    object_type: str
    method: str
    user_id: str | None = None
    mfa: bool = False
    kind: Literal["always", "never", "conditional"]
    condition: PlanCondition | None = None
    """The condition (only when `kind` is conditional)."""
    revision: int
