"""WRONG (input checks): accepts a bool as an arrival time or a token count (True is an int in Python). Killed by rejects-arrival-bool."""

from __future__ import annotations

import math

from inferprep.sim.step_model import StepModel


def _is_int(v) -> bool:
    return isinstance(v, int)


def _pairs(name: str, seq, width: int) -> list:
    if not isinstance(seq, (list, tuple)):
        raise ValueError(f"{name} must be a list")
    for e in seq:
        if not isinstance(e, (list, tuple)) or len(e) != width:
            raise ValueError(f"each entry of {name} must have {width} fields, got {e!r}")
    return list(seq)


def _validate(step_model, warm, trace, max_num_batched_tokens, max_num_seqs) -> None:
    if not isinstance(step_model, StepModel):
        raise ValueError("step_model must be an inferprep.sim.step_model.StepModel")
    for name, v in (("max_num_batched_tokens", max_num_batched_tokens), ("max_num_seqs", max_num_seqs)):
        if not _is_int(v) or v < 1:
            raise ValueError(f"{name} must be an int >= 1, got {v!r}")
    if max_num_batched_tokens < max_num_seqs:   # vLLM's SchedulerConfig refuses this too
        raise ValueError("max_num_batched_tokens must be >= max_num_seqs")
    for ctx, rem in _pairs("warm", warm, 2):
        if not _is_int(ctx) or ctx < 1 or not _is_int(rem) or rem < 1:
            raise ValueError(f"a warm request is (context >= 1, remaining_output >= 1) ints, got {(ctx, rem)!r}")
    if len(warm) > max_num_seqs:
        raise ValueError("more warm requests than max_num_seqs")
    for arr, prompt, out in _pairs("trace", trace, 3):
        if not isinstance(arr, (int, float)) or not math.isfinite(arr) or arr < 0:
            raise ValueError(f"arrival times must be finite numbers >= 0, got {arr!r}")
        if not _is_int(prompt) or prompt < 1 or not _is_int(out) or out < 1:
            raise ValueError(f"prompt_tokens and output_tokens must be ints >= 1, got {(prompt, out)!r}")


class _Req:
    def __init__(self, rid: int, arrival, prompt: int, output: int, computed: int, emitted: int):
        self.rid, self.arrival, self.prompt, self.output = rid, arrival, prompt, output
        self.computed = computed      # tokens whose K/V is in the cache
        self.emitted = emitted        # output tokens emitted so far (a warm request: 1 before t=0)
        self.admitted = None
        self.times: list[float] = []  # token times inside the simulation

    def need(self) -> int:
        """Tokens this request wants this step: the rest of its prompt, or 1 when decoding."""
        return 1 if self.emitted else self.prompt - self.computed


def simulate_engine(step_model: StepModel, warm, trace, max_num_batched_tokens: int,
                    max_num_seqs: int) -> dict:
    _validate(step_model, warm, trace, max_num_batched_tokens, max_num_seqs)
    reqs: list[_Req] = []
    running: list[_Req] = []
    for ctx, rem in warm:          # already decoding: ctx tokens cached, one output token pending
        r = _Req(len(reqs), None, ctx, rem + 1, computed=ctx, emitted=1)
        reqs.append(r)
        running.append(r)
    W = len(reqs)
    for arr, prompt, out in trace:
        reqs.append(_Req(len(reqs), float(arr), prompt, out, computed=0, emitted=0))
    pending = sorted(reqs[W:], key=lambda r: (r.arrival, r.rid))
    waiting: list[_Req] = []
    steps = []
    t, pi = 0.0, 0
    while running or waiting or pi < len(pending):
        while pi < len(pending) and pending[pi].arrival <= t:
            waiting.append(pending[pi])
            pi += 1
        if not running and not waiting:            # idle: the next step starts at the next arrival
            t = pending[pi].arrival
            continue
        budget = max_num_batched_tokens
        sched: list[tuple[_Req, int]] = []
        for r in running:                          # 1. running requests, in admission order
            if budget == 0:
                break
            n = min(r.need(), budget)
            sched.append((r, n))
            budget -= n
        while waiting and budget > 0 and len(running) < max_num_seqs:   # 2. FCFS admission
            r = waiting.pop(0)
            r.admitted = t
            n = min(r.need(), budget)
            sched.append((r, n))
            budget -= n
            running.append(r)
        rows = []
        for r, n in sched:
            emits = 1 if r.emitted or r.computed + n == r.prompt else 0
            rows.append((n, r.computed, emits))
        dt = step_model.step_s(rows)
        steps.append({"start_s": t, "duration_s": dt, "rows": [[r.rid, n] for r, n in sched]})
        t = t + dt
        for (r, n), (_, _, emits) in zip(sched, rows):
            r.computed += n
            if emits:
                r.emitted += 1
                r.times.append(t)
        running = [r for r in running if r.emitted < r.output]

    out = []
    for r in reqs:
        gaps = [b - a for a, b in zip(r.times, r.times[1:])]
        is_warm = r.arrival is None
        out.append({
            "admitted_s": r.admitted,
            "first_token_s": None if is_warm else r.times[0],
            "ttft_s": None if is_warm else r.times[0] - r.arrival,
            "finish_s": r.times[-1],
            "tokens": len(r.times),
            "max_gap_s": max(gaps) if gaps else None,
            "mean_gap_s": sum(gaps) / len(gaps) if gaps else None,
        })
    return {"steps": steps, "requests": out}
