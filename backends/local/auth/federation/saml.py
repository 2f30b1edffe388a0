"""SAML 2.0 sign-in: this server as a service provider, with pysaml2 (and its `xmlsec1` for signatures).

The identity provider is read from its metadata (`federation.saml.idpMetadataFile`). A sign-in sends an
AuthnRequest by the HTTP-Redirect binding, its `RelayState` the begun sign-in's state (which keeps the
request id); the answer comes back by HTTP-POST to `<spBaseUrl>/ui/sso/saml/acs`. pysaml2 checks it:
assertions must be signed by the IdP's metadata certificate, the audience must be this SP, the recipient
and destination its assertion consumer URL, the times valid (60 s of clock skew allowed), the answer in
response to this sign-in's request (unsolicited answers are refused).
An assertion id is remembered in the store until the assertion expires: a replay is refused.
"""

from __future__ import annotations

import asyncio
import calendar
import logging
import os
import time
import warnings
from typing import TYPE_CHECKING, Any

from pluginsdk.errors import AuthenticationError, ConfigurationError
from pluginsdk.models.auth_results import FederatedSignIn, SamlMetadata

from . import Identity, begin, groups_of, new_state, resume

if TYPE_CHECKING:
    from saml2.client import Saml2Client

    from ..service import AuthService

__all__ = ["finish", "metadata", "start"]

log = logging.getLogger("pluginsdk.auth")

ACS_PATH = "/ui/sso/saml/acs"
_SKEW_SECONDS = 60
_REFUSED = "The identity provider's SAML answer is not valid for this sign-in; start it again."
_clients: dict[tuple[str, str, float], Saml2Client] = {}


def _import() -> Any:
    with warnings.catch_warnings():  # pysaml2 names a cipher mode cryptography moved (a warning on import)
        warnings.filterwarnings("ignore", message="CFB has been moved")
        try:
            import saml2
            import saml2.client
            import saml2.config
            import saml2.metadata
        except ImportError:
            raise ConfigurationError(
                "SAML sign-in needs pysaml2: install the `sso` extra (pip install 'pluginsdk[sso]').",
                key="app.authProvider.useManaged.useSaml",
            ) from None
    return saml2


def _client(svc: AuthService) -> Saml2Client:
    """The service provider (kept per configuration and metadata file version)."""
    saml2 = _import()
    conf = svc.config.provider.federation.saml
    try:
        stamp = os.stat(conf.idpMetadataFile).st_mtime
    except OSError as exc:
        raise ConfigurationError(
            f"federation.saml.idpMetadataFile cannot be read: {exc.strerror}.",
            key="app.authProvider.federation.saml.idpMetadataFile",
        ) from None
    key = (conf.entity_id, conf.idpMetadataFile, stamp)
    found = _clients.get(key)
    if found is None:
        acs = conf.spBaseUrl.rstrip("/") + ACS_PATH
        config = saml2.config.SPConfig()
        config.load(
            {
                "entityid": conf.entity_id,
                "metadata": {"local": [conf.idpMetadataFile]},
                "accepted_time_diff": _SKEW_SECONDS,
                "allow_unknown_attributes": True,
                "service": {
                    "sp": {
                        "endpoints": {"assertion_consumer_service": [(acs, saml2.BINDING_HTTP_POST)]},
                        "want_assertions_signed": True,
                        "want_response_signed": False,
                        "allow_unsolicited": False,
                        "authn_requests_signed": False,
                    }
                },
            }
        )
        _clients.clear()
        found = _clients[key] = saml2.client.Saml2Client(config)
    return found


def _idp(client: Saml2Client) -> str:
    idps = list(client.metadata.identity_providers())
    if len(idps) != 1:
        raise ConfigurationError(
            "federation.saml.idpMetadataFile must describe exactly one identity provider.",
            key="app.authProvider.federation.saml.idpMetadataFile",
        )
    return str(idps[0])


async def start(svc: AuthService) -> FederatedSignIn:
    """The IdP's sign-in URL with a new AuthnRequest; the request id kept under the RelayState."""
    client = _client(svc)
    state = new_state()
    request_id, info = client.prepare_for_authenticate(entityid=_idp(client), relay_state=state)
    url = dict(info["headers"])["Location"]
    await begin(svc, {"kind": "saml", "request_id": request_id}, state)
    return FederatedSignIn(redirect_url=url, state=state)


def _parse(client: Saml2Client, answer: str, request_id: str) -> Any:
    saml2 = _import()
    acs = client.config.getattr("endpoints", "sp")["assertion_consumer_service"][0][0]
    try:
        response = client.parse_authn_request_response(answer, saml2.BINDING_HTTP_POST, outstanding={request_id: acs})
    except Exception as exc:  # pysaml2 refuses with many exception types: every one is a refusal
        log.info("SAML answer refused: %s", type(exc).__name__)
        raise AuthenticationError(_REFUSED) from None
    if response is None or response.assertion is None:
        raise AuthenticationError(_REFUSED)
    return response


def _expires(response: Any) -> float:
    """When the assertion stops being valid (its subject confirmation's or conditions' NotOnOrAfter)."""
    from saml2.time_util import str_to_time

    ends = []
    assertion = response.assertion
    for confirmation in assertion.subject.subject_confirmation or []:
        data = confirmation.subject_confirmation_data
        if data is not None and data.not_on_or_after:
            ends.append(data.not_on_or_after)
    if assertion.conditions is not None and assertion.conditions.not_on_or_after:
        ends.append(assertion.conditions.not_on_or_after)
    latest = max((calendar.timegm(str_to_time(e)) for e in ends), default=time.time() + 3600)
    return latest + _SKEW_SECONDS


async def finish(svc: AuthService, state: str, answer: str) -> Identity:
    """Who the IdP signed in, from the SAMLResponse posted back for `state` (single use)."""
    pending = await resume(svc, state)
    if pending.get("kind") != "saml":
        raise AuthenticationError(_REFUSED)
    client = _client(svc)
    response = await asyncio.to_thread(_parse, client, answer, pending["request_id"])
    if not await svc.store.remember_assertion(str(response.assertion.id), _expires(response)):
        raise AuthenticationError("This SAML assertion was used before; sign in again.")
    conf, fed = svc.config.provider.federation.saml, svc.config.provider.federation
    attributes: dict[str, Any] = response.ava or {}
    if conf.userIdAttribute:
        found = groups_of(attributes.get(conf.userIdAttribute))
        user_id = found[0] if found else ""
    else:
        user_id = response.name_id.text if response.name_id is not None else ""
    if not user_id:
        raise AuthenticationError("The SAML assertion names no user.")
    emails = groups_of(attributes.get(conf.emailAttribute))
    return Identity(
        issuer=str(response.issuer()),
        user_id=str(user_id).strip(),
        email=emails[0] if emails else None,
        groups=groups_of(attributes.get(fed.rolesClaim)),
        mfa=False,
    )


def metadata(svc: AuthService) -> SamlMetadata:
    """This SP's metadata: entity id, assertion consumer service, wanting signed assertions."""
    saml2 = _import()
    client = _client(svc)
    xml = saml2.metadata.create_metadata_string(None, config=client.config, valid=24 * 7)
    conf = svc.config.provider.federation.saml
    return SamlMetadata(
        entity_id=conf.entity_id,
        acs_url=conf.spBaseUrl.rstrip("/") + ACS_PATH,
        metadata=xml.decode("utf-8") if isinstance(xml, bytes) else str(xml),
    )
