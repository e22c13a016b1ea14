#!/usr/bin/env bash
# Build the documentation site (Sphinx, MyST, PyData theme) into docs/_build/html with
# warnings as errors, then check that the generated reference names every subcommand,
# route, setting and server option. Installs the `docs` extra into .venv if needed.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"
if ! "$VENV/bin/python" -c 'import sphinx, myst_parser, pydata_sphinx_theme' 2>/dev/null; then
  ensure_venv docs
fi
export PATH="$VENV/bin:$PATH"
rm -rf docs/_build/html
python -m sphinx -W --keep-going -n -q -b html docs docs/_build/html
python scripts/check_docs.py docs/_build/html
log "documentation: docs/_build/html/index.html"
