"""Every figure quoted by sampling-order's statement and editorial, computed by the reference."""

import itertools
import math
from collections import Counter
from pathlib import Path

import pytest
import torch

from inferprep.grading import Grading, load_module
from inferprep.wrong_variants import load_variant

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "sampling_order.py", "_fig_sampling_order")
joint = load_variant("sampling_order", "joint_filter_sglang_style",
                    "_fig_sampling_order_joint")

HF = ("temperature", "top_k", "top_p", "min_p")
VLLM_V1 = ("temperature", "min_p", "top_k", "top_p")
LLAMA_CPP = ("top_k", "top_p", "min_p", "temperature")
SIX = [0.45, 0.25, 0.12, 0.08, 0.06, 0.04]          # the editorial's row (probabilities)


def logp(q) -> torch.Tensor:
    return torch.tensor([q], dtype=torch.float64).log()


def r3(t: torch.Tensor) -> list[float]:
    return [round(v, 3) for v in t.flatten().tolist()]


def probs(x, order=HF, temperature=1.0, top_k=0, top_p=1.0, min_p=0.0) -> torch.Tensor:
    return ref.sampling_probs(x, temperature, top_k, top_p, min_p, order=order).double()


def support(p: torch.Tensor) -> set[int]:
    return {i for i, v in enumerate(p.flatten().tolist()) if v > 0}


def steps(q, order, T, p, m) -> list[list[float]]:
    """The row's probabilities after each active knob, in order (top-k is off here)."""
    x, out = logp(q), []
    one = lambda v: torch.tensor([v], dtype=torch.float64)  # noqa: E731
    for knob in order:
        if knob == "temperature":
            x = ref._temperature(x, one(T))
        elif knob == "top_p":
            x = ref._top_p(x, one(p))
        elif knob == "min_p":
            x = ref._min_p(x, one(m))
        else:
            continue
        out.append(r3(x.softmax(-1)))
    return out


# -- statement: logits [3, 2, 1], temperature 0.5, top_p 0.8 --------------------------------------

def test_statement_example():
    x = torch.tensor([[3.0, 2.0, 1.0]], dtype=torch.float64)
    assert r3((x / 0.5).softmax(-1)) == [0.867, 0.117, 0.016]
    assert r3(probs(x, temperature=0.5, top_p=0.8)) == [1.0, 0.0, 0.0]
    assert r3(x.softmax(-1)) == [0.665, 0.245, 0.090]
    assert round(float(x.softmax(-1)[0, :2].sum()), 3) == 0.910
    last = probs(x, LLAMA_CPP, temperature=0.5, top_p=0.8)
    assert r3(last) == [0.881, 0.119, 0.0]
    assert round(float(last[0, 1]) * 100) == 12


def test_statement_rules():
    assert support(probs(torch.tensor([[3.0, 3.0, 2.0, 1.0]]), top_k=2)) == {0, 1}
    assert support(probs(torch.tensor([[2.0, 1.0, 1.0, 0.0]]), top_k=2)) == {0, 1, 2}
    exact = torch.tensor([[0.0, -math.log(2), -2 * math.log(2), -2 * math.log(2)]], dtype=torch.float64)
    assert exact.softmax(-1).flatten().tolist() == [0.5, 0.25, 0.125, 0.125]
    assert support(probs(exact, top_p=0.5)) == {0}
    assert support(probs(torch.tensor([[1.0, 3.0, 3.0, 2.0]]), temperature=1e-6)) == {1, 2}


# -- editorial: the six-token row through three engines' orders -----------------------------------

@pytest.mark.parametrize("order, want_steps, kept", [
    (HF, [[.349, .236, .145, .110, .091, .069], [.375, .253, .155, .119, .098, 0], [.375, .253, .155, .119, .098, 0]], 5),
    (VLLM_V1, [[.349, .236, .145, .110, .091, .069], [.375, .253, .155, .119, .098, 0], [.416, .281, .172, .131, 0, 0]], 4),
    (LLAMA_CPP, [[.5, .278, .133, .089, 0, 0], [.549, .305, .146, 0, 0, 0], [.478, .323, .198, 0, 0, 0]], 3),
])
def test_six_token_table(order, want_steps, kept):
    assert steps(SIX, order, 1.5, 0.85, 0.25) == want_steps
    final = probs(logp(SIX), order, temperature=1.5, top_p=0.85, min_p=0.25)
    assert r3(final) == want_steps[-1]
    assert len(support(final)) == kept


def test_six_token_pairs():
    x = logp(SIX)
    tempered = (x / 1.5).softmax(-1)
    assert round(float(tempered[0, :4].sum()), 4) == 0.8395
    assert round(sum(SIX[:4]), 2) == 0.90
    assert len(support(probs(x, HF, temperature=1.5, top_p=0.85))) == 5
    last = probs(x, LLAMA_CPP, temperature=1.5, top_p=0.85)
    assert len(support(last)) == 4 and r3(last)[:4] == [.416, .281, .172, .131]
    hf = probs(x, HF, temperature=1.5, top_p=0.85, min_p=0.25)
    assert round(0.25 * float(hf.max()), 3) == 0.094 and round(float(hf[0, 4]), 3) == 0.098
    after_min_p = ref._min_p(x / 1.5, torch.tensor([0.25], dtype=torch.float64)).softmax(-1)
    assert round(float(after_min_p[0, :4].sum()), 3) == 0.902
    assert r3(probs(x, HF, top_p=0.85, min_p=0.25))[:3] == [.549, .305, .146]
    assert r3(probs(x, VLLM_V1, top_p=0.85, min_p=0.25))[:2] == [.643, .357]
    assert len(support(probs(x, VLLM_V1, top_p=0.85, min_p=0.25))) == 2


def test_six_token_all_orders():
    x = logp(SIX)
    sizes = Counter(len(support(probs(x, list(o), temperature=1.5, top_p=0.85, min_p=0.25)))
                    for o in itertools.permutations(HF))
    assert sizes == {5: 4, 4: 8, 3: 8, 2: 4}


def test_commuting_pairs():
    g = torch.Generator().manual_seed(0)
    for _ in range(100):
        x = torch.randn(1, 12, generator=g, dtype=torch.float64) * 2
        T = float(torch.rand(1, generator=g)) * 2 + 0.2
        k = int(torch.randint(1, 12, (1,), generator=g))
        m = float(torch.rand(1, generator=g)) * 0.5
        a = probs(x, ("temperature", "top_k", "top_p", "min_p"), temperature=T, top_k=k)
        b = probs(x, ("top_k", "temperature", "top_p", "min_p"), temperature=T, top_k=k)
        assert torch.allclose(a, b, rtol=1e-12, atol=1e-15)
        a = probs(x, ("top_k", "min_p", "top_p", "temperature"), top_k=k, min_p=m)
        b = probs(x, ("min_p", "top_k", "top_p", "temperature"), top_k=k, min_p=m)
        assert torch.allclose(a, b, rtol=1e-12, atol=1e-15)
        # min-p m after temperature T is min-p m**T before it
        a = probs(x, ("temperature", "min_p", "top_k", "top_p"), temperature=T, min_p=m)
        b = probs(x, ("min_p", "temperature", "top_k", "top_p"), temperature=T, min_p=m ** T)
        assert support(a) == support(b)


def test_editorial_other_numbers():
    x = torch.tensor([[5.0, 1.0, -3.0]], dtype=torch.float64)
    assert support(probs(x, min_p=0.1)) == {0}
    assert f"{float(x.softmax(-1)[0, 2]):.1e}" == "3.3e-04"
    assert f"{float(torch.tensor([5.0, 0.0, 0.0], dtype=torch.float64).softmax(-1)[2]):.1e}" == "6.6e-03"
    assert round(0.25 ** 1.5, 3) == 0.125
    b = logp([0.3, 0.25, 0.2, 0.1, 0.1, 0.05])
    assert support(probs(b, top_k=3, top_p=0.6)) == {0, 1}
    assert support(joint.sampling_probs(b, 1.0, 3, 0.6)) == {0, 1, 2}
    assert support(probs(logp([0.5, 0.3, 0.2]), top_p=0.6)) == {0, 1}
    assert torch.tensor(1 - 1e-8, dtype=torch.float32).item() == 1.0
    assert support(probs(torch.tensor([[2.0, 1.0, 0.0, -1.0]]), temperature=0.8, top_p=1e-8)) == {0}


# -- the grader itself, run in-process against the reference ------------------------------------

class _InProcess:
    """Just enough of inferprep.grading.Grading to run the grader with the reference as the
    submission, without a sandbox (the real runs are in tests/test_exercises.py)."""

    def __init__(self, device="cpu"):
        self.device, self.public, self.failures = torch.device(device), False, []
        self.salt = 0

    @staticmethod
    def seed_torch(seed):
        torch.manual_seed(seed)

    def reference(self):
        return ref

    @staticmethod
    def rng(seed):
        return torch.Generator().manual_seed(seed)

    show_input = staticmethod(Grading.show_input)     # records nothing outside a revealing case
    show_result = staticmethod(Grading.show_result)

    def call(self, fn, *args, **kwargs):
        return getattr(ref, fn)(*args, **kwargs)

    def raises(self, exc_name, fn, *args, **kwargs):
        with pytest.raises(ValueError):
            getattr(ref, fn)(*args, **kwargs)

    def case(self, name, group=None):
        import contextlib

        @contextlib.contextmanager
        def run():
            try:
                yield
            except Exception as e:  # noqa: BLE001
                self.failures.append(f"{name}: {type(e).__name__}: {e}")
        return run()


def test_fixed_cases_stay_off_the_thresholds():
    grader = load_module(ROOT / "graders" / "sampling_order.py", "_fig_sampling_order_grader")
    grader.CHECK_BOUNDARIES = True
    g = _InProcess()
    try:
        grader.grade(g)
    finally:
        grader.CHECK_BOUNDARIES = False
    assert g.failures == []


def test_dispersion_threshold():
    """sample-rows-are-independent: 20 calls of 1000 fair rows; the sum over calls of (count - 500)^2
    is <= 250 with probability < 1e-9 for independent draws (exact convolution of the binomial)."""
    grader = load_module(ROOT / "graders" / "sampling_order.py", "_fig_sampling_order_grader2")
    n, calls, smax = 1000, 20, grader.DISPERSION_MIN
    one = [0.0] * (smax + 1)
    for c in range(n + 1):
        d = (c - n // 2) ** 2
        if d <= smax:
            one[d] += math.comb(n, c) / 2**n
    dist = [1.0] + [0.0] * smax
    for _ in range(calls):
        new = [0.0] * (smax + 1)
        for s, v in enumerate(dist):
            if v:
                for d, q in enumerate(one):
                    if q and s + d <= smax:
                        new[s + d] += v * q
        dist = new
    assert sum(dist) < 1e-9
    assert calls * 1 <= smax / 10       # systematic sampling: every |count - 500| <= 1


def test_exact_binary_boundaries():
    """min-p-exact-binary-boundary and top-p-exact-binary-boundary: the probabilities are exact."""
    x = torch.tensor([[0.0, -math.log(2), -2 * math.log(2), -2 * math.log(2)]], dtype=torch.float64)
    assert x.softmax(dim=-1).tolist() == [[0.5, 0.25, 0.125, 0.125]]
    assert support(probs(x, min_p=0.5)) == {0, 1}
    assert support(probs(x, min_p=0.25)) == {0, 1, 2, 3}


def test_tiny_temperature():
    x = torch.tensor([[3.0, 2.0, 1.0], [1.0, 3.0, 3.0]])
    for t in (1e-308, 5e-324):
        assert probs(x, temperature=t).tolist() == [[1.0, 0.0, 0.0], [0.0, 0.5, 0.5]]


def test_float64_logit_decisions():
    """greedy-argmax-in-float64 and top-k-threshold-in-float64 (the statement's [2, 1 + 1e-12, 1, 0]):
    float64 tells the logits apart, float32 rounds them to a tie."""
    topk32 = load_variant("sampling_order", "top_k_threshold_in_float32", "_fig_so_topk32")
    greedy32 = load_variant("sampling_order", "greedy_argmax_in_float32", "_fig_so_greedy32")
    x = torch.tensor([[2.0, 1.0 + 1e-12, 1.0, 0.0]], dtype=torch.float64)
    assert support(probs(x, top_k=2)) == {0, 1}
    assert support(topk32.sampling_probs(x, 1.0, 2, 1.0)) == {0, 1, 2}
    g = torch.tensor([[1.0, 1.0 + 1e-12, 0.5]], dtype=torch.float64)
    assert support(probs(g, temperature=0.0)) == {1}
    assert support(greedy32.sampling_probs(g, 0.0, 0, 1.0)) == {0}


def test_top_p_one_before_a_huge_temperature():
    """top-p-one-is-off-before-a-huge-temperature: the mass before token 1 of [0, -40, -80, -120]
    rounds to 1.0, yet top_p = 1 keeps it; after T = 1000 it is almost as likely as token 0."""
    x = torch.tensor([[0.0, -40.0, -80.0, -120.0]], dtype=torch.float64)
    assert float(x.softmax(-1)[0, 0]) == 1.0
    p = probs(x, order=LLAMA_CPP, temperature=1e3)
    assert support(p) == {0, 1, 2, 3} and float(p[0, 1]) > 0.24
    naive = load_variant("sampling_order", "top_p_one_not_special", "_fig_so_p1")
    assert support(naive.sampling_probs(x, 1e3, 0, 1.0, order=LLAMA_CPP)) == {0}
