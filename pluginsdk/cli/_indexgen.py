"""Generate `_index.py`, the static command index behind `pluginsdk --help` (`--check`: fail if stale).

`python -m pluginsdk.cli._indexgen` rewrites it after the catalog changes; the test suite runs the
check, as it does for the SDK stub.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

__all__ = ["render"]

TARGET = Path(__file__).with_name("_index.py")

_HEADER = '''# ruff: noqa: E501
"""Static command index: group -> action -> summary, and "group action" -> operation name.

Do not edit: run `python -m pluginsdk.cli._indexgen` after changing the catalog (a test checks this file
is current). It lets `pluginsdk --help` list the commands without importing the catalog, and a command
import only its own operation's module.
"""

GROUPS: dict[str, dict[str, str]] = '''


def render() -> str:
    """The text `_index.py` should have for the current catalog."""
    from ..operations import CATALOG
    from ._build import catalog_groups

    lines = ["{"]
    for group, actions in catalog_groups().items():
        lines.append(f"    {_q(group)}: {{")
        lines += [f"        {_q(action)}: {_q(summary)}," for action, summary in actions.items()]
        lines.append("    },")
    ops = sorted((f"{s.cli.group} {s.cli.action}", name) for name, s in CATALOG.items() if s.cli)
    lines += ["}", "", "OPERATIONS: dict[str, str] = {"]
    lines += [f"    {_q(command)}: {_q(name)}," for command, name in ops]
    return _HEADER + "\n".join(lines) + "\n}\n"


def _q(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if TARGET.read_text(encoding="utf-8") != text:
            print(f"{TARGET} is stale; run `python -m pluginsdk.cli._indexgen`.", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
