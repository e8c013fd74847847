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


def test_a_loaded_folder_is_reused_until_one_of_its_files_changes(tmp_path):
    d = make(tmp_path)
    first = catalog.load_exercise_dir(d)
    assert catalog.load_exercise_dir(d) is first                       # unchanged: not parsed again
    toml = (d / "exercise.toml").read_text()
    (d / "exercise.toml").write_text(toml.replace(f'title = "{first.meta.title}"', 'title = "Renamed"'))
    assert catalog.load_exercise_dir(d).meta.title == "Renamed"
    assert first.statement and catalog.load_exercise_dir(d).statement == first.statement
    (d / "statement.md").write_text("# Now\n\nNew words.\n")
    assert catalog.load_exercise_dir(d).statement == "# Now\n\nNew words.\n"
    (d / "stub.py").unlink()
    with pytest.raises(catalog.MalformedExercise, match="stub.py"):
        catalog.load_exercise_dir(d)


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
    assert "stub fails" in names and "wrong variant subtract.py fails core" in names


def test_check_exercise_catches_a_toothless_grader(fixture_content, tmp_path, monkeypatch):
    root = tmp_path / "content"
    shutil.copytree(FIXTURE_CONTENT, root)
    (root / "tests" / "wrong" / "add_vectors" / "correct_in_disguise.py").write_text(
        '"""WRONG: claims to be wrong but adds correctly."""\ndef add(x, y):\n    return y + x\n')
    monkeypatch.setenv("INFERPREP_CONTENT_ROOT", str(root))
    rep = check_exercise("add-vectors")
    assert not rep.ok
    bad = [f for f in rep.findings if not f.ok]
    assert [f.what for f in bad] == ["wrong variant correct_in_disguise.py fails core"]


SALT_GRADERS = FIXTURE_CONTENT.parent / "salt_graders"


def _with_grader(tmp_path, monkeypatch, grader: str):
    root = tmp_path / "content"
    shutil.copytree(FIXTURE_CONTENT, root)
    shutil.copy(SALT_GRADERS / grader, root / "graders" / "add_vectors.py")
    monkeypatch.setenv("INFERPREP_CONTENT_ROOT", str(root))


@pytest.mark.parametrize("grader,needle", [
    ("code_hash_order.py", "derives what it sends from the submission's code (the same salt, a harmless "
                           "change to the reference's text): case order differs: case #1 is 'size-"),
    ("urandom_data.py", "does not replay from its salt (the same salt and the same code twice): in case #1 "
                        "'random-1', call #1 (call add) sent different arguments"),
])
def test_check_exercise_refuses_randomness_not_from_the_salt(tmp_path, monkeypatch, grader, needle):
    """A grader whose hidden cases a submission could derive from its own text (or that a salt
    cannot replay) is refused, though the reference passes and the stub and wrong variant fail."""
    _with_grader(tmp_path, monkeypatch, grader)
    rep = check_exercise("add-vectors")
    bad = [f for f in rep.findings if not f.ok]
    assert [f.what for f in bad] == ["hidden cases come from the salt, not the submission"], \
        [(f.what, f.detail) for f in rep.findings]
    assert needle in bad[0].detail
    assert next(f for f in rep.findings if f.what == "reference passes the hidden cases").ok


def test_check_exercise_accepts_a_salted_grader(tmp_path, monkeypatch):
    _with_grader(tmp_path, monkeypatch, "salted.py")
    rep = check_exercise("add-vectors")
    assert rep.ok, [(f.what, f.detail) for f in rep.findings]
    found = next(f for f in rep.findings if f.what == "hidden cases come from the salt, not the submission")
    assert found.detail.startswith("8 cases and 8 calls identical")


def test_a_salt_replays_a_grading(tmp_path, monkeypatch):
    """The same salt gives the same cases; another salt, another order (the salted fixture)."""
    from inferprep.runner import judge
    _with_grader(tmp_path, monkeypatch, "salted.py")
    ex = catalog.get("add-vectors")
    code = ex.reference_path.read_text()
    order = {s: [c.name for c in judge.grade(ex, code, salt=s).cases] for s in (1, 2)}
    assert [c.name for c in judge.grade(ex, code, salt=1).cases] == order[1]
    assert order[1] != order[2] and sorted(order[1]) == sorted(order[2])


def test_first_difference_names_the_case():
    from inferprep.runner.recording import first_difference
    a = [("case", "x"), ("call f", "1"), ("replies", "1:aa"), ("case", "y"), ("call f", "2")]
    assert first_difference(a, list(a)) is None
    assert "case #1 'x'" in first_difference(a, a[:2] + [("replies", "1:bb")] + a[3:])
    assert "hosted objects answered differently after call #1" in first_difference(
        a, a[:2] + [("replies", "1:bb")] + a[3:])
    assert "case #2 'y', call #1 (call f) sent different arguments" in first_difference(a, a[:4] + [("call f", "3")])
    assert "case #2 is 'y' in one run and 'z'" in first_difference(a, a[:3] + [("case", "z")])
    assert "one run stopped" in first_difference(a, a[:3])
