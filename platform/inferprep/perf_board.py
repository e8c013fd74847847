"""Per-exercise performance leaderboards (issue 19).

One board per exercise and device kind, named ``perf:<slug>:<device kind>`` (``LeaderboardEntry.board``;
the kind is ``cpu`` or the CUDA device's name, ``verdict.perf.device_kind``). A board ranks, among
the users who opted in to it (off by default), each one's best ``Submission.perf_ratio`` (the
submission's time over the reference's, lower is faster) over their passing submissions graded on
that device kind; a flagged timing never has a ratio there (``queue._result_values``). A board shows
pseudonyms only: the alias drawn when the user opted in, never a name or an email.

Errors: ``BoardError`` (a ValueError) for an exercise without a perf stage or a device kind no
ranked submission of the exercise has.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from sqlmodel import Session, select

from . import catalog
from .interview_models import LeaderboardEntry
from .models import Submission
from .verdict import Verdict

__all__ = ["BoardError", "Standing", "board_name", "device_kinds", "standings", "opted_in", "set_opt_in"]

_ADJECTIVES = ("amber", "brisk", "calm", "deft", "eager", "fleet", "keen", "lucid", "nimble", "quiet", "rapid",
               "steady", "swift", "terse", "vivid", "wry")
_NOUNS = ("kernel", "warp", "tile", "block", "lane", "stream", "cache", "tensor", "fiber", "vector", "pipe", "bank")


class BoardError(ValueError):
    """No such board: the exercise has no perf stage, or no ranked submission ran on that kind."""


@dataclass(frozen=True)
class Standing:
    """One row of a board: ``rank`` (1 = fastest), the pseudonym, the best ratio, and whether it
    is the viewer's own row."""

    rank: int
    alias: str
    ratio: float
    mine: bool


def board_name(slug: str, kind: str) -> str:
    return f"perf:{slug}:{kind}"


def _perf_exercise(slug: str) -> catalog.Exercise:
    ex = catalog.get(slug)
    if not ex.meta.perf:
        raise BoardError(f"{slug} has no performance stage, so no leaderboard")
    return ex


def _ranked(s: Session, slug: str) -> list[tuple[int, str, float]]:
    """(user id, device kind, ratio) of every passing submission of ``slug`` with a ratio."""
    rows = s.exec(select(Submission.user_id, Submission.perf_ratio, Submission.verdict_json).where(
        Submission.slug == slug, Submission.passed == True, Submission.perf_ratio != None)).all()  # noqa: E711,E712
    out = []
    for user_id, ratio, verdict_json in rows:
        try:
            perf = Verdict.model_validate_json(verdict_json).perf
        except (ValueError, TypeError):
            continue
        if perf is not None and perf.rankable:
            out.append((user_id, perf.device_kind, float(ratio)))
    return out


def device_kinds(s: Session, slug: str) -> list[str]:
    """The device kinds that have at least one ranked submission of ``slug``, sorted."""
    _perf_exercise(slug)
    return sorted({kind for _, kind, _ in _ranked(s, slug)})


def standings(s: Session, slug: str, viewer: int | None = None) -> dict[str, list[Standing]]:
    """Each device kind's board: the opted-in users' best ratios, fastest first (ties by alias)."""
    _perf_exercise(slug)
    entries = s.exec(select(LeaderboardEntry).where(LeaderboardEntry.board.startswith(f"perf:{slug}:"))).all()
    alias = {(e.user_id, e.board): e.alias for e in entries}
    best: dict[tuple[str, int], float] = {}
    kinds = set()
    for user_id, kind, ratio in _ranked(s, slug):
        kinds.add(kind)
        if (user_id, board_name(slug, kind)) in alias:
            key = (kind, user_id)
            best[key] = min(ratio, best.get(key, ratio))
    boards: dict[str, list[Standing]] = {kind: [] for kind in sorted(kinds)}
    for kind in boards:
        rows = sorted(((r, alias[(u, board_name(slug, kind))], u) for (k, u), r in best.items() if k == kind))
        boards[kind] = [Standing(i + 1, a, r, u == viewer) for i, (r, a, u) in enumerate(rows)]
    return boards


def opted_in(s: Session, user_id: int, slug: str, kind: str) -> LeaderboardEntry | None:
    return s.exec(select(LeaderboardEntry).where(LeaderboardEntry.user_id == user_id,
                                                 LeaderboardEntry.board == board_name(slug, kind))).first()


def _new_alias(s: Session, board: str) -> str:
    taken = set(s.exec(select(LeaderboardEntry.alias).where(LeaderboardEntry.board == board)).all())
    while True:
        alias = f"{secrets.choice(_ADJECTIVES)}-{secrets.choice(_NOUNS)}-{secrets.randbelow(100):02d}"
        if alias not in taken:
            return alias


def set_opt_in(s: Session, user_id: int, slug: str, kind: str, on: bool) -> LeaderboardEntry | None:
    """Opt ``user_id`` in to (``on``) or out of the board of ``slug`` on ``kind``; commits. Opting in
    again keeps the alias drawn the first time; opting out deletes the entry (and the alias).
    Raises BoardError for an exercise without a perf stage or a kind with no ranked submission."""
    if kind not in device_kinds(s, slug):
        raise BoardError(f"no ranked submission of {slug} ran on {kind!r}")
    entry = opted_in(s, user_id, slug, kind)
    if on and entry is None:
        board = board_name(slug, kind)
        entry = LeaderboardEntry(user_id=user_id, board=board, alias=_new_alias(s, board))
        s.add(entry)
    elif not on and entry is not None:
        s.delete(entry)
        entry = None
    s.commit()
    return entry
