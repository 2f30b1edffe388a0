"""Handlers: managed-pool sessions (sign-in, refresh, sign-out, password change, TOTP MFA, JWKS).

A session row holds the refresh token's hash, the MFA flag and the revoked
flag; id and access tokens name it (`sid`), and every request reads it, so a
sign-out, password change or user deletion ends the session at once.

A session is multi-factor only when it proved the factor: signed in with a TOTP code, or verified the
set-up it started itself. Replacing or turning off an enrolled factor needs that factor (a multi-factor
session, or a code of the enrolled secret); API keys and in-process calls never set up MFA. Failed
passwords and codes count towards the sign-in limits (`throttle.py`); every MFA and password change is
in the audit log.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from pluginsdk.errors import AuthenticationError, PermissionDeniedError, SDKError, ValidationError
from pluginsdk.models.auth_results import Jwks, MfaSetup, SessionTokens
from pluginsdk.operations.auth_sessions import (
    ChangePasswordCommand,
    DisableMfaCommand,
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
from ..audit import user_change
from ..crypto import new_refresh_token, now, parse_ts, sha256_hex, ts
from ..service import AuthService
from ._common import clear_mfa
from .users import CONFIRMED, FORCE_CHANGE

if TYPE_CHECKING:
    from ...call import Call

handlers = HandlerTable(AuthService)

_SCHEME = "Bearer"
_BAD_LOGIN = "Incorrect user name or password."


def _managed(svc: AuthService) -> AuthService:
    if svc.tokens is None:
        raise ValidationError(
            "Password sign-in is unavailable: the managed user pool is not enabled "
            "(app.authProvider.useManaged.enabled).",
            details={"field": "app.authProvider.useManaged.enabled", "value": False, "expected": True},
        )
    return svc


def _check_password(svc: AuthService, user_id: str, password: str) -> None:
    minimum = svc.config.managed.passwordMinLength
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


async def open_session(svc: AuthService, user: Row, mfa: bool) -> SessionTokens:
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
            "expires_at": ts(created + timedelta(days=svc.config.managed.refreshTokenDays)),
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
async def login(svc: AuthService, op: LoginCommand, call: Call) -> SessionTokens:
    """Sign-in limits, password, then the pending password change, then the MFA code; each missing step answers
    a challenge."""
    principal = call.principal
    svc = _managed(svc)
    client = _client(principal)
    await svc.throttle.check(op.username, client)  # before any hashing: a locked name costs nothing
    user = await _signed_in_user(svc, op.username, op.password, client)
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
        step = await _proved_step(
            svc, user, op.totp_code, AuthenticationError("The MFA code is not valid."), client=client
        )
    async with svc.store.transaction():
        if step is not None and not await svc.store.claim_totp_step(user["user_id"], step):
            raise AuthenticationError("The MFA code was used already; wait for the next one.")
        if changes:
            await svc.store.update_user(user["user_id"], changes)
            await user_change(svc.store, user["user_id"], "change_password", user["user_id"], user)
        tokens = await open_session(svc, user, step is not None)
    await svc.throttle.succeeded(user["user_id"])
    if not user["mfa_enabled"]:
        tokens = await _mfa_hint(svc, user["user_id"], tokens)
    return tokens


async def _mfa_hint(svc: AuthService, user_id: str, tokens: SessionTokens) -> SessionTokens:
    """A session of a user without an authenticator whose roles include one requiring MFA: those roles do not
    count until the user enrols one (`mfa_setup_required`, and the message names them)."""
    snap = await svc.snapshot()
    guarded = [r for r in (await svc.with_roles(Principal(user_id=user_id), snap)).roles if snap.roles.get(r)]
    if not guarded:
        return tokens
    message = (
        "Signed in. Roles that require multi-factor sessions do not count until you set up an authenticator "
        f"(setup_mfa, then verify_mfa): {', '.join(guarded)}."
    )
    return tokens.model_copy(update={"mfa_setup_required": True, "message": message})


def _client(principal: Principal) -> str | None:
    """The client address the server saw for an unauthenticated request (None in-process)."""
    client = principal.claims.get("client") if principal.auth_method == "none" else None
    return str(client) if client else None


async def _signed_in_user(svc: AuthService, username: str, password: str, client: str | None) -> Row:
    """The enabled user these credentials name; one message for every failure (no user enumeration), and
    every failure counted, known user or not."""
    user = await svc.store.get_user(username)
    ok = await svc.passwords.averify(user["password_hash"] if user else None, password)
    if user is None or not ok or not user["enabled"]:
        await svc.throttle.failed(username, client, kind="password")
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


async def _proved_step(
    svc: AuthService, user: Row, code: str, wrong: SDKError, *, client: str | None = None, actor: str = "anonymous"
) -> int:
    """The time-step of `code` under the user's enrolled secret; a wrong code counts towards the sign-in
    limits and raises `wrong`. The caller claims the step."""
    step = _totp_step(svc, user["totp_secret"], user["user_id"], code)
    if step is None:
        await svc.throttle.failed(user["user_id"], client, actor=actor, kind="totp")
        raise wrong
    return step


@handlers.on(RefreshTokensCommand)
async def refresh_tokens(svc: AuthService, op: RefreshTokensCommand, call: Call) -> SessionTokens:
    svc = _managed(svc)
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
async def logout(svc: AuthService, op: LogoutCommand, call: Call) -> SessionTokens:
    principal = call.principal
    sid = _session_id(principal)
    if sid is None:
        raise ValidationError(
            "Only a signed-in session (Bearer token) can sign out.", details={"field": "Authorization"}
        )
    await svc.store.revoke_session(sid)
    return SessionTokens(message="Signed out: the session's tokens no longer work.")


@handlers.on(ChangePasswordCommand)
async def change_password(svc: AuthService, op: ChangePasswordCommand, call: Call) -> SessionTokens:
    principal = call.principal
    svc = _managed(svc)
    user = await _user(svc, principal)
    await svc.throttle.check(user["user_id"])
    if not await svc.passwords.averify(user["password_hash"], op.previous_password):
        await svc.throttle.failed(user["user_id"], actor=user["user_id"], kind="password")
        raise AuthenticationError("The current password is not correct.")
    _check_password(svc, user["user_id"], op.proposed_password)
    new_hash = await svc.passwords.ahash(op.proposed_password)
    async with svc.store.transaction():
        await svc.store.update_user(
            user["user_id"],
            {"password_hash": new_hash, "password_expires_at": None, "status": CONFIRMED, "updated_at": ts(now())},
        )
        await svc.store.revoke_sessions(user["user_id"], keep=_session_id(principal))
        await user_change(svc.store, principal.user_id, "change_password", user["user_id"], user)
    return SessionTokens(message="Password changed; other sessions were signed out.")


def _own_session(principal: Principal, doing: str) -> str:
    """The caller's managed-pool session id; PermissionDeniedError for API keys and in-process calls."""
    sid = _session_id(principal)
    if sid is None:
        raise PermissionDeniedError(
            f"Only a signed-in session of the managed user pool (Bearer token) can {doing}: "
            "API keys and in-process calls cannot.",
            details={"field": "Authorization"},
        )
    return sid


async def _current_factor(
    svc: AuthService, user: Row, principal: Principal, code: str | None, doing: str
) -> int | None:
    """What changing an enrolled factor needs: nothing when none is enrolled or the session is multi-factor,
    else the time-step of `code` under the enrolled secret (throttled; the caller claims it)."""
    if not user["mfa_enabled"] or principal.mfa:
        return None
    await svc.throttle.check(user["user_id"])
    denied = PermissionDeniedError(
        f"MFA is enabled: to {doing}, prove the current factor: use a multi-factor session, or give `code` "
        "from the enrolled authenticator (an administrator can reset a lost one).",
        details={"field": "code"},
    )
    if code is None:
        raise denied
    return await _proved_step(svc, user, code, denied, actor=user["user_id"])


async def _claim(svc: AuthService, user_id: str, step: int | None) -> None:
    if step is not None and not await svc.store.claim_totp_step(user_id, step):
        raise PermissionDeniedError("The MFA code was used already; wait for the next one.", details={"field": "code"})


@handlers.on(SetupMfaCommand)
async def setup_mfa(svc: AuthService, op: SetupMfaCommand, call: Call) -> MfaSetup:
    """A pending secret bound to this session; the enrolled one (if any) stays in force until it is verified."""
    principal = call.principal
    import pyotp

    svc = _managed(svc)
    sid = _own_session(principal, "set up MFA")
    user = await _user(svc, principal)
    step = await _current_factor(svc, user, principal, op.code, "replace the authenticator")
    secret = pyotp.random_base32()
    async with svc.store.transaction():
        await _claim(svc, user["user_id"], step)
        await svc.store.update_user(
            user["user_id"],
            {
                "totp_pending": svc.box.seal(secret, f"totp:{user['user_id']}"),
                "totp_pending_session": sid,
                "updated_at": ts(now()),
            },
        )
        await user_change(svc.store, user["user_id"], "setup_mfa", user["user_id"], user)
    uri = pyotp.TOTP(secret).provisioning_uri(name=user["user_id"], issuer_name=svc.config.managed.issuer)
    return MfaSetup(
        secret_code=secret, otpauth_uri=uri, message="Add the secret to an authenticator app, then verify a code."
    )


@handlers.on(VerifyMfaCommand)
async def verify_mfa(svc: AuthService, op: VerifyMfaCommand, call: Call) -> SessionTokens:
    """The pending secret this session started becomes the enrolled one, and this session multi-factor: it
    either had no factor to prove or proved it when it started the set-up."""
    principal = call.principal
    svc = _managed(svc)
    assert svc.tokens is not None
    sid = _own_session(principal, "verify MFA")
    user = await _user(svc, principal)
    pending = user["totp_pending"]
    none_pending = ValidationError(
        "No MFA set-up is pending in this session: call setup_mfa first.", details={"field": "code"}
    )
    if not pending or user["totp_pending_session"] != sid:
        raise none_pending
    step = _totp_step(svc, pending, user["user_id"], op.code)
    if step is None:
        raise ValidationError(
            "The MFA code is not valid; check the authenticator app's clock.", details={"field": "code"}
        )
    async with svc.store.transaction():
        if not await svc.store.confirm_totp(user["user_id"], pending, sid, step, ts(now())):
            raise none_pending  # replaced or cleared meanwhile
        await svc.store.set_session_mfa(sid)
        await user_change(svc.store, user["user_id"], "verify_mfa", user["user_id"], user)
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


@handlers.on(DisableMfaCommand)
async def disable_mfa(svc: AuthService, op: DisableMfaCommand, call: Call) -> SessionTokens:
    principal = call.principal
    svc = _managed(svc)
    _own_session(principal, "turn MFA off")
    user = await _user(svc, principal)
    if not user["mfa_enabled"]:
        raise ValidationError("MFA is not enabled for this user.", details={"field": "code"})
    step = await _current_factor(svc, user, principal, op.code, "turn MFA off")
    async with svc.store.transaction():
        await _claim(svc, user["user_id"], step)
        await clear_mfa(svc, user["user_id"])
        await user_change(svc.store, user["user_id"], "disable_mfa", user["user_id"], user)
    return SessionTokens(mfa=False, message="MFA disabled; no session of this user is multi-factor any more.")


@handlers.on(GetJwksQuery)
async def get_jwks(svc: AuthService, op: GetJwksQuery, call: Call) -> Jwks:
    return Jwks(keys=svc.tokens.jwks() if svc.tokens is not None else [])
