"""The web console at /ui/: server-rendered pages over the same backend contract the REST door uses.

Every action is a catalog operation executed with the signed-in caller's principal and its concrete route
(tier 1 and tier 2, as the REST door does); pages offer only the operations the allowed-routes answer
lists. See docs/console.md for the pages and the security model.
"""

from __future__ import annotations

from .app import PREFIX, Console

__all__ = ["PREFIX", "Console"]
