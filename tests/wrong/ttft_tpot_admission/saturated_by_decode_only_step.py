"""WRONG: saturated only when the decode-only step exceeds tpot_s (the one-token chunk's own cost forgotten), and never with no decoders. Killed by admit-no-decoders-fixed-overhead-over-tpot and admit-tpot-equals-decode-only-step."""

from __future__ import annotations

import math

from inferprep.sim.step_model import StepModel

DECISIONS = ("admit", "saturated", "too_long", "backlog")
REMEDIES = ("admit", "route_to_replica", "prefill_pool", "retry_after", "reject")


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _positive_time(name: str, v) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {v!r}")


def _int_list(name: str, v, lo: int) -> None:
    if not isinstance(v, (list, tuple)):
        raise ValueError(f"{name} must be a list of ints")
    for x in v:
        if not _is_int(x) or x < lo:
            raise ValueError(f"every entry of {name} must be an int >= {lo}, got {x!r}")


def _check_common(step_model, tpot_s, decode_contexts) -> None:
    if not isinstance(step_model, StepModel):
        raise ValueError("step_model must be an inferprep.sim.step_model.StepModel")
    _positive_time("tpot_s", tpot_s)
    _int_list("decode_contexts", decode_contexts, 1)


class _Batch:
    """The running decoders of one replica, frozen for the projection. ``step(q, c, r)`` is
    ``sm.step_s(decode_rows + [(q, c, r)])`` bit for bit (StepModel.breakdown sums the rows'
    attention left to right from 0.0, then adds fixed + GEMMs + attention), without re-summing
    the decoders' attention at every call."""

    def __init__(self, sm: StepModel, decode_contexts) -> None:
        self.sm, self.n = sm, len(decode_contexts)
        att = 0.0
        for c in decode_contexts:
            att += sm.attention_s(1, c)
        self.att = att

    def step(self, q: int, c: int, r: int) -> float:
        sm = self.sm
        return float(sm.t_fixed_s) + sm.gemm_s(self.n + q, self.n + r) + (self.att + sm.attention_s(q, c))


def _fits(batch: _Batch, tpot_s, prefix: int, c: int) -> bool:
    # The chunk's row reserves a logit row, so a chunk that completes its prompt fits too.
    return batch.step(c, prefix, 1) <= tpot_s


def _largest_fit(batch: _Batch, tpot_s, prefix, cap: int) -> int:
    """Largest C in [0, cap] whose step fits (the step time grows with C)."""
    if cap < 1 or not _fits(batch, tpot_s, prefix, 1):
        return 0
    if _fits(batch, tpot_s, prefix, cap):
        return cap
    lo, hi = 1, cap                      # lo fits, hi does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _fits(batch, tpot_s, prefix, mid):
            lo = mid
        else:
            hi = mid
    return lo


def max_chunk(step_model: StepModel, tpot_s: float, decode_contexts: list, prefix: int) -> int:
    _check_common(step_model, tpot_s, decode_contexts)
    if not _is_int(prefix) or prefix < 0:
        raise ValueError(f"prefix must be an int >= 0, got {prefix!r}")
    batch = _Batch(step_model, decode_contexts)
    cap = 1
    while _fits(batch, tpot_s, prefix, cap):   # double until a chunk does not fit
        cap *= 2
    return _largest_fit(batch, tpot_s, prefix, cap)


def _finish_times(sm, tpot_s, decode_contexts, prompts) -> list:
    batch = _Batch(sm, decode_contexts)
    t, out = 0.0, []
    for P in prompts:
        done, cap = 0, P
        while done < P:
            # The chunk never grows as the prefix does: search below the last one.
            n = _largest_fit(batch, tpot_s, done, min(P - done, cap))
            if n == 0:
                return out + [math.inf] * (len(prompts) - len(out))
            t = t + batch.step(n, done, 1 if done + n == P else 0)
            done += n
            cap = n if done < P else cap
        out.append(t)
    return out


def prefill_finish_times(step_model: StepModel, tpot_s: float, decode_contexts: list,
                         prompts: list) -> list:
    _check_common(step_model, tpot_s, decode_contexts)
    _int_list("prompts", prompts, 1)
    return _finish_times(step_model, tpot_s, decode_contexts, prompts)


def admit(step_model: StepModel, tpot_s: float, ttft_s: float, decode_contexts: list,
          queue_ahead: list, prompt: int, others: list = ()) -> dict:
    _check_common(step_model, tpot_s, decode_contexts)
    _positive_time("ttft_s", ttft_s)
    _int_list("queue_ahead", queue_ahead, 1)
    if not _is_int(prompt) or prompt < 1:
        raise ValueError(f"prompt must be an int >= 1, got {prompt!r}")
    if not isinstance(others, (list, tuple)):
        raise ValueError("others must be a list of [decode_contexts, queue_ahead]")
    for o in others:
        if not isinstance(o, (list, tuple)) or len(o) != 2:
            raise ValueError(f"each replica in others is [decode_contexts, queue_ahead], got {o!r}")
        _int_list("a replica's decode_contexts", o[0], 1)
        _int_list("a replica's queue_ahead", o[1], 1)

    def projected(decoders, queue) -> float:
        return _finish_times(step_model, tpot_s, decoders, list(queue) + [prompt])[-1]

    here = projected(decode_contexts, queue_ahead)
    if decode_contexts and step_model.step_s([(1, c, 1) for c in decode_contexts]) > tpot_s:
        decision = "saturated"
    elif projected(decode_contexts, []) > ttft_s:
        decision = "too_long"
    elif here > ttft_s:
        decision = "backlog"
    else:
        decision = "admit"
    out = {"decision": decision, "projected_ttft_s": here, "remedy": "admit", "replica": None,
           "retry_after_s": None}
    if decision == "admit":
        return out
    elsewhere = [(projected(d, q), k) for k, (d, q) in enumerate(others)]
    best = min(elsewhere, default=None)
    if best is not None and best[0] <= ttft_s:
        out.update(remedy="route_to_replica", replica=best[1])
    elif decision == "too_long":
        out.update(remedy="prefill_pool")
    elif decision == "backlog":
        out.update(remedy="retry_after", retry_after_s=here - ttft_s)
    else:
        out.update(remedy="reject")
    return out
