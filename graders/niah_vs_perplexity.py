"""Hidden grader of niah-vs-perplexity.

The toy long-context models live here, in the trusted parent. The submission gets a proxy with two
methods, ``perplexity(served, length)`` and ``niah(served, length, depth)``, and a few plain
attributes; the parent counts the calls against the budget and logs every experiment, so the
evidence a submission returns can be checked against what it actually ran.

The toy (``ToyLongContextLM``):
- one retrieval head whose needle content sits on the RoPE pairs YaRN interpolates (low
  frequencies). The needle at distance ``delta`` from the question scores
  ``sum_i w_i cos(omega_i * delta)`` times a signal-to-noise ratio ``SNR``; the haystack's best
  distractor scores the maximum of ``length - 1`` standard normals, drawn per (length, depth) from
  a deterministic uniform (inverse CDF of the maximum, so no tensor of keys is built). The
  needle is found when its score is strictly larger. The reference stack runs YaRN factor 4 over
  ``original_context``; a dropped ``rope_scaling`` (or factor 2 instead of 4) rotates those pairs
  4x (2x) faster, so needles farther than about the original context (twice it) are lost;
- a harmful KV cache (int4 keys with one dynamic scale over the whole cache): a haystack that
  holds an outlier token (rate ``kv_rate`` per token, so probability ``1 - (1 - p)^L``) sets a scale
  so coarse that the needle's key rounds to zero, and that cell fails;
- a harmful weight change: a broken retrieval-head projection loses the needle in a fixed fraction
  ``weight_fail`` of haystacks at every length; "weights_all" also moves perplexity by
  ``weight_ppl`` at every length, "weights_head" (the bug confined to the retrieval head) does not;
  "weights_mlp" (a bug outside the retrieval head) moves perplexity and keeps every needle;
- perplexity: ``base(L)`` times one factor per served change: a harmless weight change
  (re-quantization) ``1 + benign_weights`` (at most the tolerance, sometimes exactly it), a weight
  bug ``1 + weight_ppl``, RoPE beyond its trained range ``1 + 0.3 log2(L / L_ood)``; the KV cache
  and harmless config/KV changes do not move it.
Every haystack draw depends on (specimen seed, length, depth) only, never on the configuration or
on the call order, so an experiment regresses iff the culprit is in ``served`` and the culprit's
effect shows at that point: no interactions (the statement's guarantee).

Specimens: twelve slots (three RoPE, five KV, four weights) with their structure fixed and their
draws (seeds, content weights, failure rates, which benign changes are present) from ``g.salt``;
cases are named "specimen k" in a salt-shuffled order. Each specimen is checked at construction
(reference passes every cell, the culprit shows in the grid, harmless changes never regress,
the slot's shape constraint); a specimen that fails a check is redrawn from the next seed of a
deterministic sequence.
"""

from __future__ import annotations

import hashlib
import math
import random
import statistics
import struct
from dataclasses import dataclass, field

from inferprep.grading import Grading, Trial, fail

FACTORS = ("weights", "kv_cache", "rope_scaling")
SNR = 20.0                 # needle score / distractor standard deviation at zero rotation
TRAINED_FACTOR = 4.0       # YaRN factor of the reference config
ROPE_PPL_SLOPE = 0.3       # perplexity factor per doubling past the trained range
_NORMAL = statistics.NormalDist()


def yarn_inv_freq(head_dim: int, base: float, factor: float, original: int,
                  beta_fast: float = 32.0, beta_slow: float = 1.0) -> list[float]:
    """HF ``_compute_yarn_parameters`` (transformers ``modeling_rope_utils.py``): per-pair inverse
    frequencies, interpolated by ``factor`` on the low-frequency pairs with a linear ramp between the
    correction dimensions (computed from ``original``, the original context)."""
    half = head_dim // 2
    inv = [base ** (-2 * i / head_dim) for i in range(half)]
    if factor == 1.0:
        return inv

    def corr_dim(rot: float) -> float:
        return head_dim * math.log(original / (rot * 2 * math.pi)) / (2 * math.log(base))

    low = max(math.floor(corr_dim(beta_fast)), 0)
    high = min(math.ceil(corr_dim(beta_slow)), head_dim - 1)
    if low == high:
        high += 0.001
    out = []
    for i in range(half):
        ramp = min(max((i - low) / (high - low), 0.0), 1.0)
        extrap = 1.0 - ramp
        out.append(inv[i] / factor * (1 - extrap) + inv[i] * extrap)
    return out


def _uniform(seed: int, kind: str, length: int, depth: float) -> float:
    """A deterministic uniform in (0, 1) per (specimen seed, kind, length, depth)."""
    h = hashlib.sha256(f"niah:{seed}:{kind}:{length}:{depth!r}".encode()).digest()
    (k,) = struct.unpack(">Q", h[:8])
    return ((k >> 11) + 0.5) / 2.0 ** 53


@dataclass
class ToyLongContextLM:
    """A served stack that regressed, with exactly one harmful factor (``cause``)."""

    seed: int
    mode: str                       # rope_dropped | rope_factor2 | kv_tensor | weights_all | weights_head | weights_mlp
    original_context: int
    lengths: list[int]
    depths: list[float]
    head_dim: int = 128
    rope_theta: float = 500000.0
    ppl_tol: float = 0.01
    ppl_inf: float = 6.0            # perplexity of the reference at infinite length
    ppl_flat: bool = False          # base(L) = ppl_inf at every length (binary-exact boundary specimen)
    benign_weights: float = 0.0     # relative perplexity shift of a harmless weight change
    weight_ppl: float = 0.0         # weights_all, weights_mlp: relative perplexity shift
    weight_fail: float = 0.0        # weights_*: fraction of haystacks that lose the needle
    kv_fail_at_max: float = 0.0     # kv_tensor: failure probability at the longest length
    budget: dict = field(default_factory=dict)
    log: list = field(default_factory=list)
    violations: list = field(default_factory=list)

    def __post_init__(self) -> None:
        self.cause = {"rope_dropped": "rope_scaling", "rope_factor2": "rope_scaling", "kv_tensor": "kv_cache",
                      "weights_all": "weights", "weights_head": "weights", "weights_mlp": "weights"}[self.mode]
        L0, D = self.original_context, self.head_dim
        base = [self.rope_theta ** (-2 * i / D) for i in range(D // 2)]
        self.omega_ref = yarn_inv_freq(D, self.rope_theta, TRAINED_FACTOR, L0)
        served_factor = {"rope_dropped": 1.0, "rope_factor2": 2.0}.get(self.mode, TRAINED_FACTOR)
        self.omega_served = yarn_inv_freq(D, self.rope_theta, served_factor, L0)
        # positions beyond served_factor * L0 rotate the interpolated pairs past any angle seen in training
        self.rope_ood = served_factor * L0
        # the needle content: the fully interpolated pairs whose angle at the original context is 0.8-1.2 rad
        pairs = [i for i in range(D // 2) if 0.8 <= base[i] * L0 <= 1.2
                 and math.isclose(self.omega_ref[i], base[i] / TRAINED_FACTOR, rel_tol=1e-12)]
        if len(pairs) < 2:
            raise ValueError(f"no content pairs for theta={self.rope_theta}, head_dim={D}, L0={L0}")
        rng = random.Random(f"content:{self.seed}")
        w = [rng.uniform(0.5, 1.5) for _ in pairs]
        self.content = list(zip(pairs, [x / sum(w) for x in w]))
        self.kv_rate = -math.log(1 - self.kv_fail_at_max) / max(self.lengths) if self.kv_fail_at_max else 0.0
        if not self.budget:
            self.budget = {"perplexity": 2 * len(self.lengths) + 3,
                           "niah": len(self.lengths) * len(self.depths) + 3}
        self.calls = {"perplexity": 0, "niah": 0}

    @property
    def factors(self) -> list[str]:
        return list(FACTORS)

    # -- outcomes (uncounted) ------------------------------------------------------------------
    def base_ppl(self, L: int) -> float:
        return self.ppl_inf if self.ppl_flat else self.ppl_inf * (1.0 + 0.3 * math.sqrt(1024.0 / L))

    def ppl_value(self, served: frozenset, L: int) -> float:
        p = self.base_ppl(L)
        if "weights" in served:
            p *= 1.0 + self.benign_weights
            if self.mode in ("weights_all", "weights_mlp"):
                p *= 1.0 + self.weight_ppl
        if "rope_scaling" in served and self.cause == "rope_scaling" and L > self.rope_ood:
            p *= 1.0 + ROPE_PPL_SLOPE * math.log2(L / self.rope_ood)
        return p

    def needle_distance(self, L: int, d: float) -> int:
        return L - round(d * (L - 1))

    def match(self, omega: list[float], delta: int) -> float:
        return sum(w * math.cos(omega[i] * delta) for i, w in self.content)

    def distractor_max(self, L: int, d: float) -> float:
        u = _uniform(self.seed, "haystack", L, d)
        return _NORMAL.inv_cdf(math.exp(math.log(u) / (L - 1)))

    def niah_value(self, served: frozenset, L: int, d: float) -> bool:
        harmful = self.cause in served
        omega = self.omega_served if harmful and self.cause == "rope_scaling" else self.omega_ref
        if not SNR * self.match(omega, self.needle_distance(L, d)) > self.distractor_max(L, d):
            return False
        if harmful and self.cause == "weights" and _uniform(self.seed, "weights", L, d) < self.weight_fail:
            return False
        if harmful and self.cause == "kv_cache" and _uniform(self.seed, "kv", L, d) < 1 - (1 - self.kv_rate) ** L:
            return False
        return True

    def regresses(self, exp: tuple) -> bool:
        """The statement's definition, on a normalized experiment."""
        if exp[0] == "niah":
            return not self.niah_value(frozenset(exp[1]), exp[2], exp[3])
        return self.ppl_value(frozenset(exp[1]), exp[2]) > (1 + self.ppl_tol) * self.ppl_value(frozenset(), exp[2])

    # -- the proxy's methods (counted) ---------------------------------------------------------
    def _served(self, served) -> tuple:
        if not isinstance(served, (list, tuple)) or not all(isinstance(f, str) for f in served):
            raise ValueError("served must be a list of factor names")
        if len(set(served)) != len(served) or any(f not in FACTORS for f in served):
            raise ValueError(f"served must list distinct names from {list(FACTORS)}, got {list(served)[:5]!r}")
        return tuple(sorted(served))

    def _length(self, length) -> int:
        if isinstance(length, bool) or not isinstance(length, int) or length not in self.lengths:
            raise ValueError(f"length must be one of model.lengths {self.lengths}, got {length!r}")
        return length

    def _count(self, kind: str) -> None:
        self.calls[kind] += 1
        if self.calls[kind] > self.budget[kind]:
            self.violations.append(kind)
            raise RuntimeError(f"{kind} budget of {self.budget[kind]} calls exhausted")

    def perplexity(self, served, length) -> float:
        exp = ("perplexity", self._served(served), self._length(length))
        self._count("perplexity")
        self.log.append(exp)
        return self.ppl_value(frozenset(exp[1]), exp[2])

    def niah(self, served, length, depth) -> bool:
        s, L = self._served(served), self._length(length)
        if isinstance(depth, bool) or not isinstance(depth, (int, float)) or float(depth) not in self.depths:
            raise ValueError(f"depth must be one of model.depths {self.depths}, got {depth!r}")
        exp = ("niah", s, L, float(depth))
        self._count("niah")
        self.log.append(exp)
        return self.niah_value(frozenset(s), L, float(depth))

    def attrs(self) -> dict:
        return {"factors": list(FACTORS), "lengths": list(self.lengths), "depths": list(self.depths),
                "original_context": self.original_context, "ppl_tol": self.ppl_tol, "budget": dict(self.budget)}

    def reset(self) -> None:
        self.log.clear()
        self.violations.clear()
        self.calls = {"perplexity": 0, "niah": 0}

    # -- whole-grid views (grader, figures) ------------------------------------------------------
    def grid(self, served) -> dict:
        s = frozenset(served)
        return {(L, d): self.niah_value(s, L, d) for L in self.lengths for d in self.depths}


def lengths_around(L0: int) -> list[int]:
    return [L0 // 8, L0 // 4, L0 // 2, L0, 2 * L0, 4 * L0]


# -- specimens ------------------------------------------------------------------------------------
D5 = [0.0, 0.25, 0.5, 0.75, 1.0]
D5_ODD = [0.1, 0.3, 0.5, 0.7, 0.9]
D4 = [0.2, 0.4, 0.6, 0.8]


def _kv_rare(t: ToyLongContextLM) -> bool:
    """Failures exist, none at the longest length, none at the first or the middle depth."""
    g = t.grid(FACTORS)
    bad = [k for k, ok in g.items() if not ok]
    mid = t.depths[len(t.depths) // 2]
    return bool(bad) and all(L != max(t.lengths) and d not in (t.depths[0], mid) for L, d in bad)


def _kv_cliff_like(t: ToyLongContextLM) -> bool:
    """At least one failure, all past the original context and at depths below one half: the shape a
    dropped rope_scaling leaves."""
    bad = [k for k, ok in t.grid(FACTORS).items() if not ok]
    return len(bad) >= 1 and all(L > t.original_context and d < 0.5 for L, d in bad)


def _shows_short(t: ToyLongContextLM) -> bool:
    """The weight bug loses a needle at the shortest length and at most half the cells overall."""
    g = t.grid(FACTORS)
    return (not all(g[(min(t.lengths), d)] for d in t.depths)) and sum(not v for v in g.values()) <= len(g) // 2


def _kv_short_only(t: ToyLongContextLM) -> bool:
    """At least one failure, all at lengths below the original context: nothing to see for a search
    that starts at the original context (or past it)."""
    bad = [k for k, ok in t.grid(FACTORS).items() if not ok]
    return len(bad) >= 1 and all(L < t.original_context for L, d in bad)


def _niah_clean(t: ToyLongContextLM) -> bool:
    """The served stack retrieves every needle: the weight bug shows in perplexity only."""
    return all(t.grid(FACTORS).values())


def _any(t: ToyLongContextLM) -> bool:
    return True


# slot -> (mode, original_context, rope_theta, depths, ppl_tol, constraint, parameter drawer)
SLOTS = [
    ("rope_dropped", 16384, 500000.0, D5, 0.01, _any, lambda r: {"benign_weights": r.uniform(0.002, 0.006)}),
    ("rope_dropped", 4096, 10000.0, D5_ODD, 0.01, _any, lambda r: {}),
    ("rope_factor2", 32768, 1000000.0, D5, 0.02, _any, lambda r: {"benign_weights": r.uniform(0.012, 0.018)}),
    ("kv_tensor", 16384, 500000.0, D5, 0.01, _any,
     lambda r: {"kv_fail_at_max": r.uniform(0.5, 0.7), "benign_weights": r.uniform(0.002, 0.006)}),
    ("kv_tensor", 8192, 500000.0, D5, 0.01, _kv_rare, lambda r: {"kv_fail_at_max": r.uniform(0.25, 0.4)}),
    ("kv_tensor", 16384, 500000.0, D5, 0.01, _kv_cliff_like,
     lambda r: {"kv_fail_at_max": r.uniform(0.2, 0.35), "benign_weights": r.uniform(0.002, 0.006)}),
    # the boundary specimen: flat perplexity 8.0 and a harmless weight change of exactly the tolerance
    ("kv_tensor", 4096, 10000.0, D5_ODD, 0.01, _any,
     lambda r: {"kv_fail_at_max": r.uniform(0.5, 0.7), "ppl_flat": True, "ppl_inf": 8.0, "benign_weights": 0.01}),
    ("weights_all", 16384, 500000.0, D5, 0.01, _any,
     lambda r: {"weight_ppl": r.uniform(0.05, 0.12), "weight_fail": r.uniform(0.15, 0.3)}),
    ("weights_head", 16384, 500000.0, D5, 0.01, _shows_short,
     lambda r: {"weight_fail": r.uniform(0.2, 0.35), "benign_weights": r.uniform(0.002, 0.006)}),
    ("weights_head", 32768, 1000000.0, D4, 0.02, _shows_short,
     lambda r: {"weight_fail": r.uniform(0.2, 0.35), "benign_weights": r.uniform(0.005, 0.015)}),
    # rare KV failures, all at lengths below the original context (none at it or past it)
    ("kv_tensor", 8192, 500000.0, D5_ODD, 0.01, _kv_short_only,
     lambda r: {"kv_fail_at_max": r.uniform(0.15, 0.3), "benign_weights": r.uniform(0.002, 0.006)}),
    # a weight bug outside the retrieval head: perplexity up at every length, every needle found
    ("weights_mlp", 4096, 10000.0, D4, 0.02, _niah_clean, lambda r: {"weight_ppl": r.uniform(0.025, 0.06)}),
]


def check_specimen(t: ToyLongContextLM) -> bool:
    """The statement's guarantees, checked on the whole grid (uncounted)."""
    every = [(L, d) for L in t.lengths for d in t.depths]
    if not all(t.niah_value(frozenset(), L, d) for L, d in every):
        return False                                   # the reference passes every cell
    points = [("perplexity", L) for L in t.lengths] + [("niah", L, d) for L, d in every]
    seen = False
    for subset in range(8):
        s = tuple(f for i, f in enumerate(FACTORS) if subset >> i & 1)
        for p in points:
            r = t.regresses((p[0], s) + tuple(p[1:]))
            if r and t.cause not in s:
                return False                           # a harmless change never regresses
            seen |= r
            if (t.cause in s) and r != t.regresses((p[0], (t.cause,)) + tuple(p[1:])):
                return False                           # no interactions
    return seen                                        # the culprit shows somewhere in the grid


def make_specimen(slot: int, rng: random.Random) -> ToyLongContextLM:
    mode, L0, theta, depths, tol, constraint, draw = SLOTS[slot]
    for _ in range(2000):
        seed = rng.getrandbits(48)
        params = draw(rng)
        params.setdefault("ppl_inf", round(rng.uniform(4.0, 12.0), 3))
        t = ToyLongContextLM(seed=seed, mode=mode, original_context=L0, lengths=lengths_around(L0),
                             depths=list(depths), rope_theta=theta, ppl_tol=tol, **params)
        if constraint(t) and check_specimen(t):
            return t
    raise RuntimeError(f"no specimen for slot {slot}")   # never: each constraint holds often


def parse_experiment(t: ToyLongContextLM, e) -> tuple | str:
    """A normalized experiment, or a message saying what is wrong with it."""
    if not isinstance(e, (list, tuple)) or not e or e[0] not in ("perplexity", "niah"):
        return "each experiment must be a list starting with 'perplexity' or 'niah'"
    n = 3 if e[0] == "perplexity" else 4
    if len(e) != n:
        return f"a {e[0]} experiment has {n} items: [{e[0]!r}, served, length" + (", depth]" if n == 4 else "]")
    served, length = e[1], e[2]
    if (not isinstance(served, (list, tuple)) or not all(isinstance(f, str) and f in FACTORS for f in served)
            or len(set(served)) != len(served)):
        return "served must be a list of distinct factor names"
    if isinstance(length, bool) or not isinstance(length, int) or length not in t.lengths:
        return "length must be one of model.lengths"
    out = (e[0], tuple(sorted(served)), length)
    if n == 4:
        d = e[3]
        if isinstance(d, bool) or not isinstance(d, (int, float)) or float(d) not in t.depths:
            return "depth must be one of model.depths"
        out += (float(d),)
    return out


def check_evidence(t: ToyLongContextLM, cause: str, evidence) -> str | None:
    """None if the evidence proves ``cause`` by the statement's rule, else the reason it does not."""
    if not isinstance(evidence, (list, tuple)) or not evidence:
        return "evidence must be a non-empty list of experiments"
    ran = set(t.log)
    exps = set()
    for e in evidence[:1000]:
        p = parse_experiment(t, e)
        if isinstance(p, str):
            return p
        if p not in ran:
            return f"the evidence lists an experiment this call did not run: {[p[0], list(p[1]), *p[2:]]!r}"
        exps.add(p)
    for e in exps:
        if cause not in e[1] or not t.regresses(e):
            continue
        without = (e[0], tuple(f for f in e[1] if f != cause)) + e[2:]
        if e[0] == "niah":
            if without[1] == () or (without in exps and not t.regresses(without)):
                return None
        else:
            ref = ("perplexity", (), e[2])
            if ref in exps and (without == ref or (without in exps and not t.regresses(without))):
                return None
    return (f"the evidence holds no pair of experiments that differ only by {cause!r} with the one that "
            "includes it regressing and the other not (for perplexity, with the reference at that length)")


def _check_specimen_answer(g: Grading, ref, t: ToyLongContextLM) -> None:
    """Host ``t``, call the submission's diagnose on it and check its answer and evidence."""
    want = ref.diagnose(t)                      # the reference solves it within the budget
    assert want["cause"] == t.cause and check_evidence(t, t.cause, want["evidence"]) is None, t.mode
    t.reset()
    handle = g.host(t, ["perplexity", "niah"], t.attrs())
    got = g.call("diagnose", handle)
    if t.violations:
        fail(f"over the budget: {t.calls['perplexity']} perplexity and {t.calls['niah']} niah calls were "
             f"attempted; the budget is {t.budget} (a refused call still counts)")
    if not isinstance(got, dict) or set(got) != {"cause", "evidence"}:
        fail("diagnose must return a dict with exactly the keys 'cause' and 'evidence'")
    cause = got["cause"]
    if cause not in FACTORS:
        fail(f"cause must be one of {list(FACTORS)}, got {str(cause)[:40]!r}")
    if cause != t.cause:
        fail(f"cause {cause!r} is wrong: served with that factor alone, this model shows no regression "
             "anywhere in the grid")
    why = check_evidence(t, cause, got["evidence"])
    if why is not None:
        fail(f"right cause, but the evidence does not prove it: {why}")


def counterexample(g: Grading, trial: Trial) -> None:
    """A fresh specimen of a slot drawn from the trial's own randomness (never aimed at the failed
    specimen's slot, whose position in the hidden order would then show), shown with its attributes
    and its culprit."""
    t = make_specimen(trial.rng.randrange(len(SLOTS)), trial.rng)
    g.show_input(model={**t.attrs(), "culprit (the answer)": t.cause, "how it fails": t.mode})
    _check_specimen_answer(g, g.reference(), t)


def grade(g: Grading) -> None:
    ref = g.reference()
    rng = random.Random(f"niah-vs-perplexity:{g.salt}")
    order = list(range(len(SLOTS)))
    rng.shuffle(order)
    for k, slot in enumerate(order, start=1):
        with g.case(f"specimen {k}"):
            _check_specimen_answer(g, ref, make_specimen(slot, rng))
