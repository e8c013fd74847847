"""The Jinja2 environment: templates from the content root's templates/ folder."""

from __future__ import annotations

from functools import lru_cache

from fastapi.templating import Jinja2Templates

from .. import __version__, catalog, paths
from ..verdict import STATUS_LABELS, Status
from . import render

VENDOR = {"codemirror": "vendor/codemirror-5.65.18", "katex": "vendor/katex-0.16.22",
          "htmx": "vendor/htmx-org-2.0.4", "htmx_sse": "vendor/htmx-ext-sse-2.2.4"}


def _label(status: str | None) -> str:
    try:
        return STATUS_LABELS[Status(status)]
    except ValueError:
        return status or ""


@lru_cache(maxsize=1)
def templates() -> Jinja2Templates:
    t = Jinja2Templates(directory=str(paths.templates_dir()))
    t.env.globals.update(vendor=VENDOR, version=__version__, tracks=list(catalog.Track),
                         collections=list(catalog.Collection), difficulties=list(catalog.Difficulty),
                         kinds=list(catalog.Kind))
    t.env.filters.update(markdown=render.markdown, statement=render.statement, without_title=render.without_title, python=render.python, status_label=_label)
    for name in t.env.list_templates(extensions=["html"]):   # compile now, not in a first request
        t.env.get_template(name)
    return t
