"""Public simulators the exercises share; they run in the trusted grader process and reach the
submission as proxies (``Grading.host``). Their dataclasses and enums may cross the wire.

- ``paged_kv``: a paged KV block pool and a toy LM that reads and writes it (beam-search-cow)
- ``engine``: a KV block pool and toy model driven by a continuous-batching scheduler (scheduler-loop)
- ``ring``: a lock-step ring network for SPMD collectives (ring-reduce-scatter)
- ``running_sum_model``: a model whose error grows with context length (bf16-running-sum)
- ``kernel_clock``: timers and a simulated asynchronous device (kernel-timing)
- ``step_model``: the per-operator roofline step time of a serving engine (serving, decoding)
- ``chrome_trace``: seeded decode-step profiler traces in the Chrome trace format PyTorch's
  profiler exports (mbu-gap-diagnosis, batch1-gap); it only makes events, never the answers
"""
