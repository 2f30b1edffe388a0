# ruff: noqa: E501
"""Static command index: group -> action -> summary, generated from the operation catalog.

Do not edit: run `python -m pluginsdk.cli._indexgen` after changing the catalog (a test checks this file
is current). It lets `pluginsdk --help` list the commands without importing the catalog.
"""

GROUPS: dict[str, dict[str, str]] = {
    "api-keys": {
        "create": "Issue an API key acting as any user who holds a role (administrators); the secret is shown once.",
        "create-mine": "Issue an API key acting as the caller; the secret is shown once.",
        "delete": "Revoke an API key permanently (administrators).",
        "delete-mine": "Revoke one of the caller's API keys permanently.",
        "list": "List every user's API keys (administrators).",
        "list-mine": "List the caller's own API keys.",
        "show": "Show one API key (never its secret).",
        "show-mine": "Show one of the caller's API keys.",
        "update": "Update an API key's description, expiry (null clears it) or active flag (administrators).",
        "update-mine": "Update one of the caller's keys (expiry stays within 365 days of its creation and cannot be cleared).",
    },
    "auth": {
        "amplify-config": "The web client's bootstrap configuration (no sign-in needed).",
        "change-password": "Change the caller's managed-pool password; other sessions are signed out.",
        "filter-allowed": "The objects (attribute dicts) the caller may use `method` on, in input order.",
        "is-allowed": "Whether the caller may use `method` on an object of `object_type` with these attributes.",
        "jwks": "The public keys that sign managed-pool tokens (JWK Set; no sign-in needed).",
        "login": "Sign in to the managed user pool with username and password; returns tokens or a challenge.",
        "logout": "End the caller's session: its refresh token stops working and its tokens are rejected.",
        "mfa-setup": "Start TOTP set-up for the caller: returns a secret for an authenticator app.",
        "mfa-verify": "Confirm TOTP set-up with a code: MFA is enabled and the current session becomes multi-factor.",
        "profile": "The caller's own login profile.",
        "profile-update": "Write the caller's own login profile (the user pool's email wins when it knows one).",
        "refresh": "Exchange a refresh token for new id and access tokens (same session, same MFA state).",
        "secure-config": "Runtime configuration for signed-in clients (feature flags, service URLs).",
        "version": "The service version (no sign-in needed).",
    },
    "machines": {
        "cleanup": "Delete records of machines terminated or failed more than N days ago.",
        "count": "How many machines exist at the provider now, in total and per template.",
        "health": "Health of one machine as its provider reports it.",
        "list": "List machines, newest first.",
        "request": "Request machines from a template.",
        "return": "Return machines to the provider (terminate them).",
        "show": "Show one machine.",
        "status": "Status and address of several machines.",
    },
    "providers": {
        "list": "List the provider drivers installed and which one is active.",
    },
    "requests": {
        "active": "List requests that are still pending or running.",
        "cancel": "Cancel a provisioning request; machines not yet running are terminated.",
        "cleanup": "Delete finished requests older than N days.",
        "complete": "Mark a request finished with what it has (completed, or partial if machines failed).",
        "list": "List requests, newest first.",
        "populate-machines": "Record machine ids the provider holds for a request (fleets that filled later, crash recovery).",
        "returns": "List return requests and machines the cloud reclaimed (spot interruptions).",
        "set-status": "Set a request's status by hand (only legal transitions).",
        "show": "Show a request's status and machines (shape follows the scheduler strategy).",
        "status": "Status of one or more requests; unknown ids are reported, not raised.",
        "summary": "Counts of requests by status and type, and of machines by status.",
        "sync": "Refresh a request and its machines from the provider now.",
    },
    "roles": {
        "create": "Create a role.",
        "delete": "Delete a role (user-role assignments naming it stay; clean them up separately).",
        "list": "List roles.",
        "update": "Update a role: only the fields given change (source null clears it; description cannot be null).",
    },
    "routes": {
        "allowed": "List the API routes and methods the caller may use.",
        "api": "List every API route of the service (path, methods, category, unauthenticated).",
        "check-web": "Check web-client routes: returns the ones the caller may open.",
    },
    "system": {
        "cleanup": "Delete old finished requests and terminated machines in one go.",
        "config": "The effective configuration (secrets masked) and where each value came from.",
        "health": "Check that a provider answers.",
        "metrics": "Operation counters and timings of this engine.",
        "status": "Version, backend, provider, store and request counts at a glance.",
    },
    "templates": {
        "create": "Create a template.",
        "delete": "Delete a template.",
        "list": "List templates (stored and loaded from the templates directory).",
        "refresh": "Reload template files from the templates directory.",
        "show": "Show one template.",
        "update": "Update a template: only the fields given change.",
        "validate": "Validate a template configuration (errors and warnings); stores nothing.",
    },
    "user-roles": {
        "create": "Give a user roles (each pair may exist only once).",
        "delete": "Remove every role of a user.",
        "list": "List user-role assignments, one entry per user.",
        "replace": "Replace a user's roles with exactly this list.",
    },
    "users": {
        "create": "Create a managed user; a temporary password is mailed to them (changed at first sign-in).",
        "delete": "Delete a managed user; their API keys and sessions stop working at once.",
        "list": "List managed user-pool users.",
        "reset-password": "Reset a managed user's password: a new temporary one is mailed to them.",
        "update": "Update a managed user: only the attributes given change.",
    },
}
