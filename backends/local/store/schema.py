"""Versioned schema migrations (portable SQL for SQLite and PostgreSQL).

Each migration is applied once, in order, inside one transaction, and bumps
`schema_version`. Every table of the engine (provisioning, the local
provider, auth) is created here, so a store is complete before any module
uses it. Add a migration by appending to MIGRATIONS — never edit a released one.
"""

from __future__ import annotations

from collections.abc import Sequence

from .db import Database

__all__ = ["MIGRATIONS", "POSTGRES_ONLY", "SQLITE_ONLY", "migrate"]

_ACTIVE = "('pending', 'running', 'stopping', 'stopped')"  # MachineStatus.active, as a quota counts machines
_ADD = (  # a kept quota count moves by n for a template and a provider instance
    "INSERT INTO quota_held (subject, held) VALUES ('template:' || {t}, {n}), ('provider:' || {p}, {n})"
    " ON CONFLICT (subject) DO UPDATE SET held = quota_held.held + excluded.held;"
)

MIGRATIONS: dict[int, Sequence[str]] = {
    1: (
        """CREATE TABLE templates (
            template_id TEXT PRIMARY KEY,
            provider_api TEXT NOT NULL,
            data TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL)""",
        """CREATE TABLE requests (
            request_id TEXT PRIMARY KEY,
            request_type TEXT NOT NULL,
            status TEXT NOT NULL,
            template_id TEXT,
            provider_name TEXT NOT NULL,
            created_by TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            completed_at TEXT,
            data TEXT NOT NULL)""",
        "CREATE INDEX ix_requests_status ON requests (status, created_at)",
        "CREATE INDEX ix_requests_template ON requests (template_id)",
        "CREATE INDEX ix_requests_created ON requests (created_at)",
        """CREATE TABLE machines (
            machine_id TEXT PRIMARY KEY,
            request_id TEXT NOT NULL REFERENCES requests (request_id),
            template_id TEXT NOT NULL,
            status TEXT NOT NULL,
            return_request_id TEXT,
            name TEXT,
            provider_name TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            data TEXT NOT NULL)""",
        "CREATE INDEX ix_machines_request ON machines (request_id)",
        "CREATE INDEX ix_machines_status ON machines (status)",
        "CREATE INDEX ix_machines_return ON machines (return_request_id)",
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    ),
    2: (  # the `local` provider's simulated instances
        """CREATE TABLE local_instances (
            instance_id TEXT PRIMARY KEY,
            request_id TEXT NOT NULL,
            instance_type TEXT,
            launched_at DOUBLE PRECISION NOT NULL,
            boots_at DOUBLE PRECISION NOT NULL,
            fails INTEGER NOT NULL,
            terminate_at DOUBLE PRECISION)""",
        "CREATE INDEX ix_local_instances_request ON local_instances (request_id)",
    ),
    3: (  # the auth service (backends/local/auth); the policy version lives in `meta`
        """CREATE TABLE auth_constraints (
            constraint_id TEXT PRIMARY KEY,
            object_type TEXT NOT NULL,
            data TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL)""",
        """CREATE TABLE auth_roles (
            role_name TEXT PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            description TEXT NOT NULL,
            source TEXT,
            source_identifier TEXT,
            mfa_required INTEGER NOT NULL DEFAULT 0,
            created_on TEXT NOT NULL)""",
        """CREATE TABLE auth_user_roles (
            user_id TEXT NOT NULL,
            role_name TEXT NOT NULL,
            created_on TEXT NOT NULL,
            PRIMARY KEY (user_id, role_name))""",
        "CREATE INDEX ix_auth_user_roles_role ON auth_user_roles (role_name)",
        """CREATE TABLE auth_users (
            user_id TEXT PRIMARY KEY,
            email TEXT NOT NULL,
            phone TEXT,
            status TEXT NOT NULL,
            enabled INTEGER NOT NULL DEFAULT 1,
            mfa_enabled INTEGER NOT NULL DEFAULT 0,
            password_hash TEXT,
            password_expires_at TEXT,
            totp_secret TEXT,
            totp_pending TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL)""",
        """CREATE TABLE auth_api_keys (
            api_key_id TEXT PRIMARY KEY,
            api_key_name TEXT NOT NULL,
            description TEXT NOT NULL,
            user_id TEXT NOT NULL,
            created_by TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            expires_at TEXT,
            is_active INTEGER NOT NULL DEFAULT 1,
            key_hash TEXT NOT NULL UNIQUE,
            UNIQUE (user_id, api_key_name))""",
        "CREATE INDEX ix_auth_api_keys_user ON auth_api_keys (user_id, created_at)",
        "CREATE INDEX ix_auth_api_keys_created ON auth_api_keys (created_at, api_key_id)",
        """CREATE TABLE auth_sessions (
            session_id TEXT PRIMARY KEY,
            user_id TEXT NOT NULL,
            refresh_hash TEXT NOT NULL UNIQUE,
            mfa INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL,
            expires_at TEXT NOT NULL,
            revoked INTEGER NOT NULL DEFAULT 0)""",
        "CREATE INDEX ix_auth_sessions_user ON auth_sessions (user_id)",
        """CREATE TABLE auth_signing_keys (
            kid TEXT PRIMARY KEY,
            alg TEXT NOT NULL,
            private_key TEXT NOT NULL,
            public_jwk TEXT NOT NULL,
            created_at TEXT NOT NULL,
            active INTEGER NOT NULL DEFAULT 1)""",
        """CREATE TABLE auth_login_profiles (
            user_id TEXT PRIMARY KEY,
            email TEXT,
            data TEXT NOT NULL,
            updated_at TEXT NOT NULL)""",
        "INSERT INTO meta (key, value) VALUES ('auth.policy_version', '1')",
    ),
    4: (  # a TOTP code is accepted once: the last accepted time-step per user
        "ALTER TABLE auth_users ADD COLUMN totp_last_step INTEGER",
    ),
    5: (  # what an administrator set on an API key, which self-service may not undo (docs/auth.md)
        "ALTER TABLE auth_api_keys ADD COLUMN admin_deactivated INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE auth_api_keys ADD COLUMN admin_expires_at TEXT",
    ),
    6: (  # one actor per request: a lease taken before provider calls (backends/local/store/claims.py)
        """CREATE TABLE request_claims (
            request_id TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            expires_at DOUBLE PRECISION NOT NULL)""",
    ),
    7: (  # the audit log of policy, role, user and key changes (backends/local/auth/audit.py); append-only
        """CREATE TABLE auth_audit (
            record_id TEXT PRIMARY KEY,
            at TEXT NOT NULL,
            actor TEXT NOT NULL,
            action TEXT NOT NULL,
            target_type TEXT NOT NULL,
            target_id TEXT NOT NULL,
            before_data TEXT,
            after_data TEXT,
            revision INTEGER NOT NULL)""",
        "CREATE INDEX ix_auth_audit_target ON auth_audit (target_type, target_id)",
        "CREATE INDEX ix_auth_audit_actor ON auth_audit (actor)",
    ),
    8: (  # sign-in limits shared by every process on the store (backends/local/auth/throttle.py); the session
        # that started a pending TOTP set-up (only it may verify it)
        """CREATE TABLE auth_sign_in_failures (
            key TEXT PRIMARY KEY,
            failures INTEGER NOT NULL,
            first_at DOUBLE PRECISION NOT NULL,
            locked_until DOUBLE PRECISION)""",
        "ALTER TABLE auth_users ADD COLUMN totp_pending_session TEXT",
    ),
    9: (  # the `local` provider: a host name given at launch (a scheduler's node name), a startup script's process
        "ALTER TABLE local_instances ADD COLUMN host_name TEXT",
        "ALTER TABLE local_instances ADD COLUMN process_id INTEGER",
    ),
    10: (  # request listings filtered by the caller's query plan (store/access.py): by owner, newest first
        "CREATE INDEX ix_requests_created_by ON requests (created_by, created_at)",
        "CREATE INDEX ix_machines_template ON machines (template_id)",
    ),
    11: (  # template listings filtered in SQL (store/access.py): by provider API, by the caller's query plan, and
        # switched-off templates (`configuration.active` false: 0; NULL until `Store.fill_template_active` reads it)
        "ALTER TABLE templates ADD COLUMN active INTEGER",
        "CREATE INDEX ix_templates_provider_api ON templates (provider_api, template_id)",
    ),
    12: (  # federated sign-in (backends/local/auth/federation): sign-ins begun at the identity provider, single
        # use; SAML assertions seen (a replay is refused until the assertion expires); who created a user
        """CREATE TABLE auth_federation_pending (
            state_hash TEXT PRIMARY KEY,
            data TEXT NOT NULL,
            expires_at DOUBLE PRECISION NOT NULL)""",
        """CREATE TABLE auth_saml_assertions (
            assertion_id TEXT PRIMARY KEY,
            expires_at DOUBLE PRECISION NOT NULL)""",
        "ALTER TABLE auth_users ADD COLUMN federated_by TEXT",
    ),
    13: (  # several provider instances: which `local` instance holds a simulated machine (NULL: `local`), and
        # the capacity memory of launch candidates every server on the store shares (store/capacity.py)
        "ALTER TABLE local_instances ADD COLUMN provider TEXT",
        """CREATE TABLE capacity_offerings (
            offering_key TEXT PRIMARY KEY,
            provider TEXT NOT NULL,
            failures INTEGER NOT NULL,
            cooldown_until DOUBLE PRECISION,
            probe_until DOUBLE PRECISION,
            last_reason TEXT,
            updated_at DOUBLE PRECISION NOT NULL)""",
    ),
    14: (  # bootstrap: machines that reported ready, and each template's bootstrap failures in a row and its
        # protection (store/boot.py), shared by every server on the store
        """CREATE TABLE machine_ready (
            machine_id TEXT PRIMARY KEY,
            ready_at DOUBLE PRECISION NOT NULL)""",
        """CREATE TABLE template_boot (
            template_id TEXT PRIMARY KEY,
            failures INTEGER NOT NULL,
            protected_reason TEXT,
            updated_at DOUBLE PRECISION NOT NULL)""",
    ),
    15: (  # what the server's faces hold between requests (store/held.py), shared by every server on the store:
        # console sessions, OAuth clients (RFC 7591) and grants (pending authorizations, codes, access and
        # refresh tokens) of /mcp; each secret by its SHA-256, a recoverable credential sealed under it
        """CREATE TABLE held_sessions (
            session_hash TEXT PRIMARY KEY,
            user_id TEXT NOT NULL,
            method TEXT NOT NULL,
            client TEXT NOT NULL,
            sealed TEXT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL,
            seen_at DOUBLE PRECISION NOT NULL,
            expires_at DOUBLE PRECISION NOT NULL)""",
        "CREATE INDEX ix_held_sessions_user ON held_sessions (user_id, created_at)",
        "CREATE INDEX ix_held_sessions_expires ON held_sessions (expires_at)",
        """CREATE TABLE oauth_clients (
            client_id TEXT PRIMARY KEY,
            data TEXT NOT NULL,
            client TEXT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL,
            used_at DOUBLE PRECISION NOT NULL)""",
        "CREATE INDEX ix_oauth_clients_client ON oauth_clients (client)",
        "CREATE INDEX ix_oauth_clients_used ON oauth_clients (used_at)",
        """CREATE TABLE oauth_grants (
            grant_hash TEXT PRIMARY KEY,
            kind TEXT NOT NULL,
            family TEXT NOT NULL,
            client_id TEXT NOT NULL,
            user_id TEXT,
            client TEXT,
            data TEXT NOT NULL,
            sealed TEXT,
            created_at DOUBLE PRECISION NOT NULL,
            expires_at DOUBLE PRECISION NOT NULL,
            used INTEGER NOT NULL DEFAULT 0)""",
        "CREATE INDEX ix_oauth_grants_family ON oauth_grants (family)",
        "CREATE INDEX ix_oauth_grants_user ON oauth_grants (user_id, created_at)",
        "CREATE INDEX ix_oauth_grants_client ON oauth_grants (client, kind)",
        "CREATE INDEX ix_oauth_grants_expires ON oauth_grants (expires_at)",
    ),
    16: (  # quotas exact across processes (store/quotas.py): what recorded requests reserve until their machines
        # are recorded, and one row per quota subject that PostgreSQL locks while a request is checked and recorded
        """CREATE TABLE quota_reservations (
            request_id TEXT NOT NULL,
            provider TEXT NOT NULL,
            template_id TEXT NOT NULL,
            machines INTEGER NOT NULL,
            created_at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (request_id, provider))""",  # only requests being launched: small, read whole
        "CREATE TABLE quota_locks (subject TEXT PRIMARY KEY)",
        "CREATE INDEX ix_machines_provider ON machines (provider_name, status)",  # the counts of a quota check read
        "CREATE INDEX ix_machines_template_status ON machines (template_id, status)",  # these indexes alone
    ),
    17: (  # kept quota counts (store/quotas.py): active plus reserved machines per quota subject, initialised
        # from a recount here and kept by the triggers below in the transaction of every write that changes them
        "CREATE TABLE quota_held (subject TEXT PRIMARY KEY, held INTEGER NOT NULL)",
        f"""INSERT INTO quota_held (subject, held) SELECT subject, SUM(n) FROM (
            SELECT 'template:' || template_id AS subject, COUNT(*) AS n FROM machines
                WHERE status IN {_ACTIVE} GROUP BY template_id
            UNION ALL SELECT 'provider:' || provider_name, COUNT(*) FROM machines
                WHERE status IN {_ACTIVE} GROUP BY provider_name
            UNION ALL SELECT 'template:' || template_id, SUM(machines) FROM quota_reservations GROUP BY template_id
            UNION ALL SELECT 'provider:' || provider, SUM(machines) FROM quota_reservations GROUP BY provider
        ) AS counted GROUP BY subject""",
    ),
}

POSTGRES_ONLY: dict[int, Sequence[str]] = {
    16: (  # a change to a request or its machines, by any server, notifies every listening one (store/changes.py)
        """CREATE OR REPLACE FUNCTION pluginsdk_request_changed() RETURNS trigger AS $$
        BEGIN
            PERFORM pg_notify('pluginsdk_requests', NEW.request_id);
            RETURN NULL;
        END $$ LANGUAGE plpgsql""",
        """CREATE TRIGGER requests_changed AFTER INSERT OR UPDATE ON requests
            FOR EACH ROW EXECUTE FUNCTION pluginsdk_request_changed()""",
        """CREATE TRIGGER machines_changed AFTER INSERT OR UPDATE ON machines
            FOR EACH ROW EXECUTE FUNCTION pluginsdk_request_changed()""",
    ),
    17: (  # quota_held kept. A write's row triggers note its changes in `quota_pending` (no lock taken); at
        # commit one statement applies the transaction's net changes, locking the counts in sorted order as a check
        # does, so no two transactions take them in opposite orders (no deadlock), whatever rows they wrote
        "CREATE UNLOGGED TABLE quota_pending (tx TEXT NOT NULL, subject TEXT NOT NULL, n INTEGER NOT NULL)",
        "CREATE INDEX ix_quota_pending_tx ON quota_pending (tx)",
        """CREATE OR REPLACE FUNCTION pluginsdk_quota_apply() RETURNS trigger AS $$
        BEGIN
            INSERT INTO quota_held (subject, held)
                SELECT subject, SUM(n) FROM quota_pending WHERE tx = pg_current_xact_id()::text
                GROUP BY subject HAVING SUM(n) <> 0 ORDER BY subject
                ON CONFLICT (subject) DO UPDATE SET held = quota_held.held + excluded.held;
            DELETE FROM quota_pending WHERE tx = pg_current_xact_id()::text;
            RETURN NULL;
        END $$ LANGUAGE plpgsql""",
        """CREATE CONSTRAINT TRIGGER quota_pending_applied AFTER INSERT ON quota_pending
            DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION pluginsdk_quota_apply()""",
        f"""CREATE OR REPLACE FUNCTION pluginsdk_quota_machine() RETURNS trigger AS $$
        DECLARE
            subjects TEXT[] := ARRAY[]::TEXT[];
            deltas INT[] := ARRAY[]::INT[];
        BEGIN
            IF TG_OP <> 'INSERT' THEN
                IF OLD.status IN {_ACTIVE} THEN
                    subjects := ARRAY['template:' || OLD.template_id, 'provider:' || OLD.provider_name];
                    deltas := ARRAY[-1, -1];
                END IF;
            END IF;
            IF TG_OP <> 'DELETE' THEN
                IF NEW.status IN {_ACTIVE} THEN
                    subjects := subjects || ARRAY['template:' || NEW.template_id, 'provider:' || NEW.provider_name];
                    deltas := deltas || ARRAY[1, 1];
                END IF;
            END IF;
            INSERT INTO quota_pending (tx, subject, n)
                SELECT pg_current_xact_id()::text, s, d FROM unnest(subjects, deltas) AS t (s, d);
            RETURN NULL;
        END $$ LANGUAGE plpgsql""",
        f"""CREATE TRIGGER quota_machine_added AFTER INSERT ON machines
            FOR EACH ROW WHEN (NEW.status IN {_ACTIVE}) EXECUTE FUNCTION pluginsdk_quota_machine()""",
        f"""CREATE TRIGGER quota_machine_changed AFTER UPDATE OF status, template_id, provider_name ON machines
            FOR EACH ROW WHEN ((OLD.status IN {_ACTIVE}) <> (NEW.status IN {_ACTIVE})
                OR OLD.template_id <> NEW.template_id OR OLD.provider_name <> NEW.provider_name)
            EXECUTE FUNCTION pluginsdk_quota_machine()""",
        f"""CREATE TRIGGER quota_machine_removed AFTER DELETE ON machines
            FOR EACH ROW WHEN (OLD.status IN {_ACTIVE}) EXECUTE FUNCTION pluginsdk_quota_machine()""",
        """CREATE OR REPLACE FUNCTION pluginsdk_quota_reservation() RETURNS trigger AS $$
        DECLARE
            subjects TEXT[] := ARRAY[]::TEXT[];
            deltas INT[] := ARRAY[]::INT[];
        BEGIN
            IF TG_OP <> 'INSERT' THEN
                subjects := ARRAY['template:' || OLD.template_id, 'provider:' || OLD.provider];
                deltas := ARRAY[-OLD.machines, -OLD.machines];
            END IF;
            IF TG_OP <> 'DELETE' THEN
                subjects := subjects || ARRAY['template:' || NEW.template_id, 'provider:' || NEW.provider];
                deltas := deltas || ARRAY[NEW.machines, NEW.machines];
            END IF;
            INSERT INTO quota_pending (tx, subject, n)
                SELECT pg_current_xact_id()::text, s, d FROM unnest(subjects, deltas) AS t (s, d);
            RETURN NULL;
        END $$ LANGUAGE plpgsql""",
        """CREATE TRIGGER quota_reservation_changed AFTER INSERT OR UPDATE OR DELETE ON quota_reservations
            FOR EACH ROW EXECUTE FUNCTION pluginsdk_quota_reservation()""",
    ),
}
"""Statements a migration runs on PostgreSQL only, after its portable ones."""

SQLITE_ONLY: dict[int, Sequence[str]] = {
    17: (  # quota_held kept (the PostgreSQL triggers' twin; BEGIN IMMEDIATE orders writers, so no lock order)
        f"""CREATE TRIGGER quota_machine_added AFTER INSERT ON machines WHEN NEW.status IN {_ACTIVE}
        BEGIN {_ADD.format(t="NEW.template_id", p="NEW.provider_name", n="1")} END""",
        f"""CREATE TRIGGER quota_machine_left AFTER UPDATE OF status, template_id, provider_name ON machines
        WHEN OLD.status IN {_ACTIVE} AND (NEW.status NOT IN {_ACTIVE}
            OR OLD.template_id <> NEW.template_id OR OLD.provider_name <> NEW.provider_name)
        BEGIN {_ADD.format(t="OLD.template_id", p="OLD.provider_name", n="-1")} END""",
        f"""CREATE TRIGGER quota_machine_joined AFTER UPDATE OF status, template_id, provider_name ON machines
        WHEN NEW.status IN {_ACTIVE} AND (OLD.status NOT IN {_ACTIVE}
            OR OLD.template_id <> NEW.template_id OR OLD.provider_name <> NEW.provider_name)
        BEGIN {_ADD.format(t="NEW.template_id", p="NEW.provider_name", n="1")} END""",
        f"""CREATE TRIGGER quota_machine_removed AFTER DELETE ON machines WHEN OLD.status IN {_ACTIVE}
        BEGIN {_ADD.format(t="OLD.template_id", p="OLD.provider_name", n="-1")} END""",
        f"""CREATE TRIGGER quota_reservation_added AFTER INSERT ON quota_reservations
        BEGIN {_ADD.format(t="NEW.template_id", p="NEW.provider", n="NEW.machines")} END""",
        f"""CREATE TRIGGER quota_reservation_changed AFTER UPDATE ON quota_reservations
        BEGIN {_ADD.format(t="OLD.template_id", p="OLD.provider", n="-OLD.machines")}
            {_ADD.format(t="NEW.template_id", p="NEW.provider", n="NEW.machines")} END""",
        f"""CREATE TRIGGER quota_reservation_removed AFTER DELETE ON quota_reservations
        BEGIN {_ADD.format(t="OLD.template_id", p="OLD.provider", n="-OLD.machines")} END""",
    ),
}
"""Statements a migration runs on SQLite only, after its portable ones."""


async def current_version(db: Database) -> int:
    await db.execute("CREATE TABLE IF NOT EXISTS schema_version (id INTEGER PRIMARY KEY, version INTEGER NOT NULL)")
    row = await db.fetchone("SELECT version FROM schema_version WHERE id = 1")
    return int(row["version"]) if row else 0


_MIGRATION_LOCK = 0x70736B6D  # PostgreSQL advisory lock id ("pskm") held while migrating


async def migrate(db: Database) -> int:
    """Bring the schema up to date; safe when several processes open a new store at once.

    SQLite serialises DDL itself (BEGIN IMMEDIATE); on PostgreSQL concurrent `CREATE TABLE IF NOT EXISTS`
    can collide in the catalog, so everything runs under a transaction-scoped advisory lock there.
    """
    target = max(MIGRATIONS)
    if db.dialect != "postgresql" and await current_version(db) >= target:
        return target
    async with db.transaction():
        if db.dialect == "postgresql":
            await db.execute("SELECT pg_advisory_xact_lock(:k)", {"k": _MIGRATION_LOCK})
        version = await current_version(db)  # re-read under the write lock
        if version >= target:
            return version
        for v in sorted(MIGRATIONS):
            if v <= version:
                continue
            only = POSTGRES_ONLY if db.dialect == "postgresql" else SQLITE_ONLY
            for stmt in (*MIGRATIONS[v], *only.get(v, ())):
                await db.execute(stmt)
            if version == 0:
                await db.execute("INSERT INTO schema_version (id, version) VALUES (1, :v)", {"v": v})
            else:
                await db.execute("UPDATE schema_version SET version = :v WHERE id = 1", {"v": v})
            version = v
    return version
