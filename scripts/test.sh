#!/usr/bin/env bash
# Install every test dependency and run every test: ruff, pytest, ESLint/Prettier/Stylelint,
# jest, the Galata UI tests in Debian's Chromium, pytest, the package check (the built
# wheel installed as a user would) and the documentation site's build. Exits non-zero if anything failed.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"
apt_install chromium chromium
# A throw-away PostgreSQL cluster for the store suite (tests/pg.py runs initdb/pg_ctl as the
# postgres user); Debian keeps the server binaries off PATH, under /usr/lib/postgresql/N/bin.
pg_ctl_bin="$(ls /usr/lib/postgresql/*/bin/pg_ctl 2>/dev/null | sort -V | tail -1 || true)"
apt_install "${pg_ctl_bin:-pg_ctl}" postgresql
ensure_venv test,train
# The suite runs its model-process mechanics (streaming, cancellation, crashes, caches,
# adapters) on the 94 MiB SmolLM2, five times faster than the default code model; the
# tests of the code model's own work name it (tests/test_code_completion.py), and the
# package check below runs the real default.
themisto models install smollm2-135m >&2
export THEMISTO_MODEL=smollm2-135m
log "installing front-end dependencies"
jlpm install --immutable >/dev/null 2>&1 || jlpm install
(cd ui-tests && (jlpm install --immutable >/dev/null 2>&1 || jlpm install))
# JupyterHub's proxy for tests/test_jupyterhub.py, local to the work tree (never global).
if [ ! -x .test-tools/node_modules/.bin/configurable-http-proxy ]; then
  log "installing configurable-http-proxy into .test-tools/"
  npm install --prefix .test-tools --no-audit --no-fund --loglevel=error \
    configurable-http-proxy@5.3.0 >/dev/null
fi

REPORTS="$ROOT/.artifacts"
rm -rf "$REPORTS"; mkdir -p "$REPORTS"
failed_suites=()
suite() {
  local name="$1"; shift
  log "$name"
  if ! "$@"; then failed_suites+=("$name"); fi
}

suite "ruff" ruff check themisto_ext tests benchmarks ui-tests/jupyter_server_test_config.py \
  docs/conf.py docs/_ext scripts/check_docs.py
suite "mypy" mypy
suite "front-end lint" jlpm lint:check
suite "records types" jlpm gen:records --check
suite "jest" jlpm jest --ci --json --outputFile="$REPORTS/jest.json"
suite "galata" env -C ui-tests CI=1 THEMISTO_UI_TEST_DATA_DIR="$REPORTS/ui-data" \
  jlpm playwright test
suite "pytest" python -m pytest -p no:cacheprovider --junitxml="$REPORTS/pytest.xml"
# The wheel as a user with JupyterLab installs it: no compiler, both lists, a recorded cell
# and a prediction through a started server, on the real default model.
suite "package" env -u THEMISTO_MODEL python scripts/check_package.py
# The documentation site, warnings as errors, its reference checked against the sources; it
# shows the screenshots the Galata run above just took (ui-tests/tests/tour.spec.ts).
suite "docs" bash scripts/docs.sh

python scripts/summary.py "$REPORTS" "${failed_suites[@]}"
