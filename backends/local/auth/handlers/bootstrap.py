"""Handlers: client bootstrap configuration, runtime configuration, version, login profiles."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from pluginsdk._constants import VERSION
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

from ...registry import HandlerTable
from ..crypto import now, ts
from ._common import service

if TYPE_CHECKING:
    from ...call import Call
    from ...engine import Engine

handlers = HandlerTable()


@handlers.on(GetAmplifyConfigQuery)
async def get_amplify_config(engine: Engine, op: GetAmplifyConfigQuery, call: Call) -> AmplifyConfig:
    c = service(engine).config
    out = AmplifyConfig(
        region=c.region,
        api=c.api_url,
        content_security_policy=c.content_security_policy,
        banner_html_message=c.banner_html_message,
    )
    if c.mode == "managed":
        m = c.managed
        out = out.model_copy(
            update={
                "managed_user_pool_id": m.user_pool_id,
                "managed_app_client_id": m.app_client_id,
                "managed_identity_pool_id": m.identity_pool_id,
                "managed_user_pool_endpoint": m.endpoint or c.api_url,
            }
        )
    elif c.mode == "external":
        e = c.external
        out = out.model_copy(
            update={
                "external_oauth_idp_url": e.idp_url,
                "external_oauth_idp_client_id": e.client_id,
                "external_oauth_idp_scope": e.scope,
                "external_oauth_idp_scope_mfa": e.scope_mfa,
                "external_oauth_idp_token_endpoint": e.token_endpoint,
                "external_oauth_idp_authorization_endpoint": e.authorization_endpoint,
                "external_oauth_idp_discovery_endpoint": e.discovery_endpoint,
            }
        )
    return out


@handlers.on(GetVersionQuery)
async def get_version(engine: Engine, op: GetVersionQuery, call: Call) -> VersionInfo:
    return VersionInfo(version=VERSION)


@handlers.on(GetSecureConfigQuery)
async def get_secure_config(engine: Engine, op: GetSecureConfigQuery, call: Call) -> SecureConfig:
    c = service(engine).config
    flags = list(c.features_enabled)
    flags.append(
        {"managed": "AUTHPROVIDER_MANAGED", "external": "AUTHPROVIDER_EXTERNALOAUTHIDP"}.get(
            c.mode, "AUTHPROVIDER_APIKEY"
        )
    )
    if c.location_service_api_url:
        flags.append("LOCATIONSERVICES")
    return SecureConfig(
        features_enabled=",".join(dict.fromkeys(flags)),
        location_service_api_url=c.location_service_api_url,
        web_deployed_url=c.web_deployed_url,
    )


def _own(principal: Principal, user_id: str) -> None:
    if user_id != principal.user_id:
        raise PermissionDeniedError(
            "Not authorized: a login profile can be read and written only by its own user.",
            details={"field": "user_id", "value": user_id},
        )


@handlers.on(GetLoginProfileQuery)
async def get_login_profile(engine: Engine, op: GetLoginProfileQuery, call: Call) -> LoginProfile:
    principal = call.principal
    _own(principal, op.user_id)
    row = await service(engine).store.get_profile(op.user_id)
    if row is None:
        return LoginProfile(user_id=op.user_id)
    extra = json.loads(row["data"])
    return LoginProfile(**{**extra, "user_id": op.user_id, "email": row["email"]})


@handlers.on(UpdateLoginProfileCommand)
async def update_login_profile(engine: Engine, op: UpdateLoginProfileCommand, call: Call) -> LoginProfile:
    principal = call.principal
    _own(principal, op.user_id)
    store = service(engine).store
    email = op.email
    pool_user = await store.get_user(op.user_id)
    if pool_user is not None:  # organizational profile logic: the identity provider's email wins
        email = pool_user["email"]
    elif principal.email:
        email = principal.email
    await store.put_profile(op.user_id, email, "{}", ts(now()))
    return LoginProfile(user_id=op.user_id, email=email)
