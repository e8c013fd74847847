"""Wire encoding of a big nested argument, measured in one run: a Chrome trace of the kind
batch1-gap sends (Llama-3.1-8B on an H100, 4 eager decode steps: about 4,500 events, 100,000
values), encoded by ``wire.encode`` and, as the floor any encoding of this tree pays, by
``json.dumps`` of the same tree; also the decode, and a float64 tensor of 16 MB (the size of
speculative-verifier's largest call) both ways. Prints the median of repeats and the ratio.

Before the exact-type fast path (2026-12-07) every value went down an isinstance chain whose
torch.Tensor check is a metaclass call; encoding batch1-gap's traces was about half of a grading.

    .venv/bin/python bench/wire_encode.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from inferprep import specs
from inferprep.runner import wire
from inferprep.sim.chrome_trace import decode_trace


def median_ms(fn, repeats: int) -> float:
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return 1e3 * statistics.median(ts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    a = ap.parse_args()
    trace = decode_trace(specs.LLAMA_3_1_8B, specs.H100_SXM, [1024], n_steps=4, seed=1, mode="eager")
    head, bufs = wire.encode(trace)
    enc = median_ms(lambda: wire.encode(trace), a.repeats)
    floor = median_ms(lambda: json.dumps(trace, separators=(",", ":")), a.repeats)
    dec = median_ms(lambda: wire.decode(head, bufs), a.repeats)
    print(f"trace: {len(trace['traceEvents'])} events, {len(head) / 1e6:.2f} MB of JSON")
    print(f"  wire.encode {enc:8.1f} ms   json.dumps (floor) {floor:8.1f} ms   ratio {enc / floor:5.2f}")
    print(f"  wire.decode {dec:8.1f} ms")
    t = torch.rand(48_000, 4, 10, dtype=torch.float64)
    h, b = wire.encode(t)
    enc_t = median_ms(lambda: wire.encode(t), a.repeats)
    received = [bytearray(x) for x in b]              # as Channel.recv hands them over
    dec_t = median_ms(lambda: wire.decode(h, received), a.repeats)
    print(f"tensor: {t.numel() * 8 / 1e6:.1f} MB float64")
    print(f"  wire.encode {enc_t:8.1f} ms   wire.decode of a received bytearray {dec_t:8.1f} ms")


if __name__ == "__main__":
    main()
