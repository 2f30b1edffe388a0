"""Data objects shared by every interface and backend.

The submodules load on first use (PEP 562), each found by the name asked for: a CLI call that needs only
the template models does not pay for building the request, system or auth result classes. Each name is
written once, in its submodule's `__all__`; the generated `pluginsdk/_index.py` (`MODELS`) says where it
lives. Type checkers read the star imports below, which list the submodules this package re-exports.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._base import *  # noqa: F403
    from .auth import *  # noqa: F403
    from .auth_results import *  # noqa: F403
    from .auth_vocabulary import *  # noqa: F403
    from .machine_results import *  # noqa: F403
    from .plans import *  # noqa: F403
    from .policy_results import *  # noqa: F403
    from .provisioning import *  # noqa: F403
    from .request_results import *  # noqa: F403
    from .results import *  # noqa: F403
    from .statuses import *  # noqa: F403
    from .system_results import *  # noqa: F403
    from .template_results import *  # noqa: F403
    from .templates import *  # noqa: F403
else:  # at run time each name is found through the index and imported on first use
    from importlib import import_module

    from .._index import MODELS

    __all__ = list(MODELS)

    def __getattr__(name: str) -> object:
        module = MODELS.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(import_module(f".{module}", __name__), name)
        globals()[name] = value
        return value
