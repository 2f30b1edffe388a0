"""Handlers: federated sign-in (OIDC or SAML 2.0, whichever `app.authProvider.useManaged` turns on).

The provider's answer is checked by the protocol's module (`oidc.py`, `saml.py`); `federation.admit` decides
who may sign in and with which roles; the session is the managed pool's, as after a password sign-in.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Literal

from pluginsdk.errors import AuthenticationError, ValidationError
from pluginsdk.models.auth_results import FederatedSignIn, SamlMetadata, SessionTokens, SignInOptions
from pluginsdk.operations.federation import (
    FinishFederatedSignInCommand,
    GetSamlMetadataQuery,
    GetSignInOptionsQuery,
    StartFederatedSignInCommand,
)

from ...registry import HandlerTable
from ..federation import admit
from ..service import AuthService
from .sessions import open_session

if TYPE_CHECKING:
    from ...call import Call

handlers = HandlerTable(AuthService)


def _kind(svc: AuthService) -> Literal["oidc", "saml"] | None:
    managed = svc.config.managed
    if not managed.enabled:
        return None
    return "oidc" if managed.useOidc else "saml" if managed.useSaml else None


def _federated(svc: AuthService, kind: str | None = None) -> str:
    found = _kind(svc)
    if found is None or (kind is not None and found != kind):
        wanted = "useSaml" if kind == "saml" else "useOidc or useSaml"
        raise ValidationError(
            f"Federated sign-in is not configured here (app.authProvider.useManaged.{wanted}).",
            details={"field": f"app.authProvider.useManaged.{wanted}", "value": False, "expected": True},
        )
    return found


@handlers.on(GetSignInOptionsQuery)
async def get_sign_in_options(svc: AuthService, op: GetSignInOptionsQuery, call: Call) -> SignInOptions:
    kind, passwords = _kind(svc), svc.tokens is not None
    if kind == "saml":
        name = svc.config.provider.federation.saml.name
        return SignInOptions(federation="saml", display_name=name, passwords=passwords)
    if kind == "oidc" and svc.external is not None:
        end = None
        with contextlib.suppress(AuthenticationError):  # the provider may be down: its button still shows
            end = await svc.external.discovery.endpoint("end_session_endpoint")
        idp = svc.config.external
        return SignInOptions(
            federation="oidc", display_name=idp.name, end_session_url=end, client_id=idp.clientId, passwords=passwords
        )
    return SignInOptions(passwords=passwords)


@handlers.on(StartFederatedSignInCommand)
async def start_federated_sign_in(svc: AuthService, op: StartFederatedSignInCommand, call: Call) -> FederatedSignIn:
    kind = _federated(svc)
    if call.principal.auth_method == "none":  # an anonymous start, counted per client address
        client = call.principal.claims.get("client")
        await svc.throttle.created("federation-start", client if isinstance(client, str) else None)
    if kind == "saml":
        from ..federation import saml

        return await saml.start(svc)
    from ..federation import oidc

    return await oidc.start(svc, op.redirect_uri)


@handlers.on(FinishFederatedSignInCommand)
async def finish_federated_sign_in(svc: AuthService, op: FinishFederatedSignInCommand, call: Call) -> SessionTokens:
    kind = _federated(svc)
    answer = op.saml_response if kind == "saml" else op.code
    if answer is None:
        field = "saml_response" if kind == "saml" else "code"
        raise ValidationError(f"A {kind.upper()} sign-in is finished with `{field}`.", details={"field": field})
    if kind == "saml":
        from ..federation import saml

        who = await saml.finish(svc, op.state, answer)
    else:
        from ..federation import oidc

        who = await oidc.finish(svc, op.state, answer)
    user = await admit(svc, who)
    tokens = await open_session(svc, user, who.mfa)
    return tokens.model_copy(update={"message": "Signed in through the identity provider."})


@handlers.on(GetSamlMetadataQuery)
async def get_saml_metadata(svc: AuthService, op: GetSamlMetadataQuery, call: Call) -> SamlMetadata:
    _federated(svc, "saml")
    from ..federation import saml

    return saml.metadata(svc)
