"""The in-process engine: one `execute(operation, principal)` for every catalog operation.

It authorizes (tier 1 on the route called, tier 2 on the stored object an
operation names — see `auth/objects.py`), dispatches to the handler its
`HandlerRegistry` finds for the operation class (importing the handler
module `HANDLER_MODULES` names on first use), turns unexpected failures into
MethodExecutionError, and counts calls for metrics. Handlers live in
`handlers/` and `auth/handlers/`, one module per operation group, each with
its table (`registry.py`); they do not import the engine: each receives what
its table names, the `Deps` built at start (`deps.py`) or the auth service.

Authorization fails closed: the auth service always runs, and a broken or
missing auth package stops the engine from starting. Only the explicit
setting `app.authProvider.disableAuthorization: true` runs without it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
import logging
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from pluginsdk.config import Settings
from pluginsdk.errors import (
    ConfigurationError,
    HandlerDiscoveryError,
    MethodExecutionError,
    SDKError,
)
from pluginsdk.models import Template
from pluginsdk.operations import Operation, OperationSpec
from pluginsdk.periodic import Execute, PeriodicTask
from pluginsdk.principal import SYSTEM_ADMIN, Principal

from .call import Authorizer, Call
from .deps import Access, Deps, ProviderPool, StoredObjects, TemplateCatalog
from .providers.base import ProviderDriver
from .registry import Handler, HandlerTable
from .store import Store, open_store
from .store.boot import BootMemory
from .templates_files import TemplateFiles

if TYPE_CHECKING:
    from pluginsdk.models.plans import AccessPlan

    from .auth.service import AuthService

__all__ = ["HANDLER_MODULES", "AllowAll", "Engine", "HandlerRegistry"]

log = logging.getLogger("pluginsdk.engine")

T = TypeVar("T")

_Served = tuple[OperationSpec, Handler, type, dict[str, float], bool]
"""An operation class's spec, its handler, the type of what that takes first, its counters, whether it is
audited."""


class AllowAll:
    """Every call allowed, every caller the administrator.

    Used only when the configuration says so explicitly (`app.authProvider.disableAuthorization: true`);
    never as a fallback for a missing or broken auth service.
    """

    def __init__(self, admin: Principal = SYSTEM_ADMIN) -> None:
        self.admin = admin

    async def authenticate(self, authorization: str | None) -> Principal:
        return self.admin

    async def authorize(self, call: Call) -> None:
        return None

    def authorized_at_hand(self, call: Call) -> bool:
        return True

    async def authorize_also(
        self, principal: Principal, spec: OperationSpec, calls: Iterable[tuple[Operation, str]]
    ) -> None:
        return None

    async def check_route(self, principal: Principal, method: str, path: str) -> None:
        return None

    async def filter_allowed(
        self,
        principal: Principal,
        object_type: str,
        items: list[T],
        attrs: Callable[[T], Mapping[str, Any]],
        method: str,
    ) -> list[T]:
        return items

    async def plan(self, principal: Principal, object_type: str, method: str) -> AccessPlan:
        from pluginsdk.models.plans import AccessPlan  # only listings filtered by a plan need it

        return AccessPlan.model_construct(object_type=object_type, method=method, kind="always", revision=0)


_PROVISIONING = "backends.local.handlers"
_AUTH = "backends.local.auth.handlers"

HANDLER_MODULES: Mapping[str, tuple[str, ...]] = {
    "api_keys": (f"{_AUTH}.api_keys",),
    "audit": (f"{_AUTH}.audit",),
    "auth_sessions": (f"{_AUTH}.sessions",),
    "bootstrap": (f"{_AUTH}.bootstrap",),
    "constraints": (f"{_AUTH}.constraints",),
    "federation": (f"{_AUTH}.federation",),
    "grants": (f"{_AUTH}.grants",),
    "machine_signals": (f"{_PROVISIONING}.machines",),
    "machines": (f"{_PROVISIONING}.machines",),
    "policy_checks": (f"{_AUTH}.policy_checks",),
    "requests": tuple(
        f"{_PROVISIONING}.{name}" for name in ("request_queries", "provisioning", "returns", "request_cleanup")
    ),
    "roles": (f"{_AUTH}.roles",),
    "routes": (f"{_AUTH}.routes",),
    "system": (f"{_PROVISIONING}.system",),
    "template_writes": (f"{_PROVISIONING}.template_writes",),
    "templates": (f"{_PROVISIONING}.templates",),
    "users": (f"{_AUTH}.users",),
}
"""Operation module (`pluginsdk/operations/<name>.py`) -> the handler modules serving its operations, imported
by name from here, above them (`tests/test_import_graph.py` holds that). `tests/test_handler_registry.py`
checks that each operation is served by a module listed for its own."""


class HandlerRegistry:
    """The engine's handlers: filled from the handler modules' tables as operations are first called."""

    def __init__(self, modules: Mapping[str, tuple[str, ...]] = HANDLER_MODULES) -> None:
        self._modules = modules
        self._handlers: dict[type[Operation], Handler] = {}
        self._receives: dict[type[Operation], type] = {}
        self._loaded: set[str] = set()

    def register(self, table: HandlerTable) -> None:
        """Add a module's handlers; an operation served by two different handlers is an error."""
        for op, fn in table.items():
            if self._handlers.get(op, fn) is not fn:
                raise HandlerDiscoveryError(f"Two handlers for {op.__name__}.")
            self._handlers[op] = fn
            self._receives[op] = table.takes[op]

    def get(self, op: type[Operation]) -> Handler | None:
        """The handler of `op`, loading the handler modules `HANDLER_MODULES` names for its operation module."""
        found = self._handlers.get(op)
        if found is not None:
            return found
        for module_name in self._modules.get(op.__module__.rsplit(".", 1)[-1], ()):
            self._load(module_name)
        return self._handlers.get(op)

    def receives(self, op: type[Operation]) -> type:
        """The type of what the handler of `op` takes first (its table's `receives`); after `get` found it."""
        return self._receives[op]

    def _load(self, module_name: str) -> None:
        if module_name in self._loaded:
            return
        table = getattr(importlib.import_module(module_name), "handlers", None)
        if not isinstance(table, HandlerTable):
            raise HandlerDiscoveryError(f"{module_name} has no `handlers = HandlerTable(...)`.")
        self.register(table)
        self._loaded.add(module_name)


class Engine:
    """Store, providers, templates and authorizer; each handler receives the part it uses (`deps.py`)."""

    def __init__(self, settings: Settings, *, background: bool = False, periodic: Iterable[PeriodicTask] = ()) -> None:
        self.settings = settings
        self.background = background
        self.periodic: list[PeriodicTask] = [
            PeriodicTask("provisioning reconcile", settings.sdk.reconcile_interval, self._reconcile_pass),
            *periodic,
        ]
        """What `background` runs, each every its own seconds: the reconciler's pass (settling requests,
        the providers' interruption queues) and what the serving process registered (`PeriodicTask`)."""
        self._store: Store | None = None
        self.files = TemplateFiles(settings.templates.dir)
        self.handlers = HandlerRegistry()
        """Operation class -> handler, filled from the handler modules as operations are first called."""
        self._deps: Deps | None = None
        self._objects: StoredObjects | None = None
        self._given: dict[type, object] = {}
        """What the handlers receive, by type (`HandlerTable.receives`): the `Deps`, the auth service."""
        self.authz: Authorizer = _NotStarted()
        self.auth: AuthService | None = None
        """The auth service when it authorizes; None when authorization is disabled or the engine is not
        started."""
        self.metrics: dict[str, dict[str, float]] = defaultdict(lambda: {"calls": 0, "errors": 0, "seconds": 0.0})
        self._served: dict[type[Operation], _Served] = {}
        """`_serve`'s answer per operation class."""
        self.started_at = time.time()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closing = asyncio.Event()
        self.on_close: list[Callable[[], Awaitable[None]]] = []
        self.audit_log: Callable[[object, Call, Handler], Awaitable[Any]] | None = None
        """Runs a command its operation declares audited (`Policy.audit`) and records it: the auth service's
        `run_audited` (auth/audit.py), bound when the service starts; None without it."""

    # -- lifecycle --------------------------------------------------------
    async def start(self) -> None:
        self._store = store = await open_store(
            self.settings.storage_target, claim_seconds=self.settings.sdk.claim_seconds
        )
        templates = TemplateCatalog(store, self.files)
        self._objects = StoredObjects(store, templates)
        await self._start_auth()
        self._deps = self._given[Deps] = Deps(
            settings=self.settings,
            store=store,
            templates=templates,
            providers=ProviderPool(self.settings, store),
            access=Access(self.authz),
            boot=BootMemory(store.db),
            metrics=self.metrics,
            started_at=self.started_at,
        )
        if self.background:
            self.spawn(self._periodic_loop())

    async def _start_auth(self) -> None:
        """Plug in the auth service; fail closed: no auth service, no engine (unless disabled explicitly)."""
        if authorization_disabled(self.settings):
            admin = self.settings.app.authProvider.adminUserId or SYSTEM_ADMIN.user_id
            log.warning(
                "authorization is DISABLED (app.authProvider.disableAuthorization): every caller acts as %r", admin
            )
            self.authz = AllowAll(Principal(user_id=admin, auth_method="local"))
            return
        try:
            auth = importlib.import_module(".auth", __package__)
        except ImportError as exc:
            raise ConfigurationError(
                f"The auth service cannot be loaded ({type(exc).__name__}: {exc.name or exc}); refusing to start "
                "without authorization. Repair the installation, or set app.authProvider.disableAuthorization: "
                "true to run with every call allowed.",
                key="app.authProvider.disableAuthorization",
            ) from exc
        self.auth = await auth.start_auth(self)
        self.authz = self._given[type(self.auth)] = self.auth
        self.audit_log = functools.partial(auth.run_audited, self.auth)

    async def aclose(self) -> None:
        self._closing.set()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for hook in self.on_close:
            await hook()
        if self._deps is not None:
            await self._deps.providers.aclose()
        if self._store is not None:
            await self._store.aclose()
            self._store = None

    def spawn(self, coro: Awaitable[Any]) -> None:
        task: asyncio.Task[Any] = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _reconcile_pass(self, _execute: Execute) -> None:
        from .provisioning.reconciler import reconcile_active

        await reconcile_active(self.deps)

    async def _periodic_loop(self) -> None:
        """Run the periodic tasks one at a time, each when it is due, until the engine closes. A task that fails
        is logged and retried `every` seconds later; one that answers 0 (or has no interval) stops here."""

        async def admin(op: Operation[Any]) -> Any:
            return await self.execute(op, SYSTEM_ADMIN)

        due = {i: time.monotonic() for i, task in enumerate(self.periodic) if task.every > 0}
        while due and not self._closing.is_set():
            i = min(due, key=due.__getitem__)
            wait = due[i] - time.monotonic()
            if wait > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._closing.wait(), wait)
                continue
            task = self.periodic[i]
            try:
                after = await task.run(admin)
            except Exception:  # keep the loop alive; the next pass retries
                log.exception("periodic task %r failed", task.name)
                after = None
            if after is not None and after <= 0:
                log.info("periodic task %r stops in this process", task.name)
                del due[i]
            else:
                due[i] = time.monotonic() + (task.every if after is None else after)

    @property
    def started(self) -> bool:
        return self._store is not None

    @property
    def store(self) -> Store:
        """The engine's one store; every statement is a method of it (or of the stores it holds)."""
        if self._store is None:
            raise HandlerDiscoveryError("The engine is not started.")
        return self._store

    @property
    def objects(self) -> StoredObjects:
        """The stored requests, machines and templates: what the auth service reads of the engine."""
        if self._objects is None:
            raise HandlerDiscoveryError("The engine is not started.")
        return self._objects

    @property
    def deps(self) -> Deps:
        """What the provisioning handlers and the reconciler use (`deps.py`)."""
        if self._deps is None:
            raise HandlerDiscoveryError("The engine is not started.")
        return self._deps

    async def provider(self, name: str | None = None) -> ProviderDriver:
        """The provider instance by name (default: the configured default), started on first use."""
        return await self.deps.providers.get(name)

    async def template(self, template_id: str) -> Template | None:
        return await self.deps.templates.get(template_id)

    # -- execution --------------------------------------------------------
    async def execute(
        self, op: Operation, principal: Principal, *, route_path: str | None = None, route_checked: bool = False
    ) -> Any:
        """Authorize and run `op` as `principal`, on one `Call` the authorizer fills in and the handler receives.

        `route_path` is the concrete path a REST request arrived on (e.g. `/api/v1/machines/request`); tier 1
        decides on it. None (in-process calls) means the operation's first path. `route_checked`: the server
        decided tier 1 on it already (`Authorizer.check_route`).
        """
        cls = type(op)
        spec, handler, receives, stats, audited = self._served.get(cls) or self._serve(cls)
        stats["calls"] += 1
        started = time.perf_counter()
        try:
            call = Call(op, spec, principal, route_path, route_checked)
            authz = self.authz
            if authz.authorized_at_hand(call) is not True:  # only a plain True skips `authorize` (fail closed)
                await authz.authorize(call)
            given = self._given.get(receives)
            if given is None:
                given = self._receives(cls)
            if audited and self.audit_log is not None:  # declared audited: run and recorded
                return await self.audit_log(given, call, handler)
            return await handler(given, op, call)
        except SDKError:
            stats["errors"] += 1
            raise
        except Exception as exc:
            stats["errors"] += 1
            log.exception("operation %s failed", spec.name)
            raise MethodExecutionError(f"{spec.name} failed unexpectedly: {type(exc).__name__}.") from exc
        finally:
            stats["seconds"] += time.perf_counter() - started

    def _serve(self, cls: type[Operation]) -> _Served:
        """What `execute` needs of an operation class, kept on first call: its spec, its handler, the type the
        handler takes first, its counters and whether it is declared audited."""
        spec = cls.spec
        handler = self.handlers.get(cls)
        if handler is None:
            raise HandlerDiscoveryError(f"No handler is registered for {spec.name}.")
        served = self._served[cls] = (
            spec,
            handler,
            self.handlers.receives(cls),
            self.metrics[spec.name],
            spec.policy.audit is not None,
        )
        return served

    def _receives(self, op: type[Operation]) -> object:
        """The object the handler of `op` takes first: the one of its table's `receives` type."""
        given = self._given.get(self.handlers.receives(op))
        if given is None:
            if self._deps is None:
                raise HandlerDiscoveryError("The engine is not started.")
            raise HandlerDiscoveryError("The auth service is not running in this engine.")
        return given


class _NotStarted:
    """The authorizer of an engine that is not started: each of its methods refuses (fail closed)."""

    def __getattr__(self, name: str) -> Callable[..., Coroutine[Any, Any, Any]]:
        async def refuse(*args: Any, **kwargs: Any) -> Any:
            raise HandlerDiscoveryError("The engine is not started.")

        return refuse

    def authorized_at_hand(self, call: Call) -> bool:
        return False  # `authorize`, awaited then, refuses


def authorization_disabled(settings: Settings) -> bool:
    """True only when the configuration explicitly turns authorization off (`app.authProvider.disableAuthorization`
    is `true`; any value but true or false was refused when the settings were loaded)."""
    app = settings.app_given  # no `app` given: authorization is on, and its models stay unbuilt
    return app is not None and app.authProvider.disableAuthorization
