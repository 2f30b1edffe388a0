#!/bin/sh
# IBM Spectrum Symphony HostFactory -> pluginsdk: getReturnRequests runs `pluginsdk requests returns`.
# Input: -f FILE (or -d JSON) holding {"machines": [{"name": H, "machineId": ID}]}; output: JSON on stdout, exit 0 or 1.
# PLUGINSDK_BIN overrides the program (word-split, e.g. "/opt/venv/bin/python -m pluginsdk");
# PLUGIN_CONFIG, else $HF_PROVIDER_CONFDIR/pluginsdk.yaml when it exists, configures it.
if [ -z "${PLUGIN_CONFIG:-}" ] && [ -n "${HF_PROVIDER_CONFDIR:-}" ] && [ -f "$HF_PROVIDER_CONFDIR/pluginsdk.yaml" ]; then
    PLUGIN_CONFIG="$HF_PROVIDER_CONFDIR/pluginsdk.yaml"
    export PLUGIN_CONFIG
fi
exec ${PLUGINSDK_BIN:-pluginsdk} --scheduler hostfactory --format json requests returns "$@"
