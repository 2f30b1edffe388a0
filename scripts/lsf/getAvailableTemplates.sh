#!/bin/sh
# IBM Spectrum LSF resource connector -> pluginsdk: getAvailableTemplates runs `pluginsdk templates list`.
# Input: -f FILE (or -d JSON) holding {}; output: JSON on stdout, exit 0 or 1.
# PLUGINSDK_BIN overrides the program (word-split, e.g. "/opt/venv/bin/python -m pluginsdk");
# PLUGIN_CONFIG, else $PRO_CONF_DIR/pluginsdk.yaml when it exists, configures it.
if [ -z "${PLUGIN_CONFIG:-}" ] && [ -n "${PRO_CONF_DIR:-}" ] && [ -f "$PRO_CONF_DIR/pluginsdk.yaml" ]; then
    PLUGIN_CONFIG="$PRO_CONF_DIR/pluginsdk.yaml"
    export PLUGIN_CONFIG
fi
exec ${PLUGINSDK_BIN:-pluginsdk} --scheduler lsf --format json templates list "$@"
