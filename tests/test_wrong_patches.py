"""Known-wrong variants kept as patches against their reference (``inferprep.wrong_variants``):
every shipped patch applies and yields a different program that compiles, its header declares
the target group, a stale or malformed patch is an error naming it (a failed check in
check-exercise, not a crash), and the converter reproduces a variant exactly."""

import ast
import importlib.util
import shutil
import sys

import pytest

from runner_support import FIXTURE_CONTENT, ROOT
from inferprep.check import check_exercise
from inferprep.verdict import CORE, INPUT_CHECKS
from inferprep.wrong_variants import (MalformedPatch, StalePatch, WrongVariant, apply_patch, make_patch,
                                      parse_patch, split_header, variant)

SHIPPED = sorted((ROOT / "tests" / "wrong").glob("*/*.patch"))
REFERENCE = "HIDDEN_MARKER = \"HIDDEN_CASE_42\"\n\n\ndef add(x, y):\n    return x + y\n"


def _shipped(p):
    return WrongVariant(p, ROOT / "reference" / f"{p.parent.name}.py")


def test_the_tree_ships_patches():
    assert len(SHIPPED) > 100


def test_every_shipped_patch_applies_to_a_different_program_that_compiles():
    bad = []
    for p in SHIPPED:
        v = _shipped(p)
        try:
            src = v.source()
            compile(src, str(p), "exec")
        except (ValueError, SyntaxError) as e:
            bad.append(f"{p.parent.name}/{p.name}: {e}")
            continue
        if src == v.reference_path.read_text(encoding="utf-8"):
            bad.append(f"{p.parent.name}/{p.name}: equals the reference")
    assert not bad, "\n".join(bad[:20])


def test_every_shipped_patch_header_names_its_mistake_and_target():
    bad = []
    for p in SHIPPED:
        v = _shipped(p)
        header = split_header(p.read_text(encoding="utf-8"))[0]
        if not header.strip() or header != header.lstrip():
            bad.append(f"{p.name}: the header must start on the first line")
        elif v.target() not in (CORE, INPUT_CHECKS):
            bad.append(f"{p.name}: target {v.target()!r}")
    assert not bad, "\n".join(bad[:20])
    targets = {_shipped(p).target() for p in SHIPPED}
    assert targets == {CORE, INPUT_CHECKS}        # both forms of the first line occur in the tree


def test_no_variant_is_kept_twice():
    stems = [(p.parent.name, p.stem) for p in (ROOT / "tests" / "wrong").glob("*/*.p*")
             if p.suffix in (".py", ".patch")]
    assert len(stems) == len(set(stems))


def test_header_first_line_declares_the_group(tmp_path):
    ref = tmp_path / "m.py"
    ref.write_text(REFERENCE)
    for header, group in (("WRONG (input checks): accepts a list.\n", INPUT_CHECKS),
                          ("WRONG: subtracts.\nFrom the statement's example 2.\n", CORE)):
        p = tmp_path / "v.patch"
        p.write_text(make_patch(REFERENCE, REFERENCE.replace("x + y", "x - y"), header, "reference/m.py"))
        assert WrongVariant(p, ref).target() == group
    p.write_text(make_patch(REFERENCE, REFERENCE.replace("x + y", "x - y"), "", "reference/m.py"))
    with pytest.raises(ValueError, match="needs a header line before '--- ' naming its mistake"):
        WrongVariant(p, ref).target()


def test_round_trip_and_a_moved_hunk(tmp_path):
    changed = REFERENCE.replace("x + y", "x - y")
    text = make_patch(REFERENCE, changed, "WRONG: subtracts.\n", "reference/m.py")
    assert text.splitlines()[:3] == ["WRONG: subtracts.", "--- a/reference/m.py", "+++ b/reference/m.py"]
    patch = parse_patch(text, "v.patch")
    assert patch.header == "WRONG: subtracts.\n" and len(patch.hunks) == 1
    assert apply_patch(patch, REFERENCE) == changed
    grown = "import math\n\n" + REFERENCE          # the reference grew above the hunk: it still applies
    assert apply_patch(patch, grown) == "import math\n\n" + changed


def test_a_file_without_a_final_newline(tmp_path):
    changed = REFERENCE.replace("x + y", "x - y").rstrip("\n")
    text = make_patch(REFERENCE, changed, "WRONG: subtracts.\n", "reference/m.py")
    assert "\\ No newline at end of file" in text
    assert apply_patch(parse_patch(text), REFERENCE) == changed


def test_a_stale_patch_names_the_file_the_hunk_and_the_line(tmp_path):
    text = make_patch(REFERENCE, REFERENCE.replace("x + y", "x - y"), "WRONG: subtracts.\n", "reference/m.py")
    ref = tmp_path / "m.py"
    ref.write_text(REFERENCE.replace("x + y", "y + x"))
    p = tmp_path / "subtracts.patch"
    p.write_text(text)
    with pytest.raises(StalePatch, match=r"subtracts\.patch: hunk 1 \(@@ -2,4 \+2,4 @@\) does not apply to "
                                         r".*m\.py: line 5 is '    return y \+ x', the patch expects "
                                         r"'    return x \+ y'"):
        WrongVariant(p, ref).source()


@pytest.mark.parametrize("text,needle", [
    ("WRONG: no diff at all.\n", "no '--- ' line"),
    ("h\n--- a/m.py\n@@ -1 +1 @@\n", "followed by a '\\+\\+\\+ ' line"),
    ("h\n--- a/m.py\n+++ b/m.py\n", "no hunks"),
    ("h\n--- a/m.py\n+++ b/m.py\nnot a hunk\n", "line 4: expected a hunk"),
    ("h\n--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n-a\n+b\n", "hunk 1 .* has 1 old and 1 new lines; its header says 2 and 2"),
])
def test_a_malformed_patch_is_named(text, needle):
    with pytest.raises(MalformedPatch, match=needle):
        parse_patch(text, "x.patch")


def test_a_patch_against_another_file_is_refused(tmp_path):
    ref = tmp_path / "m.py"
    ref.write_text(REFERENCE)
    p = tmp_path / "v.patch"
    p.write_text(make_patch(REFERENCE, REFERENCE.replace("+", "-"), "WRONG: x.\n", "reference/other.py"))
    with pytest.raises(MalformedPatch, match="a patch against a/reference/other.py"):
        WrongVariant(p, ref).source()


def test_a_header_line_that_reads_as_a_diff_is_refused():
    with pytest.raises(ValueError, match="may not start with"):
        make_patch(REFERENCE, REFERENCE.replace("+", "-"), "WRONG: x.\n--- see above\n", "reference/m.py")


def _content_with(tmp_path, monkeypatch, files: dict[str, str]):
    root = tmp_path / "content"
    shutil.copytree(FIXTURE_CONTENT, root)
    for name, text in files.items():
        (root / "tests" / "wrong" / "add_vectors" / name).write_text(text)
    monkeypatch.setenv("INFERPREP_CONTENT_ROOT", str(root))
    return root


def test_check_exercise_applies_patches_and_reports_a_stale_one(tmp_path, monkeypatch):
    ref = (FIXTURE_CONTENT / "reference" / "add_vectors.py").read_text()
    good = make_patch(ref, ref.replace("x + y", "x * y"), "WRONG: multiplies (a patch).\n",
                      "reference/add_vectors.py")
    stale = good.replace(" def add(x, y):", " def add(a, b):")
    _content_with(tmp_path, monkeypatch, {"multiplies.patch": good, "stale.patch": stale})
    rep = check_exercise("add-vectors")
    found = {f.what: f for f in rep.findings}
    assert found["wrong variant multiplies.patch fails core"].ok
    assert found["wrong variant subtract.py fails core"].ok
    bad = [f for f in rep.findings if not f.ok]
    assert [f.what for f in bad] == ["wrong variant stale.patch applies to the reference"]
    assert bad[0].detail == ("tests/wrong/add_vectors/stale.patch: hunk 1 (@@ -2,4 +2,4 @@) does not apply to "
                             "reference/add_vectors.py: line 4 is 'def add(x, y):', the patch expects "
                             "'def add(a, b):'")


def test_check_exercise_refuses_a_variant_kept_twice(tmp_path, monkeypatch):
    ref = (FIXTURE_CONTENT / "reference" / "add_vectors.py").read_text()
    twin = make_patch(ref, ref.replace("x + y", "x - y"), "WRONG: subtracts.\n", "reference/add_vectors.py")
    _content_with(tmp_path, monkeypatch, {"subtract.patch": twin})
    with pytest.raises(ValueError, match="'subtract' is kept twice"):
        variant("add_vectors", "subtract")
    bad = [f.what for f in check_exercise("add-vectors").findings if not f.ok]
    assert bad == ["wrong variant subtract.patch is kept once", "wrong variant subtract.py is kept once"]


def _converter():
    spec = importlib.util.spec_from_file_location("_wrong_to_patches", ROOT / "scripts" / "wrong_to_patches.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod                 # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def test_the_converter_keeps_a_large_change_whole_and_reproduces_a_small_one(tmp_path, monkeypatch):
    ref = (FIXTURE_CONTENT / "reference" / "add_vectors.py").read_text()
    body = ref.replace("x + y", "x - y")
    variant_text = '"""WRONG (input checks): subtracts.\n\nSecond line of the story."""\n' + body
    root = _content_with(tmp_path, monkeypatch, {"minus.py": variant_text})
    path = root / "tests" / "wrong" / "add_vectors" / "minus.py"
    conv = _converter()
    kept = conv.convert(path, max_lines=30, max_fraction=0.1, write=True)    # 2 of 5 lines > 10%
    assert not kept.converted and "changed lines of 5" in kept.why and path.exists()
    done = conv.convert(path, max_lines=30, max_fraction=0.4, write=True)
    assert done.converted and done.changed == 2 and not path.exists()       # docstring out, 1 line swapped
    v = variant("add_vectors", "minus")
    assert v.is_patch and v.target() == INPUT_CHECKS
    assert v.description() == "WRONG (input checks): subtracts.\n\nSecond line of the story."
    # the same program: the variant's syntax tree but for its docstring
    assert ast.dump(ast.parse(v.source())) == ast.dump(ast.Module(ast.parse(variant_text).body[1:], []))


def test_no_whole_file_variant_is_a_small_change_of_its_reference():
    """A new variant written as a whole copy of the reference is converted before it lands."""
    conv = _converter()
    small = [f"{p.parent.name}/{p.name}: {o.why}" for p in sorted((ROOT / "tests" / "wrong").glob("*/*.py"))
             if (o := conv.convert(p, max_lines=conv.MAX_LINES, max_fraction=conv.MAX_FRACTION, write=False)).converted]
    assert not small, "run scripts/wrong_to_patches.py on:\n" + "\n".join(small)
