"""Sphinx configuration of Themisto's documentation site (MyST Markdown, PyData theme),
as the Jupyter projects build theirs. Build: ``bash scripts/docs.sh`` (warnings are
errors; the reference pages are written from the sources by ``_ext/reference.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))
sys.path.insert(0, str(HERE.parent))  # the package the reference pages are read from

from themisto_ext.version import __version__  # noqa: E402

project = "Themisto for JupyterLab"
author = "the themisto-ext authors"
copyright = "2026, " + author
release = version = __version__

extensions = ["myst_parser", "reference"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
# GitHub-style anchors for headings down to ####, so `page.md#a-heading` links are
# checked by the build like links to pages.
myst_heading_anchors = 4
myst_enable_extensions = ["colon_fence", "deflist"]
nitpicky = True

html_theme = "pydata_sphinx_theme"
html_title = project
html_static_path = ["_static"]
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_sidebars = {"index": []}
