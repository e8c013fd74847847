"""Where the content (exercises/, reference/, graders/, templates/, tests/wrong/) lives.

One setting decides: ``INFERPREP_CONTENT_ROOT`` if set; else the checkout this package sits in
(``platform/inferprep`` -> the repository root); else the copy shipped inside the wheel
(``inferprep/_content``).
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent


def _is_content_root(p: Path) -> bool:
    return (p / "exercises").is_dir() and (p / "graders").is_dir()


def content_root() -> Path:
    env = os.environ.get("INFERPREP_CONTENT_ROOT")
    if env:
        p = Path(env).resolve()
        if not _is_content_root(p):
            raise RuntimeError(f"INFERPREP_CONTENT_ROOT={env} has no exercises/ and graders/ folders")
        return p
    checkout = PACKAGE_DIR.parent.parent
    if _is_content_root(checkout):
        return checkout
    shipped = PACKAGE_DIR / "_content"
    if _is_content_root(shipped):
        return shipped
    raise RuntimeError("cannot find the exercise content; set INFERPREP_CONTENT_ROOT")


def is_checkout(root: Path) -> bool:
    """A checkout (as opposed to the copy inside an installed wheel)."""
    return (root / "pyproject.toml").is_file() or (root / ".git").exists()


def exercises_dir() -> Path:
    return content_root() / "exercises"


def reference_dir() -> Path:
    return content_root() / "reference"


def graders_dir() -> Path:
    return content_root() / "graders"


def wrong_dir() -> Path:
    return content_root() / "tests" / "wrong"


def templates_dir() -> Path:
    return content_root() / "templates"


def secret_dirs() -> list[Path]:
    """Folders a submission must never read: hidden graders, references, wrong variants."""
    root = content_root()
    return [root / "graders", root / "reference", root / "tests"]
