"""Grading.seed_torch: ``torch.manual_seed`` in the child, so that a grader can tell a submission
that draws from torch's global generator from one with a private generator (sampling-order's
``generator=None``; issue 12)."""

import shutil

import pytest

from runner_support import FIXTURE_CONTENT
from inferprep import catalog
from inferprep.runner import judge

GLOBAL = "import torch\n\ndef add(x, y):\n    return x + y + torch.rand(x.shape, device=x.device)\n"
PRIVATE = ("import os, torch\n\n_gen = torch.Generator().manual_seed(int.from_bytes(os.urandom(7), 'little'))\n\n"
           "def add(x, y):\n    return x + y + torch.rand(x.shape, generator=_gen).to(x.device)\n")


@pytest.fixture
def seeded(tmp_path, monkeypatch):
    root = tmp_path / "content"
    shutil.copytree(FIXTURE_CONTENT, root)
    shutil.copy(FIXTURE_CONTENT.parent / "seed_graders" / "seeds_the_child.py", root / "graders" / "add_vectors.py")
    monkeypatch.setenv("INFERPREP_CONTENT_ROOT", str(root))
    return catalog.get("add-vectors")


def test_the_global_generator_is_seeded(seeded):
    v = judge.grade(seeded, GLOBAL)
    assert v.status.value == "passed", (v.status, v.message, [(c.name, c.message[:200]) for c in v.cases])


def test_a_private_generator_is_told_apart(seeded):
    v = judge.grade(seeded, PRIVATE)
    assert v.status.value == "wrong_answer", (v.status, v.message)
