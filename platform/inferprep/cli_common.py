"""What the CLI's command modules share: the consoles, ``die``, reading a submission file and
printing a verdict. ``cli`` and ``cli_cohort`` (and any other command module) import these from
here, so no command module imports another's."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .verdict import INPUT_CHECKS, CaseDetail, Status, Verdict

console = Console()
err = Console(stderr=True)

STATUS_STYLE = {Status.PASSED: "green", Status.WRONG_ANSWER: "red", Status.RUNTIME_ERROR: "red",
                Status.TIME_LIMIT: "yellow", Status.MEMORY_LIMIT: "yellow", Status.OUTPUT_LIMIT: "yellow",
                Status.INVALID_SUBMISSION: "magenta", Status.INTERNAL_ERROR: "bold magenta"}


def die(message: str, code: int = 2) -> None:
    err.print(f"[bold red]error:[/] {message}", highlight=False)
    raise typer.Exit(code)


def read_submission_file(file: Path) -> str:
    """The text of a submission file, or one clear line and exit code 2."""
    if not file.is_file():
        die(f"no such file: {file}")
    try:
        return file.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        die(f"{file} is not UTF-8 text")


def print_verdict(v: Verdict) -> None:
    inline = console.width >= 140  # otherwise failure messages go full-width under the table
    table = Table(show_lines=False)
    table.add_column("case")
    table.add_column("result")
    table.add_column("time", justify="right")
    if inline:
        table.add_column("message", overflow="fold")
    for c in sorted(v.cases, key=lambda c: c.passed):  # failures first
        style = STATUS_STYLE[c.status]
        name = escape(c.name) + (" [dim](input check)[/]" if c.group == INPUT_CHECKS else "")
        row = [name, f"[{style}]{'ok' if c.passed else c.status.value}[/]", f"{c.seconds * 1000:.0f} ms"]
        if inline:
            row.append(escape((c.message.splitlines()[0] if c.message else "")[:200]))
        table.add_row(*row)
    if v.cases:
        console.print(table)
    failed = [c for c in v.cases if not c.passed]
    if not inline:
        for c in failed[:10]:
            console.print(f"[bold]{escape(c.name)}[/]: {escape(c.message[:1500])}", highlight=False)
        if len(failed) > 10:
            console.print(f"[dim]... and {len(failed) - 10} more failing cases (--json shows all)[/]")
    for c in [c for c in failed if c.detail][:3]:
        console.print(f"[bold]{escape(c.name)}[/]:")
        print_detail(c.detail)
    ce = v.counterexample
    if ce is not None:
        console.print("[bold]A small input your code gets wrong[/]"
                      + (": withheld until the interview ends" if ce.withheld else f" (found in {ce.attempts} tries):"))
        if not ce.withheld:
            console.print(ce.message[:1500], markup=False, highlight=False)
            if ce.detail:
                print_detail(ce.detail)
    for label, text, show in (("stdout", v.stdout, True), ("stderr", v.stderr, not v.ok)):
        if text.strip() and show:
            cut = max(0, len(text) - 2000)
            console.print(f"[dim]{label} of your code{f' (the first {cut} characters cut; --json has 64 KiB)' if cut else ''}:[/]")
            console.print(text[cut:], markup=False, highlight=False)
    style = STATUS_STYLE[v.status]
    checks = f"; input checks {v.input_checks_passed}/{v.input_checks_total}" if v.input_checks_total else ""
    console.print(f"[{style} bold]{v.status.label}[/]{checks}  {v.passed}/{v.total} core cases, score {v.score:.2f}"
                  f"{' (public examples)' if v.public else ''}  ·  {v.seconds:.2f} s on {v.device}")
    if v.message:
        console.print(v.message, markup=False, highlight=False)
    if v.perf is not None:
        console.print(v.perf.line, markup=False, highlight=False)
    if not v.sandbox.startswith("bubblewrap"):
        console.print(f"[yellow]sandbox: {v.sandbox}[/]")


def print_detail(d: CaseDetail) -> None:
    """Input, call, expected and got of a public example or a counterexample (first differences
    of a tensor with the largest errors)."""
    for label, text in [*d.input.items(), ("call", d.call), (f"expected {d.name}".strip(), d.expected), ("got", d.got)]:
        if text:
            console.print(f"  [dim]{escape(label)}:[/] {escape(text)}", highlight=False)
    t = d.diff
    if t is not None and t.first:
        worst = f"; max abs error {t.max_abs_error:.3g}" if t.max_abs_error is not None else ""
        console.print(f"  [dim]{t.mismatched} of {t.total} out of tolerance (rtol={t.rtol:g}, atol={t.atol:g}){worst}:[/] "
                      + ", ".join(f"{tuple(e.index)}: expected {e.expected}, got {e.got}" for e in t.first[:4]),
                      highlight=False)
