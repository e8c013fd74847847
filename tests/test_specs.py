"""Pins every value of the public tables in ``inferprep.specs`` and checks each has a source."""

from __future__ import annotations

import dataclasses

import pytest

from inferprep import specs
from inferprep.runner import wire
from inferprep.specs import (A100_SXM_80GB, B200, DEEPSEEK_V3, H100_SXM, H200_SXM, LLAMA_3_1_8B,
                             LLAMA_3_1_70B, MIXTRAL_8X7B, DType, GPU, ModelConfig)

GPU_VALUES = {
    "H100 SXM": dict(
        bf16_dense_flops=989.4e12, fp8_dense_flops=1978.9e12, hbm_bytes=80e9,
        hbm_bytes_per_s=3.35e12, sm_count=132, clock_hz=1.83e9, sfu_ops_per_clock_per_sm=16,
        warp_size=32, max_threads_per_sm=2048, max_warps_per_sm=64, max_blocks_per_sm=32,
        max_threads_per_block=1024, registers_per_sm=65536, register_alloc_unit=256,
        max_registers_per_thread=255, smem_per_sm_bytes=233472, smem_per_block_max_bytes=232448,
        smem_reserved_per_block_bytes=1024, smem_alloc_unit_bytes=128, nvlink_bytes_per_s=900e9,
        tdp_w=700.0, nic_bytes_per_s=50e9),
    "H200 SXM": dict(
        bf16_dense_flops=989.4e12, fp8_dense_flops=1978.9e12, hbm_bytes=141e9,
        hbm_bytes_per_s=4.8e12, sm_count=132, clock_hz=1.83e9, sfu_ops_per_clock_per_sm=16,
        warp_size=32, max_threads_per_sm=2048, max_warps_per_sm=64, max_blocks_per_sm=32,
        max_threads_per_block=1024, registers_per_sm=65536, register_alloc_unit=256,
        max_registers_per_thread=255, smem_per_sm_bytes=233472, smem_per_block_max_bytes=232448,
        smem_reserved_per_block_bytes=1024, smem_alloc_unit_bytes=128, nvlink_bytes_per_s=900e9,
        tdp_w=700.0, nic_bytes_per_s=50e9),
    "B200": dict(
        bf16_dense_flops=2.25e15, fp8_dense_flops=4.5e15, hbm_bytes=180e9,
        hbm_bytes_per_s=7.7e12, sm_count=148, clock_hz=1.8558e9, sfu_ops_per_clock_per_sm=16,
        warp_size=32, max_threads_per_sm=2048, max_warps_per_sm=64, max_blocks_per_sm=32,
        max_threads_per_block=1024, registers_per_sm=65536, register_alloc_unit=256,
        max_registers_per_thread=255, smem_per_sm_bytes=233472, smem_per_block_max_bytes=232448,
        smem_reserved_per_block_bytes=1024, smem_alloc_unit_bytes=128, nvlink_bytes_per_s=1.8e12,
        tdp_w=1000.0, nic_bytes_per_s=50e9),
    "A100 SXM 80GB": dict(
        bf16_dense_flops=312e12, fp8_dense_flops=None, hbm_bytes=80e9,
        hbm_bytes_per_s=2.039e12, sm_count=108, clock_hz=1.41e9, sfu_ops_per_clock_per_sm=16,
        warp_size=32, max_threads_per_sm=2048, max_warps_per_sm=64, max_blocks_per_sm=32,
        max_threads_per_block=1024, registers_per_sm=65536, register_alloc_unit=256,
        max_registers_per_thread=255, smem_per_sm_bytes=167936, smem_per_block_max_bytes=166912,
        smem_reserved_per_block_bytes=1024, smem_alloc_unit_bytes=128, nvlink_bytes_per_s=600e9,
        tdp_w=400.0, nic_bytes_per_s=25e9),
}

MODEL_VALUES = {
    "Llama 3.1 8B": dict(
        n_layers=32, hidden_size=4096, n_heads=32, n_kv_heads=8, head_dim=128, ffn_size=14336,
        vocab_size=128256, tied_embeddings=False, max_context=131072, n_routed_experts=0,
        n_shared_experts=0, experts_per_token=0, moe_ffn_size=0, first_dense_layers=0,
        q_lora_rank=0, kv_lora_rank=0, qk_nope_head_dim=0, qk_rope_head_dim=0, v_head_dim=0,
        n_expert_groups=0, topk_expert_groups=0),
    "Llama 3.1 70B": dict(
        n_layers=80, hidden_size=8192, n_heads=64, n_kv_heads=8, head_dim=128, ffn_size=28672,
        vocab_size=128256, tied_embeddings=False, max_context=131072, n_routed_experts=0,
        n_shared_experts=0, experts_per_token=0, moe_ffn_size=0, first_dense_layers=0,
        q_lora_rank=0, kv_lora_rank=0, qk_nope_head_dim=0, qk_rope_head_dim=0, v_head_dim=0,
        n_expert_groups=0, topk_expert_groups=0),
    "Mixtral 8x7B": dict(
        n_layers=32, hidden_size=4096, n_heads=32, n_kv_heads=8, head_dim=128, ffn_size=14336,
        vocab_size=32000, tied_embeddings=False, max_context=32768, n_routed_experts=8,
        n_shared_experts=0, experts_per_token=2, moe_ffn_size=14336, first_dense_layers=0,
        q_lora_rank=0, kv_lora_rank=0, qk_nope_head_dim=0, qk_rope_head_dim=0, v_head_dim=0,
        n_expert_groups=0, topk_expert_groups=0),
    "DeepSeek-V3": dict(
        n_layers=61, hidden_size=7168, n_heads=128, n_kv_heads=128, head_dim=192, ffn_size=18432,
        vocab_size=129280, tied_embeddings=False, max_context=163840, n_routed_experts=256,
        n_shared_experts=1, experts_per_token=8, moe_ffn_size=2048, first_dense_layers=3,
        q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64,
        v_head_dim=128, n_expert_groups=8, topk_expert_groups=4),
    "Kimi K2": dict(
        n_layers=61, hidden_size=7168, n_heads=64, n_kv_heads=64, head_dim=192, ffn_size=18432,
        vocab_size=163840, tied_embeddings=False, max_context=131072, n_routed_experts=384,
        n_shared_experts=1, experts_per_token=8, moe_ffn_size=2048, first_dense_layers=1,
        q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64,
        v_head_dim=128, n_expert_groups=1, topk_expert_groups=1),
}


def _fields(cls) -> list[str]:
    return [f.name for f in dataclasses.fields(cls) if f.name not in ("name", "sources")]


@pytest.mark.parametrize("name", sorted(GPU_VALUES))
def test_gpu_values_pinned_and_sourced(name):
    g = specs.GPUS[name]
    assert g.name == name
    expected = GPU_VALUES[name]
    assert sorted(expected) == sorted(_fields(GPU)), "pin every field"
    for f, v in expected.items():
        assert getattr(g, f) == v, f"{name}.{f}"
    for f in _fields(GPU) + ["name"]:
        assert isinstance(g.sources.get(f), str) and len(g.sources[f]) > 10, f"{name}.{f} source"


@pytest.mark.parametrize("name", sorted(MODEL_VALUES))
def test_model_values_pinned_and_sourced(name):
    m = specs.MODELS[name]
    assert m.name == name
    expected = MODEL_VALUES[name]
    assert sorted(expected) == sorted(_fields(ModelConfig)), "pin every field"
    for f, v in expected.items():
        assert getattr(m, f) == v, f"{name}.{f}"
    for f in _fields(ModelConfig) + ["name"]:
        assert isinstance(m.sources.get(f), str) and "config.json" in m.sources[f], f"{name}.{f}"


def test_consistency():
    for g in specs.GPUS.values():
        assert g.max_warps_per_sm * g.warp_size == g.max_threads_per_sm
        assert g.smem_per_block_max_bytes + g.smem_reserved_per_block_bytes == g.smem_per_sm_bytes
    for m in (LLAMA_3_1_8B, LLAMA_3_1_70B, MIXTRAL_8X7B):
        assert m.n_heads * m.head_dim == m.hidden_size
        assert not m.uses_mla
    assert DEEPSEEK_V3.head_dim == DEEPSEEK_V3.qk_nope_head_dim + DEEPSEEK_V3.qk_rope_head_dim
    assert DEEPSEEK_V3.uses_mla and DEEPSEEK_V3.is_moe and MIXTRAL_8X7B.is_moe
    assert not LLAMA_3_1_8B.is_moe


def test_derived_rates():
    # FlashAttention-3 (arXiv:2407.08608): H100 SXM5 has 989 TFLOPS of FP16 matmul but 3.9 TFLOPS
    # of special functions.
    assert H100_SXM.sfu_ops_per_s == pytest.approx(3.9e12, rel=0.01)
    assert H100_SXM.bf16_dense_flops == pytest.approx(132 * 4096 * H100_SXM.clock_hz, rel=1e-4)
    assert A100_SXM_80GB.bf16_dense_flops == pytest.approx(108 * 2048 * A100_SXM_80GB.clock_hz,
                                                           rel=2e-3)
    assert H100_SXM.dense_flops(DType.BF16) == H100_SXM.dense_flops(DType.FP16) == 989.4e12
    assert B200.dense_flops(DType.FP8) == 4.5e15
    # B200's clock is derived (no NVIDIA document gives its tensor clock): the dense BF16 peak over
    # 148 SMs x 8192 FLOP/clk/SM (Hopper's 4096 doubled); FP8 does twice the FLOPs per clock.
    assert B200.bf16_dense_flops == pytest.approx(148 * 8192 * B200.clock_hz, rel=1e-5)
    assert B200.fp8_dense_flops == pytest.approx(148 * 16384 * B200.clock_hz, rel=1e-5)
    assert "Derived" in B200.sources["clock_hz"] and "HGX B200" in B200.sources["hbm_bytes_per_s"]
    # HGX B200 column: 180 GB and 7.7 TB/s per GPU (the DGX system's 64 TB/s / 8 = 8 TB/s is not used)
    assert (B200.hbm_bytes, B200.hbm_bytes_per_s) == (180 * 10**9, 7.7e12)
    with pytest.raises(ValueError):
        A100_SXM_80GB.dense_flops(DType.FP8)
    with pytest.raises(ValueError):
        H100_SXM.dense_flops(DType.INT4)
    assert [d.bytes_per_element for d in DType] == [4.0, 2.0, 2.0, 1.0, 1.0, 0.5]


@pytest.mark.parametrize("value", [H100_SXM, H200_SXM, B200, A100_SXM_80GB, LLAMA_3_1_8B,
                                   DEEPSEEK_V3, DType.FP8,
                                   dataclasses.replace(H100_SXM, name="made-up", sm_count=7)])
def test_crosses_the_wire(value):
    header, buffers = wire.encode(value)
    back = wire.decode(header, buffers)
    assert back == value
    if dataclasses.is_dataclass(value):
        assert back.sources == value.sources
