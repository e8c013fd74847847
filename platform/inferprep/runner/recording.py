"""What a grader sends to the submission, recorded in the parent (``check-exercise`` uses it).

A grader's hidden data, case order and hosted specimens' behaviour must derive from the
grading's secret (``Grading.salt``), never from the submission: a submission that can compute
what the grader will send can predict hidden labels without solving anything. ``check-exercise``
grades the reference twice under one fixed salt, once as written and once with a harmless change
to its text, with a ``WireRecorder`` attached, and requires identical recordings
(``first_difference``).

A recording is a list of events, in order:

- ``("case", name)`` when the grader opens a case;
- ``("call <fn>", digest)`` / ``("spmd <fn>", digest)``: the SHA-256 of the frame as encoded on
  the wire (function name, arguments, keyword arguments, tensors' bytes, proxies' ids);
- ``("replies", digest)``: the hosted objects' answers (``preturn`` frames, values or errors,
  without the child's call ids) sent since the previous event, as a sorted multiset, so that the
  interleaving of concurrent proxy calls (SPMD ranks) does not matter.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field


def frame_digest(head: bytes, bufs) -> str:
    h = hashlib.sha256()
    h.update(len(head).to_bytes(8, "little"))
    h.update(head)
    for b in bufs:
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


@dataclass
class WireRecorder:
    events: list[tuple[str, str]] = field(default_factory=list)
    _pending: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _flush(self) -> None:
        if self._pending:
            joined = "\n".join(sorted(self._pending)).encode()
            self.events.append(("replies", f"{len(self._pending)}:{hashlib.sha256(joined).hexdigest()}"))
            self._pending.clear()

    def case(self, name: str) -> None:
        with self._lock:
            self._flush()
            self.events.append(("case", str(name)))

    def request(self, op: str, fn: str, digest: str) -> None:
        with self._lock:
            self._flush()
            self.events.append((f"{op} {fn}", digest))

    def reply(self, digest: str) -> None:
        with self._lock:
            self._pending.append(digest)

    def reset(self) -> None:
        """Forget everything (the judge retries an attempt the platform failed)."""
        with self._lock:
            self.events.clear()
            self._pending.clear()

    def finish(self) -> list[tuple[str, str]]:
        with self._lock:
            self._flush()
            return list(self.events)


def first_difference(a: list[tuple[str, str]], b: list[tuple[str, str]]) -> str | None:
    """None when the recordings agree; else a sentence naming the first case where they part."""
    case: str | None = None
    case_no = call_no = 0
    for i in range(max(len(a), len(b))):
        ea = a[i] if i < len(a) else None
        eb = b[i] if i < len(b) else None
        if ea == eb:
            if ea[0] == "case":
                case, case_no, call_no = ea[1], case_no + 1, 0
            elif ea[0] != "replies":
                call_no += 1
            continue
        where = f"case #{case_no} {case!r}" if case is not None else "before the first case"
        if ea is None or eb is None:
            extra = eb if ea is None else ea
            return (f"in {where}, one run stopped while the other went on "
                    f"({'case ' + repr(extra[1]) if extra[0] == 'case' else extra[0]})")
        if ea[0] == "case" and eb[0] == "case":
            return (f"case order differs: case #{case_no + 1} is {ea[1]!r} in one run and {eb[1]!r} in the "
                    "other")
        if ea[0] == "case" or eb[0] == "case":
            opened, other = (ea, eb) if ea[0] == "case" else (eb, ea)
            return f"in {where}, one run opened case {opened[1]!r} where the other sent {other[0]}"
        if ea[0] == "replies" and eb[0] == "replies":
            return (f"in {where}, the hosted objects answered differently after call #{call_no} "
                    "(a hosted specimen's seed or behaviour differs)")
        if ea[0] == eb[0]:
            return f"in {where}, call #{call_no + 1} ({ea[0]}) sent different arguments (hidden data differs)"
        return f"in {where}, the runs sent different things: {ea[0]} vs {eb[0]}"
    return None
