"""The exercise contract: malformed folders get errors that name the file and the problem;
check-exercise holds a grader to its wrong variants."""

import shutil

import pytest

from runner_support import FIXTURE_CONTENT
from inferprep import catalog
from inferprep.check import check_exercise


def make(tmp_path, toml: str | None = None, drop: tuple = ()):
    d = tmp_path / "exercises" / "my-ex"
    shutil.copytree(FIXTURE_CONTENT / "exercises" / "add-vectors", d)
    text = (d / "exercise.toml").read_text().replace('slug = "add-vectors"', 'slug = "my-ex"')
    (d / "exercise.toml").write_text(toml if toml is not None else text)
    for f in drop:
        (d / f).unlink()
    return d


def test_valid_folder_loads(tmp_path):
    ex = catalog.load_exercise_dir(make(tmp_path))
    assert ex.slug == "my-ex" and ex.module == "my_ex" and ex.meta.limits.time_s == 2


@pytest.mark.parametrize("edit,needle", [
    (lambda t: t.replace('track = "kernels"', 'track = "cooking"'), "track"),
    (lambda t: t.replace('sources = ["JS-21"]', 'sources = ["Q21"]'), "question ID"),
    (lambda t: t.replace('entrypoints = ["add"]', 'entrypoints = ["not an identifier"]'), "identifier"),
    (lambda t: t + '\ncolour = "blue"\n', "colour"),
    (lambda t: t.replace('slug = "my-ex"', 'slug = "other"'), "folder name"),
    (lambda t: t.replace("time_s = 2", "time_s = -1"), "time_s"),
    (lambda t: "this is [not toml", "not valid TOML"),
    (lambda t: t.replace('devices = ["cpu", "cuda"]', 'devices = ["tpu"]'), "devices"),
])
def test_malformed_metadata_is_named(tmp_path, edit, needle):
    d = make(tmp_path)
    (d / "exercise.toml").write_text(edit((d / "exercise.toml").read_text()))
    with pytest.raises(catalog.MalformedExercise, match=needle) as e:
        catalog.load_exercise_dir(d)
    assert "exercise.toml" in str(e.value)


def test_missing_file_is_named(tmp_path):
    with pytest.raises(catalog.MalformedExercise, match="stub.py"):
        catalog.load_exercise_dir(make(tmp_path, drop=("stub.py",)))


def test_unknown_slug_suggests(fixture_content):
    with pytest.raises(catalog.UnknownExercise, match="add-vectors"):
        catalog.get("add-vector")
    with pytest.raises(catalog.UnknownExercise):
        catalog.get("../graders")


def test_check_exercise_fixture(fixture_content):
    rep = check_exercise("add-vectors")
    assert rep.ok, [(f.what, f.detail) for f in rep.findings]
    names = [f.what for f in rep.findings]
    assert "stub fails" in names and "wrong variant subtract.py fails" in names


def test_check_exercise_catches_a_toothless_grader(fixture_content, tmp_path, monkeypatch):
    root = tmp_path / "content"
    shutil.copytree(FIXTURE_CONTENT, root)
    (root / "tests" / "wrong" / "add_vectors" / "correct_in_disguise.py").write_text(
        "def add(x, y):\n    return y + x\n")
    monkeypatch.setenv("INFERPREP_CONTENT_ROOT", str(root))
    rep = check_exercise("add-vectors")
    assert not rep.ok
    bad = [f for f in rep.findings if not f.ok]
    assert [f.what for f in bad] == ["wrong variant correct_in_disguise.py fails"]
