"""Tool profiles: which catalog operations a server lists, so an assistant's context holds only what it needs.

A profile is a set of operation modules (`pluginsdk/operations/<module>.py`): `provisioning` (templates,
requests, machines, providers; the default), `auth` (sessions, API keys, roles, constraints, grants, users, routes,
login profile), `policy` (the decision point: checks for any subject, explain, who-can, what-if, policy
tests, the audit log), `federation` (the steps of a sign-in through the identity provider, which a browser or
the CLI takes rather than an assistant), `machine` (what a machine says about itself: its readiness signal,
which its startup script sends rather than an assistant) and `all`. Several can be joined with commas
(`provisioning,auth,policy,federation,machine` = `all`).
A tool outside the server's profile is neither listed nor callable. Chosen by `pluginsdk mcp serve --profile`, else
`PLUGIN_MCP_PROFILE`, else `mcp.profile` in the configuration, else `provisioning`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from ..errors import ConfigurationError
from ..operations import OperationSpec

__all__ = ["DEFAULT_PROFILE", "ENV_VAR", "PROFILES", "module_of", "profile_of", "resolve_profile", "selects"]

PROFILES: Mapping[str, frozenset[str]] = {
    "provisioning": frozenset({"templates", "template_writes", "requests", "machines", "system"}),
    "auth": frozenset({"auth_sessions", "api_keys", "roles", "constraints", "grants", "users", "routes", "bootstrap"}),
    "policy": frozenset({"policy_checks", "audit"}),
    "federation": frozenset({"federation"}),
    "machine": frozenset({"machine_signals"}),
}
"""Profile -> the operation modules whose tools it lists. `all` lists every module, these and any other."""

ALL = "all"
DEFAULT_PROFILE = "provisioning"
ENV_VAR = "PLUGIN_MCP_PROFILE"


def module_of(spec: OperationSpec) -> str:
    """The operation's module name (`requests` for `pluginsdk.operations.requests`)."""
    return spec.cls.__module__.rsplit(".", 1)[-1]


def profile_of(spec: OperationSpec) -> str:
    """The named profile whose tools include the operation's (`all` if none does)."""
    module = module_of(spec)
    return next((name for name, modules in PROFILES.items() if module in modules), ALL)


def resolve_profile(option: str | None, configured: object = None) -> tuple[str, ...]:
    """The profile names in force: the option, else `PLUGIN_MCP_PROFILE`, else the configured, else the default.

    Names are comma-separated; a name no profile has is a ConfigurationError listing the profiles.
    """
    raw = option or os.environ.get(ENV_VAR) or (configured if isinstance(configured, str) else None)
    if configured is not None and not isinstance(configured, str):
        raise ConfigurationError("mcp.profile must be a profile name.", key="mcp.profile")
    names = tuple(dict.fromkeys(n.strip().lower() for n in (raw or DEFAULT_PROFILE).split(",") if n.strip()))
    known = (*PROFILES, ALL)
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise ConfigurationError(
            f"Unknown MCP tool profile {', '.join(unknown) or repr(raw)}; profiles: {', '.join(known)}.",
            key="mcp.profile",
        )
    return names


def selects(profile: tuple[str, ...], spec: OperationSpec) -> bool:
    """Whether the profile lists the operation's tools."""
    return ALL in profile or any(module_of(spec) in PROFILES[name] for name in profile)
