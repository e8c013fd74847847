"""Follow-up questions (issue 18): every shipped followups.toml validates and its number answers are
what the reference computes (the figures asserted here); check-exercise reports a malformed file as
a failed check naming the file and the question, never a crash; typed answers; the CLI; answers go
to a mock interview's context while one that contains the exercise is active."""

from __future__ import annotations

import json
import math
import sys
import types
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from inferprep import catalog, db, followups, progress
from inferprep.check import followup_findings
from inferprep.cli import app
from inferprep.interview_models import FollowupAnswer
from inferprep.models import LOCAL_USER_ID
from inferprep.settings import Settings, get_settings
from inferprep.verdict import Status, Verdict

NAMED = ("scheduler-loop", "beam-search-cow", "sampling-order", "speculative-verifier", "ring-reduce-scatter")
SHIPPED = [e.slug for e in catalog.all_exercises() if (e.folder / followups.FILE_NAME).is_file()]


# -- the shipped files -------------------------------------------------------------------------------
def test_the_named_exercises_ship_follow_ups_of_every_type():
    assert set(NAMED) <= set(SHIPPED)
    types_seen = set()
    for slug in NAMED:
        qs = followups.load(catalog.get(slug).folder)
        assert 3 <= len(qs) <= 5, slug
        types_seen |= {q.type for q in qs}
    assert types_seen == {"single", "multiple", "number", "order"}
    # a number question wherever the reference computes something meaningful
    assert all(any(q.type == "number" for q in followups.load(catalog.get(s).folder))
               for s in NAMED if s != "scheduler-loop")


@pytest.mark.parametrize("slug", SHIPPED)
def test_every_shipped_file_validates(slug):
    ex = catalog.get(slug)
    assert followups.validate(ex.folder, ex.reference_path) == []
    [finding] = followup_findings(ex.folder, ex.reference_path)
    assert finding.ok, finding.detail
    for q in followups.load(ex.folder):
        assert q.explanation.strip() and q.sources
        assert all("https://" in s or "arXiv" in s or "doi.org" in s for s in q.sources), q.id   # a locatable public source


@pytest.mark.parametrize("slug", SHIPPED)
def test_every_number_answer_is_the_reference_computation(slug):
    ex = catalog.get(slug)
    ns = followups.reference_namespace(ex.reference_path)
    for q in followups.load(ex.folder):
        if isinstance(q, followups.NumberAnswer):
            assert followups.evaluate(q, ns) == pytest.approx(q.answer, rel=1e-4), q.id


def _ref(slug):
    return types.SimpleNamespace(**followups.reference_namespace(catalog.get(slug).reference_path))


def test_the_figures_the_questions_quote():
    beam, ring = _ref("beam-search-cow"), _ref("ring-reduce-scatter")
    spec, samp = _ref("speculative-verifier"), _ref("sampling-order")
    # beam-search-cow: 8 beams, 1,200 positions, prompt shared: 166 blocks of 2 MiB; 600 blocks unshared
    assert beam.kv_bytes_per_token(32, 8, 128, 2) == 128 * 1024
    assert beam.blocks_held(1200, 8, 16, 1000) == 166 and beam.blocks_held(1200, 8, 16, 0) == 600
    assert beam.blocks_held(1200, 8, 16, 1000) * 16 * beam.kv_bytes_per_token(32, 8, 128, 2) / 2**20 == 332
    # ring-reduce-scatter: the crossover and the bus bandwidth
    assert ring.crossover_bytes(8, 5e-6, 100e9) == pytest.approx(16e6)
    assert ring.crossover_bytes(16, 5e-6, 100e9) == pytest.approx(88e6)   # the question's p = 16
    assert ring.bus_bandwidth("all_reduce", 1e9, 0.01, 8) == pytest.approx(175e9)
    # speculative-verifier
    assert spec.expected_tokens_per_step(0.8, 4) == pytest.approx(3.3616)
    p, q = torch.tensor([0.6, 0.3, 0.1], dtype=torch.float64), torch.tensor([0.3, 0.3, 0.4], dtype=torch.float64)
    assert spec.acceptance_rate(p, q) == pytest.approx(0.7)
    # sampling-order: temperature 2 then top-p 0.75 keeps three tokens; top-p first keeps two
    x = torch.tensor([[math.log(0.5), math.log(0.3), math.log(0.2)]], dtype=torch.float64)
    first_t = samp.sampling_probs(x, 2.0, 0, 0.75, 0.0, ("temperature", "top_k", "top_p", "min_p"))[0]
    first_p = samp.sampling_probs(x, 2.0, 0, 0.75, 0.0, ("top_p", "temperature", "top_k", "min_p"))[0]
    assert first_t.tolist() == pytest.approx([0.41545, 0.32180, 0.26275], abs=5e-5)
    assert first_p.tolist() == pytest.approx([0.56351, 0.43649, 0.0], abs=5e-5)


def test_the_figures_the_revised_questions_quote():
    moe, kv = _ref("moe-experts-per-step"), _ref("kv-capacity")
    from inferprep import specs
    # moe-experts-per-step: Mixtral reaches 95% of its experts at batch 11 (99% only at 17, by a hair)
    assert moe.batch_for_expert_fraction(8, 2, 0.95) == 11 and moe.batch_for_expert_fraction(8, 2, 0.99) == 17
    assert round(0.75 ** 10, 3) == 0.056 and round(0.75 ** 11, 3) == 0.042 and 0.75 ** 16 > 0.01
    # kv-capacity: the weight bytes the 32K prompts give, and that rounding the model to 71 B loses a sequence
    assert 141104775168 // 8 == 17_638_096_896
    def seqs(weights_per_gpu, kv_dtype):
        return kv.kv_capacity(85029615043, 0.9, weights_per_gpu, 2 * 2**30, 2**30 // 2, 2**30,
                              specs.LLAMA_3_1_70B, 8, kv_dtype, 16, 32000, 256)["max_seqs_effective"]
    assert seqs(17_638_096_896, kv.DType.BF16) == 42 and seqs(17_638_096_896, kv.DType.FP8) == 84
    assert seqs(71 * 10**9 * 2 // 8, kv.DType.BF16) == 41


def test_which_knob_pairs_commute_as_the_question_says():
    samp = _ref("sampling-order")
    knobs = {"temperature": (1.7, 0, 1.0, 0.0), "top_k": (1.0, 3, 1.0, 0.0), "top_p": (1.0, 0, 0.6, 0.0),
             "min_p": (1.0, 0, 1.0, 0.2)}
    g = torch.Generator().manual_seed(18)
    logits = torch.randn(64, 12, generator=g, dtype=torch.float64) * 2

    def run(a, b):
        t = knobs["temperature"][0] if "temperature" in (a, b) else 1.0
        k = knobs["top_k"][1] if "top_k" in (a, b) else 0
        p = knobs["top_p"][2] if "top_p" in (a, b) else 1.0
        m = knobs["min_p"][3] if "min_p" in (a, b) else 0.0
        rest = [n for n in ("temperature", "top_k", "top_p", "min_p") if n not in (a, b)]
        return samp.sampling_probs(logits, t, k, p, m, (a, b, *rest))

    q = next(q for q in followups.load(catalog.get("sampling-order").folder) if q.id == "which-pairs-commute")
    pairs = [tuple(c.replace("-", "_").split(" and ")) for c in q.choices]
    commute = [i for i, (a, b) in enumerate(pairs) if torch.allclose(run(a, b), run(b, a), atol=1e-6)]
    assert commute == q.answer


# -- malformed files ---------------------------------------------------------------------------------
GOOD = '''
[[question]]
id = "one"
type = "single"
prompt = "Which one is right here?"
choices = ["a", "b"]
answer = 1
explanation = "Because b is the one."
sources = ["https://example.org/doc"]

[[question]]
id = "two"
type = "number"
prompt = "How many bytes per token?"
answer = 131072.0
unit = "bytes"
tolerance = 0.01
reference_expr = "kv_bytes_per_token(32, 8, 128, 2)"
explanation = "Two tensors per layer and head."
sources = ["https://example.org/config"]

[[question]]
id = "three"
type = "order"
prompt = "Put these in their order."
items = ["x", "y", "z"]
answer = [2, 0, 1]
explanation = "z comes first, then x."
sources = ["Some et al., a paper, section 2"]
'''
BEAM_REF = catalog.get("beam-search-cow").reference_path


def problems(tmp_path: Path, text: str, reference: Path = BEAM_REF) -> list[str]:
    (tmp_path / followups.FILE_NAME).write_text(text, encoding="utf-8")
    followups._cache.clear()
    return followups.validate(tmp_path, reference)


def test_a_good_file_passes_and_no_file_is_no_finding(tmp_path):
    assert followup_findings(tmp_path, BEAM_REF) == []
    assert problems(tmp_path, GOOD) == []
    [f] = followup_findings(tmp_path, BEAM_REF)
    assert f.ok and "3 questions" in f.detail


@pytest.mark.parametrize("change, expect", [
    (('answer = 131072.0', 'answer = 120000.0'), "question 'two': answer 120000 bytes but reference_expr"),
    (('kv_bytes_per_token(32, 8, 128, 2)', 'kv_bytes_per_tokn(32)'), "question 'two': reference_expr"),
    (('kv_bytes_per_token(32, 8, 128, 2)', 'str(1)'), "gave '1', not a finite number"),
    (('choices = ["a", "b"]', 'choices = ["a", "A "]'), "question 1 ('one'): choices repeat: ['a']"),
    (('items = ["x", "y", "z"]', 'items = ["x", "y", "y"]'), "question 3 ('three'): items repeat: ['y']"),
    (('explanation = "z comes first, then x."', 'explanation = ""'), "question 3 ('three'): explanation"),
    (('sources = ["https://example.org/doc"]', 'sources = []'), "question 1 ('one'): sources"),
    (('sources = ["https://example.org/doc"]', 'sources = ["  "]'), "question 1 ('one'): sources"),
    (('answer = [2, 0, 1]', 'answer = [2, 0, 0]'), "question 3 ('three'): answer [2, 0, 0] must be a permutation"),
    (('answer = 1\n', 'answer = 5\n'), "question 1 ('one'): answer 5 is not an index"),
    (('type = "single"', 'type = "essay"'), "question 1 ('one')"),
    (('tolerance = 0.01', 'tolerance = 0.9'), "question 2 ('two'): tolerance"),
    (('id = "three"', 'id = "one"'), "question ids repeat: ['one']"),
    (('prompt = "Put these in their order."', 'prompt = "Put these in their order."\nhint = "x"'), "question 3 ('three'): hint"),
])
def test_broken_files_are_named_failures(tmp_path, change, expect):
    old, new = change
    assert old in GOOD
    found = problems(tmp_path, GOOD.replace(old, new, 1))
    assert len(found) == 1 and str(tmp_path / followups.FILE_NAME) in found[0]
    assert expect in found[0], found[0]
    [f] = followup_findings(tmp_path, BEAM_REF)
    assert not f.ok and expect in f.detail


def test_too_few_questions_bad_toml_and_a_broken_reference(tmp_path):
    two = GOOD.split("[[question]]")
    assert "at least 3" in problems(tmp_path, "[[question]]".join(two[:3]))[0]
    assert "not valid TOML" in problems(tmp_path, GOOD + "\n[[question]\n")[0]
    (tmp_path / "bad_ref.py").write_text("raise RuntimeError('broken reference')\n")
    [p] = problems(tmp_path, GOOD, tmp_path / "bad_ref.py")
    assert "does not import" in p and "broken reference" in p
    [p] = problems(tmp_path, GOOD, tmp_path / "missing.py")
    assert "does not import" in p
    (tmp_path / followups.FILE_NAME).write_bytes(b"\xff\xfe[[question]]")
    followups._cache.clear()
    assert "not valid TOML" in followups.validate(tmp_path, BEAM_REF)[0]


# -- answers typed as text ---------------------------------------------------------------------------
def test_parse_text_and_display_order(tmp_path):
    (p := tmp_path / followups.FILE_NAME).write_text(GOOD)
    qs = {q.id: q for q in followups.parse(p)}
    one, two, three = qs["one"], qs["two"], qs["three"]
    assert followups.parse_text(one, " 1 ") == 1 and followups.is_correct(one, 1)
    assert followups.parse_text(two, "131072 bytes") == 131072.0 and followups.is_correct(two, 131072.0)
    assert followups.is_correct(two, "130500") and not followups.is_correct(two, 129000.0)
    shown = followups.display_order(7, "x", three)
    assert sorted(shown) == [0, 1, 2] and shown != three.answer
    assert shown == followups.display_order(7, "x", three)          # the same list on every reload
    labels = ",".join(str(shown.index(i)) for i in three.answer)
    assert followups.parse_text(three, labels, shown=shown) == three.answer
    one_based = ",".join(str(shown.index(i) + 1) for i in three.answer)
    assert followups.parse_text(three, one_based, shown=shown, base=1) == three.answer
    for q, text in [(one, "a"), (one, "0,1"), (two, "many"), (three, "0,0,1"), (three, "0,1"), (one, "")]:
        with pytest.raises(ValueError):
            followups.parse_text(q, text, shown=shown)
    assert followups.describe_answer(three, [2, 0, 1]) == "z → x → y"
    assert followups.right_answer(two) == "131072 bytes (within 1%)"


# -- the command line --------------------------------------------------------------------------------
@pytest.fixture
def local_db(tmp_path, monkeypatch):
    monkeypatch.setenv("INFERPREP_DATA_DIR", str(tmp_path / "d"))
    monkeypatch.delenv("INFERPREP_DATABASE_URL", raising=False)
    get_settings.cache_clear()
    yield Settings().db_url
    get_settings.cache_clear()


def test_cli_lists_after_a_pass_and_records_the_first_answer(local_db):
    slug = "ring-reduce-scatter"
    r = CliRunner().invoke(app, ["followups", slug])
    assert r.exit_code == 2 and "open once your code passes" in r.stderr
    ex = catalog.get(slug)
    progress.record_cli_grade(ex, "x = 1\n", Verdict(slug=slug, status=Status.PASSED, score=1.0, passed=1, total=1))
    r = CliRunner().invoke(app, ["followups", slug])
    assert r.exit_code == 0, r.output
    assert "crossover-mb" in r.stdout and "first answer" in r.stdout and "[1]" in r.stdout
    assert "88 MB" not in r.stdout                                   # no answer before answering
    r = CliRunner().invoke(app, ["followups", slug, "--answer", "crossover-mb", "88.5"])
    assert r.exit_code == 0 and "right" in r.stdout and "doi.org" in r.stdout
    r = CliRunner().invoke(app, ["followups", slug, "--answer", "crossover-mb", "3"])
    assert r.exit_code == 0 and "first answer counts" in r.stdout   # the first one stands
    r = CliRunner().invoke(app, ["followups", slug, "--answer", "nccl-chooses", "0"])
    assert r.exit_code == 1 and "wrong" in r.stdout and "the answer: Per call" in r.stdout
    r = CliRunner().invoke(app, ["followups", slug, "--answer", "bus-bandwidth", "fast"])
    assert r.exit_code == 2 and "give a number (in GB/s)" in r.stderr
    r = CliRunner().invoke(app, ["followups", slug, "--answer", "nope", "1"])
    assert r.exit_code == 2 and "no follow-up question 'nope'" in r.stderr
    with db.session_scope(local_db) as s:
        rows = s.exec(db_select(FollowupAnswer)).all()
    assert sorted((a.question_id, a.correct, a.context) for a in rows) == [
        ("crossover-mb", True, "practice"), ("nccl-chooses", False, "practice")]
    assert json.loads(next(a for a in rows if a.question_id == "crossover-mb").answer_json) == 88.5


def test_cli_order_answer_uses_the_listed_labels(local_db):
    slug = "scheduler-loop"
    ex = catalog.get(slug)
    progress.record_cli_grade(ex, "x = 1\n", Verdict(slug=slug, status=Status.PASSED, score=1.0, passed=1, total=1))
    q = next(q for q in followups.load(ex.folder) if q.id == "step-order")
    shown = followups.display_order(LOCAL_USER_ID, slug, q)
    listing = CliRunner().invoke(app, ["followups", slug]).stdout
    for label, i in enumerate(shown):
        assert f"[{label}] {q.items[i]}" in listing
    labels = ",".join(str(shown.index(i)) for i in q.answer)
    r = CliRunner().invoke(app, ["followups", slug, "--answer", "step-order", labels])
    assert r.exit_code == 0 and "right" in r.stdout


def db_select(model):
    from sqlmodel import select
    return select(model)


# -- a mock interview's context ------------------------------------------------------------------------
def test_answers_in_an_active_interview_go_to_its_context(local_db, monkeypatch):
    """``interview.item_in_active_session`` is faked here: a session
    that started after an older pass needs a pass of its own, and its answers are kept apart."""
    from datetime import timedelta

    from inferprep import services
    from inferprep.models import utcnow
    slug = "speculative-verifier"
    ex = catalog.get(slug)
    progress.record_cli_grade(ex, "x = 1\n", Verdict(slug=slug, status=Status.PASSED, score=1.0, passed=1, total=1))
    session = types.SimpleNamespace(id=41, started_at=utcnow() + timedelta(seconds=1))
    from inferprep import interview
    monkeypatch.setattr(interview, "item_in_active_session",
                        lambda s, user_id, slug_, now=None: (session, None) if slug_ == slug else None)
    with db.session_scope(local_db) as s:
        with pytest.raises(services.Locked, match="in this mock interview"):
            interview.followup_context(s, LOCAL_USER_ID, slug)
    session.started_at = utcnow() - timedelta(minutes=5)        # the pass now falls inside the session
    r = CliRunner().invoke(app, ["followups", slug, "--answer", "residual", "2"])
    assert r.exit_code == 0, r.output
    with db.session_scope(local_db) as s:
        assert interview.followup_context(s, LOCAL_USER_ID, slug) == followups.interview_context(41)
        [res] = [x for x in followups.results(s, LOCAL_USER_ID, slug, ex.folder, followups.interview_context(41))
                 if x.answered]
        assert res.question_id == "residual" and res.correct
        assert not any(x.answered for x in followups.results(s, LOCAL_USER_ID, slug, ex.folder, followups.PRACTICE))


def test_check_exercise_reports_a_broken_file_and_stops(tmp_path, monkeypatch):
    """check-exercise itself: the broken file is one failed finding naming the question; nothing
    raises, and no grading runs on an exercise that already failed a cheap check."""
    import shutil

    from runner_support import FIXTURE_CONTENT

    from inferprep.check import check_exercise
    root = tmp_path / "content"
    shutil.copytree(FIXTURE_CONTENT, root)
    (root / "exercises" / "add-vectors" / followups.FILE_NAME).write_text(
        GOOD.replace('reference_expr = "kv_bytes_per_token(32, 8, 128, 2)"', 'reference_expr = "add(2, 3)"'))
    monkeypatch.setenv("INFERPREP_CONTENT_ROOT", str(root))
    followups._cache.clear()
    rep = check_exercise("add-vectors")
    bad = [f for f in rep.findings if not f.ok]
    assert not rep.ok and [f.what for f in bad] == ["follow-up questions"]
    assert "question 'two'" in bad[0].detail and "reference_expr 'add(2, 3)' computes 5" in bad[0].detail
    assert not any(f.what.startswith("reference passes") for f in rep.findings)
