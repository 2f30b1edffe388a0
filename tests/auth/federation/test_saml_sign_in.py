"""SAML 2.0 sign-in to the console: pysaml2's IdP in the test (a key and certificate made now), our service
provider on a loopback server. Signed assertions sign in (groups become roles); an unsigned assertion, a
replayed one, one for another sign-in are refused; the SP metadata is served."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from pluginsdk import AuthenticationError, PluginSDK
from tests.auth.conftest import free_port
from tests.support.backends import BACKENDS, base_config, open_sdk_on
from tests.support.remote import running_server
from tests.support.saml_idp import IDP_ENTITY, SamlIdp

SAM = {"email": ["sam@example.com"], "groups": ["platform"]}
CHEAP_HASHING = {"timeCost": 1, "memoryKib": 8, "parallelism": 1}


def saml_app(idp: SamlIdp, base: str) -> dict[str, object]:
    return {
        "authProvider": {
            "useManaged": {"enabled": True, "useSaml": True, "passwordHashing": CHEAP_HASHING},
            "federation": {
                "roleMapping": {"platform": ["admin"], "engineers": ["basicReadOnly"]},
                "saml": {"idpMetadataFile": str(idp.metadata_file), "spBaseUrl": base, "displayName": "Corp SSO"},
            },
        }
    }


@dataclass
class Site:
    url: str
    idp: SamlIdp
    config: dict[str, object]


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    idp = SamlIdp(tmp_path)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    config = base_config(tmp_path, app=saml_app(idp, base))
    with running_server(config, port) as url:
        metadata = httpx.get(f"{url}/ui/sso/saml/metadata", timeout=10)
        assert metadata.status_code == 200 and "samlmetadata+xml" in metadata.headers["content-type"]
        assert f"{base}/ui/sso/saml/acs" in metadata.text and 'WantAssertionsSigned="true"' in metadata.text
        idp.trust(metadata.text)
        yield Site(url, idp, config)


def _start(client: httpx.Client, site: Site) -> str:
    begun = client.get(f"{site.url}/ui/sso/start")
    assert begun.status_code == 303
    location = begun.headers["location"]
    assert location.startswith(f"{IDP_ENTITY}/sso?SAMLRequest=")
    return location


def _post(client: httpx.Client, site: Site, form: dict[str, str]) -> httpx.Response:
    """The IdP's auto-posting page, as a browser sends it: a cross-site form POST."""
    return client.post(f"{site.url}/ui/sso/saml/acs", data=form, headers={"origin": "https://idp.example.test"})


def test_signed_assertion_signs_in_to_the_console_with_roles_from_groups(site: Site) -> None:
    with httpx.Client(timeout=20) as browser:
        assert "Sign in with Corp SSO" in browser.get(f"{site.url}/ui/login").text
        form = site.idp.answer(_start(browser, site), "sam", SAM)
        landed = _post(browser, site, form)
        assert landed.status_code == 200 and "Signed in" in landed.text, landed.text
        home = browser.get(f"{site.url}/ui/")
        assert home.status_code == 200 and "<span>sam</span>" in home.text
        assert "/ui/constraints" in home.text  # platform -> admin
        # the same assertion again: refused (its sign-in is used, its id remembered)
        with httpx.Client(timeout=20) as other:
            again = _post(other, site, form)
            assert again.status_code == 401 and "Signed in" not in again.text
            assert other.get(f"{site.url}/ui/", follow_redirects=False).status_code == 303


def test_unsigned_assertion_is_refused(site: Site) -> None:
    with httpx.Client(timeout=20) as browser:
        form = site.idp.answer(_start(browser, site), "sam", SAM, signed=False)
        refused = _post(browser, site, form)
        assert refused.status_code == 401 and "not valid for this sign-in" in refused.text
        assert browser.get(f"{site.url}/ui/", follow_redirects=False).status_code == 303


@pytest.mark.parametrize("case", ["expired", "other audience", "altered"])
def test_expired_misaddressed_or_altered_assertions_are_refused(site: Site, case: str) -> None:
    with httpx.Client(timeout=20) as browser:
        url = _start(browser, site)
        if case == "expired":
            form = site.idp.answer(url, "sam", SAM, minutes=-10)
        elif case == "other audience":
            form = site.idp.answer(url, "sam", SAM, audience="https://other-sp.example.test/metadata")
        else:  # a signed assertion with its subject changed afterwards
            form = site.idp.answer(url, "sam", SAM)
            xml = base64.b64decode(form["SAMLResponse"]).decode()
            assert ">sam<" in xml
            form["SAMLResponse"] = base64.b64encode(xml.replace(">sam<", ">pat<").encode()).decode()
        refused = _post(browser, site, form)
        assert refused.status_code == 401 and "not valid for this sign-in" in refused.text, refused.text[:500]
        assert browser.get(f"{site.url}/ui/", follow_redirects=False).status_code == 303


def test_an_answer_for_another_sign_in_is_refused(site: Site) -> None:
    with httpx.Client(timeout=20) as browser:
        form = site.idp.answer(_start(browser, site), "sam", SAM)
        other = site.idp.answer(_start(browser, site), "sam", SAM)
        crossed = _post(browser, site, {"SAMLResponse": form["SAMLResponse"], "RelayState": other["RelayState"]})
        assert crossed.status_code == 401
        bad = _post(browser, site, {"SAMLResponse": "bm90IHhtbA==", "RelayState": form["RelayState"]})
        assert bad.status_code == 401  # not XML: a refusal, never a 500


@pytest.mark.parametrize("kind", BACKENDS)
async def test_the_operations_on_both_backends(kind: str, site: Site, tmp_path: Path) -> None:
    async with open_sdk_on(kind, site.config, tmp_path) as sdk:
        options = await sdk.get_sign_in_options()
        assert options.federation == "saml" and options.display_name == "Corp SSO"
        meta = await sdk.get_saml_metadata()
        assert meta.acs_url.endswith("/ui/sso/saml/acs") and meta.entity_id in meta.metadata
        begun = await sdk.start_federated_sign_in()
        form = site.idp.answer(begun.redirect_url, "sam", {"email": ["sam@example.com"], "groups": ["engineers"]})
        tokens = await sdk.finish_federated_sign_in(state=form["RelayState"], saml_response=form["SAMLResponse"])
        assert tokens.id_token
        listing = await sdk.list_user_roles()
        assert {r for a in listing.message.items if a.user_id == "sam" for r in a.role_name} == {"basicReadOnly"}
        with pytest.raises(AuthenticationError):
            await sdk.finish_federated_sign_in(state=form["RelayState"], saml_response=form["SAMLResponse"])
        async with PluginSDK(backend="remote", api_url=site.url, api_key=f"Bearer {tokens.id_token}") as sam:
            assert (await sam.list_templates()).templates == []
