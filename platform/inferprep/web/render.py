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


@lru_cache(maxsize=256)
def markdown(text: str) -> Markup:
    """``text`` rendered; cached by the text (statements and editorials come back on every page)."""
    return Markup(_md().render(text))


RULES_HEADING = "## Exact rules"


def split_rules(text: str) -> tuple[str, str | None, str]:
    """(before, the "## Exact rules" section without its heading or None, after): the section runs
    to the next level-2 heading. Headings inside fenced code blocks do not count."""
    lines = text.splitlines()
    fence = None
    start = end = None
    for i, line in enumerate(lines):
        stripped = line.lstrip()
        if stripped.startswith(("```", "~~~")):
            mark = stripped[:3]
            fence = None if fence == mark else (fence or mark)
            continue
        if fence:
            continue
        if start is None and line.rstrip() == RULES_HEADING:
            start = i
        elif start is not None and line.startswith("## "):
            end = i
            break
    if start is None:
        return text, None, ""
    end = len(lines) if end is None else end
    return "\n".join(lines[:start]), "\n".join(lines[start + 1:end]), "\n".join(lines[end:])


@lru_cache(maxsize=128)
def statement(text: str) -> Markup:
    """A statement's HTML with its "## Exact rules" section folded (``<details>``): the page leads
    with "In short" and keeps the accepted types, errors and tolerances one click away."""
    before, rules, after = split_rules(text)
    if rules is None:
        return markdown(text)
    return Markup(markdown(before) + Markup('<details class="rules"><summary><h2>Exact rules</h2> '
                                            '<span class="muted small">types, errors, tolerances</span>'
                                            '</summary>') + markdown(rules) + Markup("</details>")
                  + markdown(after))


def without_title(text: str) -> str:
    """The Markdown minus a leading ``# Title`` line (the page shows the title already)."""
    lines = text.lstrip().splitlines()
    return "\n".join(lines[1:]) if lines and lines[0].startswith("# ") else text


def python(code: str) -> Markup:
    return Markup(f'<pre class="highlight"><code>{highlight_code(code, "python")}</code></pre>')


def pygments_css() -> str:
    return HtmlFormatter(style="default").get_style_defs(".highlight")


__all__ = ["markdown", "statement", "split_rules", "python", "highlight_code", "pygments_css", "PythonLexer"]
