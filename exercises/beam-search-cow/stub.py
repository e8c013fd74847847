"""beam-search-cow: beam search over a paged KV cache (see the statement for every rule).

The two objects you get live in the grader's process; every call crosses the wire.

pool (a KV block pool; reference counting is your job):
    pool.block_size, pool.num_blocks                 ints (attributes)
    pool.allocate(num_blocks=1) -> list[int]         fresh block ids; their slots hold no KV yet
                                                     (attending over one is an illegal operation)
    pool.free(block_ids)                             int or list of ints; each must be allocated
    pool.copy(src, dst)                              whole blocks, src[i] -> dst[i] (ints or lists)
    pool.num_free_blocks() -> int

model (a toy LM whose KV lives in the pool):
    model.vocab_size, model.max_positions            ints (attributes)
    model.forward(input_ids, slot_mapping, block_tables, seq_lens) -> (S, vocab_size) float64
        S sequences; sequence i brings n_i >= 1 new tokens input_ids[i] (ints), which sit at
        positions seq_lens[i] - n_i .. seq_lens[i] - 1; slot_mapping[i][j] is where the KV of
        input_ids[i][j] goes: block_tables[i][p // block_size] * block_size + p % block_size
        for its position p. Writes happen first, then each sequence attends over positions
        0 .. seq_lens[i] - 1 through block_tables[i]. Row i holds the log-probabilities of the
        token after sequence i's last new token (exact multiples of a power of two).
"""


def paged_beam_search(model, pool, prompt, beam_width, max_new_tokens):
    """Beam search over ``model``, whose KV cache lives in ``pool``.

    Args:
        model: proxy of the toy LM (``forward``, ``vocab_size``).
        pool: proxy of the block pool (``allocate``, ``free``, ``copy``, ``block_size``).
        prompt: list of ints in ``[0, model.vocab_size)``, length >= 1.
        beam_width: int >= 1, beams kept after each step.
        max_new_tokens: int >= 1, tokens generated per beam (no EOS; every beam has this length).

    Returns:
        list of ``(tokens, score)``, best first: ``tokens`` the generated tokens only (list of
        ``max_new_tokens`` ints), ``score`` the float64 sum of their log-probabilities. Its length
        is ``min(beam_width, number of candidates at the last step)``.

    Ranking: each step ranks every (beam, token) candidate by score, descending; ties by the
    parent beam's rank in the previous best-first list, then by token id.

    Raises:
        ValueError: ``beam_width < 1``, ``max_new_tokens < 1``, an empty prompt, or a prompt token
            outside ``[0, model.vocab_size)``; raised before any pool call.

    Every block you allocate must be freed before you return.
    """
    raise NotImplementedError
