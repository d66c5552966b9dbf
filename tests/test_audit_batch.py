"""Batch audits: equal to the one-candidate audit, exact counts, exact p-values, multiplicity, frontier."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import ofijax
from ofijax.auditing import (
    BatchAudit,
    audit_batch,
    benjamini_hochberg,
    holm,
    pareto_frontier,
    plot_frontier,
    select_candidates,
)


def _one_audit(y, pred, g, **kw):
    # keywords only: audit's positional order may become key-first
    return ofijax.audit(y_true=y, y_pred=pred, sensitive_features=g, num_samples=0, key=0, **kw)


def _assert_matches_audit(ba: BatchAudit, c: int, af, cand) -> None:
    """Both audits run the same rules in float64 on the same int64 counts: equal bit for bit."""
    got = ba.pairs[ba.pairs["candidate"] == cand].reset_index(drop=True)
    want = af.pairs
    assert len(got) == len(want)
    assert list(got["group_i"]) == [str(x) for x in want["group_i"]]
    assert list(got["group_j"]) == [str(x) for x in want["group_j"]]
    for col in ("n_i", "n_j", "ofi", "p_value", "p_adjusted", "di", "impact_ratio", "p_error_bound"):
        assert got[col].dtype == np.float64 or got[col].dtype == np.int64, col
        np.testing.assert_array_equal(got[col].to_numpy(), want[col].to_numpy(), err_msg=col)
    assert list(got["p_method"]) == list(want["p_method"])
    assert list(got["four_fifths"]) == list(want["four_fifths"])
    assert list(got["verdict"]) == list(want["verdict"])
    assert [None if pd.isna(x) else x for x in got["disadvantaged"]] == [
        None if pd.isna(x) else str(x) for x in want["disadvantaged"]]
    np.testing.assert_array_equal(ba.cms[c], af.cms)
    bg = ba.by_group[ba.by_group["candidate"] == cand]
    np.testing.assert_array_equal(bg[["n", "tp", "fn", "fp", "tn"]].to_numpy(),
                                  af.by_group[["n", "tp", "fn", "fp", "tn"]].to_numpy())
    for mine, theirs in (("selection_rate", "benefit"), ("accuracy", "accuracy"),
                         ("true_positive_rate", "true_positive_rate"),
                         ("false_positive_rate", "false_positive_rate"),
                         ("marginal_benefit", "marginal_benefit")):
        np.testing.assert_array_equal(bg[mine].to_numpy(np.float64), af.by_group[theirs].to_numpy(np.float64),
                                      err_msg=mine)
    row = ba.candidates.loc[cand]
    assert row["accuracy"] == af.overall["accuracy"]
    assert row["selection_rate"] == af.overall["benefit"]


def _random_problem(seed, n=300, c=6, k=4):
    rng = np.random.default_rng(seed)
    g = rng.choice(list("pqrs")[:k], size=n, p=np.r_[0.5, 0.3, 0.15, 0.05][:k] / np.r_[0.5, 0.3, 0.15, 0.05][:k].sum())
    y = rng.integers(0, 2, n)
    # candidates: some biased against a group, some random, one perfect
    preds = []
    for j in range(c):
        flip = rng.random(n) < 0.1
        deny = (rng.random(n) < 0.5) & (g == "q") & (j % 2 == 1)  # wrongly denied: bias against q
        preds.append(np.where(deny, 0, np.where(flip, 1 - y, y)))
    return y, np.stack(preds), g


@pytest.mark.parametrize("seed", [0, 1])
def test_equals_one_candidate_audit_random(seed):
    y, preds, g = _random_problem(seed)
    ba = audit_batch(y, preds, sensitive_features=g)
    assert ba.candidate_ids == tuple(range(len(preds)))
    for c in range(len(preds)):
        _assert_matches_audit(ba, c, _one_audit(y, preds[c], g), c)
    # at least one candidate is biased and one is not: the test can fail either way
    assert (ba.candidates["n_significant"] > 0).any()
    assert (ba.candidates["n_significant"] == 0).any()


def test_equals_one_candidate_audit_compas_threshold_grid():
    df = ofijax.datasets.load_compas("violent", filtered=True)
    y = df["two_year_recid"].to_numpy()  # 1 = recidivist (harmful)
    score = df["risk_decile"].to_numpy()  # high risk = the harmful prediction
    th = [3, 5, 8]
    ba = audit_batch(y, scores=score, thresholds=th, sensitive_features=df["race"].to_numpy(),
                     beneficial_label=0)
    assert ba.candidate_ids == (3.0, 5.0, 8.0)
    assert list(ba.candidates["threshold"]) == [3.0, 5.0, 8.0]
    for c, t in enumerate(th):
        pred = (score >= t).astype(int)
        af = _one_audit(y, pred, df["race"].to_numpy(), beneficial_label=0)
        _assert_matches_audit(ba, c, af, float(t))
    assert set(ba.pairs["verdict"]) >= {"algorithmic bias", "no evidence"}


def test_compas_paper_prediction_as_a_column():
    df = ofijax.datasets.load_compas("violent", filtered=True)
    preds = pd.DataFrame({"low_risk": df["pred_low_risk"], "everyone": np.ones(len(df), int)})
    ba = audit_batch(df["label_not_recid"], preds, sensitive_features=df["race"])
    af = _one_audit(df["label_not_recid"].to_numpy(), df["pred_low_risk"].to_numpy(), df["race"].to_numpy())
    _assert_matches_audit(ba, 0, af, "low_risk")
    assert ba.candidate_ids == ("low_risk", "everyone")


def test_exact_counts_against_numpy():
    rng = np.random.default_rng(3)
    n, c = 500, 7
    y = rng.integers(0, 2, n)
    g = rng.integers(0, 3, n)
    preds = rng.integers(0, 2, (c, n))
    w = rng.integers(0, 4, n)
    ba = audit_batch(y, preds, sensitive_features=g, sample_weight=w)
    assert ba.cms.dtype == np.int64
    for ci in range(c):
        for gi in range(3):
            m = g == gi
            want = [np.sum(w[m] * (y[m] == 1) * (preds[ci, m] == 1)), np.sum(w[m] * (y[m] == 1) * (preds[ci, m] == 0)),
                    np.sum(w[m] * (y[m] == 0) * (preds[ci, m] == 1)), np.sum(w[m] * (y[m] == 0) * (preds[ci, m] == 0))]
            assert ba.cms[ci, gi].tolist() == [int(x) for x in want]
    # threshold grid counts: score >= t, compared in float64
    s = rng.random(n)
    th = np.r_[0.0, np.sort(s)[[10, 250, 499]], 1.5]
    bt = audit_batch(y, scores=s, thresholds=th, sensitive_features=g)
    for ti, t in enumerate(th):
        yp = (s >= t).astype(int)
        for gi in range(3):
            m = g == gi
            assert bt.cms[ti, gi].tolist() == [int(np.sum((y[m] == a) & (yp[m] == b))) for a, b in
                                                ((1, 1), (1, 0), (0, 1), (0, 0))]


def _brute_pvalue(cm_i, cm_j, null):
    """Exact p-value by enumerating every pair of confusion matrices (Fractions; tiny n only)."""
    n_i, n_j = sum(cm_i), sum(cm_j)
    pooled = [a + b for a, b in zip(cm_i, cm_j)]
    tot = sum(pooled)

    def dist(n):
        out = {}
        for cm in itertools.product(range(n + 1), repeat=4):
            if sum(cm) != n:
                continue
            if null == "uniform":
                pr = Fraction(1, math.comb(n + 3, 3))
            else:
                pr = Fraction(math.factorial(n))
                for x, p in zip(cm, pooled):
                    pr *= Fraction(p, tot) ** x / math.factorial(x)
            d = cm[2] - cm[1]
            out[d] = out.get(d, 0) + pr
        return out

    m = abs((cm_i[2] - cm_i[1]) * n_j - (cm_j[2] - cm_j[1]) * n_i)
    di, dj = dist(n_i), dist(n_j)
    return float(sum(pa * pb for a, pa in di.items() for b, pb in dj.items() if abs(a * n_j - b * n_i) >= m))


@pytest.mark.parametrize("null", ["pooled", "uniform"])
def test_pvalues_equal_exact_per_pair_test(null):
    rng = np.random.default_rng(5)
    n = 14
    y = rng.integers(0, 2, n)
    g = np.array(list("aaaaabbbbbcccc"))
    preds = rng.integers(0, 2, (5, n))
    ba = audit_batch(y, preds, sensitive_features=g, null=null)
    for c in range(5):
        for r in ba.pairs[ba.pairs["candidate"] == c].itertuples():
            i, j = "abc".index(r.group_i), "abc".index(r.group_j)
            cm_i, cm_j = ba.cms[c, i].tolist(), ba.cms[c, j].tolist()
            assert r.p_value == pytest.approx(ofijax.ofi_test(cm_i, cm_j, null=null).p_value, rel=1e-9, abs=1e-12)
            assert r.p_value == pytest.approx(_brute_pvalue(cm_i, cm_j, null), rel=1e-9, abs=1e-12)


def test_small_pvalues_are_accurate_not_floored():
    # a strongly biased candidate: p ~ 1e-11 must match the exact Fraction enumeration to 1e-9
    # relative, not a float floor; the unbiased candidate beside it in the batch gets p = 1
    y = np.r_[np.ones(30), np.zeros(10), np.ones(30), np.zeros(10)].astype(int)
    g = np.r_[["a"] * 40, ["b"] * 40]
    biased = np.r_[np.ones(40), np.zeros(40)].astype(int)  # a: TP 30, FP 10; b: FN 30, TN 10
    ba = audit_batch(y, np.stack([biased, y]), sensitive_features=g)
    assert ba.cms[0].tolist() == [[30, 0, 10, 0], [0, 30, 0, 10]]
    p = ba.pairs["p_value"].to_numpy()
    ref = _brute_pvalue([30, 0, 10, 0], [0, 30, 0, 10], "pooled")
    assert 1e-13 < ref < 1e-10
    assert p[0] == pytest.approx(ref, rel=1e-9, abs=0)
    assert p[1] == 1.0
    assert ba.pairs["verdict"].tolist() == ["algorithmic bias", "no evidence"]


def test_multiplicity_within_and_across():
    y, preds, g = _random_problem(7, n=400, c=8)
    ba = audit_batch(y, preds, sensitive_features=g, across="holm")
    raw = ba.pairs["p_value"].to_numpy()
    np.testing.assert_allclose(ba.pairs["p_across"], holm(raw))
    per = ba.pairs.groupby("candidate", sort=False)["p_value"].apply(lambda s: holm(s.to_numpy()))
    np.testing.assert_allclose(ba.pairs["p_adjusted"], np.concatenate(per.to_list()))
    bb = audit_batch(y, preds, sensitive_features=g, across="bh")
    m = raw.size
    want = np.array([min(1.0, min(m * q / np.sum(raw <= q) for q in raw if q >= p)) for p in raw])
    np.testing.assert_allclose(bb.pairs["p_across"], want, rtol=1e-12)
    bn = audit_batch(y, preds, sensitive_features=g, across="none")
    np.testing.assert_allclose(bn.pairs["p_across"], bn.pairs["p_adjusted"])
    # the batch correction is never more lenient than the within-candidate one
    assert (ba.candidates["n_significant_across"] <= ba.candidates["n_significant"]).all()
    assert np.all(bb.pairs["p_across"].to_numpy() >= raw - 1e-15)
    assert "selection" in ba.notes[0]


def test_benjamini_hochberg_reference():
    p = np.array([0.001, 0.008, 0.039, 0.041, 0.042, 0.06, 0.074, 0.205, 0.212, 0.216])
    # textbook step-up: reject ranks 1..2 at q = 0.05
    q = benjamini_hochberg(p)
    assert (q < 0.05).sum() == 2
    np.testing.assert_allclose(q[:2], [0.01, 0.04])


def test_summary_columns_and_order_independence():
    y, preds, g = _random_problem(11, n=350, c=5)
    ba = audit_batch(y, preds, sensitive_features=g)
    c = ba.candidates
    for cand in range(5):
        p = ba.pairs[ba.pairs["candidate"] == cand]
        assert c.loc[cand, "max_abs_ofi"] == pytest.approx(p["ofi"].abs().max())
        w = p.loc[p["ofi"].abs().idxmax()]
        assert c.loc[cand, "worst_pair"] == f"{w.group_i} vs {w.group_j}"
        assert c.loc[cand, "n_significant"] == (p["verdict"] == "algorithmic bias").sum()
        bg = ba.by_group[ba.by_group["candidate"] == cand]
        assert c.loc[cand, "di_ratio"] == pytest.approx(bg["selection_rate"].min() / bg["selection_rate"].max())
        assert c.loc[cand, "accuracy"] == pytest.approx(np.mean(preds[cand] == y))
    # renaming groups (which reorders them) changes no number
    ren = {"p": "z", "q": "a", "r": "m", "s": "b"}
    g2 = np.array([ren[x] for x in g])
    b2 = audit_batch(y, preds, sensitive_features=g2)
    cols = ["max_abs_ofi", "di_ratio", "di_min", "di_max", "n_significant", "n_significant_across", "n_systemic"]
    pd.testing.assert_frame_equal(b2.candidates[cols], c[cols], rtol=1e-6)
    assert list(b2.by_severity().index)[:1] == list(ba.by_severity().index)[:1]


def test_pareto_frontier_against_brute_force():
    rng = np.random.default_rng(2)
    for _ in range(20):
        m = 30
        df = pd.DataFrame({"utility": rng.integers(0, 8, m) / 8, "max_abs_ofi": rng.integers(0, 8, m) / 8,
                           "di_ratio": rng.integers(0, 8, m) / 8})
        for fair, lower in (("max_abs_ofi", True), ("di_ratio", False)):
            cost = df[fair].to_numpy() * (1 if lower else -1)
            u = df["utility"].to_numpy()
            want = {a for a in range(m) if not any(
                u[b] >= u[a] and cost[b] <= cost[a] and (u[b] > u[a] or cost[b] < cost[a]) for b in range(m))}
            got = pareto_frontier(df, fairness=fair)
            assert set(got.index) == want
            assert list(got["utility"]) == sorted(got["utility"])


def test_select_candidates_constraints():
    y, preds, g = _random_problem(0)
    ba = audit_batch(y, preds, sensitive_features=g)
    sel = select_candidates(ba)
    c = ba.candidates
    want = c[(c["n_significant"] == 0) & (c["di_min"] >= 0.8) & (c["di_max"] <= 1.25)]
    assert set(sel.index) == set(want.index)
    assert list(sel["utility"]) == sorted(sel["utility"], reverse=True)
    assert set(ba.select(di_range=None).index) == set(c.index[c["n_significant"] == 0])
    assert len(select_candidates(ba, max_abs_ofi=0.0, di_range=None)) <= len(c)
    with pytest.raises(ValueError, match="^di_range"):
        select_candidates(ba, di_range=(1.2, 0.8))
    with pytest.raises(ValueError, match="^significance"):
        select_candidates(ba, significance="both")


def test_inputs_dict_names_and_leading_axes():
    y, preds, g = _random_problem(4, c=4)
    a = audit_batch(y, {"m0": preds[0], "m1": preds[1]}, sensitive_features=g)
    assert a.candidate_ids == ("m0", "m1")
    b = audit_batch(y, preds.reshape(2, 2, -1), sensitive_features=g)
    assert b.candidate_ids == ((0, 0), (0, 1), (1, 0), (1, 1))
    c = audit_batch(y, preds, sensitive_features=g, candidates=["a", "b", "c", "d"], utility="balanced_accuracy")
    assert c.settings["utility"] == "balanced_accuracy"
    np.testing.assert_allclose(b.pairs["p_value"], c.pairs["p_value"])
    d = audit_batch(y, preds, sensitive_features=g, utility=lambda cm: cm[:, 0].astype(float))
    assert d.candidates["utility"].tolist() == d.cms.sum(1)[:, 0].tolist()


@pytest.mark.parametrize("kwargs, match", [
    ({"y_pred": np.ones(6, int)}, "^y_pred: audit_batch needs"),
    ({"y_pred": np.ones((2, 6), int), "scores": np.ones(6), "thresholds": [0.5]}, "^y_pred: pass either"),
    ({"scores": np.ones(6)}, "^thresholds"),
    ({}, "^y_pred"),
    ({"y_pred": np.ones((2, 6), int), "sample_weight": np.full(6, 0.5)}, "^sample_weight"),
    ({"y_pred": np.ones((2, 6), int), "across": "fdr"}, "^across"),
    ({"y_pred": np.ones((2, 6), int), "alpha": 1.5}, "^alpha"),
    ({"y_pred": np.ones((2, 6), int), "utility": "f7"}, "^utility"),
    ({"y_pred": np.ones((2, 6), int), "candidates": ["x"]}, "^candidates"),
    ({"y_pred": np.full((2, 6), 2)}, "^y_pred"),
])
def test_bad_inputs(kwargs, match):
    with pytest.raises(ValueError, match=match):
        audit_batch([1, 0, 1, 0, 1, 0], sensitive_features=list("aabbab"), **kwargs)


def test_misaligned_pandas_refused_and_one_group_refused():
    y = pd.Series([1, 0, 1, 0], index=[0, 1, 2, 3])
    g = pd.Series(list("abab"), index=[3, 2, 1, 0])  # the same labels in another order: aligned
    ba = audit_batch(y, pd.DataFrame({"m": [1, 1, 0, 0]}), sensitive_features=g, min_group_size=1)
    assert ba.cms[0].tolist() == [[0, 0, 1, 1], [1, 1, 0, 0]]  # a = rows 1 (FP), 3 (TN); b = rows 0 (TP), 2 (FN)
    with pytest.raises(ValueError, match="^sensitive_features: "):
        audit_batch(y, np.ones((2, 4), int), sensitive_features=g.set_axis([4, 5, 6, 7]))
    with pytest.raises(ValueError, match="^sensitive_features: only one group"):
        audit_batch([1, 0, 1], np.ones((2, 3), int), sensitive_features=["a"] * 3)


def test_plot_frontier_draws_both_panels(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    y, preds, g = _random_problem(0)
    ba = audit_batch(y, preds, sensitive_features=g)
    fig = plot_frontier(ba)
    assert len(fig.axes) == 2
    fig.savefig(tmp_path / "f.png")
    assert (tmp_path / "f.png").stat().st_size > 1000


# ------------------------------------------------------------------------------------------------
# CLI: ofijax audit --pred COL [COL ...] and --score COL --thresholds START:STOP:STEP
# ------------------------------------------------------------------------------------------------


@pytest.fixture
def cli_csv(tmp_path):
    y, preds, g = _random_problem(0, n=240, c=2, k=3)
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"y": y, "g": g, "p1": preds[0], "p2": preds[1],
                       "s": np.round(rng.random(len(y)) * 0.5 + 0.5 * y, 3)})
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    return path, df


def test_cli_several_pred_columns(cli_csv, tmp_path, capsys):
    from ofijax.cli import main

    path, df = cli_csv
    out = tmp_path / "rep"
    rc = main(["audit", "--data", str(path), "--label", "y", "--group", "g", "--pred", "p1", "p2",
               "--out", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "2 candidates x 3 pairs" in text and "selection" in text
    for f in ("candidates.csv", "pairs.csv", "by_group.csv", "batch.json", "report.md", "frontier.png"):
        assert (out / f).exists(), f
    ba = audit_batch(df["y"], df[["p1", "p2"]], sensitive_features=df["g"])
    pairs = pd.read_csv(out / "pairs.csv")
    np.testing.assert_allclose(pairs["p_value"], ba.pairs["p_value"], rtol=1e-12)
    assert list(pairs["verdict"]) == list(ba.pairs["verdict"])
    assert "Selection caveat" in (out / "report.md").read_text()


def test_cli_score_threshold_grid(cli_csv, tmp_path, capsys):
    from ofijax.cli import main

    path, df = cli_csv
    out = tmp_path / "rep"
    rc = main(["audit", "--data", str(path), "--label", "y", "--group", "g", "--score", "s",
               "--thresholds", "0.2:0.8:0.2", "--out", str(out), "--no-plots", "--across", "bh"])
    assert rc == 0
    cands = pd.read_csv(out / "candidates.csv")
    assert sorted(cands["threshold"]) == [0.2, 0.4, 0.6, 0.8]
    ba = audit_batch(df["y"], scores=df["s"], thresholds=[0.2, 0.4, 0.6, 0.8], sensitive_features=df["g"],
                     across="bh")
    np.testing.assert_array_equal(cands.set_index("threshold").loc[[0.2, 0.4, 0.6, 0.8], "n_significant_across"],
                                  ba.candidates["n_significant_across"])
    assert not (out / "frontier.png").exists()


@pytest.mark.parametrize("extra, match", [
    (["--pred", "p1", "--thresholds", "0:1:0.1"], "--thresholds: only used with --score"),
    (["--pred", "p1", "p2", "--score", "s", "--thresholds", "0:1:0.1"], "--pred: pass either"),
    (["--score", "s", "--thresholds", "1:0:0.1"], "--thresholds: needs finite"),
    (["--score", "s", "--thresholds", "a:b"], "--thresholds: expected"),
    (["--score", "s"], "--thresholds: --score needs"),
    (["--score", "g", "--thresholds", "0:1:0.5"], "--score: column"),
    (["--pred", "p1", "p1"], "--pred: column 'p1' is given twice"),
    (["--pred", "p1", "p2", "--method", "monte_carlo", "--samples", "0"], "--samples"),
])
def test_cli_batch_errors_one_line_exit_2(cli_csv, tmp_path, capsys, extra, match):
    from ofijax.cli import main

    path, _ = cli_csv
    out = tmp_path / "rep"
    rc = main(["audit", "--data", str(path), "--label", "y", "--group", "g", *extra, "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert len(err.splitlines()) == 1 and match in err, err
    assert not out.exists()


def test_cli_batch_monte_carlo_matches_the_api(cli_csv, tmp_path):
    """--method monte_carlo in a batch audit: the API's estimates for the same key and draws."""
    from ofijax.cli import main

    path, df = cli_csv
    out = tmp_path / "mc"
    rc = main(["audit", "--data", str(path), "--label", "y", "--group", "g", "--pred", "p1", "p2",
               "--method", "monte_carlo", "--samples", "300", "--seed", "3", "--out", str(out),
               "--quiet", "--no-plots"])
    assert rc == 0
    api = audit_batch(df.y, df[["p1", "p2"]], sensitive_features=df.g.astype(str),
                      method="monte_carlo", key=3, num_samples=300)
    got = pd.read_csv(out / "pairs.csv")
    mc = api.pairs["p_method"] == "monte_carlo"  # the rest: M = 0, p = 1 exactly
    assert mc.sum() >= 4 and (api.pairs.loc[~mc, "p_value"] == 1.0).all()
    assert sorted(got["p_method"]) == sorted(api.pairs["p_method"])
    assert np.isnan(api.pairs.loc[mc, "p_error_bound"]).all()
    np.testing.assert_array_equal(np.sort(got["p_value"].to_numpy()),
                                  np.sort(api.pairs["p_value"].to_numpy()))
    assert got["p_value"].min() >= 1 / 301  # (1 + hits) / (1 + draws)


def test_saddlepoint_path_is_flagged_and_within_its_bound():
    rng = np.random.default_rng(9)
    n = 5000
    g = np.r_[["a"] * 2500, ["b"] * 2500]
    y = rng.integers(0, 2, n)
    base = np.where(rng.random(n) < 0.2, 1 - y, y)
    preds = np.stack([np.where((rng.random(n) < 0.1 * j) & (g == "b"), 0, base) for j in range(3)])
    ex = audit_batch(y, preds, sensitive_features=g, method="exact")
    sp = audit_batch(y, preds, sensitive_features=g, method="saddlepoint")
    assert not ex.pairs["approximate"].any()
    moved = sp.pairs["p_value"] < 1.0
    assert sp.pairs.loc[moved, "approximate"].all()
    np.testing.assert_allclose(sp.pairs["p_value"], ex.pairs["p_value"], rtol=1e-3)
    assert any("saddlepoint" in note for note in sp.notes)
    assert ex.pairs["p_value"].min() < 1e-6  # the test reaches the tail


def test_huge_integer_weights_do_not_wrap():
    # weighted counts above 2**31: the OFI/DI tables must not wrap to negative numbers
    y = np.array([1, 0, 1, 0, 1, 0, 1, 0])
    g = np.array(list("aaaabbbb"))
    preds = np.array([[1, 0, 1, 1, 1, 0, 0, 0]])
    w = np.full(8, 2**30, dtype=np.int64)
    ba = audit_batch(y, preds, sensitive_features=g, sample_weight=w, method="saddlepoint")
    assert ba.cms.min() >= 0 and ba.cms.sum() == 8 * 2**30
    small = audit_batch(y, preds, sensitive_features=g)
    np.testing.assert_allclose(ba.pairs["ofi"], small.pairs["ofi"], rtol=1e-6)
    np.testing.assert_allclose(ba.pairs["di"], small.pairs["di"], rtol=1e-6)


def test_threshold_comparisons_are_float64_exact():
    # a score 1e-9 below its threshold is below it; integer scores above 2**24 are not rounded
    y = np.array([1, 0, 1, 0, 1, 0])
    g = np.array(list("aabbab"))
    s = np.array([0.5 - 1e-9, 0.5, 0.5 + 1e-9, 2.0**24 + 1, 2.0**24, 0.1])
    th = [0.5, 2.0**24 + 1]
    ba = audit_batch(y, scores=s, thresholds=th, sensitive_features=g)
    for c, t in enumerate(th):
        yp = (s >= t).astype(int)
        want = audit_batch(y, yp[None], sensitive_features=g).cms[0]
        np.testing.assert_array_equal(ba.cms[c], want)


def test_log10_p_value_keeps_digits_of_tiny_p():
    n = 3000
    g = np.r_[["a"] * n, ["b"] * n]
    y = np.r_[np.ones(n // 2), np.zeros(n // 2), np.ones(n // 2), np.zeros(n // 2)].astype(int)
    pred = np.r_[np.ones(n), np.zeros(n)].astype(int)  # a: everyone selected, b: nobody
    ba = audit_batch(y, pred[None], sensitive_features=g, method="exact")
    r = ofijax.distributions.ofi_pvalue_cms(ba.cms[0, 0], ba.cms[0, 1], null="pooled", method="exact")
    assert ba.pairs["log10_p_value"].iloc[0] == pytest.approx(float(r.log_p_value) / np.log(10), rel=1e-9)
    assert ba.pairs["log10_p_value"].iloc[0] < -308 and ba.pairs["p_value"].iloc[0] == 0.0


def test_small_groups_follow_audit_minimum_evidence_rule():
    rng = np.random.default_rng(5)
    g = np.array(["big"] * 60 + ["tiny"] * 3 + ["mid"] * 40)
    y = rng.integers(0, 2, g.size)
    preds = np.stack([y, 1 - y])
    ba = audit_batch(y, preds, sensitive_features=g)
    tiny = ba.pairs[(ba.pairs.group_i == "tiny") | (ba.pairs.group_j == "tiny")]
    assert set(tiny["verdict"]) == {"too small to judge"}
    for c in range(2):
        af = _one_audit(y, preds[c], g)
        _assert_matches_audit(ba, c, af, c)
