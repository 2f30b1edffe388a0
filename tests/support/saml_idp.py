"""A SAML 2.0 identity provider in the test's process: pysaml2's `saml2.server.Server`, with a signing key and
certificate `cryptography` makes at test time. It reads our service provider's metadata as served, answers
an AuthnRequest with a (signed, or unsigned) response, and writes its own metadata for our configuration."""

from __future__ import annotations

import base64
import datetime
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

from tests.support.npm import unavailable

__all__ = ["IDP_ENTITY", "SamlIdp"]

IDP_ENTITY = "https://idp.example.test/saml"


def _key_and_cert(where: Path) -> tuple[Path, Path]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test idp")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .sign(key, hashes.SHA256())
    )
    key_file, cert_file = where / "idp.key", where / "idp.crt"
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return key_file, cert_file


class SamlIdp:
    def __init__(self, where: Path) -> None:
        from saml2 import BINDING_HTTP_REDIRECT
        from saml2.config import IdPConfig
        from saml2.metadata import create_metadata_string

        if shutil.which("xmlsec1") is None:
            unavailable("xmlsec1 is not installed: pysaml2 signs and verifies with it (Debian package xmlsec1)")
        self.where = where
        self.key_file, self.cert_file = _key_and_cert(where)
        self._base: dict[str, Any] = {
            "entityid": IDP_ENTITY,
            "key_file": str(self.key_file),
            "cert_file": str(self.cert_file),
            "allow_unknown_attributes": True,
            "service": {
                "idp": {
                    "endpoints": {"single_sign_on_service": [(f"{IDP_ENTITY}/sso", BINDING_HTTP_REDIRECT)]},
                    "policy": {"default": {"lifetime": {"minutes": 15}, "attribute_restrictions": None}},
                    "name_id_format": ["urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified"],
                }
            },
        }
        config = IdPConfig()
        config.load(dict(self._base))
        self.metadata_file = where / "idp-metadata.xml"
        xml = create_metadata_string(None, config=config, valid=24)
        self.metadata_file.write_bytes(xml if isinstance(xml, bytes) else xml.encode())
        self.sp_file = where / "sp-metadata.xml"
        self.servers: dict[int, Any] = {}

    def trust(self, sp_metadata: str) -> None:
        """Know our service provider from its metadata (as the server serves it)."""
        self.sp_file.write_text(sp_metadata)
        self.servers.clear()

    def _server(self, minutes: int) -> Any:
        """The IdP issuing assertions valid for `minutes` (negative: expired when issued)."""
        from saml2.config import IdPConfig
        from saml2.server import Server

        if minutes not in self.servers:
            config = IdPConfig()
            idp = dict(self._base["service"]["idp"])
            idp["policy"] = {"default": {"lifetime": {"minutes": minutes}, "attribute_restrictions": None}}
            config.load({**self._base, "service": {"idp": idp}, "metadata": {"local": [str(self.sp_file)]}})
            self.servers[minutes] = Server(config=config)
        return self.servers[minutes]

    def answer(
        self,
        sign_in_url: str,
        user: str,
        attributes: dict[str, list[str]],
        *,
        signed: bool = True,
        audience: str | None = None,
        minutes: int = 15,
    ) -> dict[str, str]:
        """The form our assertion consumer receives for the AuthnRequest in `sign_in_url`: SAMLResponse and
        RelayState; for another `audience` than the requester, valid for `minutes` (negative: expired)."""
        from saml2 import BINDING_HTTP_REDIRECT
        from saml2.saml import AUTHN_PASSWORD, NAMEID_FORMAT_UNSPECIFIED, NameID

        query = {k: v[-1] for k, v in parse_qs(urlsplit(sign_in_url).query).items()}
        server = self._server(minutes)
        request = server.parse_authn_request(query["SAMLRequest"], BINDING_HTTP_REDIRECT).message
        response = server.create_authn_response(
            identity=attributes,
            in_response_to=request.id,
            destination=request.assertion_consumer_service_url,
            sp_entity_id=audience or request.issuer.text,
            name_id=NameID(format=NAMEID_FORMAT_UNSPECIFIED, text=user),
            userid=user,
            authn={"class_ref": AUTHN_PASSWORD, "authn_auth": IDP_ENTITY},
            sign_assertion=signed,
            sign_response=False,
        )
        return {"SAMLResponse": base64.b64encode(str(response).encode()).decode(), "RelayState": query["RelayState"]}
