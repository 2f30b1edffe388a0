"""What the auth service reads of the settings: the typed `app` groups (pluginsdk/config/app.py, keys documented
in docs/auth.md), checked when the settings were loaded, and the values that default from other groups.

A NamedTuple rather than a frozen dataclass: a dataclass compiles its methods when the module is imported
(~2 ms a class), and every CLI call starts the auth service. No postponed annotations here: NamedTuple would
turn each string annotation into a ForwardRef and compile it.
"""

from typing import Literal, NamedTuple

from pluginsdk.config import (
    AppSettings,
    AuthProviderSettings,
    ExternalIdpSettings,
    ManagedPoolSettings,
    Settings,
    SmtpSettings,
)

__all__ = ["AuthConfig", "load_auth_config"]


class AuthConfig(NamedTuple):
    app: AppSettings
    region: str
    """`app.region`, else `provider.region`, else `local`."""
    api_url: str
    """`app.apiUrl`, else `api.url`, else the server's own address."""
    secrets_key: bytes | None
    """`app.authProvider.secretsKey`, decoded."""

    @property
    def provider(self) -> AuthProviderSettings:
        return self.app.authProvider

    @property
    def managed(self) -> ManagedPoolSettings:
        return self.app.authProvider.useManaged

    @property
    def external(self) -> ExternalIdpSettings:
        return self.app.authProvider.useExternalOAuthIdp

    @property
    def smtp(self) -> SmtpSettings:
        return self.app.authProvider.smtp

    @property
    def admin_user_id(self) -> str:
        return self.app.authProvider.adminUserId

    @property
    def default_user_role_name(self) -> str | None:
        return self.app.authProvider.authorizerOptions.defaultUserRoleName

    @property
    def mode(self) -> Literal["managed", "external", "none"]:
        """managed, external or none."""
        return self.app.authProvider.mode


def load_auth_config(settings: Settings) -> AuthConfig:
    """The auth service's view of `settings` (whose values `load_settings` has checked)."""
    app = settings.app
    region = app.region
    if region is None:
        region = settings.provider.region or "local"
    api_url = app.apiUrl
    if api_url is None:
        api_url = settings.api.url or f"http://{settings.api.host}:{settings.api.port}/"
    return AuthConfig(app=app, region=region, api_url=api_url, secrets_key=app.authProvider.seal_key())
