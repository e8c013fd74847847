"""Every figure quoted by flash-attention-forward's statement and editorial, from the reference
(and, for the wrong answers, from the known-wrong variants)."""

import math
from pathlib import Path

import pytest
import torch

from inferprep.grading import load_module
from inferprep.wrong_variants import load_variant

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "flash_attention_forward.py", "_fig_fa_fwd_ref")
no_rescale = load_variant("flash_attention_forward", "no_rescale", "_fig_fa_fwd_norescale")
m_zero = load_variant("flash_attention_forward", "m_init_zero", "_fig_fa_fwd_mzero")


def _scores_1234(mod):
    q = torch.ones(1, 1, 4, 1, dtype=torch.float64)
    kv = torch.arange(1.0, 5.0, dtype=torch.float64).view(1, 1, 4, 1)
    return mod.flash_attention_forward(q, kv, kv, False, 2, 2, 1.0)


def test_worked_example_1234():
    o, lse = _scores_1234(ref)
    assert o.flatten().tolist() == pytest.approx([3.4927] * 4, abs=5e-5)
    assert lse.flatten().tolist() == pytest.approx([4.4402] * 4, abs=5e-5)
    # the intermediate values of the editorial
    e = math.exp
    assert e(-1) + 1 == pytest.approx(1.3679, abs=5e-5)
    assert e(-1) * 1 + 2 == pytest.approx(2.3679, abs=5e-5)
    assert e(-2) * (e(-1) + 1) == pytest.approx(0.1851, abs=5e-5)
    assert e(-2) * (e(-1) + 2) == pytest.approx(0.3205, abs=5e-5)
    num = e(-2) * (e(-1) + 2) + 3 * e(-1) + 4
    den = e(-2) * (e(-1) + 1) + e(-1) + 1
    assert num / den == pytest.approx(float(o.flatten()[0]), abs=1e-12)


def test_no_rescale_gives_2_7311():
    o, _ = _scores_1234(no_rescale)
    assert float(o.flatten()[0]) == pytest.approx(2.7311, abs=5e-5)
    assert 2 * (math.exp(-1) + 1) == pytest.approx(2.7358, abs=5e-5)
    assert math.exp(-1) + 2 + 3 * math.exp(-1) + 4 == pytest.approx(7.4715, abs=5e-5)


def test_minus_1000_rows():
    q = torch.full((1, 1, 2, 1), -1000.0)
    k = torch.ones(1, 1, 2, 1)
    v = torch.tensor([1.0, 2.0]).view(1, 1, 2, 1)
    o, lse = ref.flash_attention_forward(q, k, v, False, 1, 1, 1.0)
    assert o.flatten().tolist() == [1.5, 1.5]
    assert float(lse.flatten()[0]) == pytest.approx(-999.3069, abs=1e-3)
    o0, _ = m_zero.flash_attention_forward(q, k, v, False, 1, 1, 1.0)
    assert torch.isnan(o0).all()
    # float32 exp underflows to 0 just below -104 (smallest subnormal 1.4e-45)
    assert float(torch.exp(torch.tensor(-104.0))) == 0.0
    assert float(torch.exp(torch.tensor(-103.0))) > 0.0


def test_io_table():
    rows = [((4096, 64, 128, False), 17_039_360, 266_240, 34_340_864, 33_816_576, 17_305_600, 68_157_440, 3.94),
            ((4096, 64, 128, True), None, None, None, None, 9_179_136, 68_157_440, 7.43),
            ((4096, 128, 128, False), None, None, None, None, 34_607_104, 69_206_016, 2.00)]
    for (n, d, b, causal), fr, fw, nr, nw, flash, naive, ratio in rows:
        t = ref.hbm_traffic(n, d, b, b, causal)
        if fr is not None:
            assert (t["flash_reads"], t["flash_writes"], t["naive_reads"], t["naive_writes"]) == (fr, fw, nr, nw)
        assert t["flash_reads"] + t["flash_writes"] == flash
        assert t["naive_reads"] + t["naive_writes"] == naive
        assert round(naive / flash, 2) == ratio


def test_statement_tile_example_and_memory():
    t = ref.hbm_traffic(5, 2, 2, 2, True)
    assert (t["flash_reads"], t["flash_writes"]) == (54, 15)
    assert 12288 * 12288 * 4 / 2**20 == 576
    assert 576 > 384  # exercise.toml memory_mib
    import tomllib
    meta = tomllib.loads((ROOT / "exercises/flash-attention-forward/exercise.toml").read_text())
    assert meta["limits"]["memory_mib"] == 384


def test_formula_matches_closed_form_when_blocks_divide():
    n, d, b = 4096, 64, 128
    t = ref.hbm_traffic(n, d, b, b, False)
    assert t["flash_reads"] == n * d + 2 * n * d * (n // b)


# -- precision, scale = 0 and the forbidden kernels (issue 12) ---------------------------------------

fp16_norm = load_variant("flash_attention_forward", "normalise_in_fp16", "_fig_fa_fwd_fp16norm")


def test_fp16_acc_passes_65504_while_the_output_is_16():
    n = 8192
    q = torch.zeros(1, 1, n, 1, dtype=torch.float16)
    v = torch.full((1, 1, n, 1), 16.0, dtype=torch.float16)
    o, lse = ref.flash_attention_forward(q, q, v, False, 1024, 1024)
    assert (o == 16.0).all()
    assert float(lse[0, 0, 0]) == pytest.approx(math.log(8192), abs=1e-5)   # l = 8192
    assert 8192 * 16 == 131_072 > 65504 == float(torch.finfo(torch.float16).max)
    bad, _ = fp16_norm.flash_attention_forward(q, q, v, False, 1024, 1024)
    assert torch.isinf(bad).all()


def test_scale_zero_causal_rows_are_running_means():
    v = torch.randn(1, 1, 6, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    q = torch.randn(1, 1, 6, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    o, lse = ref.flash_attention_forward(q, q, v, True, 4, 2, 0.0)
    want = v.cumsum(2) / torch.arange(1, 7, dtype=torch.float64).view(1, 1, 6, 1)
    assert torch.allclose(o, want, rtol=0, atol=1e-12)
    assert torch.allclose(lse[0, 0], torch.log(torch.arange(1.0, 7.0, dtype=torch.float64)), atol=1e-12)


def test_bf16_rounding_figures():
    # a score near +64 rounded to bf16 moves by up to half its spacing, 0.5 / 2
    assert float(torch.tensor(64.0 + 0.25, dtype=torch.float32).to(torch.bfloat16)) == 64.0
    assert float(torch.tensor(64.0 + 0.5).to(torch.bfloat16)) - 64.0 == 0.5
    # a weight in [0, 1] rounded to bf16 moves by at most 2^-9 (half the spacing 2^-8 of [0.5, 1))
    p = torch.rand(100_000, generator=torch.Generator().manual_seed(3))
    err = (p.to(torch.bfloat16).float() - p).abs().max()
    assert 2.0 ** -10 < err <= 2.0 ** -9


class _Skip(Exception):
    pass


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

    def host(self, obj, methods, attrs=None, concurrent=False):
        import types
        return types.SimpleNamespace(**(attrs or {}), **{m: getattr(obj, m) for m in methods})


def _grade_in_process(mod, only):
    from inferprep.grading import Grading
    grader = load_module(ROOT / "graders/flash_attention_forward.py", "_fig_fa_fwd_grader")
    g = Grading(_Direct(mod, only), device="cpu", public=False,
                reference_path=ROOT / "reference/flash_attention_forward.py", salt=0)
    grader.grade(g)
    got = {r.name: r for r in g.results if r.name in only}
    assert set(got) == set(only), set(only) - set(got)
    return got


def test_rounding_p_to_the_input_dtype_passes(tmp_path):
    """The statement lets P be rounded to bf16/fp16 as the operand of P V (as GPU kernels do);
    such a solution passes every low-precision case."""
    src = (ROOT / "reference/flash_attention_forward.py").read_text()
    old = "acc = alpha[..., None] * acc + p @ v[..., j0:j1, :].to(acc_t)"
    assert old in src
    path = tmp_path / "p_in_input_dtype.py"
    path.write_text(src.replace(old, "acc = alpha[..., None] * acc + p.to(q.dtype).to(acc_t) @ v[..., j0:j1, :].to(acc_t)"))
    mod = load_module(path, "_fig_fa_fwd_p_lowp")
    only = ["forward-bfloat16-N700", "forward-float16-N700", "forward-float16-N8192-large-row-sums"]
    for name, r in _grade_in_process(mod, only).items():
        assert r.passed, (name, r.message)
    # and the normalisation in float16 does not
    r = _grade_in_process(fp16_norm, ["forward-float16-N8192-large-row-sums"])
    assert not r["forward-float16-N8192-large-row-sums"].passed


def test_every_aten_attention_kernel_is_forbidden():
    import tomllib
    meta = tomllib.loads((ROOT / "exercises/flash-attention-forward/exercise.toml").read_text())
    forbidden = set(meta["forbidden"])
    ops = {s.name.split("::")[1] for s in torch._C._jit_get_all_schemas()
           if s.name.startswith("aten::") and ("attention" in s.name or "scaled_dot" in s.name)}
    assert ops, "no attention kernel found: has torch renamed them?"
    for op in ops:
        assert f"torch.ops.aten.{op}" in forbidden, op
        if hasattr(torch, op):
            assert f"torch.{op}" in forbidden and f"torch._VF.{op}" in forbidden, op
    assert "torch.nn.functional.scaled_dot_product_attention" in forbidden
    assert "torch._C._nn.scaled_dot_product_attention" in forbidden
