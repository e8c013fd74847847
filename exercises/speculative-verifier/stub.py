"""speculative-verifier: batched rejection-sampling verification (part 1) and a test that a
verifier is lossless (part 2). Read the statement (`inferprep show speculative-verifier`)
for the exact rules."""

import torch


def verify(draft_token_ids: torch.Tensor, draft_probs: torch.Tensor, target_probs: torch.Tensor,
           num_draft_tokens: torch.Tensor, accept_uniforms: torch.Tensor,
           sample_uniforms: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Verify the drafts of B rows at once; all arithmetic in float64 (the draws too).

    Args:
        draft_token_ids: (B, K) int64. Row b's drafts are its first n = num_draft_tokens[b]
            entries; entries at columns >= n are padding and must not be read.
        draft_probs: (B, K, V) float32 or float64. draft_probs[b, j] is the draft model's
            distribution q from which draft j was sampled.
        target_probs: (B, K+1, V) float32 or float64. target_probs[b, j] is the target model's
            distribution p after the context and drafts 0..j-1; column n gives the bonus token.
        num_draft_tokens: (B,) int64, each in [0, K].
        accept_uniforms: (B, K) float64 in [0, 1): u for the accept test of draft j.
        sample_uniforms: (B,) float64 in [0, 1): u for the one token each row draws.

    Returns:
        output_ids: (B, K+1) int64, the emitted tokens of each row left-aligned, -1 after them.
        num_emitted: (B,) int64, in [1, n+1].
        Both on the device of the inputs.

    Raises:
        ValueError: shapes that disagree; n outside [0, K]; a drafted token id outside [0, V);
            a drafted token with q = 0; a negative or NaN value anywhere in draft_probs or
            target_probs (padding columns included).
    """
    raise NotImplementedError


def is_lossless(verifier, vocab_size: int, seed: int) -> bool:
    """Decide whether ``verifier`` preserves the target distribution.

    Args:
        verifier: a callable with verify's signature and contract (a proxy to a verifier that the
            grader hosts; every call crosses a process boundary, so use large batches).
        vocab_size: V, between 3 and 8; call the verifier with this V (a hidden verifier raises
            ValueError for another V).
        seed: draw all of your test's randomness from it: the same seed gives the same test,
            different seeds give different tests.

    Returns:
        True if the verifier is lossless, False if it is biased (a Python bool).
    """
    raise NotImplementedError
