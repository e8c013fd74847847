"""Public hardware and model tables the exercises share.

Everything here is public: a submission may import it. Exercises take :class:`GPU`,
:class:`ModelConfig` and :class:`DType` as *inputs* (they cross the judge's wire, see
``inferprep.runner.wire``), so a grader can call a solution on the tables below or on made-up
but consistent hardware and models (``dataclasses.replace(H100_SXM, hbm_bytes_per_s=...)``).
Fields are plain ints, floats, strs, bools, tuples and dicts.

Conventions (units are in the field names):

* ``*_flops``: floating-point operations per second (FLOP/s). One multiply-add is 2 FLOPs.
  Tensor-core peaks are **dense** (no 2:4 structured sparsity). NVIDIA datasheets headline the
  sparse figure, which is exactly 2x the dense one; we never store it.
* ``*_bytes``: bytes. Memory capacities use the datasheet's decimal gigabyte (1 GB = 1e9 bytes),
  so ``H100_SXM.hbm_bytes == 80e9``; per-SM on-chip sizes are binary (1 KiB = 1024 bytes),
  as CUDA reports them.
* ``*_bytes_per_s``: bytes per second, decimal (1 TB/s = 1e12 bytes/s). HBM bandwidth is the
  datasheet's *peak*; achievable bandwidth is lower and is never stored here.
* ``*_w``: watts. ``*_hz``: hertz.

Every value of every table carries its public source in the instance's ``sources`` mapping
(field name -> source); ``tests/test_specs.py`` pins each value.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field

__all__ = [
    "DType", "GPU", "ModelConfig",
    "H100_SXM", "H200_SXM", "B200", "A100_SXM_80GB", "GPUS",
    "LLAMA_3_1_8B", "LLAMA_3_1_70B", "MIXTRAL_8X7B", "DEEPSEEK_V3", "KIMI_K2", "MODELS",
]


class DType(enum.Enum):
    """Number formats of weights, KV cache and tensor-core math.

    ``bytes_per_element`` is the storage size (a float because INT4 packs two per byte); block
    scales of quantized formats are not counted.
    """

    FP32 = "fp32"
    BF16 = "bf16"
    FP16 = "fp16"
    FP8 = "fp8"
    INT8 = "int8"
    INT4 = "int4"

    @property
    def bytes_per_element(self) -> float:
        """Bytes one element occupies: 4, 2, 2, 1, 1, 0.5."""
        return _DTYPE_BYTES[self.value]


_DTYPE_BYTES = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5}


@dataclass(frozen=True)
class GPU:
    """One GPU (one device, not a node of eight).

    Fields:
        name: marketing name.
        bf16_dense_flops: dense BF16 (= FP16) tensor-core peak with FP32 accumulate, FLOP/s.
        fp8_dense_flops: dense FP8 tensor-core peak, FLOP/s; ``None`` where the GPU has no FP8
            tensor cores (A100).
        hbm_bytes: HBM capacity, bytes (decimal GB as on the datasheet).
        hbm_bytes_per_s: peak HBM bandwidth, bytes/s (datasheet; achievable is lower).
        sm_count: streaming multiprocessors enabled on the product.
        clock_hz: SM clock, Hz, that per-clock rates are multiplied by (see ``sources``).
        sfu_ops_per_clock_per_sm: special-function unit (MUFU) results per clock per SM for
            the FP32 base-2 exponential ``ex2`` (also rcp, rsqrt, lg2, sin, cos).
        warp_size: threads per warp.
        max_threads_per_sm / max_warps_per_sm / max_blocks_per_sm: resident limits per SM.
        max_threads_per_block: largest block.
        registers_per_sm: 32-bit registers in one SM's register file.
        register_alloc_unit: registers are allocated per warp in multiples of this many
            (a warp using r registers per thread takes ceil(32 * r / unit) * unit).
        max_registers_per_thread: largest per-thread register count a kernel may use.
        smem_per_sm_bytes: largest shared-memory carve-out of one SM, bytes.
        smem_per_block_max_bytes: largest (opt-in) dynamic shared memory of one block, bytes.
        smem_reserved_per_block_bytes: shared memory the CUDA runtime reserves for each
            resident block on top of what the kernel asks for, bytes.
        smem_alloc_unit_bytes: shared memory is allocated per block in multiples of this.
        nvlink_bytes_per_s: NVLink bandwidth of one GPU, both directions summed, bytes/s
            (half of it each way).
        tdp_w: maximum board power (TDP), W.
        nic_bytes_per_s: scale-out network bandwidth per GPU, one direction, bytes/s: the
            NIC each GPU of the vendor's 8-GPU reference system (DGX/HGX) has for
            inter-node traffic (RDMA), e.g. one 400 Gb/s ConnectX-7 = 50e9 bytes/s.
        sources: field name -> public source of its value.
    """

    name: str
    bf16_dense_flops: float
    fp8_dense_flops: float | None
    hbm_bytes: int
    hbm_bytes_per_s: float
    sm_count: int
    clock_hz: float
    sfu_ops_per_clock_per_sm: int
    warp_size: int
    max_threads_per_sm: int
    max_warps_per_sm: int
    max_blocks_per_sm: int
    max_threads_per_block: int
    registers_per_sm: int
    register_alloc_unit: int
    max_registers_per_thread: int
    smem_per_sm_bytes: int
    smem_per_block_max_bytes: int
    smem_reserved_per_block_bytes: int
    smem_alloc_unit_bytes: int
    nvlink_bytes_per_s: float
    tdp_w: float
    nic_bytes_per_s: float
    sources: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    def dense_flops(self, dtype: DType) -> float:
        """Dense tensor-core peak (FLOP/s) for math in ``dtype``.

        BF16 and FP16 share one peak; FP8 has its own. Raises ValueError for FP8 on a GPU
        without FP8 tensor cores and for any other dtype (FP32, INT8, INT4 have no entry here).
        """
        if dtype in (DType.BF16, DType.FP16):
            return self.bf16_dense_flops
        if dtype is DType.FP8:
            if self.fp8_dense_flops is None:
                raise ValueError(f"{self.name} has no FP8 tensor cores")
            return self.fp8_dense_flops
        raise ValueError(f"no tensor-core peak for {dtype} in this table")

    @property
    def sfu_ops_per_s(self) -> float:
        """Special-function (exp2) results per second: SMs x ops/clock/SM x clock."""
        return self.sm_count * self.sfu_ops_per_clock_per_sm * self.clock_hz


@dataclass(frozen=True)
class ModelConfig:
    """A decoder-only transformer, as its Hugging Face ``config.json`` describes it.

    Dense models leave the MoE and MLA fields at 0. Fields (HF key in parentheses):
        name: model name.
        n_layers (num_hidden_layers): decoder layers (DeepSeek-V3's multi-token-prediction
            module is not counted).
        hidden_size (hidden_size): model width d.
        n_heads (num_attention_heads): query heads.
        n_kv_heads (num_key_value_heads): key/value heads (GQA when < n_heads).
        head_dim: per-head dimension of query and key (the width of a q.k dot product); for
            MLA models ``qk_nope_head_dim + qk_rope_head_dim``.
        ffn_size (intermediate_size): intermediate width of a dense gated (SwiGLU) MLP: three
            matrices (gate, up: d x ffn; down: ffn x d).
        vocab_size (vocab_size): vocabulary size.
        tied_embeddings (tie_word_embeddings): the LM head reuses the embedding matrix.
        max_context (max_position_embeddings): longest context the config supports, tokens.
        n_routed_experts (num_local_experts / n_routed_experts): routed experts per MoE layer.
        n_shared_experts (n_shared_experts): always-active experts per MoE layer.
        experts_per_token (num_experts_per_tok): routed experts each token uses (top-k).
        moe_ffn_size (moe_intermediate_size; Mixtral: intermediate_size): intermediate width
            of one expert's gated MLP (a shared expert has the same width).
        first_dense_layers (first_k_dense_replace): leading layers with a dense MLP of
            ``ffn_size`` instead of an MoE layer.
        q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim: Multi-head
            Latent Attention ranks and head dims (DeepSeek-V2/V3); 0 when not MLA.
        n_expert_groups (n_group), topk_expert_groups (topk_group): group-limited routing of
            an MoE layer: the routed experts form ``n_expert_groups`` equal contiguous groups
            and a token picks its experts only from its ``topk_expert_groups`` best groups
            (DeepSeek-V3: 8 and 4; when groups map to nodes, a token reaches at most 4
            nodes); 1 and 1 (or 0 for dense models) mean no group limit.
        sources: field name -> public source of its value.
    """

    name: str
    n_layers: int
    hidden_size: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    ffn_size: int
    vocab_size: int
    tied_embeddings: bool = False
    max_context: int = 0
    n_routed_experts: int = 0
    n_shared_experts: int = 0
    experts_per_token: int = 0
    moe_ffn_size: int = 0
    first_dense_layers: int = 0
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    n_expert_groups: int = 0
    topk_expert_groups: int = 0
    sources: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    @property
    def is_moe(self) -> bool:
        """True when the model has routed experts."""
        return self.n_routed_experts > 0

    @property
    def uses_mla(self) -> bool:
        """True for Multi-head Latent Attention (``kv_lora_rank > 0``)."""
        return self.kv_lora_rank > 0


# --------------------------------------------------------------------------------------------
# Sources

_H100_DS = ("NVIDIA H100 Tensor Core GPU datasheet, H100 SXM column "
            "(https://www.nvidia.com/en-us/data-center/h100/)")
_H200_DS = ("NVIDIA H200 Tensor Core GPU datasheet, H200 SXM column "
            "(https://www.nvidia.com/en-us/data-center/h200/)")
_B200_DS = ("NVIDIA Blackwell datasheet, 'Individual Blackwell GPU Specifications', HGX B200 column "
            "(https://nvdam.widen.net/s/wwnsxrhm2w/blackwell-datasheet-3384703); tensor-core "
            "rows are quoted with sparsity there, the dense figure is half")
_A100_DS = ("NVIDIA A100 Tensor Core GPU datasheet, A100 80GB SXM column "
            "(https://www.nvidia.com/en-us/data-center/a100/)")
_HOPPER_WP = ("NVIDIA H100 Tensor Core GPU Architecture whitepaper, Table 3 "
              "(https://resources.nvidia.com/en-us-tensor-core)")
_AMPERE_WP = ("NVIDIA A100 Tensor Core GPU Architecture whitepaper, Table 1 "
              "(https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/nvidia-ampere-architecture-whitepaper.pdf)")
_CUDA_CC = ("CUDA C++ Programming Guide, 'Technical Specifications per Compute Capability' "
            "(https://docs.nvidia.com/cuda/cuda-c-programming-guide/#features-and-technical-specifications)")
_CUDA_ARITH = ("CUDA C++ Programming Guide, 'Arithmetic Instructions' throughput table: 16 results "
               "per clock per SM for 32-bit exp2/rcp/rsqrt/lg2/sin/cos "
               "(https://docs.nvidia.com/cuda/cuda-c-programming-guide/#arithmetic-instructions)")
_OCC_CALC = ("CUDA Occupancy Calculator / Nsight Compute occupancy section: register allocation "
             "unit 256 per warp, shared-memory allocation unit 128 B "
             "(https://docs.nvidia.com/nsight-compute/NsightCompute/index.html#occupancy-calculator)")
_SMEM_RESERVE = ("CUDA C++ Programming Guide, compute capability 8.x/9.x shared memory: 1 KB of "
                 "shared memory is reserved for system use per thread block "
                 "(https://docs.nvidia.com/cuda/cuda-c-programming-guide/#shared-memory-8-x)")
_DEVQUERY_B200 = ("CUDA device query on B200 (compute capability 10.0, 148 SMs, 228 KB shared "
                  "memory per SM), quoted in pytorch/ao PR #4002 "
                  "(https://github.com/pytorch/ao/pull/4002)")


_DGX_H100 = ("NVIDIA DGX H100 datasheet, 'Networking' (cluster network); the same NIC per GPU "
             "as DeepEP's README testbed ('CX7 InfiniBand 400 Gb/s RDMA network card (~50 GB/s "
             "maximum bandwidth)')")
_DGX_H200 = "NVIDIA DGX H200 datasheet, 'Networking' (cluster network)"
_DGX_B200 = "NVIDIA DGX B200 datasheet, 'Networking' (cluster network)"
_DGX_A100 = "NVIDIA DGX A100 datasheet, 'Networking' (cluster network)"


def _gpu_sources(**override: str) -> dict:
    base = {
        "warp_size": _CUDA_CC,
        "max_threads_per_sm": _CUDA_CC,
        "max_warps_per_sm": _CUDA_CC,
        "max_blocks_per_sm": _CUDA_CC,
        "max_threads_per_block": _CUDA_CC,
        "registers_per_sm": _CUDA_CC,
        "register_alloc_unit": _OCC_CALC,
        "max_registers_per_thread": _CUDA_CC,
        "smem_per_sm_bytes": _CUDA_CC,
        "smem_per_block_max_bytes": _CUDA_CC,
        "smem_reserved_per_block_bytes": _SMEM_RESERVE,
        "smem_alloc_unit_bytes": _OCC_CALC,
        "sfu_ops_per_clock_per_sm": _CUDA_ARITH,
    }
    base.update(override)
    return base


H100_SXM = GPU(
    name="H100 SXM",
    bf16_dense_flops=989.4e12,
    fp8_dense_flops=1978.9e12,
    hbm_bytes=80 * 10**9,
    hbm_bytes_per_s=3.35e12,
    sm_count=132,
    clock_hz=1.83e9,
    sfu_ops_per_clock_per_sm=16,
    warp_size=32,
    max_threads_per_sm=2048,
    max_warps_per_sm=64,
    max_blocks_per_sm=32,
    max_threads_per_block=1024,
    registers_per_sm=65536,
    register_alloc_unit=256,
    max_registers_per_thread=255,
    smem_per_sm_bytes=228 * 1024,
    smem_per_block_max_bytes=227 * 1024,
    smem_reserved_per_block_bytes=1024,
    smem_alloc_unit_bytes=128,
    nvlink_bytes_per_s=900e9,
    tdp_w=700.0,
    nic_bytes_per_s=50e9,
    sources=_gpu_sources(
        name=_H100_DS,
        bf16_dense_flops=_HOPPER_WP + ": 989.4 dense (1,979 with sparsity on the datasheet)",
        fp8_dense_flops=_HOPPER_WP + ": 1,978.9 dense (3,958 with sparsity on the datasheet)",
        hbm_bytes=_H100_DS + ": 80 GB HBM3",
        hbm_bytes_per_s=_H100_DS + ": 3.35 TB/s",
        sm_count=_HOPPER_WP + ": 132 SMs (H100 SXM5)",
        clock_hz=("1830 MHz: the clock behind the dense tensor peak, 989.4e12 / (132 SMs x 4096 "
                  "FLOP/clk/SM) (Hopper whitepaper); also gives FlashAttention-3's 3.9 TFLOPS of "
                  "special functions (Shah et al. 2024, arXiv:2407.08608, section 3.1)"),
        nvlink_bytes_per_s=_H100_DS + ": NVLink 900 GB/s",
        tdp_w=_H100_DS + ": max TDP up to 700 W",
        nic_bytes_per_s=_DGX_H100 + (
            ": 8x single-port ConnectX-7 VPI,"
            " 400 Gb/s InfiniBand (one per GPU) = 50 GB/s"),
    ),
)

H200_SXM = GPU(
    name="H200 SXM",
    bf16_dense_flops=989.4e12,
    fp8_dense_flops=1978.9e12,
    hbm_bytes=141 * 10**9,
    hbm_bytes_per_s=4.8e12,
    sm_count=132,
    clock_hz=1.83e9,
    sfu_ops_per_clock_per_sm=16,
    warp_size=32,
    max_threads_per_sm=2048,
    max_warps_per_sm=64,
    max_blocks_per_sm=32,
    max_threads_per_block=1024,
    registers_per_sm=65536,
    register_alloc_unit=256,
    max_registers_per_thread=255,
    smem_per_sm_bytes=228 * 1024,
    smem_per_block_max_bytes=227 * 1024,
    smem_reserved_per_block_bytes=1024,
    smem_alloc_unit_bytes=128,
    nvlink_bytes_per_s=900e9,
    tdp_w=700.0,
    nic_bytes_per_s=50e9,
    sources=_gpu_sources(
        name=_H200_DS,
        bf16_dense_flops=_H200_DS + ": BF16 1,979 TFLOPS with sparsity; dense = half (same GH100 "
                         "compute as H100 SXM, " + _HOPPER_WP + ")",
        fp8_dense_flops=_H200_DS + ": FP8 3,958 TFLOPS with sparsity; dense = half",
        hbm_bytes=_H200_DS + ": 141 GB HBM3e",
        hbm_bytes_per_s=_H200_DS + ": 4.8 TB/s",
        sm_count="Same GH100 configuration as H100 SXM: 132 SMs (" + _HOPPER_WP + ")",
        clock_hz="As H100 SXM: 1830 MHz implied by the dense tensor peak",
        nvlink_bytes_per_s=_H200_DS + ": NVLink 900 GB/s",
        tdp_w=_H200_DS + ": max TDP up to 700 W",
        nic_bytes_per_s=_DGX_H200 + (
            ": 8x single-port ConnectX-7 VPI,"
            " 400 Gb/s InfiniBand (one per GPU) = 50 GB/s"),
    ),
)

B200 = GPU(
    name="B200",
    bf16_dense_flops=2.25e15,
    fp8_dense_flops=4.5e15,
    hbm_bytes=180 * 10**9,
    hbm_bytes_per_s=7.7e12,
    sm_count=148,
    clock_hz=1.8558e9,
    sfu_ops_per_clock_per_sm=16,
    warp_size=32,
    max_threads_per_sm=2048,
    max_warps_per_sm=64,
    max_blocks_per_sm=32,
    max_threads_per_block=1024,
    registers_per_sm=65536,
    register_alloc_unit=256,
    max_registers_per_thread=255,
    smem_per_sm_bytes=228 * 1024,
    smem_per_block_max_bytes=227 * 1024,
    smem_reserved_per_block_bytes=1024,
    smem_alloc_unit_bytes=128,
    nvlink_bytes_per_s=1.8e12,
    tdp_w=1000.0,
    nic_bytes_per_s=50e9,
    sources=_gpu_sources(
        name=_B200_DS,
        bf16_dense_flops=_B200_DS + ": FP16/BF16 Tensor Core 4.5 PFLOPS with sparsity -> 2.25 PFLOPS dense",
        fp8_dense_flops=_B200_DS + ": FP8/FP6 Tensor Core 9 PFLOPS with sparsity -> 4.5 PFLOPS dense",
        hbm_bytes=_B200_DS + ": 180 GB HBM3E",
        hbm_bytes_per_s=(_B200_DS + ": 7.7 TB/s (the same per-GPU figure as PyTorch's inductor device "
                         "table, pytorch/pytorch #193471 (re-landed as #194297), dram_bw_gbs=7700; pytorch/ao #4002 computes "
                         "7.67 TB/s from the 7,680-bit bus and the 3,996 MHz memory clock the driver reports; "
                         "the 8 TB/s often quoted is the DGX B200 / GB200 figure)"),
        sm_count=_DEVQUERY_B200,
        clock_hz=("Derived, not published: NVIDIA gives no tensor-core clock for B200. 1855.8 MHz is the clock "
                  "behind the dense tensor peak, 2.25e15 / (148 SMs x 8192 FLOP/clk/SM), assuming the "
                  "fifth-generation tensor cores do twice Hopper's 4096 dense BF16 FLOP/clk/SM (as for the "
                  "H100 row, where the whitepaper states the per-SM rate). Not the 1965 MHz boost clock "
                  "third-party databases list"),
        smem_per_sm_bytes=_CUDA_CC + "; " + _DEVQUERY_B200,
        nvlink_bytes_per_s=_B200_DS + ": fifth-generation NVLink 1.8 TB/s",
        tdp_w=_B200_DS + ": Max TDP configurable up to 1,000 W",
        nic_bytes_per_s=_DGX_B200 + (
            ": 8x single-port ConnectX-7 VPI,"
            " up to 400 Gb/s InfiniBand (one per GPU) = 50 GB/s"),
    ),
)

A100_SXM_80GB = GPU(
    name="A100 SXM 80GB",
    bf16_dense_flops=312e12,
    fp8_dense_flops=None,
    hbm_bytes=80 * 10**9,
    hbm_bytes_per_s=2.039e12,
    sm_count=108,
    clock_hz=1.41e9,
    sfu_ops_per_clock_per_sm=16,
    warp_size=32,
    max_threads_per_sm=2048,
    max_warps_per_sm=64,
    max_blocks_per_sm=32,
    max_threads_per_block=1024,
    registers_per_sm=65536,
    register_alloc_unit=256,
    max_registers_per_thread=255,
    smem_per_sm_bytes=164 * 1024,
    smem_per_block_max_bytes=163 * 1024,
    smem_reserved_per_block_bytes=1024,
    smem_alloc_unit_bytes=128,
    nvlink_bytes_per_s=600e9,
    tdp_w=400.0,
    nic_bytes_per_s=25e9,
    sources=_gpu_sources(
        name=_A100_DS,
        bf16_dense_flops=_A100_DS + ": BF16 312 TFLOPS (624 with sparsity)",
        fp8_dense_flops="A100 (Ampere, compute capability 8.0) has no FP8 tensor cores: "
                        + _AMPERE_WP,
        hbm_bytes=_A100_DS + ": 80 GB HBM2e",
        hbm_bytes_per_s=_A100_DS + ": 2,039 GB/s",
        sm_count=_AMPERE_WP + ": 108 SMs",
        clock_hz=_AMPERE_WP + ": boost clock 1410 MHz",
        nvlink_bytes_per_s=_A100_DS + ": NVLink 600 GB/s",
        tdp_w=_A100_DS + ": max TDP 400 W",
        nic_bytes_per_s=_DGX_A100 + (
            ": 8x single-port ConnectX-6 VPI,"
            " 200 Gb/s HDR InfiniBand (one per GPU) = 25 GB/s"),
    ),
)

GPUS: dict[str, GPU] = {g.name: g for g in (H100_SXM, H200_SXM, B200, A100_SXM_80GB)}
"""The GPU tables by name."""


_L8 = "meta-llama/Llama-3.1-8B config.json (https://huggingface.co/meta-llama/Llama-3.1-8B/blob/main/config.json)"
_L70 = "meta-llama/Llama-3.1-70B config.json (https://huggingface.co/meta-llama/Llama-3.1-70B/blob/main/config.json)"
_MX = ("mistralai/Mixtral-8x7B-v0.1 config.json "
       "(https://huggingface.co/mistralai/Mixtral-8x7B-v0.1/blob/main/config.json)")
_K2 = ("moonshotai/Kimi-K2-Instruct config.json "
       "(https://huggingface.co/moonshotai/Kimi-K2-Instruct/blob/main/config.json)")
_DS3 = ("deepseek-ai/DeepSeek-V3 config.json "
        "(https://huggingface.co/deepseek-ai/DeepSeek-V3/blob/main/config.json)")


def _all(src: str, fields: tuple[str, ...], **override: str) -> dict:
    d = {f: src for f in fields}
    d.update(override)
    return d


_MODEL_FIELDS = tuple(f.name for f in dataclasses.fields(ModelConfig) if f.name != "sources")

LLAMA_3_1_8B = ModelConfig(
    name="Llama 3.1 8B", n_layers=32, hidden_size=4096, n_heads=32, n_kv_heads=8, head_dim=128,
    ffn_size=14336, vocab_size=128256, tied_embeddings=False, max_context=131072,
    sources=_all(_L8, _MODEL_FIELDS, head_dim=_L8 + ": head_dim = hidden_size / num_attention_heads"),
)

LLAMA_3_1_70B = ModelConfig(
    name="Llama 3.1 70B", n_layers=80, hidden_size=8192, n_heads=64, n_kv_heads=8, head_dim=128,
    ffn_size=28672, vocab_size=128256, tied_embeddings=False, max_context=131072,
    sources=_all(_L70, _MODEL_FIELDS, head_dim=_L70 + ": head_dim = hidden_size / num_attention_heads"),
)

MIXTRAL_8X7B = ModelConfig(
    name="Mixtral 8x7B", n_layers=32, hidden_size=4096, n_heads=32, n_kv_heads=8, head_dim=128,
    ffn_size=14336, vocab_size=32000, tied_embeddings=False, max_context=32768,
    n_routed_experts=8, n_shared_experts=0, experts_per_token=2, moe_ffn_size=14336,
    first_dense_layers=0,
    sources=_all(_MX, _MODEL_FIELDS,
                 head_dim=_MX + ": head_dim = hidden_size / num_attention_heads",
                 moe_ffn_size=_MX + ": each expert is a SwiGLU MLP of intermediate_size",
                 n_shared_experts=_MX + ": no shared experts",
                 first_dense_layers=_MX + ": every layer is MoE"),
)

DEEPSEEK_V3 = ModelConfig(
    name="DeepSeek-V3", n_layers=61, hidden_size=7168, n_heads=128, n_kv_heads=128, head_dim=192,
    ffn_size=18432, vocab_size=129280, tied_embeddings=False, max_context=163840,
    n_routed_experts=256, n_shared_experts=1, experts_per_token=8, moe_ffn_size=2048,
    first_dense_layers=3,
    q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128,
    n_expert_groups=8, topk_expert_groups=4,
    sources=_all(_DS3, _MODEL_FIELDS,
                 head_dim=_DS3 + ": qk_nope_head_dim + qk_rope_head_dim = 128 + 64",
                 n_layers=_DS3 + ": num_hidden_layers 61 (the num_nextn_predict_layers=1 MTP "
                               "module is not counted)",
                 ffn_size=_DS3 + ": intermediate_size (dense MLP of the first_k_dense_replace layers)",
                 moe_ffn_size=_DS3 + ": moe_intermediate_size",
                 first_dense_layers=_DS3 + ": first_k_dense_replace",
                 experts_per_token=_DS3 + ": num_experts_per_tok",
                 n_expert_groups=_DS3 + ": n_group (topk_method noaux_tc)",
                 topk_expert_groups=_DS3 + ": topk_group"),
)

KIMI_K2 = ModelConfig(
    name="Kimi K2", n_layers=61, hidden_size=7168, n_heads=64, n_kv_heads=64, head_dim=192,
    ffn_size=18432, vocab_size=163840, tied_embeddings=False, max_context=131072,
    n_routed_experts=384, n_shared_experts=1, experts_per_token=8, moe_ffn_size=2048,
    first_dense_layers=1,
    q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128,
    n_expert_groups=1, topk_expert_groups=1,
    sources=_all(_K2, _MODEL_FIELDS,
                 head_dim=_K2 + ": qk_nope_head_dim + qk_rope_head_dim = 128 + 64",
                 ffn_size=_K2 + ": intermediate_size (dense MLP of the first_k_dense_replace layer)",
                 moe_ffn_size=_K2 + ": moe_intermediate_size",
                 first_dense_layers=_K2 + ": first_k_dense_replace",
                 experts_per_token=_K2 + ": num_experts_per_tok",
                 max_context=_K2 + ": max_position_embeddings 131072 (the model card's 128K)",
                 n_expert_groups=_K2 + ": n_group 1 (no group limit)",
                 topk_expert_groups=_K2 + ": topk_group 1"),
)

MODELS: dict[str, ModelConfig] = {
    m.name: m for m in (LLAMA_3_1_8B, LLAMA_3_1_70B, MIXTRAL_8X7B, DEEPSEEK_V3, KIMI_K2)
}
"""The model tables by name."""
