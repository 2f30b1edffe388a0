"""Provider drivers, found by name: the built-ins, then the `pluginsdk.providers` entry-point group."""

from __future__ import annotations

from typing import Any

from pluginsdk.errors import HandlerDiscoveryError

__all__ = ["load_provider_class", "provider_names"]

_PROVIDERS = {
    "local": "backends.local.providers.local:LocalProvider",
    "aws": "backends.local.providers.aws:AwsProvider",
}


def load_provider_class(name: str) -> type[Any]:
    """Provider class by name: built-ins first, then the `pluginsdk.providers` entry points."""
    import importlib

    target = _PROVIDERS.get(name)
    if target is None:
        from importlib.metadata import entry_points

        found = [ep for ep in entry_points(group="pluginsdk.providers") if ep.name == name]
        if not found:
            known = sorted({*_PROVIDERS, *(ep.name for ep in entry_points(group="pluginsdk.providers"))})
            raise HandlerDiscoveryError(f"No provider named {name!r}; installed: {', '.join(known)}.")
        cls: type[Any] = found[0].load()
        return cls
    module, _, attr = target.partition(":")
    try:
        cls = getattr(importlib.import_module(module), attr)
    except ImportError as exc:
        raise HandlerDiscoveryError(
            f"The {name!r} provider is not installed ({exc.name} missing); install 'pluginsdk[{name}]'."
        ) from exc
    return cls


def provider_names() -> list[str]:
    """Every provider that can be loaded here."""
    from importlib.metadata import entry_points

    return sorted({*_PROVIDERS, *(ep.name for ep in entry_points(group="pluginsdk.providers"))})
