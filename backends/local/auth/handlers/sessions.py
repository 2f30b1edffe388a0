"""Handlers: managed-pool sessions (sign-in, refresh, sign-out, password change, TOTP MFA, JWKS).

A session row holds the refresh token's hash, the MFA flag and the revoked
flag; id and access tokens name it (`sid`), and every request reads it, so a
sign-out, password change or user deletion ends the session at once.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from pluginsdk.errors import AuthenticationError, ValidationError
from pluginsdk.models.auth_results import Jwks, MfaSetup, SessionTokens
from pluginsdk.operations.auth_sessions import (
    ChangePasswordCommand,
    GetJwksQuery,
    LoginCommand,
    LogoutCommand,
    RefreshTokensCommand,
    SetupMfaCommand,
    VerifyMfaCommand,
)
from pluginsdk.principal import Principal

from ...registry import HandlerTable
from ...store.db import Row
from ..crypto import new_refresh_token, now, parse_ts, sha256_hex, ts
from ..service import AuthService
from ._common import service
from .users import CONFIRMED, FORCE_CHANGE

if TYPE_CHECKING:
    from ...engine import Engine

handlers = HandlerTable()

_SCHEME = "Bearer"
_BAD_LOGIN = "Incorrect user name or password."


def _managed(engine: Engine) -> AuthService:
    svc = service(engine)
    if svc.tokens is None:
        raise ValidationError(
            "Password sign-in is unavailable: the managed user pool is not enabled "
            "(app.authProvider.useManaged.enabled).",
            details={"field": "app.authProvider.useManaged.enabled", "value": False, "expected": True},
        )
    return svc


def _check_password(svc: AuthService, user_id: str, password: str) -> None:
    minimum = svc.config.managed.password_min_length
    problems = []
    if len(password) < minimum or len(password) > 256:
        problems.append(f"be {minimum} to 256 characters long")
    if password.strip() != password:
        problems.append("not start or end with whitespace")
    classes = sum(
        (
            any(c.islower() for c in password),
            any(c.isupper() for c in password),
            any(c.isdigit() for c in password),
            any(not c.isalnum() for c in password),
        )
    )
    if classes < 3:
        problems.append("mix at least three of: lower case, upper case, digits, symbols")
    if user_id.lower() in password.lower():
        problems.append("not contain the user name")
    if problems:
        raise ValidationError(
            "The new password must " + "; ".join(problems) + ".",
            details={"field": "new_password", "expected": "; ".join(problems)},
        )


def _totp_step(svc: AuthService, sealed: str | None, user_id: str, code: str) -> int | None:
    """The time-step (30 s counter) whose code `code` is, within one step of now; None when it is none.

    The caller claims the step (`claim_totp_step`) so a code, once accepted, is never accepted again.
    """
    import hmac
    import time

    import pyotp

    if not sealed:
        return None
    totp = pyotp.TOTP(svc.box.open(sealed, f"totp:{user_id}"))
    current = totp.timecode(time.time())
    matched = None
    for step in (current - 1, current, current + 1):  # all three compared: no timing hint of which matched
        if hmac.compare_digest(code.encode("utf-8"), totp.generate_otp(step).encode("utf-8")):
            matched = step
    return matched


async def _user(svc: AuthService, principal: Principal) -> Row:
    user = await svc.store.get_user(principal.user_id)
    if user is None:
        raise ValidationError(
            f"'{principal.user_id}' is not a user of the managed user pool.",
            details={"field": "user_id", "value": principal.user_id},
        )
    return user


async def _open_session(svc: AuthService, user: Row, mfa: bool) -> SessionTokens:
    assert svc.tokens is not None
    refresh = new_refresh_token()
    sid = str(uuid.uuid4())
    created = now()
    await svc.store.insert_session(
        {
            "session_id": sid,
            "user_id": user["user_id"],
            "refresh_hash": sha256_hex(refresh),
            "mfa": int(mfa),
            "created_at": ts(created),
            "expires_at": ts(created + timedelta(seconds=svc.config.managed.refresh_token_seconds)),
            "revoked": 0,
        }
    )
    id_token, access, lifetime = svc.tokens.issue(user_id=user["user_id"], email=user["email"], session_id=sid, mfa=mfa)
    return SessionTokens(
        id_token=id_token,
        access_token=access,
        refresh_token=refresh,
        expires_in=lifetime,
        token_type=_SCHEME,
        mfa=mfa,
        message="Signed in.",
    )


@handlers.on(LoginCommand)
async def login(engine: Engine, op: LoginCommand, principal: Principal) -> SessionTokens:
    """Password, then the pending password change, then the MFA code; each missing step answers a challenge."""
    svc = _managed(engine)
    user = await _signed_in_user(svc, op.username, op.password)
    changes: dict[str, Any] = {}
    if user["status"] == FORCE_CHANGE:
        _check_temporary_password_live(user)
        if op.new_password is None:
            return SessionTokens(
                challenge_name="NEW_PASSWORD_REQUIRED",
                message="The temporary password must be replaced: sign in again with new_password.",
            )
        changes = await _replace_temporary_password(svc, user, op.password, op.new_password)
    step = None
    if user["mfa_enabled"]:
        if op.totp_code is None:
            return SessionTokens(
                challenge_name="SOFTWARE_TOKEN_MFA",
                message="Multi-factor sign-in: sign in again with totp_code from the authenticator app.",
            )
        step = _valid_totp_step(svc, user, op.totp_code)
    async with svc.store.transaction():
        if step is not None and not await svc.store.claim_totp_step(user["user_id"], step):
            raise AuthenticationError("The MFA code was used already; wait for the next one.")
        if changes:
            await svc.store.update_user(user["user_id"], changes)
        return await _open_session(svc, user, step is not None)


async def _signed_in_user(svc: AuthService, username: str, password: str) -> Row:
    """The enabled user these credentials name; one message for every failure (no user enumeration)."""
    user = await svc.store.get_user(username)
    ok = await svc.passwords.averify(user["password_hash"] if user else None, password)
    if user is None or not ok or not user["enabled"]:
        raise AuthenticationError(_BAD_LOGIN)
    return user


def _check_temporary_password_live(user: Row) -> None:
    expires = user["password_expires_at"]
    if expires is not None and parse_ts(expires) <= now():
        raise AuthenticationError("The temporary password has expired; ask an administrator to reset it.")


async def _replace_temporary_password(svc: AuthService, user: Row, old: str, new: str) -> dict[str, Any]:
    """The user-row changes that confirm the account with its new password (checked against the policy)."""
    _check_password(svc, user["user_id"], new)
    if new == old:
        raise ValidationError("The new password must differ from the temporary one.", details={"field": "new_password"})
    return {
        "password_hash": await svc.passwords.ahash(new),
        "password_expires_at": None,
        "status": CONFIRMED,
        "updated_at": ts(now()),
    }


def _valid_totp_step(svc: AuthService, user: Row, code: str) -> int:
    step = _totp_step(svc, user["totp_secret"], user["user_id"], code)
    if step is None:
        raise AuthenticationError("The MFA code is not valid.")
    return step


@handlers.on(RefreshTokensCommand)
async def refresh_tokens(engine: Engine, op: RefreshTokensCommand, principal: Principal) -> SessionTokens:
    svc = _managed(engine)
    assert svc.tokens is not None
    ended = AuthenticationError("The refresh token is invalid or expired; sign in again.")
    session = await svc.store.session_by_refresh(sha256_hex(op.refresh_token))
    if session is None:
        raise ended
    state = await svc.store.session_state(session["session_id"])
    if state is None or state["revoked"] or not state["enabled"] or parse_ts(state["expires_at"]) <= now():
        raise ended
    mfa = bool(state["mfa"])
    id_token, access, lifetime = svc.tokens.issue(
        user_id=state["user_id"], email=state["email"], session_id=state["session_id"], mfa=mfa
    )
    return SessionTokens(
        id_token=id_token, access_token=access, expires_in=lifetime, token_type=_SCHEME, mfa=mfa, message="Refreshed."
    )


def _session_id(principal: Principal) -> str | None:
    sid = principal.claims.get("sid") if principal.auth_method == "jwt" else None
    return str(sid) if sid else None


@handlers.on(LogoutCommand)
async def logout(engine: Engine, op: LogoutCommand, principal: Principal) -> SessionTokens:
    svc = service(engine)
    sid = _session_id(principal)
    if sid is None:
        raise ValidationError(
            "Only a signed-in session (Bearer token) can sign out.", details={"field": "Authorization"}
        )
    await svc.store.revoke_session(sid)
    return SessionTokens(message="Signed out: the session's tokens no longer work.")


@handlers.on(ChangePasswordCommand)
async def change_password(engine: Engine, op: ChangePasswordCommand, principal: Principal) -> SessionTokens:
    svc = _managed(engine)
    user = await _user(svc, principal)
    if not await svc.passwords.averify(user["password_hash"], op.previous_password):
        raise AuthenticationError("The current password is not correct.")
    _check_password(svc, user["user_id"], op.proposed_password)
    new_hash = await svc.passwords.ahash(op.proposed_password)
    async with svc.store.transaction():
        await svc.store.update_user(
            user["user_id"],
            {"password_hash": new_hash, "password_expires_at": None, "status": CONFIRMED, "updated_at": ts(now())},
        )
        await svc.store.revoke_sessions(user["user_id"], keep=_session_id(principal))
    return SessionTokens(message="Password changed; other sessions were signed out.")


@handlers.on(SetupMfaCommand)
async def setup_mfa(engine: Engine, op: SetupMfaCommand, principal: Principal) -> MfaSetup:
    import pyotp

    svc = _managed(engine)
    user = await _user(svc, principal)
    secret = pyotp.random_base32()
    await svc.store.update_user(
        user["user_id"], {"totp_pending": svc.box.seal(secret, f"totp:{user['user_id']}"), "updated_at": ts(now())}
    )
    uri = pyotp.TOTP(secret).provisioning_uri(name=user["user_id"], issuer_name=svc.config.managed.issuer)
    return MfaSetup(
        secret_code=secret, otpauth_uri=uri, message="Add the secret to an authenticator app, then verify a code."
    )


@handlers.on(VerifyMfaCommand)
async def verify_mfa(engine: Engine, op: VerifyMfaCommand, principal: Principal) -> SessionTokens:
    svc = _managed(engine)
    assert svc.tokens is not None
    user = await _user(svc, principal)
    if not user["totp_pending"]:
        raise ValidationError("No MFA set-up is pending: call setup_mfa first.", details={"field": "code"})
    step = _totp_step(svc, user["totp_pending"], user["user_id"], op.code)
    if step is None:
        raise ValidationError(
            "The MFA code is not valid; check the authenticator app's clock.", details={"field": "code"}
        )
    sid = _session_id(principal)
    async with svc.store.transaction():
        await svc.store.update_user(
            user["user_id"],
            {
                "totp_secret": user["totp_pending"],
                "totp_pending": None,
                "totp_last_step": step,  # the code that enabled MFA cannot then sign in
                "mfa_enabled": 1,
                "updated_at": ts(now()),
            },
        )
        if sid is not None:
            await svc.store.set_session_mfa(sid)
    if sid is None:
        return SessionTokens(mfa=False, message="MFA enabled; sign in with a TOTP code for a multi-factor session.")
    id_token, access, lifetime = svc.tokens.issue(
        user_id=user["user_id"], email=user["email"], session_id=sid, mfa=True
    )
    return SessionTokens(
        id_token=id_token,
        access_token=access,
        expires_in=lifetime,
        token_type=_SCHEME,
        mfa=True,
        message="MFA enabled; this session is now multi-factor.",
    )


@handlers.on(GetJwksQuery)
async def get_jwks(engine: Engine, op: GetJwksQuery, principal: Principal) -> Jwks:
    svc = service(engine)
    return Jwks(keys=svc.tokens.jwks() if svc.tokens is not None else [])
