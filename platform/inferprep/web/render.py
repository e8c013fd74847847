"""Markdown to HTML for statements and editorials (markdown-it-py), with math left for KaTeX in
the browser (``<span class="math inline">``) and code highlighted on the server (Pygments)."""

from __future__ import annotations

from functools import lru_cache

from markdown_it import MarkdownIt
from markupsafe import Markup
from mdit_py_plugins.dollarmath import dollarmath_plugin
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer, TextLexer, get_lexer_by_name
from pygments.util import ClassNotFound

_FORMATTER = HtmlFormatter(nowrap=True)


def highlight_code(code: str, lang: str = "python") -> Markup:
    """Code as highlighted HTML spans (escaped), for use inside ``<pre><code>``."""
    try:
        lexer = get_lexer_by_name(lang) if lang else TextLexer()
    except ClassNotFound:
        lexer = TextLexer()
    return Markup(highlight(code, lexer, _FORMATTER))


def _fence(code: str, lang: str, _attrs) -> str:
    return f'<pre class="highlight"><code>{highlight_code(code, lang or "text")}</code></pre>'


@lru_cache(maxsize=1)
def _md() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "highlight": _fence, "typographer": False})
    md.enable("table").enable("strikethrough")
    dollarmath_plugin(md, allow_digits=False, double_inline=True)
    return md


def markdown(text: str) -> Markup:
    return Markup(_md().render(text))


def without_title(text: str) -> str:
    """The Markdown minus a leading ``# Title`` line (the page shows the title already)."""
    lines = text.lstrip().splitlines()
    return "\n".join(lines[1:]) if lines and lines[0].startswith("# ") else text


def python(code: str) -> Markup:
    return Markup(f'<pre class="highlight"><code>{highlight_code(code, "python")}</code></pre>')


def pygments_css() -> str:
    return HtmlFormatter(style="default").get_style_defs(".highlight")


__all__ = ["markdown", "python", "highlight_code", "pygments_css", "PythonLexer"]
