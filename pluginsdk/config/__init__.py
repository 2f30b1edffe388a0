"""The configuration: `load_settings` layers arguments > PLUGIN_* environment > file (or SDK dict) > defaults
and validates the result into `Settings`.

A key no group knows is an error at every level (`provider.aws`, `app.authProvider.useManaged`, ...), with the
closest valid key: a misspelling must not silently fall back to a default (`provider: {tpye: aws}` would run
the local provider, `provider.aws.endpont_url` would call the real AWS endpoint). Secrecy is a property of the
model: a field annotated `Annotated[..., SECRET]` is shown as `***` wherever the configuration is shown, and
every shown text has the credentials of URLs and DSNs masked.

The modules, by what they hold: `layers` (the sources and their order), `validation` (the checks and the
errors they raise), `settings` (`Settings`, the process's own small groups and the default data directory),
one module per larger group (`provider` with `aws` and `limits`, `api` with `serving`, `mcp`, `app` with
`identity`, `slurm`), `group` (the base model, sub-groups built on first use, and how a group is shown:
`SECRET`, masked credentials) and `fields` (the strict field types). Import from `pluginsdk.config`: the names
below are its contract. The models of the groups a CLI call does not use (`app` with `identity`, `slurm`,
`mcp`: `LAZY_GROUPS`; `api.cors` and `api.held` in `serving`, `provider.capacity` and `provider.quotas` in
`limits`: their groups' `lazy_groups`; `provider.aws` in `aws`) are imported on first use of a name.
"""

from typing import TYPE_CHECKING

from .api import ApiSettings as ApiSettings
from .fields import Flag as Flag
from .fields import Number as Number
from .fields import OptionalText as OptionalText
from .fields import Texts as Texts
from .fields import Whole as Whole
from .group import SECRET, SettingsGroup, mask_credentials
from .layers import ENV_VARS, load_settings
from .provider import LocalProviderSettings as LocalProviderSettings
from .provider import ProviderSettings as ProviderSettings
from .settings import LAZY_GROUPS as LAZY_GROUPS
from .settings import LoggingSettings as LoggingSettings
from .settings import SchedulerSettings as SchedulerSettings
from .settings import SdkSettings as SdkSettings
from .settings import Settings, default_data_dir
from .settings import StorageSettings as StorageSettings
from .settings import TemplateSettings as TemplateSettings

if TYPE_CHECKING:
    from .app import AppSettings, AuditSettings, AuthorizerOptionsSettings, AuthProviderSettings, SmtpSettings
    from .aws import AwsProviderSettings as AwsProviderSettings
    from .identity import (
        ExternalIdpSettings,
        FederationSettings,
        ManagedPoolSettings,
        PasswordHashingSettings,
        SamlSettings,
        SignInLimitsSettings,
    )
    from .limits import CapacitySettings as CapacitySettings
    from .limits import QuotaSettings as QuotaSettings
    from .mcp import McpSettings as McpSettings
    from .serving import CorsSettings as CorsSettings
    from .serving import HeldSettings
    from .slurm import SlurmNodeSet as SlurmNodeSet
    from .slurm import SlurmSettings as SlurmSettings
else:  # the lazy groups' models: imported with their module on first use
    from .._lazy import exports

    __getattr__ = exports(
        __name__,
        {
            **dict.fromkeys(
                ("AppSettings", "AuditSettings", "AuthorizerOptionsSettings", "AuthProviderSettings", "SmtpSettings"),
                "app",
            ),
            **dict.fromkeys(
                (
                    "ExternalIdpSettings",
                    "FederationSettings",
                    "ManagedPoolSettings",
                    "PasswordHashingSettings",
                    "SamlSettings",
                    "SignInLimitsSettings",
                ),
                "identity",
            ),
            **dict.fromkeys(("SlurmNodeSet", "SlurmSettings"), "slurm"),
            "AwsProviderSettings": "aws",
            "McpSettings": "mcp",
            **dict.fromkeys(("CapacitySettings", "QuotaSettings"), "limits"),
            **dict.fromkeys(("CorsSettings", "HeldSettings"), "serving"),
        },
        globals(),
    )

__all__ = [
    "ENV_VARS",
    "SECRET",
    "AppSettings",
    "AuditSettings",
    "AuthProviderSettings",
    "AuthorizerOptionsSettings",
    "ExternalIdpSettings",
    "FederationSettings",
    "HeldSettings",
    "ManagedPoolSettings",
    "PasswordHashingSettings",
    "SamlSettings",
    "Settings",
    "SettingsGroup",
    "SignInLimitsSettings",
    "SmtpSettings",
    "default_data_dir",
    "load_settings",
    "mask_credentials",
]
