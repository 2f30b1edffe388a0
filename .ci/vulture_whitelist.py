"""Names vulture cannot see used: reached by reflection or called by a dependency (`.ci/run`, pyproject `[tool.vulture]`).

Keep a name here only with its reason; a name that is really dead is deleted from the code instead.
"""

from vulture.whitelist_utils import Whitelist

_ = Whitelist()

# Result and operation fields: serialized by pydantic into every interface's answer (the catalog's result types,
# pluginsdk/models/*_results.py, and output fields of operations), read by callers, never by our code.
access_token
acs_url
allowed_roles
allowed_routes
allowed_users
banner_html_message
cache_stats
content_security_policy
created_on
created_request_id
_.created_request_id
denied_roles
denied_users
explanation
external_oauth_idp_authorization_endpoint
external_oauth_idp_client_id
external_oauth_idp_discovery_endpoint
external_oauth_idp_scope
external_oauth_idp_scope_mfa
external_oauth_idp_token_endpoint
external_oauth_idp_url
features_enabled
indexes
location_service_api_url
machines_cleaned
managed_app_client_id
managed_identity_pool_id
managed_user_pool_endpoint
managed_user_pool_id
mfa_only_roles
no_allow_matched
object__type
otpauth_uri
permission_types
permissions
processed_machines
record_id
request_ids_found
requests_by_status
requests_cleaned
secret_code
skipped_roles
token_type
total_cleaned
total_requests
truncated
user_create_date
user_last_modified_date
web_deployed_url
web_route_patterns
what_if
finished  # waiting.Reading, handed to the callers' report callbacks

# Configuration fields: the `provider.aws` settings the AWS driver reads by key from its instance's settings.
availability_zones
default_instance_type
interruption_queue_url
interruption_wait_seconds

# Public API, documented (docs/sdk.md), and parameters a protocol fixes.
_.catalog  # PluginSDK.catalog()
exc_type  # PluginSDK.__aexit__
tb
bases  # _lazy's __mro_entries__
stdio  # the `mcp serve --stdio` click option

# Called by a dependency: click's group protocol, uvicorn's transport and protocol, the mcp SDK's OAuth
# provider protocol, pydantic's plugin lookup, sqlite3's row factory, the class swap of a session manager.
_.list_commands
_.get_command
_.format_commands
_.ignore_unknown_options
_.writelines
_._unsupported_upgrade_warning
_.keep_alive
_.register_client
_.load_authorization_code
_.exchange_authorization_code
_.load_access_token
_.load_refresh_token
_.exchange_refresh_token
_.revoke_token
_.exchange_identity_assertion
_.get_plugins
_.row_factory
_.__class__

# Counters and helpers the tests and benchmarks read (the effect under test: a compile, a store read, a fetch,
# a busy retry), and the evaluator's and metrics' test hooks.
_.compiles
_.reads
_.fetches
_.busy_waits
_.cache_clear
_.allowed_methods
_.uninstall

# Read by name: a provider setting the AWS driver reads from its configuration mapping, Starlette's path
# convertor protocol, the OAuth metadata field the mcp SDK serializes, and Slurm's RebootProgram argument.
_.interruption_keep_stopped
_.convert
_.to_string
_.token_endpoint_auth_methods_supported
features
