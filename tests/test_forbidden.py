"""``forbidden`` in exercise.toml: library shortcuts a statement forbids raise a clear error in the
submission (a guard, not a boundary), and the rest of the library keeps working."""

import dataclasses

import pytest

from inferprep import catalog
from inferprep.catalog import ExerciseMeta
from inferprep.runner import judge

USES_SHORTCUT = "import torch\n\ndef add(x, y):\n    return torch.add(x, y)\n"
USES_ALIAS = "from torch import ops\n\ndef add(x, y):\n    return ops.aten.add(x, y)\n"
HONEST = "import torch\n\ndef add(x, y):\n    return torch.stack([x, y]).sum(0)\n"


@pytest.fixture
def add_vectors_forbidding(fixture_content):
    ex = catalog.get("add-vectors")
    meta = ex.meta.model_copy(update={"forbidden": ["torch.add", "torch.ops.aten.add", "torch.not_a_function"]})
    return dataclasses.replace(ex, meta=meta)


def test_a_forbidden_callable_raises_a_clear_error(add_vectors_forbidding):
    v = judge.grade(add_vectors_forbidding, USES_SHORTCUT)
    assert v.status.value == "runtime_error"
    assert "torch.add is not allowed in this exercise" in v.cases[0].message


def test_an_alias_listed_too_is_forbidden(add_vectors_forbidding):
    v = judge.grade(add_vectors_forbidding, USES_ALIAS)
    assert v.status.value == "runtime_error" and "torch.ops.aten.add is not allowed" in v.cases[0].message


def test_everything_else_still_works_and_an_unknown_name_is_only_reported(add_vectors_forbidding):
    v = judge.grade(add_vectors_forbidding, HONEST)
    assert v.status.value == "passed", (v.status, v.message)
    assert "could not forbid torch.not_a_function" in v.stderr


def test_the_control_passes_without_forbidden(fixture_content):
    assert judge.grade(catalog.get("add-vectors"), USES_SHORTCUT).status.value == "passed"


@pytest.mark.parametrize("bad", ["torch", "torch..add", "torch.add()", "1torch.add"])
def test_malformed_forbidden_entries_are_refused(bad):
    base = dict(slug="x-y", title="xyz", track="kernels", difficulty="easy", kind="implement",
                sources=["JS-01"], collections=["Jane Street"], entrypoints=["f"])
    ExerciseMeta(**base, forbidden=["torch.add"])
    with pytest.raises(ValueError):
        ExerciseMeta(**base, forbidden=[bad])
