"""sampling-order: temperature, top-k, top-p and min-p applied to logits in a given order.

Shapes: B rows (sequences), V tokens (vocabulary). Knob arguments are either a Python number (the
same value for every row) or a 1-D tensor of length B (one value per row, on logits.device).
"""

from __future__ import annotations

import torch

KNOBS = ("temperature", "top_k", "top_p", "min_p")


def sampling_probs(logits: torch.Tensor, temperature, top_k, top_p, min_p=0.0,
                   order=("temperature", "top_k", "top_p", "min_p")) -> torch.Tensor:
    """The distribution the next token is drawn from, after the knobs, in float64, returned as float32.

    Args:
        logits: (B, V) float16, bfloat16, float32 or float64; each value finite or -inf (-inf: the
            token is already excluded), at least one finite value per row. B may be 0.
        temperature: float or int >= 0 and finite, or a (B,) tensor of any real dtype. 0 makes the
            row greedy: a one-hot on the first index of the largest logit; the other knobs are then
            ignored for that row (but still validated).
        top_k: int, or a (B,) tensor of an integer dtype. k <= 0 or k >= V: off. Otherwise keep the
            tokens whose current logit is >= the k-th largest current logit (ties with it all stay).
        top_p: float or int in (0, 1], or a (B,) real tensor. 1: off. Otherwise keep token i iff the
            total probability of the tokens strictly more probable than i is < top_p.
        min_p: float or int in [0, 1], or a (B,) real tensor. Keep the tokens whose probability is
            >= min_p * (the largest probability). 0: off.
        order: a tuple or list holding each of "temperature", "top_k", "top_p", "min_p" once: the
            order in which the knobs act. Each knob reads the current logits (dropped tokens at
            -inf) and its probabilities are their softmax at that point.

    Returns:
        probs: (B, V) float32 on logits.device; each row sums to 1; a dropped token is exactly 0.

    Raises:
        ValueError: logits not a 2-D floating tensor, or holding NaN or +inf, or a row without a
            finite value; temperature negative, NaN or infinite; top_k not an integer (a float, or a
            floating tensor, 0-dim included); top_p outside (0, 1] or NaN; min_p outside [0, 1] or
            NaN; a knob tensor that is not 1-D of length B; a bool knob (True/False or a bool
            tensor); a knob of another type (a str, a list); order not a permutation of the four
            names.
    """
    raise NotImplementedError


def sample(logits: torch.Tensor, temperature, top_k, top_p, min_p=0.0,
           order=("temperature", "top_k", "top_p", "min_p"),
           generator: torch.Generator | None = None) -> torch.Tensor:
    """One token per row drawn from sampling_probs(logits, temperature, top_k, top_p, min_p, order).

    Args: as sampling_probs; generator: the torch.Generator to draw with (None: torch's global one).

    Draws are independent across rows; the same generator state gives the same ids.

    Returns:
        ids: (B,) int64 on logits.device. A greedy row (temperature 0) always gives its argmax
        (the first index on ties); no row ever gives a token whose probability is 0.

    Raises:
        ValueError: exactly as sampling_probs.
    """
    raise NotImplementedError
