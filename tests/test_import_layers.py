"""The import arrows among inferprep's modules point one way: no circles, and no lower layer
importing a higher one.

Every ``import`` and ``from ... import`` counts, at module level or inside a function (a lazy
import is still an arrow: it only delays the circle to the first call). An arrow goes to the
module that is imported: ``from . import x`` names the submodule ``x``, not its package (a
package is always initialised before its submodules, so that arrow is no choice of ours);
``from .pkg import name`` names ``pkg`` when ``name`` is not a submodule of it.

The layers, lowest first. A module may import modules of its own layer (without making a
circle) and of lower layers, never of a higher one:

1. base: what everything stands on. paths, settings, cohort_settings, verdict, specs, sim,
   errors (the ``ServiceError`` family), models, cohort_models, interview_models, migrations,
   notify, catalog, wrong_variants, runner, grading.
2. storage: db, queue.
3. services: services, cohorts, release_policy, auth, progress, worker, check, mutate, and the
   interview modules (interview, cohort_interviews, followups), unlock (the editorial rules), grades_export.
4. web: inferprep.web and everything under it.
5. cli: cli, cli_common, cli_cohort, cli_cohort_interviews, cli_interview, cli_followups.

A new module must be given a layer here (``LAYERS``) before this test passes.

To see the arrows of one module: ``python tests/test_import_layers.py [MODULE]`` from the root.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "inferprep"

# module name, or prefix ending in ".", -> layer (lowest first); the longest match wins
LAYER_NAMES = ("base", "storage", "services", "web", "cli")
LAYERS: dict[str, str] = {
    "inferprep": "base",   # the package's __init__: the version only
    **{f"inferprep.{m}": "base" for m in (
        "paths", "settings", "cohort_settings", "verdict", "specs", "errors", "models", "cohort_models",
        "interview_models", "notify", "catalog", "wrong_variants")},
    **{f"inferprep.{p}.": "base" for p in ("sim", "migrations", "runner", "grading")},
    **{f"inferprep.{p}": "base" for p in ("sim", "migrations", "runner", "grading")},
    "inferprep.db": "storage",
    "inferprep.queue": "storage",
    **{f"inferprep.{m}": "services" for m in (
        "services", "cohorts", "release_policy", "auth", "progress", "worker", "check", "mutate",
        "interview", "cohort_interviews", "followups", "unlock", "grades_export", "perf_board")},
    "inferprep.mutate.": "services",
    "inferprep.web": "web",
    "inferprep.web.": "web",
    **{f"inferprep.{m}": "cli" for m in ("__main__", "cli", "cli_common", "cli_cohort", "cli_cohort_interviews", "cli_interview",
                                          "cli_followups")},
}


def package_modules(source_root: Path, package: str = PACKAGE) -> dict[str, tuple[Path, bool]]:
    """{dotted module name: (file, is a package's __init__)} for every .py file under the package."""
    out = {}
    for path in sorted((source_root / package).rglob("*.py")):
        parts = list(path.relative_to(source_root).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        out[".".join(parts)] = (path, is_package)
    return out


def import_arrows(source_root: Path, package: str = PACKAGE) -> dict[str, dict[str, int]]:
    """{module: {imported module of the same package: first line that imports it}}, from every
    import statement anywhere in the module's text (module level, functions, ``TYPE_CHECKING``)."""
    modules = package_modules(source_root, package)
    arrows: dict[str, dict[str, int]] = {}
    for name, (path, is_package) in modules.items():
        here = name.split(".") if is_package else name.split(".")[:-1]   # the package ``.`` means
        out = arrows.setdefault(name, {})
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here[:len(here) - (node.level - 1)]
                    origin = ".".join(base + ([node.module] if node.module else []))
                else:
                    origin = node.module or ""
                targets = [f"{origin}.{a.name}" if f"{origin}.{a.name}" in modules else origin for a in node.names]
            for target in targets:
                if target != package and not target.startswith(package + "."):
                    continue
                while target and target not in modules:   # ``import a.b.name``: the module a.b
                    target = target.rpartition(".")[0]
                if target and target != name:
                    out.setdefault(target, node.lineno)
    return arrows


def circles(arrows: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(arrows):
        if start in index:
            continue
        work = [(start, iter(sorted(arrows.get(start, {}))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, successors = work[-1]
            for w in successors:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(arrows.get(w, {})))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == v:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def layer_of(module: str) -> str | None:
    if module in LAYERS:
        return LAYERS[module]
    prefixes = [p for p in LAYERS if p.endswith(".") and module.startswith(p)]
    return LAYERS[max(prefixes, key=len)] if prefixes else None


def describe(component: list[str], arrows: dict[str, dict[str, int]]) -> str:
    lines = [" <-> ".join(component)]
    for a in component:
        for b, line in sorted(arrows[a].items()):
            if b in component:
                lines.append(f"    {a} (line {line}) imports {b}")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def arrows() -> dict[str, dict[str, int]]:
    return import_arrows(ROOT / "platform")


def test_no_import_circles(arrows):
    found = circles(arrows)
    assert not found, "import circles among inferprep's modules:\n" + "\n".join(describe(c, arrows) for c in found)


def test_every_module_has_a_layer(arrows):
    missing = sorted(m for m in arrows if layer_of(m) is None)
    assert not missing, f"give these modules a layer in LAYERS (tests/test_import_layers.py): {missing}"


def test_no_lower_layer_imports_a_higher_one(arrows):
    rank = {name: i for i, name in enumerate(LAYER_NAMES)}
    upward = []
    for a, targets in sorted(arrows.items()):
        for b, line in sorted(targets.items()):
            la, lb = layer_of(a), layer_of(b)
            if la is not None and lb is not None and rank[lb] > rank[la]:
                upward.append(f"{a} ({la}, line {line}) imports {b} ({lb})")
    assert not upward, "imports that point up the layers:\n" + "\n".join(upward)


def test_the_checks_see_a_circle_through_a_lazy_import(tmp_path):
    """The arrows and the circle finder on a made-up package: a circle closed only by an import
    inside a function, a relative import two levels up, and a package ``__init__``."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "low.py").write_text("import os\n\ndef f():\n    from .sub import high\n    return high\n")
    (pkg / "other.py").write_text("VALUE = 1\n")
    (pkg / "sub" / "__init__.py").write_text("from .high import g\n")
    (pkg / "sub" / "high.py").write_text("from ..low import f\nfrom .. import other\n\ndef g():\n    return f\n")
    arrows = import_arrows(tmp_path, "pkg")
    assert arrows["pkg.low"] == {"pkg.sub.high": 4}
    assert arrows["pkg.sub.high"] == {"pkg.low": 1, "pkg.other": 2}
    assert arrows["pkg.sub"] == {"pkg.sub.high": 1}
    assert circles(arrows) == [["pkg.low", "pkg.sub.high"]]
    (pkg / "low.py").write_text("import os\n")
    assert circles(import_arrows(tmp_path, "pkg")) == []


def test_layer_of_takes_the_longest_match():
    assert layer_of("inferprep.web.pages.interview") == "web"
    assert layer_of("inferprep.runner.judge") == "base"
    assert layer_of("inferprep.mutate.engine") == "services"
    assert layer_of("inferprep.cli_interview") == "cli"
    assert layer_of("inferprep.nothing_like_it") is None


def test_the_documented_uvicorn_factory_builds_a_cohort_app(monkeypatch, tmp_path):
    """``create_from_env`` left ``web.cohort_mode`` (which ``app`` imports) for ``web.app``: the
    name docs/hosting.md gives uvicorn still builds a cohort-mode app from INFERPREP_*."""
    from uvicorn.importer import import_from_string
    names = set(re.findall(r"--factory\s+(\S+)", (ROOT / "docs" / "hosting.md").read_text(encoding="utf-8")))
    assert names == {"inferprep.web.app:create_from_env"}
    for var, value in {"INFERPREP_DATA_DIR": str(tmp_path), "INFERPREP_SECRET_KEY": "s" * 40,
                       "INFERPREP_GRADING_THREADS": "0", "INFERPREP_COHORT_MODE": "0"}.items():
        monkeypatch.setenv(var, value)
    monkeypatch.delenv("INFERPREP_DATABASE_URL", raising=False)
    app = import_from_string(names.pop())()
    assert app.state.cohort_mode is True and app.state.sign_in is not None
    assert app.state.settings.data_dir == tmp_path


if __name__ == "__main__":   # the arrows of one module, or every circle
    graph = import_arrows(ROOT / "platform")
    if len(sys.argv) > 1:
        for target, line in sorted(graph[sys.argv[1]].items()):
            print(f"{sys.argv[1]}:{line} -> {target} ({layer_of(target)})")
    else:
        for c in circles(graph):
            print(describe(c, graph))
