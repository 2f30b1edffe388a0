"""What the auth service reads of the settings: the typed `app` groups (pluginsdk/config/app.py, keys documented
in docs/auth.md), checked when the settings were loaded, and the values that default from other groups.

A configuration that gives no `app` leaves its eleven models unbuilt (`Settings.app_given` is None), and a CLI
call must not pay for building them: what the service reads at start and on every call (the administrator, the
identity provider mode, the default role, the sealing key given inline) then comes from `_UNSET`, which names
what an absent `app` means — no option turned on, the administrator `SYSTEM_ADMIN` (`adminUserId`'s default);
a test holds it equal to the built defaults. Anything else (`app`, `smtp`, `managed`, ...) builds them on use.

A NamedTuple rather than a frozen dataclass: a dataclass compiles its methods when the module is imported
(~2 ms a class), and every CLI call starts the auth service. No postponed annotations here: NamedTuple would
turn each string annotation into a ForwardRef and compile it.
"""

from typing import TYPE_CHECKING, Literal, NamedTuple

from pluginsdk.config import Settings
from pluginsdk.principal import SYSTEM_ADMIN

if TYPE_CHECKING:
    from pluginsdk.config import (
        AppSettings,
        AuthProviderSettings,
        ExternalIdpSettings,
        ManagedPoolSettings,
        SmtpSettings,
    )

__all__ = ["AuthConfig", "load_auth_config"]


class _UNSET:
    """The facts the service starts on when no `app` is given (its models unbuilt)."""

    admin_user_id = SYSTEM_ADMIN.user_id
    mode: Literal["managed", "external", "none"] = "none"
    default_user_role_name: str | None = None
    decision_sample_rate = 0.0


class AuthConfig(NamedTuple):
    settings: Settings
    given: "AppSettings | None"
    """`app` as given (`Settings.app_given`); None: no `app`, every key at its default."""
    region: str
    """`app.region`, else `provider.region`, else `local`."""
    api_url: str
    """`app.apiUrl`, else `api.url`, else the server's own address."""
    secrets_key: bytes | None
    """`app.authProvider.secretsKey`, decoded."""
    decision_sample_rate: float
    """`app.audit.decisionSampleRate`: read on every decision, so held here rather than looked up through the
    lazy `app` group each time."""

    @property
    def app(self) -> "AppSettings":
        """The `app` group (built now from its defaults when none was given)."""
        return self.settings.app

    @property
    def provider(self) -> "AuthProviderSettings":
        return self.app.authProvider

    @property
    def managed(self) -> "ManagedPoolSettings":
        return self.app.authProvider.useManaged

    @property
    def external(self) -> "ExternalIdpSettings":
        return self.app.authProvider.useExternalOAuthIdp

    @property
    def smtp(self) -> "SmtpSettings":
        return self.app.authProvider.smtp

    @property
    def admin_user_id(self) -> str:
        return _UNSET.admin_user_id if self.given is None else self.given.authProvider.adminUserId

    @property
    def default_user_role_name(self) -> str | None:
        if self.given is None:
            return _UNSET.default_user_role_name
        return self.given.authProvider.authorizerOptions.defaultUserRoleName

    @property
    def mode(self) -> Literal["managed", "external", "none"]:
        """managed, external or none."""
        return _UNSET.mode if self.given is None else self.given.authProvider.mode


def load_auth_config(settings: Settings) -> AuthConfig:
    """The auth service's view of `settings` (whose values `load_settings` has checked)."""
    app = settings.app_given
    region = None if app is None else app.region
    if region is None:
        region = settings.provider.region or "local"
    api_url = None if app is None else app.apiUrl
    if api_url is None:
        api_url = settings.api.url or f"http://{settings.api.host}:{settings.api.port}/"
    key = None if app is None else app.authProvider.seal_key()
    rate = _UNSET.decision_sample_rate if app is None else app.audit.decisionSampleRate
    return AuthConfig(
        settings=settings, given=app, region=region, api_url=api_url, secrets_key=key, decision_sample_rate=rate
    )
