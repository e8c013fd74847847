"""The Jinja2 environment: templates from the content root's templates/ folder."""

from __future__ import annotations

import weakref
from functools import lru_cache

from fastapi.templating import Jinja2Templates
from jinja2 import pass_context
from starlette.datastructures import URL

from .. import __version__, catalog, followups, paths
from ..verdict import STATUS_LABELS, Status
from . import render

VENDOR = {"codemirror": "vendor/codemirror-5.65.18", "katex": "vendor/katex-0.16.22",
          "htmx": "vendor/htmx-org-2.0.4", "htmx_sse": "vendor/htmx-ext-sse-2.2.4"}


def _label(status: str | None) -> str:
    try:
        return STATUS_LABELS[Status(status)]
    except ValueError:
        return status or ""


# app -> {(base URL, path): URL of that static file}
_static_urls: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@pass_context
def url_for(context, name: str, /, **path_params) -> URL:
    """Starlette's ``url_for`` for templates, but a static file's URL is looked up once per app,
    base URL and path: the lookup walks every route (a page asks for ~20 static files)."""
    request = context["request"]
    if name != "static":
        return request.url_for(name, **path_params)
    key = (str(request.base_url), path_params["path"])
    urls = _static_urls.setdefault(request.app, {})
    url = urls.get(key)
    if url is None:
        url = urls[key] = request.app.url_path_for("static", **path_params).make_absolute_url(base_url=request.base_url)
    return url


def _has_followups(slug: str) -> bool:
    """Whether exercise ``slug`` ships follow-up questions (a passed verdict links to them)."""
    try:
        return (catalog.get(slug).folder / followups.FILE_NAME).is_file()
    except catalog.CatalogError:
        return False


@lru_cache(maxsize=1)
def templates() -> Jinja2Templates:
    t = Jinja2Templates(directory=str(paths.templates_dir()))
    t.env.globals.update(vendor=VENDOR, version=__version__, tracks=list(catalog.Track),
                         collections=list(catalog.Collection), difficulties=list(catalog.Difficulty),
                         kinds=list(catalog.Kind), url_for=url_for,
                         has_followups=_has_followups)
    t.env.filters.update(markdown=render.markdown, statement=render.statement, without_title=render.without_title, python=render.python, status_label=_label)
    for name in t.env.list_templates(extensions=["html"]):   # compile now, not in a first request
        t.env.get_template(name)
    return t
