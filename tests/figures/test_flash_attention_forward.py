"""Every figure quoted by flash-attention-forward's statement and editorial, from the reference
(and, for the wrong answers, from the known-wrong variants)."""

import math
from pathlib import Path

import pytest
import torch

from inferprep.grading import load_module

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "flash_attention_forward.py", "_fig_fa_fwd_ref")
no_rescale = load_module(ROOT / "tests/wrong/flash_attention_forward/no_rescale.py", "_fig_fa_fwd_norescale")
m_zero = load_module(ROOT / "tests/wrong/flash_attention_forward/m_init_zero.py", "_fig_fa_fwd_mzero")


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
