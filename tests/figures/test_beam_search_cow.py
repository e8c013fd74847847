"""Every figure the beam-search-cow statement and editorial quote, computed by the reference
(on the paged KV simulator) and asserted."""

import math
from pathlib import Path

import pytest

from inferprep import specs
from inferprep.grading import load_module
from inferprep.sim.paged_kv import BlockPool, ToyLM
from inferprep.wrong_variants import load_variant

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "beam_search_cow.py", "_fig_ref_beam_search_cow")
reprefill = load_variant("beam_search_cow", "reprefill_instead_of_sharing",
                        "_fig_wrong_beam_search_cow_reprefill")

PROMPT, BEAMS, BLOCK = 1000, 4, 16
MIB = 1 << 20
EDITORIAL = (ROOT / "exercises" / "beam-search-cow" / "editorial.md").read_text()


def run(module, prompt, beam_width, max_new_tokens, *, vocab=32, block_size=BLOCK, seed=0):
    pool = BlockPool(600, block_size, 16, seed=seed)
    model = ToyLM(pool, vocab, seed=seed)
    out = module.paged_beam_search(model, pool, prompt, beam_width, max_new_tokens)
    assert not pool.violations and pool.num_used == 0
    return out, pool, model


def test_prompt_layout():
    assert divmod(PROMPT, BLOCK) == (62, 8)          # 62 full blocks + one holding 8 tokens
    assert math.ceil(PROMPT / BLOCK) == 63


@pytest.fixture(scope="module")
def question_run():
    prompt = [(7 * i + 3) % 32 for i in range(PROMPT)]
    return run(ref, prompt, BEAMS, 2), prompt


def test_shared_blocks_after_first_decode_66(question_run):
    (_, pool, model), _ = question_run
    assert pool.peak_used == 66                        # measured on the simulator
    assert ref.blocks_after_first_decode(PROMPT, BEAMS, BLOCK, shared=True) == 66
    assert pool.num_copied == 3                        # 3 copies of the partial block, not 4
    assert model.num_tokens_processed == PROMPT + BEAMS


def test_private_caches_252(question_run):
    (want, _, _), prompt = question_run
    assert ref.blocks_after_first_decode(PROMPT, BEAMS, BLOCK, shared=False) == 252 == 4 * 63
    out, pool, _ = run(reprefill, prompt, BEAMS, 2)   # every beam re-runs into its own blocks
    assert out == want and pool.peak_used == 252


def test_mib_and_ratio_for_llama_3_1_8b_bf16():
    m = specs.LLAMA_3_1_8B
    per_token = ref.kv_bytes_per_token(m.n_layers, m.n_kv_heads, m.head_dim, specs.DType.BF16.bytes_per_element)
    assert per_token == 128 * 1024                     # 2 x 32 layers x 8 KV heads x 128 x 2 bytes
    per_block = per_token * BLOCK
    assert per_block == 2 * MIB
    assert 66 * per_block / MIB == 132
    assert 252 * per_block / MIB == 504
    assert round(252 / 66, 2) == 3.82


def test_worked_example():
    out, pool, model = run(ref, [1, 2, 3, 4, 5, 6], 3, 4, vocab=8, block_size=4, seed=7)
    assert out == [([7, 2, 2, 7], -2.1607980728149414), ([7, 4, 4, 7], -2.6537675857543945),
                   ([7, 2, 4, 4], -2.8493919372558594)]
    assert pool.peak_used == 6 and model.num_tokens_processed == 15 == 6 + 3 * 3
    _, pool, _ = run(ref, [1, 2, 3, 4, 5, 6], 3, 2, vocab=8, block_size=4, seed=7)
    assert pool.peak_used == 4                          # after step 1: A, B and two copies of B


def test_the_questions_600_and_156_mib():
    """The question's pair: four beams, 1,000-token prompt + 200 generated (1,200 positions), Llama
    3.1 8B bf16, 16-token blocks; shared: the beams agree on all but their last block."""
    m = specs.LLAMA_3_1_8B
    per_block = ref.kv_bytes_per_token(m.n_layers, m.n_kv_heads, m.head_dim,
                                       specs.DType.BF16.bytes_per_element) * BLOCK
    seq = PROMPT + 200
    assert math.ceil(seq / BLOCK) == 75
    private = ref.blocks_held(seq, BEAMS, BLOCK, common_prefix=0)
    shared = ref.blocks_held(seq, BEAMS, BLOCK, common_prefix=seq - 1)
    assert (private, shared) == (300, 78) == (4 * 75, 74 + 4)
    assert private * per_block / MIB == 600 and shared * per_block / MIB == 156
    assert ref.blocks_held(seq, BEAMS, BLOCK, common_prefix=74 * BLOCK) == 78   # parted in block 75
    assert ref.blocks_held(seq, BEAMS, BLOCK, common_prefix=74 * BLOCK - 1) == 73 + 4 * 2
    assert round(private / shared, 2) == 3.85
    parted_after_prompt = ref.blocks_held(seq, BEAMS, BLOCK, common_prefix=PROMPT)
    assert parted_after_prompt == 62 + 4 * 13 == 114 and parted_after_prompt * per_block / MIB == 228
    for fig in ("**600 MiB**", "**156 MiB**", "| 300 | **600** |", "| 78 | **156** |", "3.85x", "3.82x",
                "62 + 4 x 13 = 114 blocks (228 MiB)", "| 252 | 504 |", "| 66 | 132 |", "**200 tokens**"):
        assert fig in EDITORIAL


def test_blocks_held_matches_the_first_decode_helper_and_the_simulator(question_run):
    (_, pool, _), _ = question_run
    assert ref.blocks_held(PROMPT + 1, BEAMS, BLOCK, common_prefix=PROMPT) == 66 == pool.peak_used
    assert ref.blocks_held(PROMPT + 1, BEAMS, BLOCK, common_prefix=0) == 252
    for L, w, b in [(1000, 4, 16), (16, 3, 4), (7, 5, 1), (33, 2, 8)]:
        assert ref.blocks_held(L + 1, w, b, common_prefix=L) == ref.blocks_after_first_decode(L, w, b, shared=True)
        assert ref.blocks_held(L + 1, w, b, common_prefix=0) == ref.blocks_after_first_decode(L, w, b, shared=False)
