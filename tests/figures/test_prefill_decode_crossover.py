"""Every figure of the prefill-decode-crossover statement and editorial, from the reference."""

from pathlib import Path

import pytest

from inferprep import specs
from inferprep.grading import load_module
from inferprep.specs import DType

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "prefill_decode_crossover.py", "ref_prefill_decode_crossover")
GPUS = [specs.H100_SXM, specs.H200_SXM, specs.B200, specs.A100_SXM_80GB]


@pytest.mark.parametrize("m, row", [
    (specs.LLAMA_3_1_8B, [317, 222, 314, 165]),
    (specs.LLAMA_3_1_70B, [300, 209, 297, 156]),
    (specs.MIXTRAL_8X7B, [1080, 756, 1069, 562]),
    (specs.DEEPSEEK_V3, [4755, 3453, 4710, 2631]),
])
def test_crossover_table(m, row):
    assert [ref.prefill_crossover_tokens(m, g, DType.BF16) for g in GPUS] == row
    for g, x in zip(GPUS[:3], row):
        assert ref.prefill_crossover_tokens(m, g, DType.FP8) == x


def test_ratios():
    m = specs.LLAMA_3_1_8B
    st, _ = ref._body_params(m)
    assert round((st + m.vocab_size * m.hidden_size) / st, 3) == 1.075
    for mm, ratio in ((specs.MIXTRAL_8X7B, 3.69), (specs.DEEPSEEK_V3, 18.8)):
        st, ac = ref._body_params(mm)
        r = (st + mm.vocab_size * mm.hidden_size) / ac
        assert round(r, 2 if ratio < 10 else 1) == ratio


@pytest.mark.parametrize("P, compute, memory, bound", [
    (1, 0.02, 4.48, "memory"), (317, 4.50, 4.49, "compute"), (2048, 30.01, 4.56, "compute"),
    (8192, 133.36, 4.80, "compute"), (32768, 746.80, 5.76, "compute"),
    (131072, 6401.07, 9.61, "compute"),
])
def test_ttft_table(P, compute, memory, bound):
    t = ref.ttft(specs.LLAMA_3_1_8B, specs.H100_SXM, DType.BF16, P)
    assert round(t["compute_ms"], 2) == compute and round(t["memory_ms"], 2) == memory
    assert t["bound"] == bound and t["ttft_ms"] == max(t["compute_ms"], t["memory_ms"])


def test_statement_example():
    t = ref.ttft(specs.LLAMA_3_1_8B, specs.H100_SXM, DType.BF16, 2048)
    assert t["compute_ms"] == pytest.approx(30.006470076830404, rel=1e-12)
    assert t["memory_ms"] == pytest.approx(4.560523080597014, rel=1e-12)
    t1 = ref.ttft(specs.LLAMA_3_1_8B, specs.H100_SXM, DType.BF16, 1)
    assert t1["ttft_ms"] == pytest.approx(4.480432219701493, rel=1e-12)


def test_attention_share_and_tp():
    m = specs.LLAMA_3_1_8B
    st, ac = ref._body_params(m)
    head = m.vocab_size * m.hidden_size
    for P, share in ((32768, 0.38), (131072, 0.71)):
        a = ref._attention_flops_per_key(m) * P * (P + 1) // 2
        assert round(a / (2 * P * ac + 2 * head + a), 2) == share
    t1 = ref.ttft(specs.LLAMA_3_1_70B, specs.H100_SXM, DType.BF16, 2048, 1)
    t8 = ref.ttft(specs.LLAMA_3_1_70B, specs.H100_SXM, DType.BF16, 2048, 8)
    assert round(t1["ttft_ms"], 1) == 288.9 and round(t8["ttft_ms"], 1) == 36.1
    assert t1["bound"] == t8["bound"] == "compute"
