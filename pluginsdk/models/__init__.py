"""Data objects shared by every interface and backend.

The submodules load on first use (PEP 562), each found by the name asked for: a CLI call that needs only
the template models does not pay for building the request, system or auth result classes. Each name is
written once, in its submodule's `__all__`; the index (`MODELS`, read through `pluginsdk/_lazy.py`) says
where it lives. Type checkers read the star imports below, which list the submodules this package re-exports.
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
    from .._lazy import MODELS, exports

    __all__ = list(MODELS)
    __getattr__ = exports(__name__, MODELS, globals())
