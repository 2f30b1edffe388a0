#!/bin/sh
# Slurm RebootProgram (SlurmctldParameters=reboot_from_controller): replace each node's machine by a new one under
# the same node name (`pluginsdk slurm reboot NODES [FEATURES]`; Slurm passes a comma-separated node list).
# It returns at once; the work goes on in `pluginsdk slurm work`, logged to slurm.log_file (Slurm keeps no output).
# Slurm runs it with a minimal environment: pluginsdk.env beside this script sets PLUGINSDK_BIN (the program,
# word-split, e.g. "/opt/venv/bin/python -m pluginsdk"), PLUGIN_CONFIG and the configuration's other PLUGIN_*
# variables; `pluginsdk slurm config` prints it.
here=$(dirname "$0")
if [ -f "$here/pluginsdk.env" ]; then
    set -a  # export what it sets: PLUGIN_CONFIG and any other PLUGIN_* variable `slurm config` lists
    . "$here/pluginsdk.env"
    set +a
fi
exec ${PLUGINSDK_BIN:-pluginsdk} slurm reboot "$@"
