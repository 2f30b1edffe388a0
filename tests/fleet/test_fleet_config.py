"""The HAProxy configuration docs/deployment.md shows operators is the one the fleet tests run
(`haproxy_config`): the same directives in the same order, only the addresses differ."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.fleet import haproxy_config

ROOT = Path(__file__).resolve().parents[2]


def _directives(config: str) -> list[str]:
    """Each directive without its comment, spaces collapsed, a server's address left out."""
    lines = (" ".join(line.split("#")[0].split()) for line in config.splitlines())
    return [re.sub(r"^server (\S+) \S+ ", r"server \1 ADDRESS ", line) for line in lines if line]


def test_the_deployment_page_shows_the_fleets_haproxy_configuration() -> None:
    page = (ROOT / "docs" / "deployment.md").read_text()
    shown = re.search(r"^```haproxy\n(.*?)^```$", page, re.MULTILINE | re.DOTALL)
    assert shown is not None
    tested = haproxy_config(8000, Path("/run/haproxy/admin.sock"), [8001, 8002, 8003])
    assert _directives(shown.group(1)) == _directives(tested)
