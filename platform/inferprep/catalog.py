"""The exercise catalog: reads ``exercises/<slug>/`` into typed records.

This is the one place that knows the file contract of an exercise:

- ``exercises/<slug>/exercise.toml``: metadata (``ExerciseMeta``)
- ``exercises/<slug>/statement.md``, ``stub.py``, ``examples.py``, ``editorial.md``
- ``reference/<module>.py``, ``graders/<module>.py``, ``tests/wrong/<module>/*.py`` and ``*.patch``
  (known-wrong variants: whole files, or patches against the reference; ``inferprep.wrong_variants``)

where ``module`` is the slug with ``-`` replaced by ``_``.

Errors: ``UnknownExercise`` (no such slug), ``MalformedExercise`` (a folder that breaks the
contract; the message names the file and the fix).
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
import re
import threading
import tomllib
from dataclasses import dataclass
from enum import Enum
from functools import cached_property
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from . import paths

log = logging.getLogger("inferprep.catalog")

SLUG_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
SOURCE_RE = re.compile(r"^(JS|DM)-\d{2}$")


class CatalogError(Exception):
    """Base class of catalog errors."""


class UnknownExercise(CatalogError, KeyError):
    """No exercise of that slug. ``close``: existing slugs that look like it (maybe empty)."""

    def __init__(self, message: str, close: list[str] | None = None):
        super().__init__(message)
        self.close = list(close or [])

    def __str__(self) -> str:  # KeyError quotes its message; we want plain text
        return str(self.args[0])


class MalformedExercise(CatalogError, ValueError):
    pass


class Track(str, Enum):
    SERVING = "serving"
    DECODING = "decoding"
    DISTRIBUTED = "distributed"
    ROOFLINE = "roofline"
    KERNELS = "kernels"

    @property
    def title(self) -> str:
        return TRACK_TITLES[self]


TRACK_TITLES = {
    Track.SERVING: "Serving systems and scheduling",
    Track.DECODING: "Decoding and speculative decoding",
    Track.DISTRIBUTED: "Distributed inference",
    Track.ROOFLINE: "Roofline and performance arithmetic",
    Track.KERNELS: "Kernels and numerics",
}


class Difficulty(str, Enum):
    EASY = "easy"
    MEDIUM = "medium"
    HARD = "hard"


class Kind(str, Enum):
    IMPLEMENT = "implement"
    CALCULATE = "calculate"
    SIMULATE = "simulate"
    ANALYZE = "analyze"
    DEBUG = "debug"


class Collection(str, Enum):
    JANE_STREET = "Jane Street"
    GOOGLE_DEEPMIND = "Google DeepMind"


OPTIONAL_EXTRAS = {"triton": "triton"}
"""Extra an exercise may require (``requires`` in exercise.toml) -> the module that must import."""


@functools.lru_cache(maxsize=None)
def extra_installed(name: str) -> bool:
    """Whether the optional extra ``name``'s module can be imported here (looked up once, never
    imported: triton's import costs ~0.15 s of CPU)."""
    return importlib.util.find_spec(OPTIONAL_EXTRAS[name]) is not None


def missing_extras(requires: list[str]) -> list[str]:
    """The extras of ``requires`` that are not installed here."""
    return [name for name in requires if not extra_installed(name)]


class Limits(BaseModel):
    model_config = ConfigDict(extra="forbid")
    time_s: float = Field(20.0, gt=0, le=600, description="CPU seconds for the whole hidden run")
    memory_mib: int = Field(2048, ge=256, le=65536, description="address space above the harness's own, MiB")


class ExerciseMeta(BaseModel):
    """``exercise.toml``. Unknown keys are an error so that typos do not pass silently."""

    model_config = ConfigDict(extra="forbid")
    slug: str
    title: str = Field(min_length=3)
    track: Track
    difficulty: Difficulty
    kind: Kind
    sources: list[str] = Field(default_factory=list, description=(
        "question IDs from CATALOG.md; empty only for an exercise no question asks for (a warm-up)"))
    collections: list[Collection] = Field(default_factory=list)
    entrypoints: list[str] = Field(min_length=1)
    devices: list[str] = Field(default_factory=lambda: ["cpu", "cuda"])
    tags: list[str] = Field(default_factory=list)
    hints: list[str] = Field(default_factory=list)
    summary: str = ""
    limits: Limits = Field(default_factory=Limits)
    requires: list[str] = Field(default_factory=list, description=(
        "optional extras the exercise needs beyond the base install, from OPTIONAL_EXTRAS (e.g. "
        "triton): without one the catalog lists the exercise as unavailable and grading refuses it"))
    perf: bool = Field(False, description=(
        "the exercise has a performance stage: after the core cases pass, the submission is timed "
        "against the reference on fresh inputs from the grader's perf_case(g, side, rng) (runner.perf)"))
    forbidden: list[str] = Field(default_factory=list, description=(
        "dotted names of library callables the submission may not use (e.g. "
        "torch.nn.functional.scaled_dot_product_attention): the harness replaces each with a "
        "function that raises before the submission loads. A guard against shortcuts the statement "
        "forbids, not a security boundary: list every alias (torch._C._nn..., torch.ops.aten...)"))

    @field_validator("forbidden")
    @classmethod
    def _forbidden(cls, v: list[str]) -> list[str]:
        for name in v:
            parts = name.split(".")
            if len(parts) < 2 or not all(p.isidentifier() for p in parts):
                raise ValueError(f"forbidden entry {name!r} must be a dotted name like torch.nn.functional.softmax")
        return v

    @field_validator("requires")
    @classmethod
    def _requires(cls, v: list[str]) -> list[str]:
        for name in v:
            if name not in OPTIONAL_EXTRAS:
                raise ValueError(f"requires entry {name!r} is not an optional extra; known: {', '.join(OPTIONAL_EXTRAS)}")
        return v

    @model_validator(mode="after")
    def _collections_need_sources(self) -> "ExerciseMeta":
        if not self.collections and self.sources:
            raise ValueError("collections: an exercise with sources belongs to at least one collection")
        if self.collections and not self.sources:
            raise ValueError("collections: an exercise without sources (a warm-up) belongs to no collection")
        return self

    @field_validator("slug")
    @classmethod
    def _slug(cls, v: str) -> str:
        if not SLUG_RE.match(v):
            raise ValueError(f"slug {v!r} must be lowercase words joined by '-'")
        return v

    @field_validator("sources")
    @classmethod
    def _sources(cls, v: list[str]) -> list[str]:
        for s in v:
            if not SOURCE_RE.match(s):
                raise ValueError(f"source {s!r} is not a question ID like JS-06 or DM-42")
        return v

    @field_validator("entrypoints")
    @classmethod
    def _entrypoints(cls, v: list[str]) -> list[str]:
        for e in v:
            if not e.isidentifier():
                raise ValueError(f"entrypoint {e!r} is not a Python identifier")
        return v

    @field_validator("devices")
    @classmethod
    def _devices(cls, v: list[str]) -> list[str]:
        if not v or any(d not in ("cpu", "cuda") for d in v):
            raise ValueError("devices must be a non-empty subset of ['cpu', 'cuda']")
        return v


def module_name(slug: str) -> str:
    return slug.replace("-", "_")


@dataclass(frozen=True)
class Exercise:
    """One exercise: its metadata and the paths of its files."""

    meta: ExerciseMeta
    folder: Path

    @property
    def slug(self) -> str:
        return self.meta.slug

    @property
    def module(self) -> str:
        return module_name(self.slug)

    @property
    def unavailable(self) -> str | None:
        """Why this exercise cannot be graded on this install (a missing optional extra), or None."""
        missing = missing_extras(self.meta.requires)
        if not missing:
            return None
        return f"needs {', '.join(missing)}: pip install 'inferprep[{','.join(missing)}]'"

    @property
    def statement_path(self) -> Path:
        return self.folder / "statement.md"

    @property
    def stub_path(self) -> Path:
        return self.folder / "stub.py"

    @property
    def examples_path(self) -> Path:
        return self.folder / "examples.py"

    @property
    def editorial_path(self) -> Path:
        return self.folder / "editorial.md"

    @property
    def reference_path(self) -> Path:
        return paths.reference_dir() / f"{self.module}.py"

    @property
    def grader_path(self) -> Path:
        return paths.graders_dir() / f"{self.module}.py"

    @property
    def wrong_paths(self) -> list[Path]:
        """The known-wrong variants' files, ``*.py`` (whole) and ``*.patch`` (against the
        reference), sorted by name; ``inferprep.wrong_variants`` turns one into source."""
        d = paths.wrong_dir() / self.module
        return sorted(p for s in (".py", ".patch") for p in d.glob(f"*{s}")) if d.is_dir() else []

    @cached_property
    def statement(self) -> str:
        return self.statement_path.read_text(encoding="utf-8")

    @cached_property
    def stub(self) -> str:
        return self.stub_path.read_text(encoding="utf-8")

    @cached_property
    def editorial(self) -> str:
        return self.editorial_path.read_text(encoding="utf-8")

    @property
    def public_files(self) -> dict[str, str]:
        """Files a user may read before solving (never the reference, grader or editorial)."""
        return {p.name: p.read_text(encoding="utf-8")
                for p in (self.statement_path, self.stub_path, self.examples_path)}


REQUIRED_FILES = ("exercise.toml", "statement.md", "stub.py", "examples.py", "editorial.md")


# folder (as text) -> (the stat signature of its files when read, the exercise read then): the
# web reads the catalog on every page, and parsing and validating 60 TOML files costs ~40 ms of
# CPU; checking their 300 files' signatures costs ~0.7 ms (paths as text: pathlib triples that).
_loaded: dict[str, tuple[tuple, Exercise]] = {}
_loaded_lock = threading.Lock()


def _signature(folder: str) -> tuple | None:
    """(mtime ns, size, inode) of each file ``load_exercise_dir`` reads; None if one is missing."""
    try:
        return tuple((st.st_mtime_ns, st.st_size, st.st_ino)
                     for st in (os.stat(os.path.join(folder, f)) for f in REQUIRED_FILES))
    except OSError:
        return None


def load_exercise_dir(folder: Path | str) -> Exercise:
    """Read and validate one exercise folder. Raises ``MalformedExercise`` naming the problem.

    The result is reused while none of the folder's files changes (same mtime, size and inode);
    an edited, added or removed file is read afresh on the next call."""
    key = os.fspath(folder)
    sig = _signature(key)
    hit = _loaded.get(key)
    if sig is not None and hit is not None and hit[0] == sig:
        return hit[1]
    ex = _read_exercise_dir(Path(folder))
    if sig is not None:
        with _loaded_lock:
            _loaded[key] = (sig, ex)
    return ex


def exercise_folders() -> list[str]:
    """The content root's exercise folders (paths as text), sorted by name; hidden and ``_`` ones left out."""
    with os.scandir(paths.exercises_dir()) as it:
        return sorted(e.path for e in it if e.is_dir() and not e.name.startswith((".", "_")))


def _read_exercise_dir(folder: Path) -> Exercise:
    missing = [f for f in REQUIRED_FILES if not (folder / f).is_file()]
    if missing:
        raise MalformedExercise(f"{folder}: missing {', '.join(missing)} (see DESIGN.md, the exercise contract)")
    toml_path = folder / "exercise.toml"
    try:
        raw = tomllib.loads(toml_path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise MalformedExercise(f"{toml_path}: not valid TOML: {e}") from e
    try:
        meta = ExerciseMeta.model_validate(raw)
    except ValidationError as e:
        problems = "; ".join(f"{'.'.join(str(x) for x in err['loc'])}: {err['msg']}" for err in e.errors())
        raise MalformedExercise(f"{toml_path}: {problems}") from e
    if meta.slug != folder.name:
        raise MalformedExercise(f"{toml_path}: slug {meta.slug!r} differs from the folder name {folder.name!r}")
    return Exercise(meta, folder)


def all_exercises() -> list[Exercise]:
    """Every exercise in the content root, sorted by track then slug. Raises on a malformed one."""
    out = [load_exercise_dir(d) for d in exercise_folders()]
    order = list(Track)
    return sorted(out, key=lambda e: (order.index(e.meta.track), e.slug))


def well_formed_exercises() -> list[Exercise]:
    """Every well-formed exercise, sorted as ``all_exercises``; a malformed folder (e.g. one being
    written) is skipped with a warning rather than raised."""
    out = []
    for d in exercise_folders():
        try:
            out.append(load_exercise_dir(d))
        except MalformedExercise as e:
            log.warning("skipping %s", e)
    order = list(Track)
    return sorted(out, key=lambda e: (order.index(e.meta.track), e.slug))


def get(slug: str) -> Exercise:
    """The exercise ``slug``. Raises ``UnknownExercise`` (with close matches) or ``MalformedExercise``."""
    if not SLUG_RE.match(slug or "") or len(slug) > 80:
        raise UnknownExercise(f"no exercise {slug!r} (slugs are lowercase words joined by '-')")
    folder = paths.exercises_dir() / slug
    if not folder.is_dir():
        import difflib
        names = [d.name for d in paths.exercises_dir().iterdir() if d.is_dir()]
        close = difflib.get_close_matches(slug, names, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else "; `inferprep list` shows them all"
        raise UnknownExercise(f"no exercise {slug!r}{hint}", close=close)
    return load_exercise_dir(folder)
