#!/bin/sh
# IBM Spectrum Symphony HostFactory -> pluginsdk: getRequestStatus runs `pluginsdk requests status`.
# Input: -f FILE (or -d JSON) holding {"requests": [{"requestId": ID}]}; output: JSON on stdout, exit 0 or 1.
# PLUGINSDK_BIN overrides the program (word-split, e.g. "/opt/venv/bin/python -m pluginsdk");
# PLUGIN_CONFIG, else $HF_PROVIDER_CONFDIR/pluginsdk.yaml when it exists, configures it.
if [ -z "${PLUGIN_CONFIG:-}" ] && [ -n "${HF_PROVIDER_CONFDIR:-}" ] && [ -f "$HF_PROVIDER_CONFDIR/pluginsdk.yaml" ]; then
    PLUGIN_CONFIG="$HF_PROVIDER_CONFDIR/pluginsdk.yaml"
    export PLUGIN_CONFIG
fi
exec ${PLUGINSDK_BIN:-pluginsdk} --scheduler hostfactory --format json requests status "$@"
