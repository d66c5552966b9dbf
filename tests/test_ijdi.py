"""FPR-/TPR-/IJDI-Scan: pure edge-case updates on hand-built inputs, Algorithm 1 against a literal
NumPy implementation driven by a brute-force scanner, identities, hazards, caps, bad input,
base-rate estimation."""

from __future__ import annotations

import itertools
import math
import warnings
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

from ofijax import scan
from ofijax.scan import bias_scan, estimate_true_probabilities, lambda_from_costs
from ofijax.scan._alg1 import (
    CODE_ACCEPT,
    CODE_ALPHA,
    CODE_BETA,
    CODE_NONE,
    CODE_PIN,
    AlgState,
    check_edges,
    edge_case_1,
    edge_case_2,
    initial_state,
)

# These tests follow the IJDI paper literally, in its harm orientation (label 1 = the harmful
# outcome, NEG = the rows whose true outcome is not harmful): beneficial_label=0 says so.
fpr_scan = partial(scan.fpr_scan, beneficial_label=0)
tpr_scan = partial(scan.tpr_scan, beneficial_label=0)
ijdi_scan = partial(scan.ijdi_scan, beneficial_label=0)

# ---------------------------------------------------------------------------------------------
# Brute-force oracle (exact global optimum over every subgroup) and literal Algorithm 1

T_HI = math.log(1e6)


def _llr_max(Y, P, W):
    """Per subgroup g: max over t ∈ [0, log 1e6] of Y_g t − Σ_i W_gi log(1 − p_i + p_i e^t)."""
    G = W.shape[0]

    def slope(t):
        e = np.exp(t)[:, None]
        return Y - np.sum(W * (P * e / (1 - P + P * e)), axis=1)

    lo, hi = np.zeros(G), np.full(G, T_HI)
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        up = slope(mid) > 0
        lo, hi = np.where(up, mid, lo), np.where(up, hi, mid)
    t = 0.5 * (lo + hi)
    t = np.where(slope(np.zeros(G)) <= 0, 0.0, t)
    t = np.where(slope(np.full(G, T_HI)) >= 0, T_HI, t)
    return np.maximum(Y * t - np.sum(W * np.log1p(P * np.expm1(t)[:, None]), axis=1), 0.0)


def _enumerate(codes):
    opts = []
    for j in range(codes.shape[1]):
        vals = np.unique(codes[:, j]).tolist()
        opts.append([None] + [frozenset(c) for r in range(1, len(vals))
                              for c in itertools.combinations(vals, r)])
    sgs = list(itertools.product(*opts))
    W = np.ones((len(sgs), len(codes)), bool)
    cnt = np.zeros(len(sgs))
    for g, sg in enumerate(sgs):
        for j, s in enumerate(sg):
            if s is not None:
                W[g] &= np.isin(codes[:, j], list(s))
                cnt[g] += len(s)
    return sgs, W, cnt


def brute_scan(enum, y, p, penalty):
    sgs, W, cnt = enum
    sc = _llr_max(W.astype(float) @ y, p[None, :], W.astype(float)) - penalty * cnt
    g = int(np.argmax(sc))
    return sgs[g], float(sc[g]), W[g]


def ref_algorithm1(enum, y, p, lam, *, penalty=0.1, eps=1e-6, strict=False, cap=100):
    """Spec §5.3, literally, in NumPy (brute-force scans). Returns (sg, score, steps, p_scan)."""
    pbar_b, pbar0 = y.mean(), p.mean()
    pw = p.copy()
    raw = pbar_b + lam * (pw - pbar0)
    ps = np.clip(raw, 0, 1)
    c = ps - raw
    steps = []
    for it in range(cap + 1):
        sg, F, S = brute_scan(enum, y, np.clip(ps, eps, 1 - eps), penalty)
        if F <= 0:
            steps.append("no_subgroup")
            return sg, 0.0, steps, ps
        if np.mean(pw[S] - pbar0) < -1e-6:
            step = "alpha"
        elif np.mean(c[S]) < -1e-6:
            step = "pin" if raw[S].mean() >= 1 else "beta"
        else:
            steps.append("accepted")
            return sg, F, steps, ps
        steps.append(step)
        if it == cap:
            return sg, F, steps, ps
        if step == "alpha":
            pns = p[~S].mean()
            L = S & (pw < pns)
            alpha = np.sum(pns - pw[S]) / np.sum(pns - pw[L])
            pw = np.where(L, pw + alpha * (pns - pw), pw)
            raw = np.where(S, pbar_b if strict else pbar_b + lam * (pw - pbar0), raw)
            ps = np.where(S, np.clip(raw, 0, 1), ps)
            c = np.where(S, ps - raw, c)
        elif step == "pin":
            ps, c = np.where(S, 1.0, ps), np.where(S, 0.0, c)
        else:
            beta = np.sum(raw[S] - ps[S]) / np.sum(1 - ps[S])
            ps = np.where(S & (ps < 1), ps + beta * (1 - ps), ps)
            c = ps - raw
    raise AssertionError("unreachable")


def _as_dict(sg, names=("a", "b", "c")):
    if sg is None:
        return {}
    return {n: tuple(sorted(s)) for n, s in zip(names, sg) if s is not None}


# ---------------------------------------------------------------------------------------------
# Tiny data: 3 attributes (3, 3, 2 values) = 18 cells × 10 rows, 147 subgroups.

_CELLS = np.array([(a, b, c) for a in range(3) for b in range(3) for c in range(2)])
CODES = np.repeat(_CELLS, 10, axis=0)
N = len(CODES)
DF = pd.DataFrame(CODES, columns=["a", "b", "c"])
ENUM = _enumerate(CODES)


def _tiny(seed):
    """p: base rates by a and b; yhat = 1[p + noise (+0.15 for a=0, c=1) > 0.55]."""
    rng = np.random.default_rng(seed)
    base = np.array([0.3, 0.5, 0.7])[CODES[:, 0]] + np.array([-0.1, 0.0, 0.15])[CODES[:, 1]]
    p = np.clip(base + rng.uniform(-0.1, 0.1, N), 0.01, 0.99)
    s = p + 0.1 * rng.normal(size=N) + 0.15 * (CODES[:, 2] == 1) * (CODES[:, 0] == 0)
    return (s > 0.55).astype(float), p


NEG = np.zeros(N, int)


# ---------------------------------------------------------------------------------------------
# Pure pieces on hand-built inputs


def _state(p_w, raw, p_scan, c):
    return AlgState(*(jnp.asarray(np.asarray(x, float)) for x in (p_w, raw, p_scan, c)))


def test_initial_state_sums_to_outcomes_before_clipping():
    with jax.enable_x64(True):
        y = jnp.asarray([1.0, 0, 0, 1, 1, 0])
        p = jnp.asarray([0.9, 0.1, 0.2, 0.5, 0.7, 0.3])
        st, pbar_b, pbar0 = initial_state(y, p, 2.0)
        assert float(pbar_b) == 0.5 and float(pbar0) == pytest.approx(2.7 / 6)
        assert float(jnp.sum(st.raw)) == pytest.approx(3.0, abs=1e-12)  # Σ raw = Σ y
        np.testing.assert_allclose(st.p_scan, np.clip(st.raw, 0, 1))
        np.testing.assert_allclose(st.c, st.p_scan - st.raw)
        assert float(st.c[0]) < 0 and float(st.c[1]) > 0  # clipped at 1 and at 0


@pytest.mark.parametrize("strict", [False, True])
def test_edge_case_1_alpha_update(strict):
    with jax.enable_x64(True):
        p = np.array([0.1, 0.3, 0.6, 0.5, 0.6, 0.7])
        in_s = jnp.asarray([True, True, True, False, False, False])
        lam, pbar_b, pbar0 = 0.5, 0.4, p.mean()
        raw = pbar_b + lam * (p - pbar0)
        st = _state(p, raw, np.clip(raw, 0, 1), np.clip(raw, 0, 1) - raw)
        new, alpha, p_not_s = edge_case_1(st, in_s, jnp.asarray(p), pbar_b, pbar0, lam, strict)
        assert float(p_not_s) == pytest.approx(0.6)
        # α = Σ_S (0.6 − p) / Σ_L (0.6 − p) with L = {0.1, 0.3}: 0.8 / 0.8... S also holds 0.6 (gap 0)
        assert float(alpha) == pytest.approx((0.5 + 0.3 + 0.0) / (0.5 + 0.3))
        assert 0 < float(alpha) <= 1
        np.testing.assert_allclose(float(jnp.mean(new.p_w[:3])), 0.6, atol=1e-12)
        np.testing.assert_array_equal(new.p_w[3:], p[3:])  # outside S untouched
        np.testing.assert_array_equal(new.raw[3:], raw[3:])
        expect_raw = np.full(3, pbar_b) if strict else pbar_b + lam * (np.asarray(new.p_w[:3]) - pbar0)
        np.testing.assert_allclose(new.raw[:3], expect_raw, atol=1e-12)
        # §5.4: mean_S p_scan = p̄_b + λ(p(~S) − p̄⁰) (reference) or p̄_b (strict), absent clipping.
        target = pbar_b if strict else pbar_b + lam * (0.6 - pbar0)
        assert float(jnp.mean(new.p_scan[:3])) == pytest.approx(target, abs=1e-12)


def test_edge_case_1_alpha_below_one_when_members_above():
    with jax.enable_x64(True):
        p = np.array([0.1, 0.8, 0.5, 0.5])  # S = {0.1, 0.8}: mean 0.45 < p(~S) = 0.5
        in_s = jnp.asarray([True, True, False, False])
        st = _state(p, p, p, np.zeros(4))
        new, alpha, _ = edge_case_1(st, in_s, jnp.asarray(p), 0.3, p.mean(), 1.0, False)
        assert float(alpha) == pytest.approx(0.1 / 0.4)  # (0.4 − 0.3) / 0.4
        assert float(new.p_w[1]) == 0.8  # above p(~S): unchanged
        assert float(jnp.mean(new.p_w[:2])) == pytest.approx(0.5, abs=1e-12)


def test_edge_case_2_beta_update():
    with jax.enable_x64(True):
        raw = np.array([1.4, 0.6, 0.2, -0.3, 0.9])
        ps = np.clip(raw, 0, 1)
        in_s = jnp.asarray([True, True, True, False, False])
        st = _state(np.zeros(5), raw, ps, ps - raw)
        new, beta, pinned = edge_case_2(st, in_s)
        assert not bool(pinned)
        expect = (0.4) / (0.0 + 0.4 + 0.8)
        assert float(beta) == pytest.approx(expect)
        assert float(jnp.sum(new.p_scan[:3])) == pytest.approx(raw[:3].sum(), abs=1e-12)
        np.testing.assert_array_equal(new.p_scan[3:], ps[3:])
        np.testing.assert_allclose(new.c, np.asarray(new.p_scan) - raw, atol=1e-15)
        assert float(new.p_scan[0]) == 1.0


def test_edge_case_2_pin_when_mean_raw_at_least_one():
    with jax.enable_x64(True):
        raw = np.array([1.5, 0.8, 0.7, 0.2])
        ps = np.clip(raw, 0, 1)
        in_s = jnp.asarray([True, True, True, False])
        st = _state(np.zeros(4), raw, ps, ps - raw)
        new, beta, pinned = edge_case_2(st, in_s)
        assert bool(pinned) and math.isnan(float(beta))
        np.testing.assert_array_equal(new.p_scan, [1.0, 1.0, 1.0, 0.2])
        np.testing.assert_array_equal(new.c, [0.0, 0.0, 0.0, 0.0])


def test_check_edges_priority_and_codes():
    with jax.enable_x64(True):
        p = jnp.asarray([0.2, 0.3, 0.7, 0.8])
        in_s = jnp.asarray([True, True, False, False])
        raw = jnp.asarray([1.2, 0.9, 0.5, 0.5])  # S clipped at 1 *and* p(S) < p̄: case 1 first
        st = AlgState(p, raw, jnp.clip(raw, 0, 1), jnp.clip(raw, 0, 1) - raw)
        code, _, f = check_edges(st, in_s, jnp.asarray(1.0), p, 0.5, 0.5, 1.0, False)
        assert int(code) == CODE_ALPHA and 0 < float(f) <= 1
        raw2 = jnp.asarray([1.2, 0.6, 0.5, 0.5])
        ps2 = jnp.clip(raw2, 0, 1)
        st2 = AlgState(jnp.asarray([0.6, 0.6, 0.4, 0.4]), raw2, ps2, ps2 - raw2)
        code, _, f = check_edges(st2, in_s, jnp.asarray(1.0), p, 0.5, 0.5, 1.0, False)
        assert int(code) == CODE_BETA and 0 < float(f) < 1
        raw3 = jnp.asarray([1.2, 1.0, 0.5, 0.5])
        st3 = AlgState(st2.p_w, raw3, jnp.clip(raw3, 0, 1), jnp.clip(raw3, 0, 1) - raw3)
        code, _, _ = check_edges(st3, in_s, jnp.asarray(1.0), p, 0.5, 0.5, 1.0, False)
        assert int(code) == CODE_PIN
        st4 = st2._replace(p_w=jnp.asarray([0.6, 0.6, 0.5, 0.5]))
        code, _, _ = check_edges(st4, ~in_s, jnp.asarray(1.0), p, 0.5, 0.5, 1.0, False)
        assert int(code) == CODE_ACCEPT
        code, _, _ = check_edges(st4, ~in_s, jnp.asarray(0.0), p, 0.5, 0.5, 1.0, False)
        assert int(code) == CODE_NONE


# ---------------------------------------------------------------------------------------------
# Algorithm 1 end to end against the oracle


def _rows(subset):
    inside = np.ones(N, bool)
    for col, vals in subset.items():
        inside &= DF[col].isin(vals).to_numpy()
    return inside


def replay(history, y, p, lam, *, strict, penalty=0.1, eps=1e-6):
    """Re-run Algorithm 1's bookkeeping (spec §5.3, NumPy) on the subgroups the scan reported.

    Checks every reported score against a direct evaluation at the current p_scan and that it is
    no better than the brute-force optimum; returns (edge cases, final p_scan, #scans at the
    optimum). Independent of the search's luck, so it pins the adjustment logic exactly.
    """
    sgs, W, cnt = ENUM
    pbar_b, pbar0 = y.mean(), p.mean()
    pw = p.copy()
    raw = pbar_b + lam * (pw - pbar0)
    ps = np.clip(raw, 0, 1)
    c = ps - raw
    cases, optimal = [], 0
    for step in history:
        pc = np.clip(ps, eps, 1 - eps)
        best = brute_scan(ENUM, y, pc, penalty)[1]
        if step.edge_case == "no_subgroup":
            cases.append("no_subgroup")
            optimal += best <= 0
            continue
        S = _rows(step.subset)
        direct = _llr_max(np.array([y[S].sum()]), pc[None, :], S[None, :].astype(float))[0]
        direct -= penalty * sum(len(v) for v in step.subset.values())
        assert step.score == pytest.approx(direct, abs=1e-7)
        assert step.score <= best + 1e-7
        optimal += step.score >= best - 1e-7
        if np.mean(pw[S] - pbar0) < -1e-6:
            pns = p[~S].mean()
            L = S & (pw < pns)
            alpha = np.sum(pns - pw[S]) / np.sum(pns - pw[L])
            assert step.factor == pytest.approx(alpha, rel=1e-12)
            pw = np.where(L, pw + alpha * (pns - pw), pw)
            raw = np.where(S, pbar_b if strict else pbar_b + lam * (pw - pbar0), raw)
            ps = np.where(S, np.clip(raw, 0, 1), ps)
            c = np.where(S, ps - raw, c)
            cases.append("alpha")
        elif np.mean(c[S]) < -1e-6:
            if raw[S].mean() >= 1:
                ps, c = np.where(S, 1.0, ps), np.where(S, 0.0, c)
                cases.append("pin")
            else:
                beta = np.sum(raw[S] - ps[S]) / np.sum(1 - ps[S])
                assert step.factor == pytest.approx(beta, rel=1e-12)
                ps = np.where(S & (ps < 1), ps + beta * (1 - ps), ps)
                c = ps - raw
                cases.append("beta")
        else:
            cases.append("accepted")
    return cases, ps, optimal


@pytest.mark.parametrize(
    "seed,lam,mode",
    [(0, 2.0, "reference"), (0, 3.0, "reference"), (3, 3.0, "reference"), (3, 3.0, "strict"),
     (3, 1.5, "reference")],
)
def test_algorithm1_bookkeeping_replayed(seed, lam, mode):
    y, p = _tiny(seed)
    res = ijdi_scan(DF, NEG, y, p, lam=lam, mode=mode)
    cases, ps, optimal = replay(res.history, y, p, lam, strict=mode == "strict")
    assert [s.edge_case for s in res.history] == cases
    assert res.converged and res.num_rescans == len(cases) - 1
    np.testing.assert_allclose(res.p_scan, ps, atol=1e-12)
    assert optimal >= 1  # the first scan (large scores) finds the global optimum
    for step in res.history:
        if step.edge_case in ("alpha", "beta"):
            assert 0 < step.factor <= 1


@pytest.mark.parametrize(
    "seed,lam,expect",
    [(0, 1.0, ["accepted"]), (0, 2.0, ["alpha", "beta", "accepted"])],
)
def test_algorithm1_matches_literal_reference(seed, lam, expect):
    """End to end against the literal Algorithm 1 with brute-force (globally optimal) scans."""
    y, p = _tiny(seed)
    sg, F, steps, ps = ref_algorithm1(ENUM, y, p, lam)
    assert steps == expect  # the oracle exercises the intended branches
    res = ijdi_scan(DF, NEG, y, p, lam=lam)
    assert [s.edge_case for s in res.history] == steps
    assert res.subset == _as_dict(sg)
    assert res.score == pytest.approx(F, abs=1e-7)
    np.testing.assert_allclose(res.p_scan, ps, atol=1e-12)
    assert res.mask.sum() == res.size == _rows(res.subset).sum()


def test_strict_and_reference_modes_differ_after_edge_case_1():
    """§5.4: after one α-step, mean_S p_scan = p̄_b + λ(p(~S) − p̄⁰) (reference) or p̄_b (strict)."""
    y, p = _tiny(0)
    lam = 2.0
    out = {}
    for mode in ("reference", "strict"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # the cap stops after one step
            out[mode] = ijdi_scan(DF, NEG, y, p, lam=lam, mode=mode, max_adjustments=1)
        assert out[mode].history[0].edge_case == "alpha"
    S = _rows(out["reference"].history[0].subset)
    assert _rows(out["strict"].history[0].subset).tolist() == S.tolist()
    raw = y.mean() + lam * (p - p.mean())
    np.testing.assert_allclose(out["reference"].p_scan[~S], np.clip(raw, 0, 1)[~S], atol=1e-15)
    np.testing.assert_allclose(out["strict"].p_scan[~S], np.clip(raw, 0, 1)[~S], atol=1e-15)
    np.testing.assert_allclose(out["strict"].p_scan[S], y.mean(), atol=1e-15)
    ref_s = out["reference"].p_scan[S]
    assert np.all((ref_s > 0) & (ref_s < 1))  # no clipping on S after the update
    target = y.mean() + lam * (p[~S].mean() - p.mean())
    assert np.mean(ref_s) == pytest.approx(target, abs=1e-12)
    assert np.mean(ref_s) > y.mean()  # the reference is slightly more lenient


def test_lambda_zero_equals_fpr_and_tpr_scan():
    y, p = _tiny(0)
    for side, fn, y_true in (("negative", fpr_scan, NEG), ("positive", tpr_scan, 1 - NEG)):
        rate = fn(DF, y_true, y)
        ij = ijdi_scan(DF, y_true, y, p, lam=0.0, side=side, num_restarts=10)
        assert rate.subset == ij.subset
        assert rate.score == pytest.approx(ij.score, abs=1e-9)
        np.testing.assert_array_equal(rate.mask, ij.mask)
        np.testing.assert_allclose(ij.p_scan, np.full(N, y.mean()), atol=1e-15)
    # ... and both equal the brute-force optimum of the closed form n·KL(r‖p̄_b) − 0.1·#values
    sg, F, S = brute_scan(ENUM, y, np.full(N, y.mean()), 0.1)
    n, r, pb = S.sum(), y[S].mean(), y.mean()
    kl = n * (r * math.log(r / pb) + (1 - r) * math.log((1 - r) / (1 - pb)))
    assert F == pytest.approx(kl - 0.1 * sum(len(s) for s in sg if s is not None), abs=1e-8)
    assert rate.subset == _as_dict(sg) and rate.score == pytest.approx(F, abs=1e-7)
    # ... and the engine's bias_scan with the constant rate (exact basis, another code path).
    b = bias_scan(DF, y, np.full(N, y.mean()), penalty=0.1)
    assert b.subset == rate.subset and b.score == pytest.approx(rate.score, abs=1e-9)


def test_threshold_scores_and_rules():
    y, p = _tiny(0)
    scores = np.where(y > 0, 0.7, 0.3)
    scores[:20] = 0.5  # exactly at the threshold: "ge" → 1, "gt" → 0
    ge = fpr_scan(DF, NEG, scores, threshold=0.5)
    gt = fpr_scan(DF, NEG, scores, threshold=0.5, threshold_rule="gt")
    yge, ygt = y.copy(), y.copy()
    yge[:20], ygt[:20] = 1.0, 0.0
    assert ge.score == pytest.approx(fpr_scan(DF, NEG, yge).score, abs=1e-12)
    assert gt.score == pytest.approx(fpr_scan(DF, NEG, ygt).score, abs=1e-12)
    per_row = fpr_scan(DF, NEG, scores, threshold=np.where(np.arange(N) < 20, 0.6, 0.5))
    assert per_row.score == pytest.approx(gt.score, abs=1e-12)


# ---------------------------------------------------------------------------------------------
# Hazards and caps


def _hazard_data():
    """At λ = 3 the a=0 rows get raw < 0 (p_scan = 0); a few of them have yhat = 1."""
    y, p = _tiny(0)
    y = y.copy()
    low = np.flatnonzero((CODES[:, 0] == 0) & (CODES[:, 1] == 0))[:3]
    y[low] = 1.0
    return y, p, low


def test_subgroup_with_every_row_positive_is_flagged_unbounded_at_the_default_clamp():
    """German credit, positive side, λ = 1 (issue #17): when every scanned row of S is predicted
    harmful, q runs to its cap whatever ``p_epsilon`` is; the result is flagged, not ranked."""
    y, p = _tiny(0)
    y = np.where(CODES[:, 0] == 2, 1.0, y)  # every row with a = 2 is predicted harmful
    res = ijdi_scan(DF, NEG, y, p, lam=0.5)  # default p_epsilon = 1e-6
    assert res.score > 0 and np.all(y[res.mask] == 1)
    assert res.unbounded and res.q == pytest.approx(1e6, rel=1e-6)
    assert "every row positive" in res.description
    bounded = ijdi_scan(DF, NEG, np.where(CODES[:, 0] == 2, np.arange(N) % 7 != 0, y), p,
                        lam=0.5)  # one in seven of those rows not harmful: q is finite
    assert bounded.score > 0 and not bounded.unbounded and bounded.q < 1e5


@pytest.mark.parametrize("eps", [1e-6, 0.0])
def test_zero_p_scan_with_positive_outcome_is_bounded_and_reported(eps):
    y, p, low = _hazard_data()
    lam = 3.0
    raw = y.mean() + lam * (p - p.mean())
    assert np.all(raw[low] < 0)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        res = ijdi_scan(DF, NEG, y, p, lam=lam, p_epsilon=eps, max_adjustments=0)
    msgs = [str(w.message) for w in rec]
    assert any("p_scan clipped to 0" in m for m in msgs), msgs
    assert any("max_adjustments=0" in m for m in msgs), msgs
    # bounded: log q ≤ log(1e6) (ε = 0) or each p_scan = 0 row adds ≤ log(1/ε) (ε = 1e-6)
    assert math.isfinite(res.score) and res.score <= res.size * math.log(1e6)
    assert res.score > 2 * 13  # ... yet dominated by those rows (≈ 13.8 each)
    assert set(low) <= set(np.flatnonzero(res.mask))
    # without the clamp the likelihood is unbounded: q runs to its cap, and the result says so
    assert res.unbounded == (eps == 0.0)
    assert ("unbounded:" in res.description) == (eps == 0.0)
    sg, F, _ = brute_scan(ENUM, y, np.clip(np.clip(raw, 0, 1), eps, 1 - eps), 0.1)
    assert res.subset == _as_dict(sg) and res.score == pytest.approx(F, rel=1e-6)


def test_cap_on_adjustments_is_reported():
    y, p = _tiny(0)
    sg, F, steps, ps = ref_algorithm1(ENUM, y, p, 2.0, cap=1)
    assert steps == ["alpha", "beta"]  # the second subgroup would need another adjustment
    with pytest.warns(RuntimeWarning, match="max_adjustments=1"):
        res = ijdi_scan(DF, NEG, y, p, lam=2.0, max_adjustments=1)
    assert not res.converged and res.num_rescans == 1
    assert [s.edge_case for s in res.history] == steps
    assert res.subset == _as_dict(sg) and res.score == pytest.approx(F, abs=1e-7)
    np.testing.assert_allclose(res.p_scan, ps, atol=1e-12)


def test_no_subgroup_result():
    y, p = _tiny(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = ijdi_scan(DF, NEG, y, p, lam=3.0)
    assert res.score == 0.0 and res.subset == {} and res.size == 0 and not res.mask.any()
    assert res.q == 1.0 and math.isnan(res.p_value) and res.null_scores is None


# ---------------------------------------------------------------------------------------------
# Bad input


@pytest.mark.parametrize(
    "kw,match",
    [
        ({"lam": -1.0}, "lam"),
        ({"lam": 1.0, "side": "both"}, "side"),
        ({"lam": 1.0, "mode": "exact"}, "mode"),
        ({"lam": 1.0, "num_samples": -1}, "num_samples"),
        ({"lam": 1.0, "num_samples": 2, "key": 0, "null": "bootstrap"}, "null"),
        ({"lam": 1.0, "beneficial_label": 2}, "beneficial_label"),
        ({"lam": 1.0, "top_k": 0}, "top_k"),
        ({"lam": 1.0, "threshold_rule": ">="}, "threshold_rule"),
        ({"lam": 1.0, "max_adjustments": -2}, "max_adjustments"),
        ({"lam": 1.0, "p_epsilon": 0.7}, "p_epsilon"),
        ({"lam": 1.0, "replicate_chunk": 0}, "replicate_chunk"),
        ({"lam": float("nan")}, "lam"),
    ],
)
def test_bad_arguments(kw, match):
    y, p = _tiny(0)
    with pytest.raises(ValueError, match=match):
        ijdi_scan(DF, NEG, y, p, **kw)


def test_bad_arrays():
    y, p = _tiny(0)
    with pytest.raises(ValueError, match="p_true"):
        ijdi_scan(DF, NEG, y, np.where(np.arange(N) == 3, 1.2, p), lam=1.0)
    with pytest.raises(ValueError, match="p_true"):
        ijdi_scan(DF, NEG, y, np.where(np.arange(N) == 3, np.nan, p), lam=1.0)
    with pytest.raises(ValueError, match="p_true"):
        ijdi_scan(DF, NEG, y, p[:-1], lam=1.0)
    with pytest.raises(ValueError, match="side"):
        ijdi_scan(DF, NEG, y, p, lam=1.0, side="positive")  # no y_true == 1
    with pytest.raises(ValueError, match="side"):
        tpr_scan(DF, NEG, y)
    with pytest.raises(ValueError, match="y_true"):
        fpr_scan(DF, np.full(N, 2), y)
    with pytest.raises(ValueError, match="y_pred"):
        fpr_scan(DF, NEG, np.where(np.arange(N) == 0, np.nan, y))
    with pytest.raises(ValueError, match="threshold"):
        fpr_scan(DF, NEG, y, threshold=np.ones(3))


# ---------------------------------------------------------------------------------------------
# Base-rate probabilities and λ


def test_estimate_true_probabilities_matches_sklearn():
    sklearn = pytest.importorskip("sklearn.linear_model")
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"u": rng.choice(["x", "y", "z"], 300), "v": rng.choice([0, 1, 2, 3], 300),
                       "w": rng.choice([True, False], 300)})
    logit = -0.5 + 1.2 * (df.u == "y") - 0.8 * (df.v == 3) + 0.6 * df.w
    y = (rng.uniform(size=300) < 1 / (1 + np.exp(-logit))).astype(int)
    from ofijax.scan._probabilities import one_hot_design

    for drop, l2 in ((False, 1.0), (True, 1.0), ({"u": "z", "w": False}, 0.5)):
        p = estimate_true_probabilities(df, y, drop_first=drop, l2=l2)
        X, names = one_hot_design(df, drop)
        lr = sklearn.LogisticRegression(C=1 / l2, tol=1e-10, max_iter=10_000).fit(X, y)
        np.testing.assert_allclose(p, lr.predict_proba(X)[:, 1], atol=1e-5)
    assert names == ["u=x", "u=y", "v=0", "v=1", "v=2", "v=3", "w=True"]
    # cross-fitting: each row predicted by a model that never saw it
    pc = estimate_true_probabilities(df, y, cross_fit=3)
    X, _ = one_hot_design(df)
    held = np.arange(300) % 3 == 1
    lr = sklearn.LogisticRegression(C=1.0, tol=1e-10, max_iter=10_000).fit(X[~held], y[~held])
    np.testing.assert_allclose(pc[held], lr.predict_proba(X[held])[:, 1], atol=1e-5)
    with pytest.raises(ValueError, match="drop_first"):
        estimate_true_probabilities(df, y, drop_first={"u": "q"})
    with pytest.raises(ValueError, match="cross_fit"):
        estimate_true_probabilities(df, y, cross_fit=1)
    with pytest.raises(ValueError, match="model"):
        estimate_true_probabilities(df, y, model="forest")


def test_lambda_from_costs():
    assert lambda_from_costs(1, 1, 2) == 1.0  # ratios (1, 2)
    assert lambda_from_costs(1, 2, 10) == pytest.approx(0.3)  # ratios (2, 10)
    assert lambda_from_costs(3, 6, 30) == pytest.approx(0.3)  # only ratios matter
    with pytest.raises(ValueError, match="cost_fp"):
        lambda_from_costs(0, 1, 1)
    with pytest.raises(ValueError, match="cost_imbalance"):
        lambda_from_costs(1, 1, 0)
    with pytest.raises(ValueError, match="cost_fn"):
        lambda_from_costs(1, -1, 1)


def test_top_k_later_find_counts_only_rows_not_in_earlier_finds():
    # find 1: g = a (most denied); find 2: h = x, which overlaps g = a: its sizes exclude those rows
    rng = np.random.default_rng(0)
    n = 1200
    df = pd.DataFrame({"g": rng.choice(list("abcd"), n), "h": rng.choice(list("xy"), n)})
    y = rng.integers(0, 2, n)
    den = np.where(df.g == "a", 0.7, np.where(df.h == "x", 0.35, 0.1))
    yh = np.where(y == 1, (rng.random(n) > den).astype(int), 1 - (rng.random(n) < 0.1))
    res = scan.fpr_scan(df, y, yh, top_k=2)  # label 1 = beneficial
    assert [t.subset for t in res.top] == [{"g": ("a",)}, {"h": ("x",)}]
    first = (df.g == "a").to_numpy()
    later = (df.h == "x").to_numpy() & ~first
    assert res.top[1].total_size == later.sum() and res.top[1].size == (later & (y == 1)).sum()
    assert res.top[1].size == res.top[1].mask.sum() and not (res.top[1].mask & first).any()
    assert "(not in the 1 earlier find)" in res.top[1].description
