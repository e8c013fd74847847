"""ridge-point's follow-up `ridge-order`: the figures its prompt states are the spec table's, and
its answer is the order the reference's ridge points give (computed, not typed in)."""

from __future__ import annotations

import importlib.util

from inferprep import catalog, followups, paths, specs


def _reference():
    spec = importlib.util.spec_from_file_location("ridge_point_ref", paths.reference_dir() / "ridge_point.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


GPUS = {"H100 SXM": specs.H100_SXM, "H200 SXM": specs.H200_SXM, "B200 (HGX)": specs.B200,
        "A100 SXM 80GB": specs.A100_SXM_80GB}


def test_the_ridge_order_is_the_references():
    ref = _reference()
    q = next(q for q in followups.load(catalog.get("ridge-point").folder) if q.id == "ridge-order")
    ridges = {item: ref.ridge_point(GPUS[item], specs.DType.BF16) for item in q.items}
    assert [q.items[i] for i in q.answer] == sorted(q.items, key=ridges.get)
    # the prompt's peaks (TFLOP/s) and bandwidths (TB/s) are the spec table's
    for item, gpu in GPUS.items():
        tflops = f"{gpu.bf16_dense_flops / 1e12:,.1f}".removesuffix(".0")
        tbs = f"{gpu.hbm_bytes_per_s / 1e12:g}"
        assert tflops in q.prompt and tbs in q.prompt, (item, tflops, tbs)
    # the explanation's ridge points, to one decimal
    for r in ridges.values():
        assert f"{r:,.1f}" in q.explanation, r
