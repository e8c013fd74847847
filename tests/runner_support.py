"""Shared helpers of the runner and catalog tests (imported as ``runner_support``; a module named
``conftest`` would clash with tests/web/conftest.py)."""

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_CONTENT = ROOT / "tests" / "fixtures" / "content"


def sandbox_modes():
    from inferprep.runner.sandbox import bwrap_works
    modes = ["none"]
    if bwrap_works() or os.environ.get("INFERPREP_REQUIRE_BWRAP"):
        modes.insert(0, "bwrap")
    return modes
