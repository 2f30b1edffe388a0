"""Value matching for constraint criteria, compiled once per pattern.

A criterion value is literal text in which `*` matches any run of characters (also none). Every
other character, regex metacharacters included, is literal and matching is case-sensitive. Nothing
here builds a regex or code from the value: a pattern is split on `*` into literal segments and
matched with `==`, `startswith`, `endswith`, `in` and `str.find`, so `db.1` never matches `dbX1`
and a quote or comma in a value is just a character.

Every operator reduces to "some pattern matches the whole string", possibly negated:
`contains p` is `*p*`, `starts_with p` is `p*`, `ends_with p` is `*p`, `is_one_of a,b` is the
patterns `a` and `b`; `does_not_contain` and `is_not_one_of` are the negations. A list-valued
field (`tags`) matches when any element matches; a negated criterion holds when none does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any, Final

from pluginsdk.plans import values_of

__all__ = [
    "NEGATED_OPERATORS",
    "CriterionTest",
    "Pattern",
    "compile_criterion",
    "compile_pattern",
    "operator_patterns",
    "split_one_of",
    "values_of",
]

CriterionTest = Callable[[Mapping[str, Any]], bool]
"""A compiled criterion: does it hold for these object attributes?"""

NEGATED_OPERATORS: Final = frozenset({"does_not_contain", "is_not_one_of"})

# Pattern kinds, cheapest test first.
ANY: Final = 0  # "*"
EXACT: Final = 1  # "abc"
PREFIX: Final = 2  # "abc*"
SUFFIX: Final = 3  # "*abc"
CONTAINS: Final = 4  # "*abc*"
PREFIX_SUFFIX: Final = 5  # "ab*c"
GENERAL: Final = 6  # anything with more stars


class Pattern:
    """A `*` pattern split into its literal segments, with the test picked for its shape."""

    __slots__ = ("head", "kind", "middle", "min_len", "tail", "text")

    def __init__(self, text: str) -> None:
        while "**" in text:
            text = text.replace("**", "*")
        self.text = text
        parts = text.split("*")
        self.head = parts[0]
        """Literal text the value must start with ('' when the pattern starts with `*`)."""
        self.tail = parts[-1] if len(parts) > 1 else ""
        self.middle: tuple[str, ...] = tuple(parts[1:-1])
        self.min_len = sum(len(p) for p in parts)
        if len(parts) == 1:
            self.kind = EXACT
        elif text == "*":
            self.kind = ANY
        elif len(parts) == 2:
            self.kind = PREFIX if not self.tail else SUFFIX if not self.head else PREFIX_SUFFIX
        elif len(parts) == 3 and not self.head and not self.tail:
            self.kind = CONTAINS
        else:
            self.kind = GENERAL

    def matches(self, value: str) -> bool:
        """Does the whole of `value` match this pattern?"""
        kind = self.kind
        if kind == EXACT:
            return value == self.head
        if kind == ANY:
            return True
        if kind == PREFIX:
            return value.startswith(self.head)
        if kind == SUFFIX:
            return value.endswith(self.tail)
        if kind == CONTAINS:
            return self.middle[0] in value
        if len(value) < self.min_len or not value.startswith(self.head) or not value.endswith(self.tail):
            return False
        # Leftmost-first placement of each middle segment is optimal for `*` (any run) between them.
        pos, end = len(self.head), len(value) - len(self.tail)
        for seg in self.middle:
            i = value.find(seg, pos, end)
            if i < 0:
                return False
            pos = i + len(seg)
        return True

    def __repr__(self) -> str:
        return f"Pattern({self.text!r})"


@lru_cache(maxsize=65536)
def compile_pattern(text: str) -> Pattern:
    """The compiled pattern for `text` (shared: constraints repeat the same values a lot)."""
    return Pattern(text)


def split_one_of(value: str) -> list[str]:
    """The patterns of an `is_one_of`/`is_not_one_of` value: split on commas, trimmed, empties dropped."""
    return [item.strip() for item in value.split(",") if item.strip()]


def operator_patterns(operator: str, value: str) -> tuple[Pattern, ...] | None:
    """The whole-string patterns an operator/value pair stands for; None for an unknown operator."""
    if operator in ("equals", "does_not_contain", "contains", "starts_with", "ends_with"):
        if operator == "equals":
            text = value
        elif operator == "starts_with":
            text = value + "*"
        elif operator == "ends_with":
            text = "*" + value
        else:
            text = "*" + value + "*"
        return (compile_pattern(text),)
    if operator in ("is_one_of", "is_not_one_of"):
        return tuple(compile_pattern(item) for item in split_one_of(value))
    return None


def compile_criterion(field: str, patterns: tuple[Pattern, ...], negate: bool) -> CriterionTest:
    """A closure testing one criterion, specialised for the common single-pattern string case.

    The fast branches handle a plain `str` attribute; lists, other scalars and absent attributes
    go through `values_of` so every path gives the same answer.
    """

    def slow(raw: Any) -> bool:
        hit = any(p.matches(v) for v in values_of(raw) for p in patterns)
        return hit is not negate

    if len(patterns) == 1 and not negate:
        p = patterns[0]
        kind, head, tail = p.kind, p.head, p.tail
        if kind == EXACT:

            def exact(attrs: Mapping[str, Any]) -> bool:
                v = attrs.get(field)
                return v == head if type(v) is str else slow(v)

            return exact
        if kind == PREFIX:

            def prefix(attrs: Mapping[str, Any]) -> bool:
                v = attrs.get(field)
                return v.startswith(head) if type(v) is str else slow(v)

            return prefix
        if kind == ANY:

            def anything(attrs: Mapping[str, Any]) -> bool:
                v = attrs.get(field)
                return True if type(v) is str else slow(v)

            return anything
        if kind == SUFFIX:

            def suffix(attrs: Mapping[str, Any]) -> bool:
                v = attrs.get(field)
                return v.endswith(tail) if type(v) is str else slow(v)

            return suffix
        if kind == CONTAINS:
            needle = p.middle[0]

            def contains(attrs: Mapping[str, Any]) -> bool:
                v = attrs.get(field)
                return (needle in v) if type(v) is str else slow(v)

            return contains
        match = p.matches

        def single(attrs: Mapping[str, Any]) -> bool:
            v = attrs.get(field)
            return match(v) if type(v) is str else slow(v)

        return single

    def general(attrs: Mapping[str, Any]) -> bool:
        return slow(attrs.get(field))

    return general
