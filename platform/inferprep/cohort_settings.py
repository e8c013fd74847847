"""Checks on the cohort-mode settings (fields live in ``settings.Settings``).

A placeholder ``secret_key`` is refused outside development: it keys the digests under which
sessions and API tokens are stored and the CSRF tokens, so a known key lets anyone who reads the
database (a backup, say) match tokens offline. Generate one with
``python -c 'import secrets; print(secrets.token_urlsafe(32))'``.
"""

from __future__ import annotations

import warnings

PLACEHOLDER_SECRETS = {"", "changethis", "changeme", "secret", "dev"}
MIN_SECRET_CHARS = 32


def check_secret(settings) -> None:
    """Raise ``ValueError`` for a placeholder or short secret outside development; warn inside it."""
    if not settings.cohort_mode:
        return
    weak = settings.secret_key in PLACEHOLDER_SECRETS or len(settings.secret_key) < MIN_SECRET_CHARS
    if not weak:
        return
    msg = ("INFERPREP_SECRET_KEY is a placeholder or shorter than 32 characters; set it to the output of "
           "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`")
    if settings.environment != "development":
        raise ValueError(msg)
    warnings.warn(msg + " (allowed only because INFERPREP_ENVIRONMENT=development)", stacklevel=2)
