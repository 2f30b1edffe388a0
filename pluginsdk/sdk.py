"""PluginSDK: the async facade every interface sits on.

Its operation methods are made by reflection from the catalog on first lookup: one
real function per operation, with a true `inspect.signature` (fields in order,
required first, defaults, annotations) and a docstring built from the
operation's help text and field docs, so `help()`, IDEs and Jupyter tab
completion all see them. Type checkers read the generated stub
`_sdk_methods.pyi` (regenerate with `python -m pluginsdk._stubgen`).
"""

from __future__ import annotations

import inspect
import os
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar, overload

from . import operations
from .backend import Backend, load_backend
from .config import Settings, load_settings
from .constants import DEFAULT_BACKEND
from .errors import ConfigurationError
from .operations import CATALOG, Operation, OperationSpec
from .principal import Principal

__all__ = ["PluginSDK"]

R = TypeVar("R")
T = TypeVar("T")

if TYPE_CHECKING:
    import httpx

    from ._pagination import Paged
    from ._sdk_methods import SDKMethods as _Methods
else:
    _Methods = object


class _Facade(type):
    """PluginSDK's metaclass: an operation's method is made the first time it is looked up on the class.

    Importing the SDK thus costs nothing per operation, and a CLI call builds only the operation it runs.
    """

    if not TYPE_CHECKING:  # type checkers read the generated stub instead

        def __getattr__(cls, name: str) -> Any:
            return install_method(name)

    def __dir__(cls) -> list[str]:
        return sorted({*super().__dir__(), *CATALOG})


class PluginSDK(_Methods, metaclass=_Facade):
    """Provision machines and manage access, in-process or against a pluginsdk server.

    ```python
    async with PluginSDK() as sdk:                       # local engine, SQLite store, `local` provider
        req = await sdk.create_request("web-small", 2, wait=True)
    async with PluginSDK(backend="remote", api_url="http://127.0.0.1:8000", api_key="psdk_...") as sdk: ...
    ```

    Options are keyword-only and fall back to configuration: `provider`
    (PLUGIN_PROVIDER), `config` (a dict, same groups as the file), `config_path`
    (JSON/YAML file, PLUGIN_CONFIG), `backend` (a name such as "local" or
    "remote", PLUGIN_BACKEND, or a Backend instance), `api_url` (or `base_url`, its
    httpx/openai-python spelling) and `api_key` (PLUGIN_API_URL/PLUGIN_API_KEY, remote
    only), `user` (the identity the local engine acts as, PLUGIN_USER; default the
    configured administrator), `scheduler` (output strategy). Remote only: `timeout`
    (seconds for every phase of one HTTP call, or an `httpx.Timeout`; default the
    `api.*_timeout` settings), `max_retries`, `transport` (an httpx transport, for
    tests or custom stacks). `background` runs the local engine's reconciliation loop;
    `backend_options` go to a third-party backend. An unknown keyword is a TypeError;
    a wrong value raises ConfigurationError naming the key and where it came from.
    """

    def __init__(
        self,
        *,
        provider: str | None = None,
        config: Mapping[str, Any] | None = None,
        config_path: str | os.PathLike[str] | None = None,
        backend: str | Backend | None = None,
        api_url: str | None = None,
        api_key: str | None = None,
        user: str | None = None,
        scheduler: str | None = None,
        settings: Settings | None = None,
        base_url: str | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        background: bool | None = None,
        backend_options: Mapping[str, Any] | None = None,
    ) -> None:
        if base_url is not None and api_url is not None and base_url != api_url:
            raise TypeError("PluginSDK() got both api_url and base_url (the same option); give one.")
        given = {"timeout": timeout, "max_retries": max_retries, "transport": transport, "background": background}
        self._config = config
        self._config_path = config_path
        self._overrides = {
            "provider.type": provider,
            "api.url": api_url or base_url,
            "api.key": api_key,
            "sdk.user": user,
            "scheduler.type": scheduler,
        }
        self._backend_arg = backend
        self._backend_options = {**{k: v for k, v in given.items() if v is not None}, **(backend_options or {})}
        self._backend: Backend | None = backend if backend is not None and not isinstance(backend, str) else None
        self._settings: Settings | None = settings
        self._principal: Principal | None = None
        self._entered = 0

    # -- lifecycle --------------------------------------------------------
    async def start(self) -> PluginSDK:
        """Load configuration and start the backend (done by `async with`)."""
        if self._settings is None:
            self._settings = load_settings(
                config=self._config, config_path=self._config_path, overrides=self._overrides
            )
        if self._backend is None:
            name = self._backend_arg if isinstance(self._backend_arg, str) else None
            name = name or os.environ.get("PLUGIN_BACKEND") or DEFAULT_BACKEND
            self._backend = load_backend(name, self._settings, **self._backend_options)
        if self._backend.name == "local":
            self._principal = Principal(user_id=self._settings.sdk.user)
        await self._backend.start()
        return self

    async def aclose(self) -> None:
        """Stop the backend: background work ends, the store closes."""
        if self._backend is not None:
            await self._backend.aclose()

    async def __aenter__(self) -> PluginSDK:
        self._entered += 1
        if self._entered == 1:
            await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._entered -= 1
        if self._entered == 0:
            await self.aclose()

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            raise ConfigurationError("PluginSDK is not started; use `async with PluginSDK() as sdk:`.")
        return self._settings

    @property
    def backend(self) -> Backend:
        if self._backend is None:
            raise ConfigurationError("PluginSDK is not started; use `async with PluginSDK() as sdk:`.")
        return self._backend

    # -- calling ------------------------------------------------------------
    async def execute(self, operation: Operation[R]) -> R:
        """Run a catalog operation object; its output fields are set on it after it ran.

        Typed by the operation's class: `await sdk.execute(ListTemplatesQuery())` is a `TemplateList`.
        """
        backend = self._backend
        if backend is None:
            await self.start()
            backend = self._backend
            assert backend is not None
        result = await backend.execute(operation, self._principal)
        for name in operation.output_fields:
            if hasattr(result, name):
                setattr(operation, name, getattr(result, name))
        return result

    @overload
    async def call(self, operation: type[Operation[R]] | OperationSpec[R], /, **params: Any) -> R: ...
    @overload
    async def call(self, operation: str, /, **params: Any) -> Any: ...
    async def call(self, operation: str | type[Operation] | OperationSpec, /, **params: Any) -> Any:
        """Run an operation with keyword parameters: by SDK name (what CLI and MCP use), or by class or spec,
        which a type checker follows to the result (`await sdk.call(ListTemplatesQuery, limit=5)`)."""
        return await self.execute(_spec(operation).build(params))

    @overload
    def iterate(
        self, operation: type[Operation[Paged[T]]] | OperationSpec[Paged[T]], /, **params: Any
    ) -> AsyncIterator[T]: ...
    @overload
    def iterate(self, operation: str, /, **params: Any) -> AsyncIterator[Any]: ...
    async def iterate(self, operation: str | type[Operation] | OperationSpec, /, **params: Any) -> AsyncIterator[Any]:
        """Every item of a list operation, fetching page after page (`async for t in sdk.iterate("list_templates")`).

        Given the class or spec, a type checker knows the items (`sdk.iterate(ListTemplatesQuery)`: `Template`).
        """
        from ._pagination import iterate_pages

        spec = _spec(operation)
        async for item in iterate_pages(spec, params, lambda p: self.execute(spec.build(p))):
            yield item

    @staticmethod
    def catalog() -> dict[str, OperationSpec]:
        """Every operation this SDK offers, by method name."""
        return dict(CATALOG)

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *CATALOG})

    if not TYPE_CHECKING:

        def __getattr__(self, name: str) -> Any:
            return install_method(name).__get__(self, type(self))

    def __repr__(self) -> str:
        backend = self._backend.name if self._backend is not None else (self._backend_arg or DEFAULT_BACKEND)
        return f"PluginSDK(backend={backend!r})"


def _spec(operation: str | type[Operation] | OperationSpec) -> OperationSpec:
    """The spec of an operation given by SDK name, class or spec."""
    return operation if isinstance(operation, OperationSpec) else operations.get_spec(operation)


# -- methods by reflection ---------------------------------------------------
_RESERVED = set(vars(PluginSDK))


def parameter_order(spec: OperationSpec) -> list[str]:
    """Positional order of an operation's parameters: required fields first, then the rest, each as declared."""
    return [*spec.required_fields, *(f for f in spec.input_fields if f not in spec.required_fields)]


def _docstring(spec: OperationSpec) -> str:
    fields = spec.cls.model_fields
    spec.field_docs()
    lines = [spec.summary]
    if spec.description:
        lines += ["", spec.description]
    lines += ["", "Args:"]
    for name in parameter_order(spec):
        desc = (fields[name].description or "").split("\n")[0]
        lines.append(f"    {name}: {desc}".rstrip())
    aliases = [f"{a} -> {c}" for c, al in operations._base.GLOBAL_ALIASES.items() if c in fields for a in al]
    aliases += [f"{a} -> {c}" for c, al in spec.cls.field_aliases.items() for a in al]
    if aliases:
        lines += ["", "Aliases: " + ", ".join(aliases) + " (camelCase names are accepted too)."]
    lines += ["", f"Returns: {spec.result_type.__name__}"]
    if spec.cls.output_fields:
        lines.append(f"Sets on the command object: {', '.join(spec.cls.output_fields)}.")
    return "\n".join(lines)


def _make_method(spec: OperationSpec) -> Callable[..., Coroutine[Any, Any, Any]]:
    names = parameter_order(spec)
    fields = spec.cls.model_fields
    build = spec.build

    async def method(self: PluginSDK, *args: Any, **kwargs: Any) -> Any:
        if len(args) > len(names):
            raise TypeError(f"{spec.name}() takes at most {len(names)} positional arguments ({len(args)} given)")
        for name, value in zip(names, args, strict=False):  # into `kwargs`, a dict of this call's own
            if name in kwargs:
                raise TypeError(f"{spec.name}() got multiple values for argument {name!r}")
            kwargs[name] = value
        return await self.execute(build(kwargs))

    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    for name in names:
        f = fields[name]
        default = inspect.Parameter.empty if f.is_required() else f.get_default(call_default_factory=True)
        params.append(
            inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default, annotation=f.annotation)
        )
    params.append(inspect.Parameter("aliases", inspect.Parameter.VAR_KEYWORD, annotation=Any))
    method.__signature__ = inspect.Signature(params, return_annotation=spec.result_type)  # type: ignore[attr-defined]
    method.__name__ = spec.name
    method.__qualname__ = f"PluginSDK.{spec.name}"
    method.__doc__ = spec.summary
    method.__module__ = __name__
    return method


def install_method(name: str) -> Callable[..., Coroutine[Any, Any, Any]]:
    """Put the method of operation `name` on PluginSDK, its full docstring filled (AttributeError if there is no
    such operation). A plain function: Python binds it to the instance without a descriptor's frame per call.

    Field docs are read from source (~7 ms a module), so a method is made when someone looks it up, not at
    import."""
    if name.startswith("_") or name not in CATALOG:
        raise AttributeError(f"'PluginSDK' has no attribute {name!r}")
    if name in _RESERVED:
        raise ConfigurationError(f"Operation {name!r} clashes with a PluginSDK attribute.")
    spec = CATALOG[name]
    method = _make_method(spec)
    method.__doc__ = _docstring(spec)
    setattr(PluginSDK, name, method)
    return method
