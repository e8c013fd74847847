#!/usr/bin/env python3
"""Turn known-wrong variants that are small changes of their reference into patches.

For each ``tests/wrong/<module>/<name>.py`` this computes the diff against
``reference/<module>.py`` after moving the variant's module docstring out of the code (the
reference's own docstring takes its place). When the diff is small (at most ``--max-lines``
added plus removed lines, and at most ``--max-fraction`` of the reference's lines), the variant
is written as ``<name>.patch``: the docstring becomes the patch header, so its first line still
declares the target group, and the ``.py`` is removed. A variant that is a different algorithm
stays a whole file.

The conversion is exact: the script applies the new patch (with ``inferprep.wrong_variants``, the
applier ``check-exercise`` uses) and requires the result to equal the variant with its docstring
swapped, and that swap to leave the variant's syntax tree unchanged but for the docstring. The
graded program is therefore the same program.

    PYTHONPATH=platform python scripts/wrong_to_patches.py --dry-run     # what would change
    PYTHONPATH=platform python scripts/wrong_to_patches.py               # the whole tree
    PYTHONPATH=platform python scripts/wrong_to_patches.py tests/wrong/rope/bf16_positions.py

Why these thresholds: a patch is worth keeping when a reader sees the mistake at a glance. 30
changed lines is two or three hunks of a few lines each, about a screen with context; past
that the diff is a rewrite and reads worse than the whole file. The 40% bound keeps short
references (a 40-line reference where 30 lines change) as whole files: there the variant is
another algorithm, not a change of this one.
"""

from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass
from pathlib import Path

from inferprep import paths
from inferprep.wrong_variants import HEADER_FORBIDDEN, apply_patch, make_patch, parse_patch

MAX_LINES = 30
MAX_FRACTION = 0.4


@dataclass
class Outcome:
    path: Path
    converted: bool
    why: str
    changed: int = 0


def _docstring_span(tree: ast.Module, lines: list[str]) -> tuple[int, int] | None:
    """0-based ``[start, end)`` line span of the module docstring when it has lines of its own."""
    if not (tree.body and isinstance(tree.body[0], ast.Expr) and isinstance(tree.body[0].value, ast.Constant)
            and isinstance(tree.body[0].value.value, str)):
        return None
    node = tree.body[0]
    start, end = node.lineno - 1, node.end_lineno
    if node.col_offset != 0 or len(lines[end - 1].rstrip().encode("utf-8")) != node.end_col_offset:
        return None
    return start, end


def _without_docstring(tree: ast.Module) -> str:
    body = tree.body[1:] if ast.get_docstring(tree, clean=False) is not None else tree.body
    return ast.dump(ast.Module(body=body, type_ignores=[]))


def swap_docstring(variant: str, reference: str) -> str | None:
    """``variant`` with its module docstring replaced by the reference's (removed when the
    reference has none); None when the docstring does not stand on lines of its own."""
    v_lines, r_lines = variant.splitlines(keepends=True), reference.splitlines(keepends=True)
    v_span = _docstring_span(ast.parse(variant), v_lines)
    if v_span is None:
        return None
    r_span = _docstring_span(ast.parse(reference), r_lines)
    r_doc = r_lines[r_span[0]:r_span[1]] if r_span else []
    return "".join(v_lines[:v_span[0]] + r_doc + v_lines[v_span[1]:])


def convert(path: Path, *, max_lines: int, max_fraction: float, write: bool) -> Outcome:
    module = path.parent.name
    ref_path = paths.reference_dir() / f"{module}.py"
    if not ref_path.is_file():
        return Outcome(path, False, f"no reference {ref_path.name}")
    reference, variant = ref_path.read_text(encoding="utf-8"), path.read_text(encoding="utf-8")
    try:
        tree = ast.parse(variant)
    except SyntaxError as e:
        return Outcome(path, False, f"does not parse: {e}")
    doc = ast.get_docstring(tree)
    if not doc:
        return Outcome(path, False, "no docstring to carry into the header")
    if any(line.startswith(HEADER_FORBIDDEN) for line in doc.splitlines()):
        return Outcome(path, False, "a docstring line would read as a diff line")
    swapped = swap_docstring(variant, reference)
    if swapped is None:
        return Outcome(path, False, "the docstring shares a line with code")
    if _without_docstring(ast.parse(swapped)) != _without_docstring(tree):
        return Outcome(path, False, "swapping the docstring changed the code (internal check)")
    if swapped == reference:
        return Outcome(path, False, "equals the reference but for its docstring")
    rel = ref_path.relative_to(paths.content_root()).as_posix()
    patch_text = make_patch(reference, swapped, doc + "\n", rel)
    patch = parse_patch(patch_text, path.name)
    changed = sum(op != " " for h in patch.hunks for op, _ in h.lines)
    n_ref = max(len(reference.splitlines()), 1)
    if changed > max_lines or changed > max_fraction * n_ref:
        return Outcome(path, False, f"{changed} changed lines of {n_ref}: a different program", changed)
    if apply_patch(patch, reference, path.name, rel) != swapped:
        return Outcome(path, False, "the patch does not reproduce the variant (internal check)", changed)
    target = path.with_suffix(".patch")
    if target.exists():
        return Outcome(path, False, f"{target.name} exists already", changed)
    if write:
        target.write_text(patch_text, encoding="utf-8")
        path.unlink()
    return Outcome(path, True, f"{changed} changed lines of {n_ref}", changed)


def _variants(args: list[str]) -> list[Path]:
    if not args:
        return sorted(paths.wrong_dir().glob("*/*.py"))
    out: list[Path] = []
    for a in args:
        p = Path(a)
        if p.is_dir():
            out += sorted(p.glob("*.py"))
        elif p.suffix == ".py" and p.is_file():
            out.append(p)
        elif (paths.wrong_dir() / a).is_dir():
            out += sorted((paths.wrong_dir() / a).glob("*.py"))
        else:
            sys.exit(f"not a variant, a variant folder or a module name: {a}")
    return [p.resolve() for p in out]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("variants", nargs="*", help="variant files, tests/wrong/<module>/ folders or module names "
                    "(default: every variant)")
    ap.add_argument("--max-lines", type=int, default=MAX_LINES, help="most added plus removed lines")
    ap.add_argument("--max-fraction", type=float, default=MAX_FRACTION,
                    help="most changed lines as a fraction of the reference's lines")
    ap.add_argument("--dry-run", action="store_true", help="say what would change, write nothing")
    ap.add_argument("--verbose", "-v", action="store_true", help="one line per variant")
    a = ap.parse_args(argv)
    outcomes = [convert(p, max_lines=a.max_lines, max_fraction=a.max_fraction, write=not a.dry_run)
                for p in _variants(a.variants)]
    kept: dict[str, int] = {}
    for o in outcomes:
        if a.verbose:
            print(f"{'patch' if o.converted else 'whole'}  {o.path.parent.name}/{o.path.name}: {o.why}")
        if not o.converted:
            key = o.why if "changed lines" not in o.why else "too large a change"
            kept[key] = kept.get(key, 0) + 1
    n = sum(o.converted for o in outcomes)
    verb = "would become" if a.dry_run else "became"
    print(f"{n} of {len(outcomes)} variants {verb} patches; kept whole: "
          + (", ".join(f"{k} ({v})" for k, v in sorted(kept.items(), key=lambda kv: -kv[1])) or "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
