#!/usr/bin/env bash
# Set up everything and start JupyterLab with themisto-ext on its embedded defaults:
# no API key, no network. Extra arguments go to `jupyter lab`.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ensure_venv lab
args=()
[ "$(id -u)" -eq 0 ] && args+=(--allow-root)
log "starting JupyterLab (Ctrl-C twice to stop)"
exec "$VENV/bin/jupyter" lab "${args[@]}" "$@"
