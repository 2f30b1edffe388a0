"""The auth service as the engine's Authorizer: who is calling (authenticate) and may they (authorize).

Authentication
- `Authorization: psdk_...` — an API key (also as `Bearer psdk_...`, the way
  generic clients send a token): SHA-256 lookup, constant-time
  compare, then active flag and expiry; read on every request (on SQLite kept
  while no process has committed since, `_api_key`), so revoking,
  deactivating, expiring or deleting the user bites on the next call.
- `Authorization: Bearer <JWT>` — managed pool: our signature (by `kid`),
  issuer, audience, expiry, then the session row (revoked? user enabled?
  MFA?) in one read; external IdP: the IdP's JWKS (cached).

Authorization (both tiers, before any handler looks anything up)
- The rules (constraints + roles) are compiled once per rules key, which a
  write of user-role assignments alone does not move (`store.rules_key`):
  such a write starts a new policy version (fresh per-user role cache) on the
  same compiled rules. Every
  decision reads the version row (one cheap read) — on PostgreSQL only after
  a change was notified (LISTEN/NOTIFY), on SQLite only after a commit changed
  the WAL index's header (policy_watch.py); a change made by any process is
  seen on the next decision. An API-key request reads the
  version in its key's statement and is decided on it (no read of its own):
  a request is decided on the policy as of its authentication.
- Roles come from user-role assignments (cached per version); roles that no
  longer exist grant nothing; a user without roles is evaluated as holding
  `defaultUserRoleName` when that is set.
- Tier 1: the concrete path called (`route_path`, e.g. `/api/v1/machines/request`)
  and method; in-process, the operation's first path filled from the input.
- Tier 2: on an existing object, its stored attributes (`objects.py`: one
  loader per object type, no existence oracle); on a new object, the
  attributes the input gives (a list value there means several objects, each
  must be allowed).
"""

from __future__ import annotations

import asyncio
import functools
import hmac
import itertools
import json
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from pluginsdk import observe
from pluginsdk.constants import API_KEY_PREFIX
from pluginsdk.errors import AuthenticationError, PermissionDeniedError, ValidationError
from pluginsdk.models.auth_vocabulary import OBJECT_TYPES
from pluginsdk.operations import Operation, OperationSpec, get_spec
from pluginsdk.principal import SYSTEM_ADMIN, Principal

from ..call import Call
from ..policy import CompiledPolicy, compile_policy
from ..store.db import Row
from ..store.sealing import SecretBox
from .config import AuthConfig
from .crypto import PageTokens, Passwords, now, parse_ts, sha256_hex
from .lockout import LockoutGuard
from .objects import ObjectSource, check_stored, decides_stored, denied, handles_stored, new_attributes
from .policy_watch import PolicyWatch
from .routes import routes_to_check
from .store import AuthStore

if TYPE_CHECKING:
    from datetime import datetime

    from pluginsdk.models.plans import AccessPlan

    from ..policy.decision_point import PolicyModel
    from . import AuthHost
    from .federation.oauth import ExternalVerifier
    from .mail import Mailer
    from .throttle import SignInThrottle
    from .tokens import TokenService

__all__ = ["AuthService"]

T = TypeVar("T")

_MAX_HEADER = 4096
_API_KEY_SHAPE = re.compile(re.escape(API_KEY_PREFIX) + r"[A-Za-z0-9_-]{20,128}")
"""An API key's form (`crypto.new_api_key`): no JWT (`eyJ...`, dots) and no external token is mistaken for it."""


_POLICY_WORKERS = 2
"""What-ifs, dry runs and policy test runs computed at once per service; more wait."""
_ROUTE_CACHE = 65_536
_KEYS_KEPT = 1024
"""Verified API keys kept at most (`AuthService._api_key`), all dropped at the store's next commit."""
"""Tier-1 answers kept per version (cleared when full)."""


class Rules(NamedTuple):
    """What is compiled, as of one rules key: user-role assignments are resolved per subject instead."""

    key: str
    policy: CompiledPolicy
    roles: dict[str, bool]
    """Existing role name -> mfaRequired."""
    constraints: list[dict[str, Any]]


RulesRead = Rules | tuple[str, list[Row], list[Row]]
"""`AuthService.read_rules`' answer: the compiled rules at hand, or (rules key, role rows, constraint rows)."""


class _Snapshot(NamedTuple):
    version: int
    rules: Rules
    user_roles: dict[str, tuple[str, ...]]
    """Per-user cache, filled on first use within this version."""
    routes: dict[tuple[Any, ...], bool]
    """Tier-1 answers of this version: (user, roles, mfa, path, method) -> allowed."""
    calls: dict[tuple[Any, ...], tuple[bool, ...]]
    """`AuthService.may_call_each` answers of this version: (user, roles, mfa, operation names) -> each allowed."""

    def route_allowed(self, p: Principal, path: str, method: str) -> bool:
        """Tier 1, remembered for this version (a caller asks the same few routes all day)."""
        key = (p.user_id, p.roles, p.mfa, path, method)
        known = self.routes.get(key)
        if known is None:
            if len(self.routes) >= _ROUTE_CACHE:
                self.routes.clear()
            known = self.routes[key] = self.rules.policy.route_allowed(p, path, method)
        return known

    @property
    def policy(self) -> CompiledPolicy:
        return self.rules.policy

    @property
    def roles(self) -> dict[str, bool]:
        return self.rules.roles


class AuthService:
    """Authenticator and two-tier authorizer; also the state the auth handlers share."""

    def __init__(self, host: AuthHost, config: AuthConfig, store: AuthStore, box: SecretBox, pages: PageTokens) -> None:
        self.objects: ObjectSource = host.objects
        """The stored requests, machines and templates tier 2 decides on (not the engine)."""
        self.settings = host.settings
        self._on_close = host.on_close
        self.config = config
        self.store = store
        self.box = box
        self.pages = pages
        self.tokens: TokenService | None = None
        self.external: ExternalVerifier | None = None
        self._passwords: Passwords | None = None
        self._snapshot: _Snapshot | None = None
        self._rules: Rules | None = None
        self._resolved: tuple[Principal, _Snapshot, Principal] | None = None
        self._last_calls: tuple[Principal, tuple[str, ...], _Snapshot, tuple[bool, ...]] | None = None
        """`may_call_each`'s last answer with what it was asked of: the same caller object on the same snapshot
        asks again without a key built and hashed."""
        self._keys: tuple[bytes, dict[str, tuple[Principal, datetime | None]]] | None = None
        """API keys verified since the store's change stamp was last seen: (stamp, key hash -> (principal, expiry))."""
        """The last (principal given, snapshot, principal resolved): an in-process SDK asks as one caller."""
        self._lock = asyncio.Lock()
        self.compiles = 0
        """How many times the policy was compiled (observability, tests)."""
        self.decision_model: tuple[int, PolicyModel] | None = None
        """The decision point's model of the last policy version it answered on (`handlers/policy_checks.py`)."""
        self.policy_workers = asyncio.Semaphore(_POLICY_WORKERS)
        """Bounds the what-ifs, dry runs and policy test runs computed at once (each in a worker thread)."""
        self.watch = PolicyWatch(store.db.change_stamp)
        store.on_bump.append(self.watch.bumped_here)
        self.guard = LockoutGuard(store, config, rules=self.rules)

    @functools.cached_property
    def mailer(self) -> Mailer:
        """Made on first use, as is `throttle`: a call that sends no mail and signs no one in reads neither
        `app` group (a configuration without `app` never builds its models)."""
        from .mail import Mailer

        return Mailer(self.config.smtp)

    @functools.cached_property
    def throttle(self) -> SignInThrottle:
        from .throttle import SignInThrottle

        return SignInThrottle(self.store, self.config.managed.signInLimits, self.settings.api.held)

    async def start(self) -> None:
        if self.store.db.dialect == "postgresql":
            await self.watch.start(self.store.db.url)
            self._on_close.append(self.watch.aclose)
        # JWT support (PyJWT + cryptography, ~100 ms to import) loads only in the mode that uses it,
        # so CLI calls authenticated in-process or by API key do not pay for it.
        if self.config.mode == "managed":
            from .tokens import TokenService

            self.tokens = TokenService(self.store, self.box, self.config.managed)
            await self.tokens.start()
        mode = self.config.mode
        if mode == "external" or (mode == "managed" and self.config.managed.useOidc):  # useOidc needs managed
            from .federation.oauth import ExternalVerifier

            self.external = ExternalVerifier(self.config.external)

    @property
    def passwords(self) -> Passwords:
        if self._passwords is None:
            h = self.config.managed.passwordHashing
            self._passwords = Passwords(h.timeCost, h.memoryKib, h.parallelism, h.concurrency, h.queue)
        return self._passwords

    # -- policy ------------------------------------------------------------------
    async def snapshot(self, version: int | None = None) -> _Snapshot:
        """The compiled policy of `version` when given (the one read with the caller's credential:
        `Principal.policy_version`), else of the current version, read now (`PolicyWatch`: no statement while
        PostgreSQL notifications are live); recompiled only when the rules version moved.
        """
        kept = self._kept_snapshot(version)
        if kept is not None:
            return kept
        if version is None:
            version = await self.watch.version(self.store.policy_version)
        snap = self._snapshot
        if snap is not None and snap.version == version:
            return snap
        async with self._lock:
            snap = self._snapshot
            if snap is not None and snap.version == version:
                return snap
            async with self.store.transaction():  # one consistent read of version, roles and constraints
                version, read = await self.read_rules()
            self._snapshot = _Snapshot(version, self.compiled_rules(read), {}, {}, {})  # compiled outside it
            return self._snapshot

    def _kept_snapshot(self, version: int | None) -> _Snapshot | None:
        """`snapshot(version)` when it is at hand without a read (the version kept by the watch), else None."""
        if version is None:
            version = self.watch.kept()
        snap = self._snapshot
        return snap if snap is not None and snap.version == version else None

    async def read_rules(self) -> tuple[int, RulesRead]:
        """(policy version, the compiled rules of the stored rules key if at hand, else that key with the role
        and constraint rows), read in the caller's transaction; `compiled_rules` finishes the job."""
        version, key = await self.store.rules_key()
        cached = self._rules
        if cached is not None and cached.key == key:
            return version, cached
        return version, (key, await self.store.list_roles(), await self.store.all_constraints())

    def compiled_rules(self, read: RulesRead) -> Rules:
        """What `read_rules` read, compiled (and kept) unless it was at hand already: only a change of the
        constraints or roles moves the key, so a user-role write costs no compile."""
        if isinstance(read, Rules):
            return read
        key, role_rows, constraint_rows = read
        constraints = [json.loads(r["data"]) for r in constraint_rows]
        roles = {r["role_name"]: bool(r["mfa_required"]) for r in role_rows}
        started = time.perf_counter()
        policy = compile_policy(constraints, roles)
        if observe.policy_compile is not None:
            observe.policy_compile(time.perf_counter() - started)
        self.compiles += 1
        self._rules = rules = Rules(key, policy, roles, constraints)
        return rules

    async def rules(self) -> tuple[int, Rules]:
        """(policy version, compiled rules) as stored in the caller's transaction (the lock-out check of a policy
        write, which compiles inside it). That compile is kept too: its key names the written state only once
        the write commits (a rolled-back stamp is never seen again), so the next decision needs no compile."""
        version, read = await self.read_rules()
        return version, self.compiled_rules(read)

    async def with_roles(self, principal: Principal, snap: _Snapshot | None = None) -> Principal:
        """The principal with its roles resolved from assignments (never trusted from the caller)."""
        snap = snap or await self.snapshot()
        roles = snap.user_roles.get(principal.user_id)
        if roles is None:
            assigned = await self.store.roles_of(principal.user_id)
            roles = tuple(r for r in assigned if r in snap.roles)
            if not roles and self.config.default_user_role_name in snap.roles:
                roles = (str(self.config.default_user_role_name),)
            if len(snap.user_roles) > 100_000:
                snap.user_roles.clear()
            snap.user_roles[principal.user_id] = roles
        return principal if principal.roles == roles else replace(principal, roles=roles)

    async def route_allowed(self, principal: Principal, path: str, method: str) -> bool:
        snap = await self.snapshot()
        p = await self.with_roles(principal, snap)
        return snap.policy.route_allowed(p, path, method)

    async def is_allowed(self, principal: Principal, object_type: str, attrs: Mapping[str, Any], method: str) -> bool:
        snap = await self.snapshot()
        p = await self.with_roles(principal, snap)
        return snap.policy.is_allowed(p, object_type, attrs, method)

    # -- Authorizer protocol -------------------------------------------------------
    async def authenticate(self, authorization: str | None) -> Principal:
        if not authorization or not authorization.strip():
            raise AuthenticationError(
                "Authentication required: send an API key, or `Bearer <token>`, in the Authorization header."
            )
        value = authorization.strip()
        if len(value) > _MAX_HEADER:
            raise AuthenticationError("The Authorization header is not valid.")
        scheme, _, rest = value.partition(" ")
        if scheme.lower() == "bearer" and rest.strip():
            token = rest.strip()
            if _API_KEY_SHAPE.fullmatch(token):  # a key sent as `Bearer <key>`, as generic clients send tokens
                return await self._api_key(token)
            return await self._bearer(token)
        if value.startswith(API_KEY_PREFIX):
            return await self._api_key(value)
        raise AuthenticationError(
            f"The Authorization header is not valid: send an API key ({API_KEY_PREFIX}...) or `Bearer <token>`."
        )

    async def _api_key(self, key: str) -> Principal:
        """The key's principal, with the policy version read in its statement. A key verified since the store's
        change stamp last moved (SQLite: no commit by any process since, `Database.change_stamp`) is taken
        from memory — its row, and the version, are what a statement would read — its expiry checked again;
        any commit (a key deleted or deactivated, a policy write) and the next call reads the row. The principal
        itself is kept, not only its row (`Database.read_kept` could keep that): the same object lets the
        role resolution behind it match by identity (`_resolved`); a row read again measured 4-6 % more server
        CPU per authenticated REST read."""
        digest = sha256_hex(key)
        stamp = self.store.db.change_stamp()
        kept = self._kept_key(stamp, digest)
        if kept is not None:
            return kept
        principal, expires = await self._read_key(digest)
        if stamp is not None:
            keys = self._keys
            if keys is None or keys[0] != stamp or len(keys[1]) >= _KEYS_KEPT:
                self._keys = keys = (stamp, {})
            keys[1][digest] = (principal, expires)
        return principal

    def _kept_key(self, stamp: bytes | None, digest: str) -> Principal | None:
        """The principal of a key verified under this very stamp and not expired since, or None."""
        keys = self._keys
        if stamp is None or keys is None or keys[0] != stamp:
            return None
        hit = keys[1].get(digest)
        if hit is None or (hit[1] is not None and hit[1] <= now()):
            return None
        return hit[0]

    async def _read_key(self, digest: str) -> tuple[Principal, datetime | None]:
        """(principal, expiry) of the key's row; AuthenticationError for an unknown, inactive or expired key."""
        row = await self.store.api_key_by_hash(digest)
        expires = None if row is None or row["expires_at"] is None else parse_ts(row["expires_at"])
        if (
            row is None
            or not hmac.compare_digest(str(row["key_hash"]), digest)
            or not row["is_active"]
            or (expires is not None and expires <= now())
        ):
            raise AuthenticationError("The API key is unknown, expired or deactivated.")
        version = row["policy_version"]
        principal = Principal(
            user_id=row["user_id"],
            auth_method="api_key",
            api_key_id=row["api_key_id"],
            mfa=False,
            policy_version=None if version is None else int(version),
        )
        return principal, expires

    async def _bearer(self, token: str) -> Principal:
        external = self.external if self.external is not None and self.external.config.enabled else None
        if self.tokens is not None and (external is None or _issuer(token) == self.config.managed.issuer):
            claims = await self.tokens.verify(token)
            sid = str(claims["sid"])
            state = await self.store.session_state(sid)
            if (
                state is None
                or state["revoked"]
                or not state["enabled"]
                or state["user_id"] != claims["sub"]
                or parse_ts(state["expires_at"]) <= now()
            ):
                raise AuthenticationError("The session has ended; sign in again.")
            return Principal(
                user_id=str(claims["sub"]),
                mfa=bool(state["mfa"]),
                auth_method="jwt",
                email=state["email"],
                claims={"sid": sid, "token_use": claims.get("token_use")},
            )
        if external is not None:
            return await external.principal(token)
        raise AuthenticationError("Bearer tokens are not accepted here: no identity provider is configured.")

    def authorized_at_hand(self, call: Call) -> bool:
        """`authorize` for an operation that names no object and writes no policy, when the policy version and
        the caller's roles are kept (`_kept_snapshot`, `_kept_resolved`): an in-process caller's every call."""
        spec = call.spec
        policy = spec.policy
        if policy.unauthenticated:
            return True
        if policy.object_type or policy.writes_policy:
            return False
        snap = self._kept_snapshot(None if call.route_checked else call.principal.policy_version)
        p = None if snap is None else self._kept_resolved(call.principal, snap)
        if p is None or snap is None:
            return False
        self._check_routes(snap, p, spec, call.op, call.route_path, count_allow=not call.route_checked)
        call.principal = p
        call.policy_version = snap.version
        return True

    async def authorize(self, call: Call) -> None:
        """Tier 1 on the route called, tier 2 on the object (as stored, or as the input gives a new one), then
        the lock-out guard's note for policy writes; fills in `call`: the principal with its roles, the policy
        version decided on, the stored object a read answers with, `had_administrator`."""
        spec = call.spec
        if spec.policy.unauthenticated:
            return
        # the version read with the credential decides the request's first decision (check_route's, if any)
        version = None if call.route_checked else call.principal.policy_version
        snap = self._kept_snapshot(version) or await self.snapshot(version)
        p = self._kept_resolved(call.principal, snap) or await self._resolve(call.principal, snap)
        self._check_routes(snap, p, spec, call.op, call.route_path, count_allow=not call.route_checked)
        call.principal = p
        object_type = spec.policy.object_type
        if object_type:
            await self._check_object(snap.policy, call, object_type)
        if spec.policy.writes_policy:
            call.had_administrator = await self.guard.administrator(snap.policy, snap.roles) is not None
        call.policy_version = snap.version

    async def authorize_also(
        self, principal: Principal, spec: OperationSpec, calls: Iterable[tuple[Operation, str]]
    ) -> None:
        """Tier 1 and tier 2 of `spec` for each (operation, route path), on one policy snapshot and without the
        bookkeeping of `authorize` (the running operation keeps its own)."""
        snap = await self.snapshot()
        p = await self._resolve(principal, snap)
        object_type = spec.policy.object_type
        for op, route_path in calls:
            self._check_routes(snap, p, spec, op, route_path)
            if object_type:
                await self._check_object(snap.policy, Call(op, spec, p, route_path), object_type)

    async def _resolve(self, principal: Principal, snap: _Snapshot) -> Principal:
        """`with_roles(_local_admin(principal))` without the version read at authentication (a later call
        with it reads the policy anew), remembered for the last equal principal and snapshot (a snapshot is
        one policy version): an in-process SDK asks as the same caller every time."""
        kept = self._kept_resolved(principal, snap)
        if kept is not None:
            return kept
        p = await self.with_roles(self._local_admin(principal), snap)
        if p.policy_version is not None:
            p = replace(p, policy_version=None)
        self._resolved = (principal, snap, p)
        return p

    def _kept_resolved(self, principal: Principal, snap: _Snapshot) -> Principal | None:
        """`_resolve`'s answer remembered for an equal principal and this snapshot, else None."""
        last = self._resolved
        if (
            last is not None
            and last[1] is snap
            and (last[0] is principal or (last[0] == principal and last[0].claims == principal.claims))
        ):
            return last[2]
        return None

    @staticmethod
    def _check_routes(
        snap: _Snapshot,
        p: Principal,
        spec: OperationSpec,
        op: Operation,
        route_path: str | None,
        *,
        count_allow: bool = True,
    ) -> None:
        """Tier 1: every path `routes_to_check` names must be allowed for the operation's method."""
        method = spec.method
        for route in routes_to_check(spec, op, route_path):
            if not snap.route_allowed(p, route, method):
                _decided("route", "deny")
                raise _route_denied(p, method, route_path or spec.route)
        if count_allow and observe.authz is not None:  # `_decided`, inline: every call passes here
            observe.authz("route", "allow")

    async def _check_object(self, policy: CompiledPolicy, call: Call, object_type: str) -> None:
        """Tier 2: on the stored object(s) the operation names (`objects.py`), else on the input's attributes."""
        spec, op, p = call.spec, call.op, call.principal
        if not handles_stored(spec, op):
            _check_input(policy, p, spec, op, object_type)
        if decides_stored(spec):
            try:
                await check_stored(self.objects, self.store, policy, call)
            except PermissionDeniedError:
                _decided("object", "deny")
                raise
        _decided("object", "allow")

    def may_call(self, principal: Principal, spec: OperationSpec) -> bool:
        """Whether `principal` — as `authorize` returned it to a handler, roles resolved — passes tier 1 on the
        operation's own route (a route without parameters), on the policy version at hand: what an answer may
        reveal follows from the routes its caller may call. False when no policy was read (fail closed)."""
        snap = self._snapshot
        route = spec.route
        if snap is None or route is None:
            return False
        return spec.policy.unauthenticated or snap.route_allowed(principal, route, spec.method)

    def may_call_each(self, principal: Principal, names: tuple[str, ...]) -> tuple[bool, ...]:
        """`may_call` of each operation named (SDK names), remembered for this policy version: a handler that
        asks the same questions about its caller on every call (what an answer may reveal) asks once."""
        snap = self._snapshot
        if snap is None:
            return tuple(False for _ in names)
        last = self._last_calls
        if last is not None and last[0] is principal and last[1] is names and last[2] is snap:
            return last[3]
        key = (principal.user_id, principal.roles, principal.mfa, names)
        known = snap.calls.get(key)
        if known is None:
            if len(snap.calls) >= _ROUTE_CACHE:
                snap.calls.clear()
            known = snap.calls[key] = tuple(self.may_call(principal, get_spec(name)) for name in names)
        self._last_calls = (principal, names, snap, known)
        return known

    async def check_route(self, principal: Principal, method: str, path: str) -> None:
        snap = await self.snapshot(principal.policy_version)
        p = await self.with_roles(principal, snap)
        if snap.route_allowed(p, path, method):
            _decided("route", "allow")
            return
        _decided("route", "deny")
        shown = path if len(path) <= 200 else path[:200] + "..."
        raise PermissionDeniedError(
            f"Not authorized: '{p.user_id}' may not {method} {shown}.",
            details={"field": "route", "value": shown, "expected": method},
        )

    def _local_admin(self, principal: Principal) -> Principal:
        """An in-process caller left at the default user acts as the configured administrator."""
        if (
            principal.auth_method == "local"
            and principal.user_id == SYSTEM_ADMIN.user_id
            and self.config.admin_user_id != SYSTEM_ADMIN.user_id
            and self.settings.source_of("sdk.user") == "default"
        ):
            return replace(principal, user_id=self.config.admin_user_id, roles=())
        return principal

    async def filter_allowed(
        self,
        principal: Principal,
        object_type: str,
        items: list[T],
        attrs: Callable[[T], Mapping[str, Any]],
        method: str,
    ) -> list[T]:
        snap = await self.snapshot()
        p = await self.with_roles(principal, snap)
        keep = snap.policy.allowed_flags(p, object_type, [attrs(i) for i in items], method)
        return [i for i, ok in zip(items, keep, strict=True) if ok]

    async def plan(self, principal: Principal, object_type: str, method: str) -> AccessPlan:
        """The query plan of `principal` for `method` on objects of `object_type`, on the current policy version:
        what a listing filters by in the store (`filter_allowed` gives the same answers object by object)."""
        snap = await self.snapshot()
        p = await self.with_roles(principal, snap)
        from ..policy.plans import plan_access  # a listing's plan: not imported by a call that lists nothing

        return plan_access(snap.policy, p, object_type, method, snap.version)

    # -- helpers for handlers ----------------------------------------------------------
    def decode_page(self, listing: str, token: str | None) -> dict[str, Any] | None:
        return None if token is None else self.pages.decode(listing, token)

    def encode_page(self, listing: str, position: dict[str, Any]) -> str:
        return self.pages.encode(listing, position)

    def require_managed(self) -> None:
        if not self.config.managed.enabled:
            raise ValidationError(
                "User management is unavailable: the managed user pool is not enabled "
                "(app.authProvider.useManaged.enabled).",
                details={"field": "app.authProvider.useManaged.enabled", "value": False, "expected": True},
            )


def _issuer(token: str) -> object:
    """A JWT's `iss` before any check: which of two issuers' keys verify it (the signature is checked after)."""
    import jwt

    try:
        return jwt.decode(token, options={"verify_signature": False}).get("iss")
    except jwt.PyJWTError:
        return None


def _route_denied(p: Principal, method: str, shown: str | None) -> PermissionDeniedError:
    message = f"Not authorized: '{p.user_id}' may not {method} {shown}."
    if not p.roles:  # the usual first-day cause: say it rather than leave a bare denial
        message = (
            f"Not authorized: '{p.user_id}' holds no role; an administrator must give them one "
            f"before they may {method} {shown}."
        )
    return PermissionDeniedError(message, details={"field": "route", "value": shown, "expected": method})


def _check_input(policy: CompiledPolicy, p: Principal, spec: OperationSpec, op: Operation, object_type: str) -> None:
    """Tier 2 on the attributes the input gives (a new object; a list value names several, each decided)."""
    method = spec.method
    attrs = new_attributes(spec, op, spec.object_attributes(op))
    if not attrs:
        return
    if method == "POST" and "userId" in OBJECT_TYPES.get(object_type, ()) and "userId" not in attrs:
        attrs["userId"] = p.user_id  # a new object of this type belongs to its creator
    for combo in _expand(attrs):
        if not policy.is_allowed(p, object_type, combo, method):
            _decided("object", "deny")
            raise denied(p, method, object_type)


def _decided(tier: str, outcome: str) -> None:
    if observe.authz is not None:
        observe.authz(tier, outcome)


def _expand(attrs: dict[str, Any]) -> list[dict[str, Any]]:
    """Input naming several objects (a list value) -> one attribute set per object."""
    lists = {k: v for k, v in attrs.items() if isinstance(v, list)}
    if not lists:
        return [attrs]
    keys = list(lists)
    return [{**attrs, **dict(zip(keys, combo, strict=True))} for combo in itertools.product(*lists.values())]
