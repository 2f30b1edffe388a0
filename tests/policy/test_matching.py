"""Wildcard patterns: `*` is the only special character; everything else is literal and case-sensitive."""

from __future__ import annotations

import pytest

from backends.local.policy import compile_pattern
from backends.local.policy.matching import operator_patterns, split_one_of
from tests.support.reference_policy import wildcard_match


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        ("db1", "db1", True),
        ("db1", "db10", False),
        ("db1", "DB1", False),
        ("db.1", "db.1", True),
        ("db.1", "dbX1", False),
        (".*", "anything", False),
        (".*", ".xyz", True),
        ("[", "[", True),
        ("[a-z]", "b", False),
        ("a+b", "aab", False),
        ("a?c", "abc", False),
        ("(x)", "(x)", True),
        ("^start$", "^start$", True),
        ("o'brien", "o'brien", True),
        ('"; drop', '"; drop', True),
        ("\\d", "5", False),
        ("\\d", "\\d", True),
        ("*", "", True),
        ("*", "anything", True),
        ("a*", "a", True),
        ("a*", "ba", False),
        ("*a", "ba", True),
        ("*a*", "xax", True),
        ("*a*", "xx", False),
        ("a*b", "ab", True),
        ("a*b", "aXYb", True),
        ("a*b", "a", False),
        ("ab*ba", "aba", False),
        ("ab*ba", "abba", True),
        ("a*b*c", "abc", True),
        ("a*b*c", "aXbYc", True),
        ("a*b*c", "acb", False),
        ("*x*y*", "..x..y..", True),
        ("*x*y*", "..y..x..", False),
        ("a**b", "ab", True),
        ("/api/v1/*", "/api/v1/templates", True),
        ("/api/v1/*", "/api/v10", False),
        ("", "", True),
        ("", "x", False),
    ],
)
def test_pattern(pattern: str, text: str, expected: bool) -> None:
    assert compile_pattern(pattern).matches(text) is expected
    assert wildcard_match(pattern, text) is expected


def test_operators_reduce_to_whole_string_patterns() -> None:
    def texts(op: str, value: str) -> list[str]:
        pats = operator_patterns(op, value)
        assert pats is not None
        return [p.text for p in pats]

    assert texts("equals", "a") == ["a"]
    assert texts("contains", "a") == ["*a*"]
    assert texts("does_not_contain", "a") == ["*a*"]
    assert texts("starts_with", "a") == ["a*"]
    assert texts("ends_with", "a") == ["*a"]
    assert texts("is_one_of", "a, b ,,c*") == ["a", "b", "c*"]
    assert operator_patterns("matches_regex", ".*") is None


def test_one_of_lists_are_split_trimmed_and_empty_items_dropped() -> None:
    assert split_one_of(" a ,b,, ,c") == ["a", "b", "c"]
    assert split_one_of(",") == []
