"""The operation catalog. Importing this package registers every operation in CATALOG."""

from ._base import CATALOG as CATALOG
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
from .api_keys import *  # noqa: F403
from .auth_sessions import *  # noqa: F403
from .bootstrap import *  # noqa: F403
from .constraints import *  # noqa: F403
from .machines import *  # noqa: F403
from .requests import *  # noqa: F403
from .roles import *  # noqa: F403
from .routes import *  # noqa: F403
from .system import *  # noqa: F403
from .templates import *  # noqa: F403
from .users import *  # noqa: F403
