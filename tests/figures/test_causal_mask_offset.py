"""Every figure quoted by causal-mask-offset's statement and editorial, and the library
behaviour the editorial names (checked on the installed torch)."""

from pathlib import Path

import torch
import torch.nn.functional as F

from inferprep.grading import load_module
from inferprep.wrong_variants import load_variant

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "causal_mask_offset.py", "_fig_cmo_ref")
top_left = load_variant("causal_mask_offset", "top_left_tril", "_fig_cmo_topleft")
finite = load_variant("causal_mask_offset", "finite_mask_value", "_fig_cmo_finite")


def bits(m):
    return ["".join("1" if x else "0" for x in row) for row in m.tolist()]


def test_mask_tables():
    assert bits(ref.causal_mask(2, 5)) == ["11110", "11111"]
    assert bits(ref.causal_mask(5, 2)) == ["00", "00", "00", "10", "11"]
    assert bits(ref.causal_mask(1, 8)) == ["11111111"]
    assert ref.causal_mask(0, 4).shape == (0, 4) and ref.causal_mask(3, 0).shape == (3, 0)
    for t, s in [(2, 5), (5, 2), (1, 8), (7, 7)]:
        assert torch.equal(ref.causal_mask(t, s), torch.tril(torch.ones(t, s, dtype=torch.bool), diagonal=s - t))
    assert torch.equal(ref.causal_mask(2, 5), torch.tril(torch.ones(5, 5, dtype=torch.bool))[-2:])


def _uniform(t, s, values):
    q = torch.zeros(1, 1, t, 1)
    k = torch.zeros(1, 1, s, 1)
    v = torch.tensor(values).view(1, 1, s, 1)
    return q, k, v


def test_past_3_new_2():
    q, k, v = _uniform(2, 5, [0.0, 1.0, 2.0, 3.0, 4.0])
    assert ref.attention_with_cache(q, k, v).flatten().tolist() == [1.5, 2.0]
    assert top_left.attention_with_cache(q, k, v).flatten().tolist() == [0.0, 0.5]


def test_decode_and_fully_masked_rows():
    q, k, v = _uniform(1, 8, [float(j) for j in range(8)])
    assert ref.attention_with_cache(q, k, v).flatten().tolist() == [3.5]
    assert top_left.attention_with_cache(q, k, v).flatten().tolist() == [0.0]
    q, k, v = _uniform(5, 2, [1.0, 2.0])
    assert ref.attention_with_cache(q, k, v).flatten().tolist() == [0.0, 0.0, 0.0, 1.0, 1.5]
    # a finite mask value turns a keyless row into the average of all values
    assert finite.attention_with_cache(q, k, v).flatten().tolist()[:3] == [1.5, 1.5, 1.5]


def test_pytorch_sdpa_is_causal_is_top_left_and_lower_right_fixes_it():
    from torch.nn.attention.bias import causal_lower_right
    q, k, v = _uniform(2, 5, [0.0, 1.0, 2.0, 3.0, 4.0])
    assert F.scaled_dot_product_attention(q, k, v, is_causal=True).flatten().tolist() == [0.0, 0.5]
    assert F.scaled_dot_product_attention(q, k, v, attn_mask=causal_lower_right(2, 5)).flatten().tolist() == [1.5, 2.0]
    q, k, v = _uniform(1, 8, [float(j) for j in range(8)])
    assert F.scaled_dot_product_attention(q, k, v, is_causal=True).flatten().tolist() == [0.0]
    assert F.scaled_dot_product_attention(q, k, v, attn_mask=causal_lower_right(1, 8)).flatten().tolist() == [3.5]


# -- P in the input dtype, scale 0 and the forbidden kernels (issue 12) ------------------------------

class _Direct:
    """Runs a module's functions in this process under the real grader, for the cases named in
    ``only`` (every other case is skipped at its first call)."""

    def __init__(self, mod, only):
        self.mod, self.only, self.records, self.dead, self.name = mod, set(only), [], None, None
        self.recorder = self

    def case(self, name):
        self.name = name

    def call(self, fn, *args, **kwargs):
        from inferprep.grading import WrongAnswer
        from inferprep.runner.process import SubmissionRaised
        if self.name not in self.only:
            raise WrongAnswer("skipped")
        try:
            return getattr(self.mod, fn)(*args, **kwargs)
        except Exception as e:  # noqa: BLE001
            raise SubmissionRaised({"type": type(e).__name__, "mro": [c.__name__ for c in type(e).__mro__],
                                    "message": str(e)}) from e


def _grade_in_process(mod, only):
    from inferprep.grading import Grading
    grader = load_module(ROOT / "graders/causal_mask_offset.py", "_fig_cmo_grader")
    g = Grading(_Direct(mod, only), device="cpu", public=False,
                reference_path=ROOT / "reference/causal_mask_offset.py", salt=0)
    grader.grade(g)
    got = {r.name: r for r in g.results if r.name in only}
    assert set(got) == set(only), set(only) - set(got)
    return got


def test_probabilities_rounded_to_the_input_dtype_pass(tmp_path):
    src = (ROOT / "reference/causal_mask_offset.py").read_text()
    old = "return (p @ v.to(acc_t)).to(q.dtype)"
    assert old in src
    path = tmp_path / "p_lowp.py"
    path.write_text(src.replace(old, "return (p.to(q.dtype).to(acc_t) @ v.to(acc_t)).to(q.dtype)"))
    mod = load_module(path, "_fig_cmo_p_lowp")
    only = ["attention-bfloat16-T6-S40", "attention-float16-T6-S40", "attention-bfloat16-T8-S300-scores-near-64"]
    for name, r in _grade_in_process(mod, only).items():
        assert r.passed, (name, r.message)


def test_scale_zero_averages_the_visible_values():
    v = torch.arange(5.0, dtype=torch.float64).view(1, 1, 5, 1)
    q = torch.randn(1, 1, 2, 1, dtype=torch.float64)
    out = ref.attention_with_cache(q, v, v, scale=0.0)
    assert out.flatten().tolist() == [1.5, 2.0]


def test_every_aten_attention_kernel_is_forbidden():
    import tomllib
    meta = tomllib.loads((ROOT / "exercises/causal-mask-offset/exercise.toml").read_text())
    forbidden = set(meta["forbidden"])
    ops = {s.name.split("::")[1] for s in torch._C._jit_get_all_schemas()
           if s.name.startswith("aten::") and ("attention" in s.name or "scaled_dot" in s.name)}
    for op in ops:
        assert f"torch.ops.aten.{op}" in forbidden, op
        if hasattr(torch, op):
            assert f"torch.{op}" in forbidden and f"torch._VF.{op}" in forbidden, op
    assert {"torch.nn.functional.scaled_dot_product_attention", "torch._C._nn.scaled_dot_product_attention"} <= forbidden
