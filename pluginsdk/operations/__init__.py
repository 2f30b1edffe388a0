"""The operation catalog.

Operation modules load on demand: `CATALOG[name]` or `from pluginsdk.operations import SomeQuery` imports
just the module that defines it (through the index, `pluginsdk/_lazy.py`); iterating `CATALOG` imports them all.
"""

from typing import TYPE_CHECKING, Any

from .._lazy import CLASSES, exports
from ._base import CATALOG as CATALOG
from ._base import STORED_RULES as STORED_RULES
from ._base import Audit as Audit
from ._base import Catalog as Catalog
from ._base import Cli as Cli
from ._base import Command as Command
from ._base import Mcp as Mcp
from ._base import Operation as Operation
from ._base import OperationSpec as OperationSpec
from ._base import Policy as Policy
from ._base import Query as Query
from ._base import Rest as Rest
from ._base import get_spec as get_spec
from ._base import sdk_name as sdk_name

if TYPE_CHECKING:
    from .api_keys import *  # noqa: F403
    from .auth_sessions import *  # noqa: F403
    from .bootstrap import *  # noqa: F403
    from .constraints import *  # noqa: F403
    from .federation import *  # noqa: F403
    from .grants import *  # noqa: F403
    from .machine_signals import *  # noqa: F403
    from .machines import *  # noqa: F403
    from .requests import *  # noqa: F403
    from .roles import *  # noqa: F403
    from .routes import *  # noqa: F403
    from .system import *  # noqa: F403
    from .template_writes import *  # noqa: F403
    from .templates import *  # noqa: F403
    from .users import *  # noqa: F403


def _unindexed(name: str) -> Any:
    """A class the index does not list (an index older than the catalog): load the catalog, then look."""
    CATALOG.load_all()
    found = [spec.cls for spec in CATALOG.values() if spec.cls.__name__ == name]
    if not found:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return found[0]


if not TYPE_CHECKING:
    __getattr__ = exports(__name__, CLASSES, globals(), _unindexed)
