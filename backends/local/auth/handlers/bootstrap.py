"""Handlers: client bootstrap configuration, runtime configuration, version, login profiles."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from pluginsdk.constants import VERSION
from pluginsdk.errors import PermissionDeniedError
from pluginsdk.models.auth_results import AmplifyConfig, LoginProfile, SecureConfig, VersionInfo
from pluginsdk.operations.bootstrap import (
    GetAmplifyConfigQuery,
    GetLoginProfileQuery,
    GetSecureConfigQuery,
    GetVersionQuery,
    UpdateLoginProfileCommand,
)
from pluginsdk.principal import Principal

from ...deps import Deps
from ...registry import HandlerTable
from ..crypto import now, ts
from ..service import AuthService

if TYPE_CHECKING:
    from ...call import Call

handlers = HandlerTable(AuthService)


@handlers.on(GetAmplifyConfigQuery)
async def get_amplify_config(svc: AuthService, op: GetAmplifyConfigQuery, call: Call) -> AmplifyConfig:
    c = svc.config
    out = AmplifyConfig(
        region=c.region,
        api=c.api_url,
        content_security_policy=c.app.contentSecurityPolicy,
        banner_html_message=c.app.bannerHtmlMessage,
    )
    if c.mode == "managed":
        m = c.managed
        out = out.model_copy(
            update={
                "managed_user_pool_id": m.userPoolId,
                "managed_app_client_id": m.appClientId,
                "managed_identity_pool_id": m.identityPoolId,
                "managed_user_pool_endpoint": m.userPoolEndpoint or c.api_url,
            }
        )
    elif c.mode == "external":
        e = c.external
        out = out.model_copy(
            update={
                "external_oauth_idp_url": e.idpUrl,
                "external_oauth_idp_client_id": e.clientId,
                "external_oauth_idp_scope": e.scope,
                "external_oauth_idp_scope_mfa": e.scopeMfa,
                "external_oauth_idp_token_endpoint": e.tokenEndpoint,
                "external_oauth_idp_authorization_endpoint": e.authorizationEndpoint,
                "external_oauth_idp_discovery_endpoint": e.discoveryEndpoint,
            }
        )
    return out


@handlers.on(GetVersionQuery, receives=Deps)  # answered with authorization disabled too
async def get_version(deps: Deps, op: GetVersionQuery, call: Call) -> VersionInfo:
    return VersionInfo(version=VERSION)


@handlers.on(GetSecureConfigQuery)
async def get_secure_config(svc: AuthService, op: GetSecureConfigQuery, call: Call) -> SecureConfig:
    c = svc.config
    flags = list(c.app.featuresEnabled)
    flags.append(
        {"managed": "AUTHPROVIDER_MANAGED", "external": "AUTHPROVIDER_EXTERNALOAUTHIDP"}.get(
            c.mode, "AUTHPROVIDER_APIKEY"
        )
    )
    if c.app.locationServiceApiUrl:
        flags.append("LOCATIONSERVICES")
    return SecureConfig(
        features_enabled=",".join(dict.fromkeys(flags)),
        location_service_api_url=c.app.locationServiceApiUrl,
        web_deployed_url=c.app.webDeployedUrl,
    )


def _own(principal: Principal, user_id: str) -> None:
    if user_id != principal.user_id:
        raise PermissionDeniedError(
            "Not authorized: a login profile can be read and written only by its own user.",
            details={"field": "user_id", "value": user_id},
        )


@handlers.on(GetLoginProfileQuery)
async def get_login_profile(svc: AuthService, op: GetLoginProfileQuery, call: Call) -> LoginProfile:
    principal = call.principal
    _own(principal, op.user_id)
    row = await svc.store.get_profile(op.user_id)
    if row is None:
        return LoginProfile(user_id=op.user_id)
    extra = json.loads(row["data"])
    return LoginProfile(**{**extra, "user_id": op.user_id, "email": row["email"]})


@handlers.on(UpdateLoginProfileCommand)
async def update_login_profile(svc: AuthService, op: UpdateLoginProfileCommand, call: Call) -> LoginProfile:
    principal = call.principal
    _own(principal, op.user_id)
    store = svc.store
    email = op.email
    pool_user = await store.get_user(op.user_id)
    if pool_user is not None:  # organizational profile logic: the identity provider's email wins
        email = pool_user["email"]
    elif principal.email:
        email = principal.email
    await store.put_profile(op.user_id, email, "{}", ts(now()))
    return LoginProfile(user_id=op.user_id, email=email)
