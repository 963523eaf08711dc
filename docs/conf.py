"""Sphinx configuration: MyST Markdown pages, the API reference from the docstrings.

Build (CI runs it with warnings as errors)::

    sphinx-build -W --keep-going -b html docs docs/_build/html
"""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))

import inductor_device_options  # noqa: E402

project = "inductor-device-options"
author = "the inductor-device-options developers"
copyright = "the inductor-device-options developers"
release = inductor_device_options.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinxcontrib.mermaid",
    "ido_docs",
]

source_suffix = {".md": "markdown"}
root_doc = "index"
# _generated/ holds files the pages include (tables written by nox and benchmarks/run.py).
exclude_patterns = ["_build", "_generated", "_ext", "_shared"]

myst_heading_anchors = 3
myst_enable_extensions = ["deflist"]

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"members": False}
napoleon_google_docstring = True
napoleon_numpy_docstring = False

html_theme = "furo"
html_title = f"inductor-device-options {release}"
html_static_path = ["_static"]
# Mermaid is drawn in the browser (mermaid.js); the build needs no network or mmdc.
mermaid_output_format = "raw"
# The site ships Mermaid (its version: development/docs.md) and loads nothing from a CDN:
# clusters are often offline. ido_docs makes pages opened from disk (file://) draw too.
mermaid_use_local = "mermaid/mermaid.min.js"
