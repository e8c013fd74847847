"""Every number quoted in speculative-verifier's statement and editorial, computed by the reference
(and, for the biased rules, by the known-wrong variant or the grader's hidden verifier that
implements them), on grids of uniforms fine enough for three decimals."""

from pathlib import Path

import pytest
import torch

from inferprep.grading import load_module

ROOT = Path(__file__).resolve().parents[2]
ref = load_module(ROOT / "reference" / "speculative_verifier.py", "_fig_spec_reference")
grader = load_module(ROOT / "graders" / "speculative_verifier.py", "_fig_spec_grader")
wrong_resample = load_module(ROOT / "tests" / "wrong" / "speculative_verifier" / "resample_from_p.py", "_fig_spec_wrong")

P = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
Q = torch.tensor([0.2, 0.5, 0.3], dtype=torch.float64)
G = 400
GRID = (torch.arange(G, dtype=torch.float64) + 0.5) / G


def first_token_distribution(verify, p=P, q=Q):
    """P(first emitted token = a) with one draft x ~ q, exact up to the grid of (u, s)."""
    V = len(p)
    u, s = torch.meshgrid(GRID, GRID, indexing="ij")
    u, s = u.reshape(-1), s.reshape(-1)
    R = len(u)
    dist = torch.zeros(V, dtype=torch.float64)
    for x in range(V):
        out, num = verify(torch.full((R, 1), x), q.expand(R, 1, V).clone(), p.expand(R, 2, V).clone(),
                          torch.ones(R, dtype=torch.int64), u[:, None].clone(), s.clone())
        dist += q[x] * torch.bincount(out[:, 0], minlength=V).double() / R
    return dist


def tv(a, b):
    return 0.5 * float((a - b).abs().sum())


def test_statement_example():
    ids, num = ref.verify(
        torch.tensor([[1, 0], [2, -1]]),
        torch.tensor([[[.25, .5, .25], [.25, .25, .5]], [[.25, .25, .5], [1 / 3, 1 / 3, 1 / 3]]], dtype=torch.float64),
        torch.tensor([[[.5, .25, .25], [.5, .25, .25], [.5, .25, .25]], [[.25, .25, .5], [0, .5, .5], [1 / 3] * 3]],
                     dtype=torch.float64),
        torch.tensor([2, 1]), torch.tensor([[.75, .1], [.3, .9]], dtype=torch.float64),
        torch.tensor([.3, .5], dtype=torch.float64))
    assert ids.tolist() == [[0, -1, -1], [2, 2, -1]] and num.tolist() == [1, 2]


def test_worked_example_is_lossless():
    assert ref.acceptance_rate(P, Q) == pytest.approx(0.7)
    residual = (P - Q).clamp(min=0)
    assert (residual / residual.sum()).tolist() == pytest.approx([1.0, 0.0, 0.0])
    assert first_token_distribution(ref.verify).tolist() == pytest.approx(P.tolist(), abs=2e-3)


def test_biased_rules_in_the_worked_example():
    resample = first_token_distribution(wrong_resample.verify)
    assert resample.tolist() == pytest.approx([0.35, 0.39, 0.26], abs=3e-3)
    assert tv(resample, P) == pytest.approx(0.15, abs=3e-3)
    absdiff = first_token_distribution(grader.Specimen(ref, grader.Rule(residual="abs"), 0))
    assert absdiff.tolist() == pytest.approx([0.35, 0.40, 0.25], abs=3e-3)
    assert tv(absdiff, P) == pytest.approx(0.15, abs=3e-3)
    inverted = first_token_distribution(grader.Specimen(ref, grader.Rule(accept="inverted"), 0))
    assert inverted.tolist() == pytest.approx(Q.tolist(), abs=3e-3)
    assert tv(inverted, P) == pytest.approx(0.30, abs=3e-3)


def test_shared_uniform_correlates_acceptances():
    """k = 2 drafts with the same p and q at both positions: P(both accepted)."""
    V, Gs = 3, 200
    grid = (torch.arange(Gs, dtype=torch.float64) + 0.5) / Gs
    u1, u2 = [t.reshape(-1) for t in torch.meshgrid(grid, grid, indexing="ij")]
    R = len(u1)
    both = {"independent": 0.0, "shared": 0.0}
    shared = grader.Specimen(ref, grader.Rule(uniforms="shared"), 0)
    for x1 in range(V):
        for x2 in range(V):
            args = [torch.tensor([[x1, x2]]).expand(R, 2).clone(), Q.expand(R, 2, V).clone(),
                    P.expand(R, 3, V).clone(), torch.full((R,), 2), torch.stack([u1, u2], 1),
                    torch.full((R,), 0.5, dtype=torch.float64)]
            w = float(Q[x1] * Q[x2])
            both["independent"] += w * float((ref.verify(*args)[1] == 3).double().mean())
            both["shared"] += w * float((shared(*args)[1] == 3).double().mean())
    assert both["independent"] == pytest.approx(0.49, abs=3e-3)
    assert both["shared"] == pytest.approx(0.63, abs=3e-3)


def test_acceptance_and_speedup_figures():
    assert ref.expected_tokens_per_step(0.8, 3) == pytest.approx(2.952)
    assert float((P * Q).sum()) == pytest.approx(0.31)                  # exact-match acceptance


def test_part2_test_design():
    assert ref.L == 3 and ref.K_TEST == 3 and ref.ROWS_PER_SCENARIO == 8000 and ref.Z == 6.0
    assert len(ref._scenarios(4, torch.Generator().manual_seed(0))) == 3
    assert ref._chi2_quantile(511, 6.0) == pytest.approx(727, abs=1)
    assert ref._chi2_quantile(26, 6.0) == pytest.approx(96, abs=1)
