"""The GPU check's driver (``scripts/gpu_check.sh`` runs it; see that script for the machine).

Grades, on one device, every selected exercise's reference (it must pass), its stub (it must
fail) and a sample of its known-wrong variants (each must fail; the variants that build an
N x N matrix must hit the memory limit), in parallel worker processes, each grading time-boxed
and the whole run under one deadline; then writes ``summary.json`` and ``summary.txt`` into the
output folder. Imports only the judge and the catalog of ``inferprep`` (torch, numpy, pydantic),
never the CLI or the web app. Exit code 0 when every expectation held, 1 otherwise, 2 on bad
arguments.
"""

from __future__ import annotations

import argparse
import ast
import json
import multiprocessing
import os
import platform
import random
import sys
import threading
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

MEMORY_VARIANTS = {
    "flash-attention-forward": ("materialize_scores", "rowblock_softmax"),
    "flash-attention-backward": ("materialize_p", "rowblock_softmax"),
}
"""Known-wrong variants (by stem: a whole file or a patch) that must hit the memory limit (an N x N or B_q x N float32 matrix is
576 MiB, over the exercise's limit): always run, on every device, so the GPU cap is seen to bind."""

KINDS = ("reference", "stub", "variant")


def plan(exercises, device: str, *, variants: int, seed: int) -> tuple[list[dict], list[dict]]:
    """(jobs, skipped) for ``exercises`` (catalog entries) on ``device``.

    Jobs come in priority order: every reference first, then every stub, then the variants (so a
    run cut short by its deadline has checked the most important first). Per exercise, the
    variants are its ``MEMORY_VARIANTS`` plus ``variants`` others drawn with ``seed`` from its
    ``tests/wrong`` folder (sorted by name, so the draw is the same on every machine). An exercise
    not graded on ``device`` or unavailable here (triton missing) is skipped with the reason."""
    refs, stubs, wrongs, skipped = [], [], [], []
    rnd = random.Random(seed)
    for ex in exercises:
        if device not in ex.meta.devices:
            skipped.append({"slug": ex.slug, "why": f"graded on {', '.join(ex.meta.devices)} only"})
            continue
        if ex.unavailable:
            skipped.append({"slug": ex.slug, "why": f"unavailable here: {ex.unavailable}"})
            continue
        refs.append({"slug": ex.slug, "kind": "reference", "file": str(ex.reference_path), "expect": "passed"})
        stubs.append({"slug": ex.slug, "kind": "stub", "file": str(ex.stub_path), "expect": "fails"})
        paths = sorted(ex.wrong_paths, key=lambda p: p.name)
        memory = [p for p in paths if p.stem in MEMORY_VARIANTS.get(ex.slug, ())]
        others = [p for p in paths if p not in memory]
        chosen = memory + sorted(rnd.sample(others, min(variants, len(others))), key=lambda p: p.name)
        for p in chosen:
            expect = "memory_limit" if p in memory else "fails"
            wrongs.append({"slug": ex.slug, "kind": "variant", "file": str(p), "expect": expect})
    return refs + stubs + wrongs, skipped


def met(expect: str, status: str, target_failed: bool) -> bool:
    """Whether a grading's outcome is what its job expected: ``passed``; ``fails`` (not passed,
    and not an internal error: a platform failure proves nothing about the grader; a variant aimed
    at the input checks must fail one, ``target_failed``); ``memory_limit`` exactly."""
    if expect == "passed":
        return status == "passed"
    if expect == "memory_limit":
        return status == "memory_limit"
    return status not in ("passed", "internal_error", "skipped", "error") and target_failed


def _variant(job: dict):
    from inferprep import catalog
    from inferprep.wrong_variants import WrongVariant
    return WrongVariant(Path(job["file"]), catalog.get(job["slug"]).reference_path)


def _variant_target(job: dict) -> str:
    try:
        return _variant(job).target()
    except (ValueError, SyntaxError, OSError):
        return "core"


def run_job(job: dict, device: str, sandbox_mode: str | None, deadline: float, job_timeout_s: float,
            perf: bool) -> dict:
    """Grade one job in this worker process; never raises. ``deadline`` is a ``time.time()``
    instant: a job that starts after it is skipped, one running at it (or past ``job_timeout_s``)
    is cancelled through the judge's cancel event and reported as such."""
    out = dict(job, status="skipped", ok=False, seconds=0.0, message="", passed=0, total=0)
    left = deadline - time.time()
    if left <= 1:
        out["message"] = "not run: the check's time budget was spent"
        return out
    t0 = time.time()
    cancel = threading.Event()
    timer = threading.Timer(min(left, job_timeout_s), cancel.set)
    timer.daemon = True
    timer.start()
    try:
        import inspect

        from inferprep import catalog
        from inferprep.runner import judge
        from inferprep.verdict import INPUT_CHECKS
        ex = catalog.get(job["slug"])
        # a variant kept as a patch is the reference with the patch applied
        code = _variant(job).source() if job["kind"] == "variant" else Path(job["file"]).read_text(encoding="utf-8")
        kwargs = {}
        target = "core"
        if job["kind"] == "reference":
            if "perf" in inspect.signature(judge.grade).parameters:
                kwargs["perf"] = perf
        else:
            target = _variant_target(job) if job["kind"] == "variant" else "core"
            kwargs["fail_fast"] = INPUT_CHECKS if target == INPUT_CHECKS else True
        v = judge.grade(ex, code, device=device, sandbox_mode=sandbox_mode, cancel=cancel, **kwargs)
        status = v.status.value
        if target == INPUT_CHECKS:
            target_failed = any(not c.passed for c in v.cases if c.group == INPUT_CHECKS)
        else:
            target_failed = status != "passed"
        first_fail = next((c for c in v.cases if not c.passed), None)
        message = v.message or (f"{first_fail.name}: {first_fail.message}" if first_fail else "")
        out.update(status=status, passed=v.passed, total=v.total, sandbox=v.sandbox,
                   message=message.strip().splitlines()[0][:300] if message.strip() else "",
                   ok=met(job["expect"], status, target_failed))
        if cancel.is_set():
            out["message"] = f"cancelled at its time box ({min(left, job_timeout_s):.0f} s); " + out["message"]
            out["ok"] = False
        perf_result = getattr(v, "perf", None)
        if perf_result is not None:
            out["perf"] = perf_result.model_dump(mode="json") if hasattr(perf_result, "model_dump") else perf_result
    except BaseException as e:  # noqa: BLE001 - one job's failure is a line in the summary
        out.update(status="error", ok=False, message=f"{type(e).__name__}: {e}"[:300],
                   traceback=traceback.format_exc()[-3000:])
    finally:
        timer.cancel()
        out["seconds"] = round(time.time() - t0, 2)
    return out


def versions(device: str) -> dict:
    """What this machine has: Python, torch, triton, numpy, pydantic, the CUDA device."""
    import importlib

    found = {"python": platform.python_version(), "platform": platform.platform()}
    for name in ("torch", "triton", "numpy", "pydantic", "pydantic_core"):
        try:
            found[name] = importlib.import_module(name).__version__
        except Exception as e:  # noqa: BLE001
            found[name] = f"absent ({type(e).__name__})"
    if device == "cuda":
        import torch
        if torch.cuda.is_available():
            p = torch.cuda.get_device_properties(0)
            found.update(cuda_runtime=torch.version.cuda, device_name=p.name, device_total_bytes=int(p.total_memory),
                         device_capability=f"{p.major}.{p.minor}", device_count=torch.cuda.device_count())
        else:
            found["cuda"] = "not available"
    return found


def summarize(results: list[dict], skipped: list[dict], meta: dict) -> dict:
    """The summary: counts per kind (ok of run), the memory variants, perf figures, failures."""
    counts = {}
    for kind in KINDS:
        rows = [r for r in results if r["kind"] == kind]
        counts[kind] = {"ok": sum(r["ok"] for r in rows), "run": sum(r["status"] != "skipped" for r in rows),
                        "planned": len(rows)}
    mem = [r for r in results if r.get("expect") == "memory_limit"]
    counts["memory_limit_binds"] = {"ok": sum(r["ok"] for r in mem), "run": sum(r["status"] != "skipped" for r in mem),
                                    "planned": len(mem)}
    perf = {r["slug"]: r["perf"] for r in results if r.get("perf") is not None}
    failures = [r for r in results if not r["ok"]]
    return dict(meta, ok=not failures and bool(results), counts=counts, perf=perf, skipped_exercises=skipped,
                failures=[{k: r.get(k) for k in ("slug", "kind", "file", "expect", "status", "message")} for r in failures],
                results=results)


def render_text(summary: dict) -> str:
    """The summary as lines of text (what the note quotes)."""
    v = summary["versions"]
    lines = [f"inferprep GPU check on {summary['device']}: {'OK' if summary['ok'] else 'FAILURES'} "
             f"in {summary['wall_s']:.0f} s with {summary['jobs']} workers (sandbox: {summary['sandbox']})",
             "versions: " + ", ".join(f"{k} {v[k]}" for k in sorted(v))]
    for kind, c in summary["counts"].items():
        lines.append(f"{kind:>18}: {c['ok']} ok of {c['run']} run ({c['planned']} planned)")
    if summary["skipped_exercises"]:
        lines.append(f"exercises not graded on {summary['device']}: {len(summary['skipped_exercises'])} "
                     f"({', '.join(s['slug'] for s in summary['skipped_exercises'][:8])}"
                     f"{', ...' if len(summary['skipped_exercises']) > 8 else ''})")
    if summary["perf"]:
        for slug, p in sorted(summary["perf"].items()):
            lines.append(f"perf {slug}: {json.dumps(p, sort_keys=True)[:300]}")
    else:
        lines.append(f"perf: {summary['perf_note']}")
    for f in summary["failures"]:
        lines.append(f"FAIL {f['slug']} {f['kind']} {Path(f['file']).name}: expected {f['expect']}, got {f['status']}"
                     f"{': ' + f['message'] if f['message'] else ''}")
    for r in summary["results"]:
        lines.append(f"  {r['slug']:<32} {r['kind']:<9} {Path(r['file']).name:<40} {r['status']:<16} "
                     f"{r['passed']}/{r['total']} {r['seconds']:6.1f}s {'ok' if r['ok'] else 'NOT OK'}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--out", required=True, help="folder for summary.json and summary.txt")
    ap.add_argument("--only", default="", help="comma-separated slugs (default: every exercise)")
    ap.add_argument("--sample", type=int, default=0, help="grade only this many exercises, drawn with --seed (0: all)")
    ap.add_argument("--variants", type=int, default=2, help="known-wrong variants per exercise besides the memory ones")
    ap.add_argument("--jobs", type=int, default=max(1, min(16, os.cpu_count() or 1)))
    ap.add_argument("--budget-s", type=float, default=270.0, help="the whole run's deadline, in seconds")
    ap.add_argument("--job-timeout-s", type=float, default=150.0, help="one grading's time box, in seconds")
    ap.add_argument("--sandbox", default=None, help="auto, bwrap or none (default: the runner's auto)")
    ap.add_argument("--perf", choices=("auto", "on", "off"), default="auto",
                    help="the perf stage on the references (auto: on for cuda, off for cpu)")
    ap.add_argument("--seed", type=int, default=19)
    args = ap.parse_args(argv)
    if args.jobs < 1 or args.budget_s <= 0 or args.variants < 0 or args.sample < 0:
        print("gpu_check: --jobs, --budget-s must be positive; --variants, --sample not negative", file=sys.stderr)
        return 2
    t0 = time.time()
    deadline = t0 + args.budget_s
    from inferprep import catalog
    from inferprep.runner import judge, sandbox

    exercises = catalog.all_exercises()
    if args.only:
        wanted = [s.strip() for s in args.only.split(",") if s.strip()]
        known = {e.slug for e in exercises}
        unknown = [s for s in wanted if s not in known]
        if unknown:
            print(f"gpu_check: unknown exercise(s): {', '.join(unknown)}", file=sys.stderr)
            return 2
        exercises = [e for e in exercises if e.slug in wanted]
    if args.sample:
        exercises = sorted(random.Random(args.seed).sample(exercises, min(args.sample, len(exercises))),
                           key=lambda e: e.slug)
    try:
        judge.resolve_device(args.device)
        mode = sandbox.sandbox_mode(args.sandbox)
    except Exception as e:  # noqa: BLE001
        print(f"gpu_check: {e}", file=sys.stderr)
        return 2
    jobs, skipped = plan(exercises, args.device, variants=args.variants, seed=args.seed)
    has_perf = "perf" in __import__("inspect").signature(judge.grade).parameters
    perf = has_perf and (args.perf == "on" or (args.perf == "auto" and args.device == "cuda"))
    perf_note = ("this checkout's judge has no perf stage (judge.grade takes no perf argument): skipped" if not has_perf
                 else "on the references of exercises with perf = true" if perf else "off (--perf off, or cpu)")
    print(f"gpu_check: {len(jobs)} gradings of {len(exercises) - len(skipped)} exercises on {args.device}, "
          f"{args.jobs} workers, sandbox {mode}, deadline {args.budget_s:.0f} s; perf: {perf_note}", flush=True)
    results: list[dict] = []
    ctx = multiprocessing.get_context("spawn")  # never fork a process that may hold CUDA state
    with ProcessPoolExecutor(max_workers=args.jobs, mp_context=ctx) as pool:
        futures = [pool.submit(run_job, j, args.device, args.sandbox, deadline, args.job_timeout_s, perf) for j in jobs]
        for f in as_completed(futures):
            r = f.result()
            results.append(r)
            print(f"  {'ok    ' if r['ok'] else 'NOT OK'} {r['slug']} {r['kind']} {Path(r['file']).name}: {r['status']} "
                  f"({r['seconds']:.1f} s)", flush=True)
    key = {(j["slug"], j["kind"], j["file"]): i for i, j in enumerate(jobs)}
    results.sort(key=lambda r: key.get((r["slug"], r["kind"], r["file"]), len(jobs)))
    meta = {"device": args.device, "sandbox": mode, "jobs": args.jobs, "versions": versions(args.device),
            "wall_s": round(time.time() - t0, 1), "budget_s": args.budget_s, "perf_note": perf_note,
            "selection": {"only": args.only, "sample": args.sample, "variants": args.variants, "seed": args.seed}}
    summary = summarize(results, skipped, meta)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str), encoding="utf-8")
    text = render_text(summary)
    (out / "summary.txt").write_text(text, encoding="utf-8")
    print(text.split("\n  ", 1)[0].rstrip())
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
