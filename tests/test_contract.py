"""The invariance contract of every public entry point (issue #37, "Trust round 3", the contract).

For ``ofijax.audit`` (also with ``data=``, ``sample_weight``, ``bins``, ``scan=True``),
``ofijax.audit_batch`` (one candidate, several, a threshold grid), ``ofijax.group_confusion_matrices``,
``ofijax.stats.collect`` + ``ofijax.stats.audit_counts`` (and ``from_spark``, ``fpr_scan_cells``,
``tpr_scan_cells``), the scans (``bias_scan``, ``fpr_scan``, ``tpr_scan``, ``ijdi_scan``) and the
CLI (``ofijax audit``, its batch form, and ``ofijax scan``, in the pandas, stream and Spark engines):

(a) permuting rows, or the pandas index (same labels in another order), changes no number;
(b) renaming or reordering groups (and scan attribute values) changes no number, up to orientation:
    OFI(i, j) = -OFI(j, i), TE antisymmetric, the four-fifths outcome names the same group, the same
    verdicts;
(c) re-typing labels and group codes (int, float, bool, str, NumPy '<U', category, nullable, Arrow,
    pyarrow, polars; in files: CSV text, parquet types) changes no number;
and one test pushes the same table through every engine (numpy, pandas, polars, counts, CSV and
parquet through the CLI's pandas, stream and Spark engines, ``stats.from_spark``, ``audit_batch``
with one candidate) and requires the same pair and group tables.

Results are compared **keyed by group label** (mapped back to the baseline's labels), never by
position, with exact equality for counts, verdicts and words, and rtol 1e-12 for floats. Besides the
invariances, every call's counts are checked against a brute force over the rows, OFI, DI and the
impact ratio against ``fractions.Fraction``, the four-fifths outcome against the regulator's rule
(lower selection rate over the higher < 4/5) and the Holm adjustment against a direct
implementation, so a number that is wrong the same way in both calls still fails.

Randomized outputs: the bootstrap intervals and Monte Carlo p-values are checked to be
deterministic for a fixed input and to keep their distribution under permuted rows and renamed
groups (the same key may legitimately draw other resamples there). Scans are deterministic given
``key``; permuted rows and re-typed values (same order) give the same draw; renamed values (another
order) change which subgroups the fixed key's restarts start from, so they are compared where the
search is exhaustive or has enough restarts (64) to reach the best subgroup of these small spaces
(an exact tie between two subgroups may be broken by the values' order: accepted only as a tie).
Randomization-test p-values of the scans are checked for determinism only (their distribution would
need hundreds of replicates per example: too slow here).

CLI and Spark cases use a few fixed tables (each CLI run is an in-process ``ofijax.cli.main`` call
in a temporary working directory, with absolute paths: the shared Spark session resolves relative
ones against its own start directory); the API cases use hypothesis with small tables, no shrinking.
Run: ``python -m pytest -q -n 0 tests/test_contract.py`` (~60-150 s on the shared 2 cores).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import re
from fractions import Fraction
from functools import partial

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import ofijax
from ofijax import scan as S
from ofijax import stats
from ofijax.auditing.reporting import group_label
from ofijax.cli import main

SETTINGS = settings(
    max_examples=8,
    deadline=None,
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.generate],  # no shrinking: a failure shows its first example
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.function_scoped_fixture],
)

RTOL = 1e-12
NAMES = np.array(["a", "b", "c", "d"], dtype=object)  # the baseline's labels of codes 0..3
RENAMED = np.array(["zulu", "yankee", "x-ray", "whiskey"], dtype=object)  # reversed sort order


# ---------------------------------------------------------------------------------------------
# tables
# ---------------------------------------------------------------------------------------------


def make_table(seed: int, n: int, k: int, zero_group: bool = False, tiny_group: bool = False) -> dict:
    """A random table: labels ``y``, predictions ``p`` (0/1 ints), group codes ``g`` in 0..k-1
    (every group present), probabilities ``prob``, and attribute codes ``a`` (3), ``b`` (2), ``c`` (4).
    ``zero_group``: group 0 selects no one (DI 0 / undefined: issue #37 item 1); ``tiny_group``: the
    last group has one row (rates and TE undefined)."""
    rng = np.random.default_rng(seed)
    g = rng.integers(0, k, n)
    if tiny_group and k > 2:
        g[g == k - 1] = rng.integers(0, k - 1, int((g == k - 1).sum()))
    g[:k] = np.arange(k)
    rng.shuffle(g)
    y = rng.integers(0, 2, n)
    p = (rng.random(n) < np.array([0.25, 0.5, 0.7, 0.45])[g]).astype(np.int64)
    if zero_group:
        p[g == 0] = 0
    return {
        "y": y.astype(np.int64), "p": p, "g": g.astype(np.int64), "prob": rng.uniform(0.05, 0.95, n),
        "a": rng.integers(0, 3, n), "b": rng.integers(0, 2, n), "c": rng.integers(0, 4, n),
    }


TABLES = st.builds(
    make_table, seed=st.integers(0, 2**32 - 1), n=st.sampled_from([24, 60, 150]),
    k=st.integers(2, 4), zero_group=st.booleans(), tiny_group=st.booleans(),
)


def identity(k):
    return {NAMES[c]: int(c) for c in range(k)}


# ---------------------------------------------------------------------------------------------
# independent references
# ---------------------------------------------------------------------------------------------


def brute_counts(y, p, g) -> dict:
    """{code: (TP, FN, FP, TN)} by a Python loop over the rows."""
    out: dict = {}
    for yi, pi, gi in zip(y.tolist(), p.tolist(), g.tolist()):
        c = out.setdefault(gi, [0, 0, 0, 0])
        c[{(1, 1): 0, (1, 0): 1, (0, 1): 2, (0, 0): 3}[(yi, pi)]] += 1
    return {k: tuple(v) for k, v in out.items()}


def frac_ofi(ci, cj) -> Fraction:
    return Fraction(ci[2] - ci[1], sum(ci)) - Fraction(cj[2] - cj[1], sum(cj))


def frac_sel(c) -> Fraction:
    return Fraction(c[0] + c[2], sum(c))


def frac_di(ci, cj) -> float:
    """Paper DI: selection rate of i over that of j; NaN when j selects no one."""
    si, sj = frac_sel(ci), frac_sel(cj)
    return math.nan if sj == 0 else float(si / sj)


def ref_four_fifths(ci, cj, li, lj) -> str:
    """The regulator's impact ratio (lower selection rate over the higher): < 4/5 fails and names
    the group selected less; both zero is undefined. Whatever the order of the pair."""
    si, sj = frac_sel(ci), frac_sel(cj)
    if si == 0 and sj == 0:
        return "undefined"
    if min(si, sj) / max(si, sj) < Fraction(4, 5):
        return f"fails: {li if si < sj else lj!r} selected less"
    return "passes"


def ref_impact_ratio(ci, cj) -> float:
    """Lower selection rate over the higher (symmetric); NaN when neither group selects anyone."""
    si, sj = frac_sel(ci), frac_sel(cj)
    return math.nan if max(si, sj) == 0 else float(min(si, sj) / max(si, sj))


def ref_holm(p: list[float]) -> list[float]:
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    out, running = [0.0] * m, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


# ---------------------------------------------------------------------------------------------
# group-keyed views (labels mapped back to the baseline's codes) and their comparison
# ---------------------------------------------------------------------------------------------


def _back_lookup(back: dict, label):
    """The baseline code of a result's label: by the label itself, or by its printed form (the
    pair tables' ``disadvantaged``/``favoured`` columns print labels)."""
    if label in back:
        return back[label]
    printed = {group_label(k): v for k, v in back.items()}
    if label in printed:
        return printed[label]
    raise AssertionError(f"label {label!r} ({type(label).__name__}) is not one of {list(back)}")


def _orient_four_fifths(text: str, codes: dict) -> str:
    """"fails: i selected less" -> "fails: <code> selected less" (orientation-free)."""
    return re.sub(r"\b([ij]) selected", lambda m: f"{codes[m.group(1)]!r} selected", str(text))


SYMMETRIC_PAIR_COLUMNS = ("p_value", "p_adjusted", "p_across", "log10_p_value", "approximate", "p_method",
                          "p_error_bound", "null", "impact_ratio", "verdict", "significant_across")


def pair_view(records, back: dict, *, candidate: bool = False, directional_di: bool = True) -> dict:
    """{(candidate?, code_a, code_b) with code_a < code_b: oriented record} of a pair table.

    OFI, selection rates and n are oriented to (a, b) (OFI(b, a) = -OFI(a, b)); the four-fifths
    outcome names the group; ``disadvantaged``/``favoured`` are mapped to codes. ``di`` is
    directional, so it is kept under ``di`` when the row is (a, b) and ``di_ba`` when it is (b, a)
    (compare it where orientation is fixed, or through the ``di`` matrix / Fraction reference)."""
    out = {}
    for r in records:
        ci, cj = _back_lookup(back, r["group_i"]), _back_lookup(back, r["group_j"])
        swap = ci > cj
        a, b = (cj, ci) if swap else (ci, cj)
        rec = {}
        for col in ("n_i", "n_j", "selection_rate_i", "selection_rate_j", "accuracy_i", "accuracy_j",
                    "marginal_benefit_i", "marginal_benefit_j"):
            if col in r:
                side = col[-1]
                rec[col[:-1] + ({"i": "a", "j": "b"}[side] if not swap else {"i": "b", "j": "a"}[side])] = r[col]
        for col in ("ofi", "te"):  # antisymmetric
            if col in r:
                rec[col] = -r[col] if swap and r[col] is not None else r[col]  # None: JSON's NaN
        for col in SYMMETRIC_PAIR_COLUMNS:
            if col in r:
                rec[col] = r[col]
        if "four_fifths" in r:
            rec["four_fifths"] = _orient_four_fifths(r["four_fifths"], {"i": ci, "j": cj})
        for col in ("disadvantaged", "favoured"):
            if col in r:
                rec[col] = None if r[col] is None or (isinstance(r[col], float) and math.isnan(r[col])) \
                    else _back_lookup(back, r[col])
        if "di" in r and directional_di:
            rec["di_ba" if swap else "di"] = r["di"]
        key = (r["candidate"], a, b) if candidate else (a, b)
        assert key not in out, f"pair {key} twice"
        out[key] = rec
    return out


def audit_view(af, back: dict) -> dict:
    """Everything deterministic in an AuditFrame, keyed by baseline code."""
    codes = [_back_lookup(back, g) for g in af.groups]
    assert len(set(codes)) == len(codes), f"two groups map to one: {af.groups}"
    pos = {c: i for i, c in enumerate(codes)}
    view: dict = {}
    for c in codes:
        view[("cm", c)] = tuple(int(x) for x in np.asarray(af.cms)[pos[c]])
        row = af.by_group.iloc[pos[c]]
        view[("by_group", c)] = {col: float(row[col]) for col in af.by_group.columns}
    for m in ("ofi", "di", "te", "p_value", "p_adjusted"):
        mat = np.asarray(getattr(af, m), dtype=np.float64)
        for a in codes:
            for b in codes:
                if a != b:
                    view[(m, a, b)] = float(mat[pos[a], pos[b]])
    recs = af.pairs.to_dict("records")
    view["pairs"] = pair_view(recs, back, directional_di=False)
    return view


def _same(x, y, rtol=RTOL) -> bool:
    if isinstance(x, dict) and isinstance(y, dict):
        return x.keys() == y.keys() and all(_same(x[k], y[k], rtol) for k in x)
    if isinstance(x, (tuple, list)) and isinstance(y, (tuple, list)):
        return len(x) == len(y) and all(_same(a, b, rtol) for a, b in zip(x, y))
    if (x is None and isinstance(y, float) and math.isnan(y)) or (
            y is None and isinstance(x, float) and math.isnan(x)):
        return True  # JSON (report.json) writes NaN as null
    if isinstance(x, (bool, np.bool_, str, type(None), frozenset)) or isinstance(
            y, (bool, np.bool_, str, type(None), frozenset)):
        return x == y
    if isinstance(x, (int, np.integer)) and isinstance(y, (int, np.integer)):
        return int(x) == int(y)
    fx, fy = float(x), float(y)
    if math.isnan(fx) or math.isnan(fy):
        return math.isnan(fx) and math.isnan(fy)
    return math.isclose(fx, fy, rel_tol=rtol, abs_tol=1e-300)


def _diffs(got, want, path, rtol):
    """Leaf paths where ``got`` and ``want`` differ."""
    if isinstance(got, dict) and isinstance(want, dict):
        for k in sorted(got.keys() | want.keys(), key=str):
            if k not in got or k not in want:
                yield (path + (k,), got.get(k, "<missing>"), want.get(k, "<missing>"))
            else:
                yield from _diffs(got[k], want[k], path + (k,), rtol)
    elif not _same(got, want, rtol):
        yield (path, got, want)


def assert_same(got: dict, want: dict, what: str, rtol=RTOL):
    """``got`` equals ``want`` key by key (floats to ``rtol``), reporting the first differences."""
    bad = list(_diffs(got, want, (), rtol))
    assert not bad, f"{what}: {len(bad)} entries differ, e.g. " + "; ".join(
        f"{'/'.join(map(str, k))}: got {g!r}, want {w!r}" for k, g, w in bad[:4])


def check_references(view: dict, t: dict, k: int, *, holm: bool = True):
    """An audit view against the brute-force counts, Fractions and a direct Holm adjustment."""
    ref = brute_counts(t["y"], t["p"], t["g"])
    for c in range(k):
        assert view[("cm", c)] == ref[c], f"counts of group {c}: {view[('cm', c)]} != {ref[c]}"
    for a in range(k):
        for b in range(k):
            if a == b:
                continue
            assert math.isclose(view[("ofi", a, b)], float(frac_ofi(ref[a], ref[b])), rel_tol=RTOL,
                                abs_tol=1e-15), ("ofi", a, b)
            want = frac_di(ref[a], ref[b])
            got = view[("di", a, b)]
            assert (math.isnan(got) and math.isnan(want)) or math.isclose(got, want, rel_tol=RTOL), \
                f"DI({a}, {b}) = {got}, Fraction reference {want}"
    pairs = view["pairs"]
    for (a, b), rec in pairs.items():
        if "impact_ratio" in rec:
            assert _same(rec["impact_ratio"], ref_impact_ratio(ref[a], ref[b])), (
                f"impact ratio of ({a}, {b}): {rec['impact_ratio']!r} vs {ref_impact_ratio(ref[a], ref[b])!r}")
        assert rec["four_fifths"] == ref_four_fifths(ref[a], ref[b], a, b), (
            f"four-fifths of ({a}, {b}): {rec['four_fifths']!r}; selection rates "
            f"{frac_sel(ref[a])}, {frac_sel(ref[b])}")
    if holm:
        keys = sorted(pairs)
        adj = ref_holm([pairs[q]["p_value"] for q in keys])
        for q, want_adj in zip(keys, adj):
            assert math.isclose(pairs[q]["p_adjusted"], want_adj, rel_tol=1e-12), ("holm", q)


# ---------------------------------------------------------------------------------------------
# re-typed inputs: (maker of the group argument, back map: label the result should carry -> code)
# ---------------------------------------------------------------------------------------------


def _names(g, table=NAMES):
    return np.asarray(table[g], dtype=object)


GROUP_TYPES = {
    "int": lambda g, k: (g + 10, {c + 10: c for c in range(k)}),
    "str_object": lambda g, k: (_names(g), identity(k)),
    "str_numpy_U": lambda g, k: (_names(g).astype(str), identity(k)),
    "category_reversed": lambda g, k: (
        pd.Series(pd.Categorical(_names(g), categories=list(NAMES[:k][::-1]))), identity(k)),
    "nullable_Int64": lambda g, k: (pd.Series(g + 10, dtype="Int64"), {c + 10: c for c in range(k)}),
    "nullable_string": lambda g, k: (pd.Series(_names(g), dtype="string"), identity(k)),
    "arrow_string": lambda g, k: (pd.Series(_names(g), dtype=pd.ArrowDtype(pa.string())), identity(k)),
    "arrow_int64": lambda g, k: (pd.Series(g + 10, dtype=pd.ArrowDtype(pa.int64())),
                                 {c + 10: c for c in range(k)}),
    "polars_str": lambda g, k: (pl.Series("g", list(_names(g))), identity(k)),
    "polars_int": lambda g, k: (pl.Series("g", g + 10), {c + 10: c for c in range(k)}),
    "polars_frame": lambda g, k: (pl.DataFrame({"g": list(_names(g))}), identity(k)),
    "renamed_reversed": lambda g, k: (_names(g, RENAMED), {RENAMED[c]: c for c in range(k)}),
    "category_int": lambda g, k: (pd.Series(pd.Categorical(g + 10)), {c + 10: c for c in range(k)}),
    "float": lambda g, k: (g + 10.0, {c + 10.0: c for c in range(k)}),
    "polars_categorical": lambda g, k: (pl.Series("g", list(_names(g)), dtype=pl.Categorical), identity(k)),
    "polars_enum_reversed": lambda g, k: (
        pl.Series("g", list(_names(g)), dtype=pl.Enum(list(NAMES[:k][::-1]))), identity(k)),
    "arrow_dictionary": lambda g, k: (
        pd.Series(pa.array(list(_names(g))).dictionary_encode(),
                  dtype=pd.ArrowDtype(pa.dictionary(pa.int32(), pa.string()))), identity(k)),
    "pyarrow_chunked": lambda g, k: (
        pa.chunked_array([list(_names(g))[:10], list(_names(g))[10:]]), identity(k)),
    "list": lambda g, k: (list(_names(g)), identity(k)),
}

LABEL_TYPES = {
    "int": lambda a: a,
    "bool": lambda a: a.astype(bool),
    "float": lambda a: a.astype(np.float64),
    "nullable_Int64": lambda a: pd.Series(a, dtype="Int64"),
    "nullable_boolean": lambda a: pd.Series(a.astype(bool), dtype="boolean"),
    "category": lambda a: pd.Series(pd.Categorical(a)),
    "arrow_int64": lambda a: pd.Series(a, dtype=pd.ArrowDtype(pa.int64())),
    "arrow_bool": lambda a: pd.Series(a.astype(bool), dtype=pd.ArrowDtype(pa.bool_())),
    "polars_int": lambda a: pl.Series(a),
    "polars_bool": lambda a: pl.Series(a.astype(bool)),
}


def run_audit(y, p, sf, **kw):
    kw = {"num_samples": 0, "min_group_size": 1, **kw}
    return ofijax.audit(0, y, p, sensitive_features=sf, **kw)


# ---------------------------------------------------------------------------------------------
# ofijax.audit
# ---------------------------------------------------------------------------------------------


@SETTINGS
@given(t=TABLES, perm_seed=st.integers(0, 2**32 - 1))
def test_audit_rows_permuted_and_groups_renamed(t, perm_seed):
    """(a) + (b): permuting rows and renaming groups (reversed order) change no number."""
    k = int(t["g"].max()) + 1
    base = audit_view(run_audit(t["y"], t["p"], _names(t["g"])), identity(k))
    check_references(base, t, k)
    perm = np.random.default_rng(perm_seed).permutation(len(t["y"]))
    af0 = run_audit(t["y"], t["p"], _names(t["g"]))
    af1 = run_audit(t["y"][perm], t["p"][perm], _names(t["g"][perm]))
    assert_same(audit_view(af1, identity(k)), base, "rows permuted")
    assert af1.summary() == af0.summary(), "rows permuted: the text report differs"
    assert af1.to_dict() == af0.to_dict() or _same(af1.to_dict(), af0.to_dict()), "rows permuted: to_dict"
    renamed = audit_view(run_audit(t["y"][perm], t["p"][perm], _names(t["g"][perm], RENAMED)),
                         {RENAMED[c]: c for c in range(k)})
    assert_same(renamed, base, "groups renamed (reversed order) and rows permuted")
    for a, b in renamed["pairs"]:  # antisymmetry inside one result
        assert renamed[("ofi", a, b)] == -renamed[("ofi", b, a)]
        assert renamed[("p_value", a, b)] == renamed[("p_value", b, a)]
    # the default minimum-evidence rule ("too small to judge") and the uniform null, renamed too
    for kw in ({"min_group_size": None}, {"null": "uniform", "correction": "bonferroni"}):
        want = audit_view(run_audit(t["y"], t["p"], _names(t["g"]), **kw), identity(k))
        got = audit_view(run_audit(t["y"][perm], t["p"][perm], _names(t["g"][perm], RENAMED), **kw),
                         {RENAMED[c]: c for c in range(k)})
        assert_same(got, want, f"groups renamed and rows permuted, {kw}")


@SETTINGS
@given(t=TABLES, perm_seed=st.integers(0, 2**32 - 1))
def test_audit_pandas_index_aligned(t, perm_seed):
    """(a): pandas Series whose index holds the same labels in another order are aligned on the
    index (the sensitive features here are stored in another row order than y_true/y_pred)."""
    k = int(t["g"].max()) + 1
    base = audit_view(run_audit(t["y"], t["p"], _names(t["g"])), identity(k))
    rng = np.random.default_rng(perm_seed)
    n = len(t["y"])
    idx = rng.permutation(n) * 7 + 1000  # a non-range index
    ys, ps = pd.Series(t["y"], index=idx), pd.Series(t["p"], index=idx)
    other = rng.permutation(n)
    sf = pd.Series(_names(t["g"])[other], index=idx[other])
    assert_same(audit_view(run_audit(ys, ps, sf), identity(k)), base, "pandas index aligned")
    yp = pd.Series(t["y"][other], index=idx[other])  # y_true itself in another order
    assert_same(audit_view(run_audit(yp, ps, sf), identity(k)), base, "y_true reordered")


@settings(SETTINGS, max_examples=3)
@given(t=TABLES)
@pytest.mark.parametrize("kind", sorted(GROUP_TYPES))
def test_audit_group_types(kind, t):
    """(c): group codes as int, str, category, nullable, Arrow, polars: the same numbers."""
    k = int(t["g"].max()) + 1
    base = audit_view(run_audit(t["y"], t["p"], _names(t["g"])), identity(k))
    sf, back = GROUP_TYPES[kind](t["g"], k)
    got = audit_view(run_audit(t["y"], t["p"], sf), back)
    check_references(got, t, k)
    assert_same(got, base, f"group codes as {kind}")


@settings(SETTINGS, max_examples=3)
@given(t=TABLES)
@pytest.mark.parametrize("kind", sorted(LABEL_TYPES))
def test_audit_label_types(kind, t):
    """(c): labels and predictions 0/1 as int, bool, float, nullable, category, Arrow, polars."""
    k = int(t["g"].max()) + 1
    base = audit_view(run_audit(t["y"], t["p"], _names(t["g"])), identity(k))
    f = LABEL_TYPES[kind]
    got = audit_view(run_audit(f(t["y"]), f(t["p"]), _names(t["g"])), identity(k))
    assert_same(got, base, f"labels as {kind}")


@SETTINGS
@given(t=TABLES, w_seed=st.integers(0, 2**32 - 1))
def test_audit_orientation_weights_and_columns(t, w_seed):
    """The same audit three more ways: labels and predictions flipped with ``beneficial_label=0``;
    integer ``sample_weight`` against the rows repeated that many times (frequency weights, as
    documented), weights in a pandas Series in another index order; and the groups as a
    two-column frame (labels are tuples)."""
    k = int(t["g"].max()) + 1
    sf = _names(t["g"])
    base = audit_view(run_audit(t["y"], t["p"], sf), identity(k))
    flipped = audit_view(run_audit(1 - t["y"], 1 - t["p"], sf, beneficial_label=0), identity(k))
    assert_same(flipped, base, "beneficial_label=0 on flipped labels")
    n = len(t["y"])
    rng = np.random.default_rng(w_seed)
    w = rng.integers(0, 4, n)
    w[:n // 2] = np.maximum(w[:n // 2], 1)
    rep = np.repeat(np.arange(n), w)
    tr = {c: v[rep] for c, v in t.items()}
    k_rep = len(set(tr["g"].tolist()))
    if k_rep == k:  # every group kept a row
        want = audit_view(run_audit(tr["y"], tr["p"], _names(tr["g"])), identity(k))
        check_references(want, tr, k)
        assert_same(audit_view(run_audit(t["y"], t["p"], sf, sample_weight=w), identity(k)), want,
                    "integer sample_weight vs repeated rows")
        idx = rng.permutation(n) + 9
        other = rng.permutation(n)
        got = run_audit(pd.Series(t["y"], index=idx), pd.Series(t["p"], index=idx),
                        pd.Series(sf, index=idx), sample_weight=pd.Series(w, index=idx).iloc[other])
        assert_same(audit_view(got, identity(k)), want, "sample_weight Series in another index order")
    two = pd.DataFrame({"g": sf, "h": "x"})
    assert_same(audit_view(run_audit(t["y"], t["p"], two), {(NAMES[c], "x"): c for c in range(k)}),
                base, "groups as a two-column frame")
    # intersections of two columns, the columns in the other order: the same groups, reversed tuples
    inter = pd.DataFrame({"g": sf, "h": np.array(["u", "v"], dtype=object)[t["b"]]})
    a1 = run_audit(t["y"], t["p"], inter)
    codes = {grp: i for i, grp in enumerate(sorted(a1.groups))}
    a2 = run_audit(t["y"], t["p"], inter[["h", "g"]])
    assert_same(audit_view(a2, {(grp[1], grp[0]): c for grp, c in codes.items()}),
                audit_view(a1, codes), "two sensitive columns in the other order")


@settings(SETTINGS, max_examples=4)
@given(t=TABLES, perm_seed=st.integers(0, 2**32 - 1))
def test_audit_binned_feature_rows_permuted(t, perm_seed):
    """A continuous sensitive feature cut by ``bins=3``: the bins (quantiles of the data) and every
    number are the same for the rows in another order or in a pandas frame with another index."""
    x = np.round(t["prob"] * 100, 1)
    af = run_audit(t["y"], t["p"], pd.DataFrame({"x": x}), bins=3)
    back = {g: i for i, g in enumerate(af.groups)}
    base = audit_view(af, back)
    perm = np.random.default_rng(perm_seed).permutation(len(x))
    af2 = run_audit(t["y"][perm], t["p"][perm], pd.DataFrame({"x": x[perm]}, index=perm + 7), bins=3)
    assert af2.settings["bins"] == af.settings["bins"]
    assert_same(audit_view(af2, back), base, "bins=3, rows permuted")


def _gcm_dict(r) -> dict:
    return {g: tuple(int(x) for x in c) for g, c in zip(r.groups, np.asarray(r.cms))}


def _outcome(fn):
    try:
        return ("ok", fn())
    except (ValueError, TypeError) as exc:
        return ("error", str(exc))


STRING_LABEL_CALLS = {
    "audit": lambda t, y, p: audit_view(run_audit(y, p, _names(t["g"])), identity(3)),
    "audit_batch": lambda t, y, p: pair_view(
        ofijax.audit_batch(y, {"m": p}, sensitive_features=_names(t["g"]), min_group_size=1)
        .pairs.to_dict("records"), identity(3), candidate=True),
    "group_confusion_matrices": lambda t, y, p: _gcm_dict(
        ofijax.group_confusion_matrices(y, p, _names(t["g"]))),
    "scan.fpr_scan": lambda t, y, p: scan_view(S.fpr_scan(_attrs(t), y, p, key=0), SCAN_BACK["str"]),
}


@pytest.mark.parametrize("name", sorted(STRING_LABEL_CALLS))
def test_string_labels_follow_one_rule(name):
    """#37 item 11: labels '0'/'1' as an object array and as a NumPy '<U1' array follow ONE rule:
    both accepted with the int labels' numbers, or both refused by one error naming the argument
    (in audit, audit_batch, group_confusion_matrices and the scans, for y_true and y_pred alike)."""
    t = make_table(3, 60, 3)
    call = partial(STRING_LABEL_CALLS[name], t)
    base = call(t["y"], t["p"])
    y_obj, p_obj = t["y"].astype("U1").astype(object), t["p"].astype("U1").astype(object)
    y_u, p_u = t["y"].astype("U1"), t["p"].astype("U1")
    assert y_u.dtype == np.dtype("<U1")
    for arg in ("y_true", "y_pred"):
        args_obj = (y_obj, t["p"]) if arg == "y_true" else (t["y"], p_obj)
        args_u = (y_u, t["p"]) if arg == "y_true" else (t["y"], p_u)
        obj = _outcome(partial(call, *args_obj))
        uni = _outcome(partial(call, *args_u))
        assert obj[0] == uni[0], (
            f"{name}, {arg}: '0'/'1' as object -> {obj[0]} ({str(obj[1])[:120]}), as '<U1' -> "
            f"{uni[0]} ({str(uni[1])[:120]}): one rule for both")
        if obj[0] == "error":
            assert obj[1].startswith(arg) and uni[1].startswith(arg), (obj[1], uni[1])
        else:
            assert_same(obj[1], base, f"{name}, {arg}: '0'/'1' as object vs int labels")
            assert_same(uni[1], base, f"{name}, {arg}: '0'/'1' as '<U1' vs int labels")


@settings(SETTINGS, max_examples=4)
@given(t=TABLES, perm_seed=st.integers(0, 2**32 - 1))
def test_audit_data_argument(t, perm_seed):
    """#37 item 8: ``audit(key, "y", "p", sensitive_features="g", data=df)`` (pandas with its rows
    and index shuffled, polars, pyarrow) and ``audit_batch(..., data=df)`` give the arrays' numbers."""
    k = int(t["g"].max()) + 1
    base = audit_view(run_audit(t["y"], t["p"], _names(t["g"])), identity(k))
    perm = np.random.default_rng(perm_seed).permutation(len(t["y"]))
    df = pd.DataFrame({"y": t["y"], "p": t["p"], "g": _names(t["g"])}).iloc[perm]
    df.index = perm * 5 + 1
    for name, frame in [("pandas", df), ("polars", pl.from_pandas(df.reset_index(drop=True))),
                        ("pyarrow", pa.Table.from_pandas(df, preserve_index=False))]:
        af = ofijax.audit(0, "y", "p", sensitive_features="g", data=frame, num_samples=0, min_group_size=1)
        assert_same(audit_view(af, identity(k)), base, f"audit(data=<{name} frame>)")
    want = pair_view(ofijax.audit_batch(t["y"], {"p": t["p"]}, sensitive_features=_names(t["g"]),
                                        min_group_size=1).pairs.to_dict("records"), identity(k),
                     candidate=True)
    got = pair_view(ofijax.audit_batch("y", ["p"], sensitive_features="g", data=df,
                                       min_group_size=1).pairs.to_dict("records"), identity(k),
                    candidate=True)
    assert_same(got, want, "audit_batch(data=<pandas frame>)")


def test_mixed_group_labels_stay_distinct_or_are_refused():
    """#37 item 7: group values 1 and "1" are two groups with distinct labels, or refused by one
    error naming sensitive_features; never merged into one printed label."""
    t = make_table(5, 60, 2)
    sf = np.array([1, "1"], dtype=object)[t["g"]]
    try:
        af = run_audit(t["y"], t["p"], sf)
    except (ValueError, TypeError) as exc:
        assert str(exc).startswith("sensitive_features"), str(exc)
        return
    labels = [group_label(g) for g in af.groups]
    assert len(set(labels)) == 2, f"groups {af.groups!r} print as {labels!r}"
    view = audit_view(af, {1: 0, "1": 1})
    check_references(view, t, 2)


# ---------------------------------------------------------------------------------------------
# ofijax.group_confusion_matrices
# ---------------------------------------------------------------------------------------------


@settings(SETTINGS, max_examples=3)
@given(t=TABLES, perm_seed=st.integers(0, 2**32 - 1))
@pytest.mark.parametrize("kind", sorted(GROUP_TYPES))
def test_group_confusion_matrices_contract(kind, t, perm_seed):
    k = int(t["g"].max()) + 1
    ref = brute_counts(t["y"], t["p"], t["g"])
    perm = np.random.default_rng(perm_seed).permutation(len(t["y"]))
    g = t["g"][perm]
    sf, back = GROUP_TYPES[kind](g, k)
    r = ofijax.group_confusion_matrices(t["y"][perm], t["p"][perm], sf)
    cms = np.asarray(r.cms)
    assert cms.dtype == np.int64
    got = {_back_lookup(back, lab): tuple(int(x) for x in c) for lab, c in zip(r.groups, cms)}
    assert got == ref


# ---------------------------------------------------------------------------------------------
# ofijax.audit_batch
# ---------------------------------------------------------------------------------------------


def check_batch_references(pairs: pd.DataFrame, cms_of: dict, back: dict):
    """Every row's counts, OFI and DI of a batch against Fractions of brute-force counts
    (``cms_of[candidate][code]``), and its four-fifths outcome against the regulator's rule."""
    for r in pairs.to_dict("records"):
        ci, cj = _back_lookup(back, r["group_i"]), _back_lookup(back, r["group_j"])
        a, b = cms_of[r["candidate"]][ci], cms_of[r["candidate"]][cj]
        assert (int(r["n_i"]), int(r["n_j"])) == (sum(a), sum(b))
        assert math.isclose(r["ofi"], float(frac_ofi(a, b)), rel_tol=RTOL, abs_tol=1e-15), (
            f"batch OFI {r['ofi']!r} vs Fraction {float(frac_ofi(a, b))!r} (candidate "
            f"{r['candidate']}, {ci} vs {cj})")
        want = frac_di(a, b)
        assert (math.isnan(r["di"]) and math.isnan(want)) or math.isclose(r["di"], want, rel_tol=RTOL), (
            f"batch DI {r['di']!r} vs Fraction {want!r}")
        assert _orient_four_fifths(r["four_fifths"], {"i": ci, "j": cj}) == ref_four_fifths(a, b, ci, cj)
        if "impact_ratio" in r:
            assert _same(r["impact_ratio"], ref_impact_ratio(a, b)), (r["impact_ratio"], ref_impact_ratio(a, b))


@SETTINGS
@given(t=TABLES)
def test_audit_batch_one_candidate_equals_audit(t):
    """audit_batch with one candidate gives audit's pair table (float64, same verdicts)."""
    k = int(t["g"].max()) + 1
    sf = _names(t["g"])
    af = run_audit(t["y"], t["p"], sf)
    b = ofijax.audit_batch(t["y"], {"m": t["p"]}, sensitive_features=sf, min_group_size=1)
    check_batch_references(b.pairs, {"m": brute_counts(t["y"], t["p"], t["g"])}, identity(k))
    want = pair_view(af.pairs.to_dict("records"), identity(k))
    got = {key[1:]: rec for key, rec in
           pair_view(b.pairs.to_dict("records"), identity(k), candidate=True).items()}
    # the pair table's columns (n, ofi, p-values, di, four-fifths, verdict, who is disadvantaged),
    # plus any other column both tables carry (e.g. the p-value method flags)
    for key in want:
        common = want[key].keys() & got[key].keys()
        assert {"n_a", "n_b", "ofi", "p_value", "p_adjusted", "four_fifths", "verdict",
                "disadvantaged"} <= common, sorted(common)
        got[key] = {c: got[key][c] for c in common}
        want[key] = {c: want[key][c] for c in common}
    assert_same(got, want, "audit_batch (one candidate) vs audit")


@SETTINGS
@given(t=TABLES, perm_seed=st.integers(0, 2**32 - 1), kind=st.sampled_from(
    ["str_object", "int", "category_reversed", "renamed_reversed", "arrow_string", "polars_str"]))
def test_audit_batch_several_candidates_contract(t, perm_seed, kind):
    """(a) + (b) + (c) for audit_batch with three candidates (two prediction columns and a flip)."""
    k = int(t["g"].max()) + 1
    rng = np.random.default_rng(perm_seed)
    p2 = 1 - t["p"]
    p3 = (t["prob"] > 0.5).astype(np.int64)
    preds = {"m1": t["p"], "m2": p2, "m3": p3}
    cms_of = {c: brute_counts(t["y"], v, t["g"]) for c, v in preds.items()}
    b0 = ofijax.audit_batch(t["y"], preds, sensitive_features=_names(t["g"]), min_group_size=1)
    check_batch_references(b0.pairs, cms_of, identity(k))
    base = pair_view(b0.pairs.to_dict("records"), identity(k), candidate=True, directional_di=False)
    perm = rng.permutation(len(t["y"]))
    sf, back = GROUP_TYPES[kind](t["g"][perm], k)
    b1 = ofijax.audit_batch(t["y"][perm], {c: v[perm] for c, v in preds.items()}, sensitive_features=sf,
                            min_group_size=1)
    check_batch_references(b1.pairs, cms_of, back)
    got = pair_view(b1.pairs.to_dict("records"), back, candidate=True, directional_di=False)
    assert_same(got, base, f"audit_batch, rows permuted, groups as {kind}")


@settings(SETTINGS, max_examples=4)
@given(t=TABLES, perm_seed=st.integers(0, 2**32 - 1))
def test_audit_batch_aligns_pandas_index(t, perm_seed):
    """audit_batch aligns pandas inputs on the index as audit does (CONTRIBUTING: same labels in
    another order are reordered to the first pandas argument's index): y_true, a DataFrame of
    predictions and the sensitive features, each in another row order."""
    k = int(t["g"].max()) + 1
    rng = np.random.default_rng(perm_seed)
    preds = {"m1": t["p"], "m2": 1 - t["p"]}
    base = pair_view(ofijax.audit_batch(t["y"], preds, sensitive_features=_names(t["g"]),
                                        min_group_size=1).pairs.to_dict("records"),
                     identity(k), candidate=True)
    n = len(t["y"])
    idx = rng.permutation(n) + 500
    b = ofijax.audit_batch(
        pd.Series(t["y"], index=idx), pd.DataFrame(preds, index=idx).iloc[rng.permutation(n)],
        sensitive_features=pd.Series(_names(t["g"]), index=idx).iloc[rng.permutation(n)],
        min_group_size=1)
    got = pair_view(b.pairs.to_dict("records"), identity(k), candidate=True)
    assert_same(got, base, "audit_batch, pandas inputs in another index order")


@SETTINGS
@given(t=TABLES, perm_seed=st.integers(0, 2**32 - 1))
def test_audit_batch_threshold_grid_contract(t, perm_seed):
    """audit_batch over a threshold grid of scores: rows permuted and groups renamed give the same
    pairs (keyed by threshold and group), each against Fractions of brute-force counts."""
    k = int(t["g"].max()) + 1
    thresholds = [0.2, 0.5, 0.8]
    cms_of = {th: brute_counts(t["y"], (t["prob"] >= th).astype(np.int64), t["g"]) for th in thresholds}
    b0 = ofijax.audit_batch(t["y"], scores=t["prob"], thresholds=thresholds,
                            sensitive_features=_names(t["g"]), min_group_size=1)
    check_batch_references(b0.pairs, cms_of, identity(k))
    base = pair_view(b0.pairs.to_dict("records"), identity(k), candidate=True, directional_di=False)
    perm = np.random.default_rng(perm_seed).permutation(len(t["y"]))
    b1 = ofijax.audit_batch(t["y"][perm], scores=t["prob"][perm], thresholds=thresholds[::-1],
                            sensitive_features=_names(t["g"][perm], RENAMED), min_group_size=1)
    back = {RENAMED[c]: c for c in range(k)}
    check_batch_references(b1.pairs, cms_of, back)
    got = pair_view(b1.pairs.to_dict("records"), back, candidate=True, directional_di=False)
    assert_same(got, base, "audit_batch threshold grid: rows permuted, groups renamed, grid reversed")


@settings(SETTINGS, max_examples=4)
@given(t=TABLES)
def test_x64_mode_changes_no_number(t):
    """Counts are exact and results identical whatever jax_enable_x64 says (audit, audit_batch,
    group_confusion_matrices)."""
    import jax

    k = int(t["g"].max()) + 1
    sf = _names(t["g"])
    out = {}
    for x64 in (False, True):
        with jax.enable_x64(x64):
            out[x64] = (
                audit_view(run_audit(t["y"], t["p"], sf), identity(k)),
                pair_view(ofijax.audit_batch(t["y"], {"m": t["p"]}, sensitive_features=sf,
                                             min_group_size=1).pairs.to_dict("records"),
                          identity(k), candidate=True),
                _gcm_dict(ofijax.group_confusion_matrices(t["y"], t["p"], sf)),
            )
    for part, (a, b) in zip(("audit", "audit_batch", "group_confusion_matrices"), zip(out[False], out[True])):
        assert_same(a, b, f"{part}: jax_enable_x64 False vs True")


# ---------------------------------------------------------------------------------------------
# ofijax.stats.collect + ofijax.stats.audit_counts
# ---------------------------------------------------------------------------------------------


FRAME_GROUP_TYPES = {
    "str": lambda g, k: (_names(g), identity(k)),
    "int": lambda g, k: (g + 10, {c + 10: c for c in range(k)}),
    "category_reversed": lambda g, k: (
        pd.Categorical(_names(g), categories=list(NAMES[:k][::-1])), identity(k)),
    "nullable_Int64": lambda g, k: (pd.array(g + 10, dtype="Int64"), {c + 10: c for c in range(k)}),
    "nullable_string": lambda g, k: (pd.array(_names(g), dtype="string"), identity(k)),
    "arrow_string": lambda g, k: (pd.array(_names(g), dtype=pd.ArrowDtype(pa.string())), identity(k)),
    "renamed_reversed": lambda g, k: (_names(g, RENAMED), {RENAMED[c]: c for c in range(k)}),
}


@settings(SETTINGS, max_examples=3)
@given(t=TABLES, polars=st.booleans(), perm_seed=st.integers(0, 2**32 - 1))
@pytest.mark.parametrize("kind", sorted(FRAME_GROUP_TYPES))
def test_collect_and_audit_counts_contract(kind, t, polars, perm_seed):
    """stats.collect on a (pandas or polars) frame, rows permuted and group codes re-typed, then
    stats.audit_counts: the counts of a brute force and audit's numbers."""
    k = int(t["g"].max()) + 1
    base = audit_view(run_audit(t["y"], t["p"], _names(t["g"])), identity(k))
    perm = np.random.default_rng(perm_seed).permutation(len(t["y"]))
    col, back = FRAME_GROUP_TYPES[kind](t["g"][perm], k)
    df = pd.DataFrame({"y": t["y"][perm], "p": t["p"][perm], "g": col}, index=perm + 3)
    if polars:
        df = pl.from_pandas(df)
    statistics = stats.collect(df, label="y", pred="p", group="g")
    counts = statistics.counts
    got_counts = {_back_lookup(back, lab): tuple(int(x) for x in c)
                  for lab, c in zip(counts.groups, np.asarray(counts.cms))}
    assert got_counts == brute_counts(t["y"], t["p"], t["g"])
    af = stats.audit_counts(0, counts, num_samples=0, min_group_size=1)
    assert_same(audit_view(af, back), base, f"collect + audit_counts, groups as {kind}")
    # the same rows as batches (an iterable of frames), and as two collects merged
    cut = len(df) // 3
    parts = [df[:cut], df[cut:]]
    for how, c in (("batches", stats.collect(iter(parts), label="y", pred="p", group="g").counts),
                   ("merged", stats.collect(parts[1], label="y", pred="p", group="g").counts.merge(
                       stats.collect(parts[0], label="y", pred="p", group="g").counts))):
        got = {_back_lookup(back, lab): tuple(int(x) for x in cm) for lab, cm in zip(c.groups, np.asarray(c.cms))}
        assert got == got_counts, f"collect of {how} ({kind})"


# ---------------------------------------------------------------------------------------------
# randomized outputs of the audit: bootstrap intervals and Monte Carlo p-values
# ---------------------------------------------------------------------------------------------


def test_audit_randomized_outputs_keep_their_distribution():
    """Bootstrap intervals and Monte Carlo p-values: identical for a fixed input and key; under a
    row permutation (other draws) the same distribution: interval ends within a few Monte Carlo
    standard errors, Monte Carlo p-values within binomial error of the exact p-value."""
    t = make_table(11, 150, 3)
    k = 3
    perm = np.random.default_rng(5).permutation(150)
    calls = {
        "base": lambda: ofijax.audit(0, t["y"], t["p"], sensitive_features=_names(t["g"]),
                                     num_samples=2000, method="monte_carlo"),
        "permuted": lambda: ofijax.audit(0, t["y"][perm], t["p"][perm],
                                         sensitive_features=_names(t["g"][perm]),
                                         num_samples=2000, method="monte_carlo"),
        "renamed": lambda: ofijax.audit(0, t["y"], t["p"], sensitive_features=_names(t["g"], RENAMED),
                                        num_samples=2000, method="monte_carlo"),
    }
    backs = {"base": identity(k), "permuted": identity(k), "renamed": {RENAMED[c]: c for c in range(k)}}
    views = {}
    for name, call in calls.items():
        a1, a2 = call(), call()
        for m in ("ci_low", "ci_high", "p_value"):
            np.testing.assert_array_equal(np.asarray(getattr(a1, m)), np.asarray(getattr(a2, m)),
                                          err_msg=f"{name}: {m} not deterministic for a fixed key")
        codes = [_back_lookup(backs[name], g) for g in a1.groups]
        views[name] = {(m, codes[i], codes[j]): float(np.asarray(getattr(a1, m))[i, j])
                       for m in ("ci_low", "ci_high", "p_value") for i in range(k) for j in range(k)
                       if i != j}
    exact = audit_view(run_audit(t["y"], t["p"], _names(t["g"]), method="exact"), identity(k))
    for other in ("permuted", "renamed"):
        for key, v in views["base"].items():
            w = views[other][key]
            if key[0] == "p_value":
                p = exact[key]
                se = math.sqrt(max(p * (1 - p), 1e-4) / 2000)
                assert abs(v - p) < 5 * se + 1e-3 and abs(w - p) < 5 * se + 1e-3, (other, key, v, w, p)
            else:  # OFI bootstrap quantiles: SD of OFI here ~0.1, quantile MC error ~0.01
                assert abs(v - w) < 0.05, (other, key, v, w)


# ---------------------------------------------------------------------------------------------
# scans
# ---------------------------------------------------------------------------------------------

ATTR_VALUES = {"a": np.array(["x", "y", "z"], dtype=object), "b": np.array(["u", "v"], dtype=object),
               "c": np.array(["k", "l", "m", "n"], dtype=object)}
ATTR_RENAMED = {"a": np.array(["zz", "yy", "xx"], dtype=object), "b": np.array(["vv", "uu"], dtype=object),
                "c": np.array(["q4", "q3", "q2", "q1"], dtype=object)}


def _attrs(t, values=ATTR_VALUES, kind="str"):
    cols = {}
    for c, vals in values.items():
        codes = t[c]
        if kind == "str":
            cols[c] = vals[codes]
        elif kind == "int":
            cols[c] = codes + 1
        elif kind == "category":
            cols[c] = pd.Categorical(vals[codes], categories=list(vals[::-1]))
        elif kind == "string":
            cols[c] = pd.array(vals[codes], dtype="string")
        elif kind in ("arrow", "polars"):
            cols[c] = pd.array(vals[codes], dtype=pd.ArrowDtype(pa.string()))
    return pl.from_pandas(pd.DataFrame(cols)) if kind == "polars" else pd.DataFrame(cols)


SCAN_BACK = {
    "str": {c: {v: i for i, v in enumerate(vals)} for c, vals in ATTR_VALUES.items()},
    "renamed": {c: {v: i for i, v in enumerate(vals)} for c, vals in ATTR_RENAMED.items()},
    "int": {c: {i + 1: i for i in range(len(vals))} for c, vals in ATTR_VALUES.items()},
}
SCAN_BACK["category"] = SCAN_BACK["string"] = SCAN_BACK["arrow"] = SCAN_BACK["polars"] = SCAN_BACK["str"]

# Every scan call of this file runs 64 restarts with key 0: one compiled program per scan (the file
# stays fast), and enough restarts to reach the best subgroup of these small attribute spaces
# whatever the values' order (see test_scans_rows_names_types).
RESTARTS = {"num_restarts": 64}
SCANS = {
    "bias_scan": lambda X, t, **kw: S.bias_scan(X, t["y"], t["prob"], key=0, **{**RESTARTS, **kw}),
    "fpr_scan": lambda X, t, **kw: S.fpr_scan(X, t["y"], t["p"], key=0, **{**RESTARTS, **kw}),
    "tpr_scan": lambda X, t, **kw: S.tpr_scan(X, t["y"], t["p"], key=0, **{**RESTARTS, **kw}),
    "ijdi_scan": lambda X, t, **kw: S.ijdi_scan(X, t["y"], t["p"], t["prob"], lam=0.5, key=0,
                                                **{**RESTARTS, **kw}),
}


def scan_view(r, back: dict) -> dict:
    """Subset (as codes), score, q, sizes and rates of a ScanResult."""
    def codes(d):
        out = {}
        for col, vals in (d or {}).items():
            m = back[col]
            out[col] = frozenset(m[v.item() if hasattr(v, "item") else v] for v in vals)
        return out
    return {"subset": codes(r.subset), "score": float(r.score), "q": float(r.q), "size": int(r.size),
            "total_size": int(r.total_size), "observed_rate": float(r.observed_rate),
            "expected_rate": float(r.expected_rate), "search": r.search,
            "rows": int(np.asarray(r.mask).sum())}


def _permute_table(t, perm):
    return {c: v[perm] for c, v in t.items()}


SCAN_TABLES = st.builds(make_table, seed=st.integers(0, 2**32 - 1), n=st.just(120), k=st.just(2))


@settings(SETTINGS, max_examples=3)
@given(t=SCAN_TABLES, perm_seed=st.integers(0, 2**32 - 1),
       kind=st.sampled_from(["int", "category", "string", "arrow", "polars"]))
@pytest.mark.parametrize("name", sorted(SCANS))
def test_scans_rows_names_types(name, t, perm_seed, kind):
    """(a) + (b) + (c) for every row scan with a fixed key: rows permuted or attribute values
    re-typed: the same subgroup (as values), score, q, sizes, and the mask follows the rows; values
    renamed: the same result where the search is exhaustive or has many restarts (see below)."""
    fn = SCANS[name]
    base_r = fn(_attrs(t), t)
    again = fn(_attrs(t), t)
    base = scan_view(base_r, SCAN_BACK["str"])
    assert scan_view(again, SCAN_BACK["str"]) == base, "not deterministic for a fixed key"
    perm = np.random.default_rng(perm_seed).permutation(len(t["y"]))
    tp = _permute_table(t, perm)
    r = fn(_attrs(tp), tp)
    assert_same(scan_view(r, SCAN_BACK["str"]), base, f"{name}: rows permuted")
    np.testing.assert_array_equal(np.asarray(r.mask), np.asarray(base_r.mask)[perm])
    assert_same(scan_view(fn(_attrs(t, kind=kind), t), SCAN_BACK[kind]), base,
                f"{name}: attributes as {kind}")  # the values keep their order: the same draws
    # Values renamed in reversed order are encoded in another order. A coordinate-ascent search's
    # restarts then start from other subgroups for the same key: a randomized output, for which the
    # contract asks the same distribution, not the same draw; it is checked where it is sharp: with
    # enough restarts (RESTARTS: 64; 0 differences in 25 tables per scan) the search reaches the best
    # subgroup whatever the order. (With 10 restarts and no exhaustive search, as on main before
    # #43, fpr_scan on make_table(53, 120, 2), key 0, scored 1.50 with these names and 3.74 with
    # the renamed ones.) An exhaustive search finds the best score whatever the order, but when two
    # subgroups tie exactly (same score, odds and scanned rows, e.g. two cells whose scanned rows all
    # have the outcome) it keeps the first in the values' order: a legitimate difference, accepted
    # here only as such an exact tie.
    ren = scan_view(fn(_attrs(tp, ATTR_RENAMED), tp), SCAN_BACK["renamed"])
    assert ren["search"] == base["search"]
    what = f"{name}: attribute values renamed (reversed order), rows permuted ({base['search']})"
    if ren["subset"] != base["subset"]:
        tie = ("score", "q", "size", "search", "observed_rate")
        assert_same({c: ren[c] for c in tie}, {c: base[c] for c in tie}, what + ", another subgroup: not a tie")
    else:
        assert_same(ren, base, what)


@settings(SETTINGS, max_examples=3)
@given(t=SCAN_TABLES, kind=st.sampled_from(sorted(LABEL_TYPES)))
@pytest.mark.parametrize("name", sorted(SCANS))
def test_scans_label_types(name, t, kind):
    """(c) for the scans: labels and predictions 0/1 as bool, float, nullable, category, Arrow,
    polars give the int labels' subgroup and score."""
    base = scan_view(SCANS[name](_attrs(t), t), SCAN_BACK["str"])
    f = LABEL_TYPES[kind]
    tt = {**t, "y": f(t["y"]), "p": f(t["p"])}
    assert_same(scan_view(SCANS[name](_attrs(t), tt), SCAN_BACK["str"]), base, f"{name}: labels as {kind}")


@settings(SETTINGS, max_examples=3)
@given(t=SCAN_TABLES, perm_seed=st.integers(0, 2**32 - 1))
@pytest.mark.parametrize("name", sorted(SCANS))
def test_scans_align_pandas_index(name, t, perm_seed):
    """#37 item 2: a scan aligns pandas rows on the index (as audit): y/p Series carrying the
    attributes' index in another order give the aligned call's result."""
    base = scan_view(SCANS[name](_attrs(t), t), SCAN_BACK["str"])
    rng = np.random.default_rng(perm_seed)
    n = len(t["y"])
    idx = rng.permutation(n) * 3 + 100
    X = _attrs(t).set_axis(idx)
    other = rng.permutation(n)
    ts = {c: (pd.Series(v, index=idx).iloc[other] if c in ("y", "p", "prob") else v) for c, v in t.items()}
    r = SCANS[name](X, ts)
    assert_same(scan_view(r, SCAN_BACK["str"]), base, f"{name}: pandas Series in another index order")


@settings(SETTINGS, max_examples=2)
@given(t=SCAN_TABLES, perm_seed=st.integers(0, 2**32 - 1))
def test_scan_cells_equal_row_scans(t, perm_seed):
    """stats.fpr_scan_cells / tpr_scan_cells on ``stats.collect`` of the rows (in another order, as
    a polars frame too) find the row scans' subgroup and score."""
    perm = np.random.default_rng(perm_seed).permutation(len(t["y"]))
    tp = _permute_table(t, perm)
    df = pd.concat([_attrs(tp), pd.DataFrame({"y": tp["y"], "p": tp["p"]})], axis=1)
    for frame in (df, pl.from_pandas(df)):
        cells = stats.collect(frame, label="y", pred="p", attrs=["a", "b", "c"]).cells
        for name, fn in (("fpr_scan", stats.fpr_scan_cells), ("tpr_scan", stats.tpr_scan_cells)):
            want = scan_view(SCANS[name](_attrs(t), t), SCAN_BACK["str"])
            r = fn(cells, key=0, **RESTARTS)
            got = {"subset": {c: frozenset(SCAN_BACK["str"][c][v] for v in vals) for c, vals in r.subset.items()},
                   "score": float(r.score), "q": float(r.q), "size": int(r.size)}
            assert_same(got, {c: want[c] for c in got}, f"stats.{name}_cells vs {name}", rtol=1e-9)


def test_audit_scan_option_rows_permuted():
    """``audit(..., scan=True)``: rows permuted give the same worst subgroups (every field of
    ``af.scan``)."""
    from ofijax.auditing.reporting import to_jsonable

    t = make_table(5, 120, 3)
    kw = {"scan": True, "scan_num_samples": 0, "num_samples": 0}
    base = to_jsonable(ofijax.audit(0, t["y"], t["p"], sensitive_features=_names(t["g"]),
                                    scan_features=_attrs(t), **kw).scan)
    assert set(base) == {"fpr_scan", "tpr_scan"}
    perm = np.random.default_rng(1).permutation(120)
    tp = _permute_table(t, perm)
    got = to_jsonable(ofijax.audit(0, tp["y"], tp["p"], sensitive_features=_names(tp["g"]),
                                   scan_features=_attrs(tp), **kw).scan)
    assert got == base, "audit(scan=True): rows permuted"


def test_audit_scan_option_aligns_index():
    """``audit(..., scan=True)`` aligns ``scan_features`` on the pandas index like every row-wise
    argument (CONTRIBUTING: pandas inputs aligned or refused)."""
    from ofijax.auditing.reporting import to_jsonable

    t = make_table(5, 120, 3)
    kw = {"scan": True, "scan_num_samples": 0, "num_samples": 0}
    base = to_jsonable(ofijax.audit(0, t["y"], t["p"], sensitive_features=_names(t["g"]),
                                    scan_features=_attrs(t), **kw).scan)
    idx = np.random.default_rng(2).permutation(120) + 40
    other = np.random.default_rng(3).permutation(120)
    got = to_jsonable(ofijax.audit(
        0, pd.Series(t["y"], index=idx), pd.Series(t["p"], index=idx),
        sensitive_features=pd.Series(_names(t["g"]), index=idx),
        scan_features=_attrs(t).set_axis(idx).iloc[other], **kw).scan)
    assert got == base, "audit(scan=True): scan_features in another index order"


def test_orientation_everywhere(tmp_path, monkeypatch):
    """Labels and predictions flipped with ``beneficial_label=0`` (CLI: ``--harmful-label``) give the
    same numbers in audit_batch, stats.collect, the rate scans and IJDI-Scan (with the flipped
    probability), and the CLI audit in both engines."""
    t = make_table(12, 120, 3)
    k = 3
    sf = _names(t["g"])
    f = {**t, "y": 1 - t["y"], "p": 1 - t["p"], "prob": 1 - t["prob"]}
    b0 = ofijax.audit_batch(t["y"], {"m": t["p"]}, sensitive_features=sf, min_group_size=1)
    b1 = ofijax.audit_batch(f["y"], {"m": f["p"]}, sensitive_features=sf, min_group_size=1,
                            beneficial_label=0)
    assert_same(pair_view(b1.pairs.to_dict("records"), identity(k), candidate=True),
                pair_view(b0.pairs.to_dict("records"), identity(k), candidate=True),
                "audit_batch, beneficial_label=0 on flipped labels")
    df = pd.DataFrame({"y": t["y"], "p": t["p"], "g": sf})
    c0 = stats.collect(df, label="y", pred="p", group="g").counts
    c1 = stats.collect(df.assign(y=f["y"], p=f["p"]), label="y", pred="p", group="g",
                       beneficial_label=0).counts
    assert _gcm_dict(c1) == _gcm_dict(c0)
    for name in ("fpr_scan", "tpr_scan", "ijdi_scan"):
        want = scan_view(SCANS[name](_attrs(t), t), SCAN_BACK["str"])
        got = scan_view(SCANS[name](_attrs(t), f, beneficial_label=0), SCAN_BACK["str"])
        assert_same(got, want, f"{name}, beneficial_label=0 on flipped labels")
    monkeypatch.chdir(tmp_path)
    df.to_csv("t.csv", index=False)
    df.assign(y=f["y"], p=f["p"]).to_csv("f.csv", index=False)
    for engine in ("pandas", "stream"):
        want = pair_view(cli_audit("t.csv", engine, f"o_{engine}")["pairs"], identity(k))
        got = pair_view(cli_audit("f.csv", engine, f"h_{engine}", "--harmful-label")["pairs"], identity(k))
        assert_same(got, want, f"ofijax audit --harmful-label --engine {engine}")


def test_scan_randomization_deterministic():
    """Randomization p-values are deterministic for a fixed input and key (their distribution under
    a row permutation is not checked: too many replicates for this file's budget)."""
    t = make_table(21, 120, 2)
    X = _attrs(t)
    r1 = S.fpr_scan(X, t["y"], t["p"], key=3, num_samples=19)
    r2 = S.fpr_scan(X, t["y"], t["p"], key=3, num_samples=19)
    assert r1.p_value == r2.p_value and np.array_equal(np.asarray(r1.null_scores),
                                                       np.asarray(r2.null_scores))


# ---------------------------------------------------------------------------------------------
# CLI and every engine
# ---------------------------------------------------------------------------------------------


def _cli(args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(list(args))
        except SystemExit as exc:
            rc = exc.code
    return rc, out.getvalue(), err.getvalue()


def cli_audit(path, engine, out, *extra) -> dict:
    # absolute paths: the shared Spark session's JVM resolves relative paths against its own start
    # directory, not this test's working directory
    rc, so, se = _cli(["audit", "--data", os.path.abspath(path), "--label", "y", "--pred", "p", "--group", "g",
                       "--engine", engine, "--out", str(out), "--no-plots", "--samples", "0", *extra])
    assert rc == 0, f"ofijax audit --engine {engine} on {path}: exit {rc}: {se.strip()[-400:]}"
    with open(f"{out}/report.json", encoding="utf-8") as fh:
        return json.load(fh)


def cross_table() -> pd.DataFrame:
    """A fixed table: 3 groups of unequal size, one of which selects no one; labels as strings."""
    t = make_table(2026, 90, 3, zero_group=True)
    return pd.DataFrame({"y": t["y"], "p": t["p"], "g": _names(t["g"])})


def _report_pairs(records, back) -> dict:
    return {key: {c: v for c, v in rec.items() if c in ("n_a", "n_b", "ofi", "p_value", "p_adjusted",
                                                        "di", "di_ba", "four_fifths", "verdict")}
            for key, rec in pair_view(records, back).items()}


def test_every_engine_same_report(tmp_path, monkeypatch, spark):
    """The same table through numpy, pandas, polars, counts, CSV and parquet with the CLI's pandas
    and stream engines, Spark (CLI and stats.from_spark) and audit_batch with one candidate: the
    same pair table (group_i, group_j, n_i, n_j, ofi, p_value, p_adjusted, di, four_fifths,
    verdict, and every other column both tables carry) and the same group table (counts and every
    rate both carry); the CLI's engines and formats write the same report.json but for the command,
    the input description and the provenance."""
    monkeypatch.chdir(tmp_path)
    df = cross_table()
    k = 3
    back = identity(k)
    df.to_csv("t.csv", index=False)
    df.to_parquet("t.parquet", index=False)
    y, p, g = df["y"].to_numpy(), df["p"].to_numpy(), df["g"].to_numpy()
    reports, groups = {}, {}
    kw = {"num_samples": 0}

    def from_frame(name, af):
        reports[name] = af.pairs.to_dict("records")
        groups[name] = af.to_dict()["by_group"]

    from_frame("numpy", ofijax.audit(0, y, p, sensitive_features=g, **kw))
    from_frame("pandas", ofijax.audit(0, df["y"], df["p"], sensitive_features=df["g"], **kw))
    pdf = pl.from_pandas(df)
    from_frame("polars", ofijax.audit(0, pdf["y"], pdf["p"], sensitive_features=pdf["g"], **kw))
    counts = stats.collect(df, label="y", pred="p", group="g").counts
    from_frame("counts", stats.audit_counts(0, counts, **kw))
    from_frame("spark from_spark", stats.audit_counts(
        0, stats.from_spark(spark.createDataFrame(df), label="y", pred="p", group="g").counts, **kw))
    batch = ofijax.audit_batch(y, {"m": p}, sensitive_features=g)
    reports["audit_batch"] = batch.pairs.to_dict("records")
    groups["audit_batch"] = batch.by_group.to_dict("records")
    whole = {}
    for fmt in ("csv", "parquet"):
        for engine in ("auto", "pandas", "stream", "spark"):
            rep = cli_audit(f"t.{fmt}", engine, f"out_{fmt}_{engine}")
            reports[f"cli {fmt} {engine}"] = rep["pairs"]
            groups[f"cli {fmt} {engine}"] = rep["by_group"]
            # the whole report.json, but for what names the input and the run
            whole[f"cli {fmt} {engine}"] = {k: v for k, v in rep.items()
                                            if k not in ("command", "data", "provenance")}
    views = {name: pair_view(recs, back) for name, recs in reports.items()}
    base = views.pop("numpy")
    ref = brute_counts(y, p, np.array([back[v] for v in g]))
    for (a, b), rec in base.items():  # the baseline itself against the references
        assert (rec["n_a"], rec["n_b"]) == (sum(ref[a]), sum(ref[b]))
        assert math.isclose(rec["ofi"], float(frac_ofi(ref[a], ref[b])), rel_tol=RTOL)
        assert rec["four_fifths"] == ref_four_fifths(ref[a], ref[b], a, b)
    mandated = {"n_a", "n_b", "ofi", "p_value", "p_adjusted", "di", "four_fifths", "verdict"}
    bad = {}
    for name, view in views.items():
        try:
            # the mandated columns everywhere; any other column where both tables carry it
            assert view.keys() == base.keys(), f"pairs {sorted(view)} vs {sorted(base)}"
            for key in base:
                assert mandated <= view[key].keys(), f"{key}: columns {sorted(view[key])}"
            common = {key: view[key].keys() & base[key].keys() for key in base}
            assert_same({key: {c: view[key][c] for c in common[key]} for key in base},
                        {key: {c: base[key][c] for c in common[key]} for key in base}, name)
        except AssertionError as exc:
            bad[f"pairs, {name}"] = str(exc)[:400]
    gbase = {back[r["group"]]: r for r in groups.pop("numpy")}
    for code, r in gbase.items():
        assert (r["tp"], r["fn"], r["fp"], r["tn"]) == ref[code]
    for name, recs in groups.items():
        try:
            got = {_back_lookup(back, r["group"]): r for r in recs}
            assert got.keys() == gbase.keys(), f"groups {sorted(got)}"
            cols = {c for c in gbase[0] if c != "group"} & set(got[0])
            assert {"n", "tp", "fn", "fp", "tn"} <= cols, sorted(cols)
            assert_same({c: {k: got[c][k] for k in cols} for c in got},
                        {c: {k: gbase[c][k] for k in cols} for c in gbase}, name)
        except AssertionError as exc:
            bad[f"groups, {name}"] = str(exc)[:400]
    first = whole.pop("cli csv pandas")
    for name, rep in whole.items():
        try:
            assert_same(rep, first, f"report.json, {name} vs cli csv pandas")
        except AssertionError as exc:
            bad[f"report.json, {name}"] = str(exc)[:400]
    assert not bad, "engines disagree with the numpy audit:\n" + "\n".join(f"{n}: {m}" for n, m in bad.items())


def test_cli_rows_permuted_groups_renamed(tmp_path, monkeypatch):
    """(a) + (b) for ``ofijax audit`` (both engines): rows permuted and groups renamed in the file."""
    monkeypatch.chdir(tmp_path)
    df = cross_table()
    k = 3
    perm = np.random.default_rng(9).permutation(len(df))
    df2 = df.iloc[perm].reset_index(drop=True)
    ren = {NAMES[c]: RENAMED[c] for c in range(k)}
    df2["g"] = df2["g"].map(ren)
    df.to_csv("t.csv", index=False)
    df2.to_csv("t2.csv", index=False)
    for fmt in ("csv", "parquet"):  # the permuted rows again, as a directory of three parts
        os.makedirs(f"parts_{fmt}")
        for i, part in enumerate(np.array_split(np.arange(len(df2)), 3)):
            chunk = df2.iloc[part]
            path = f"parts_{fmt}/part-{i}.{fmt}"
            chunk.to_csv(path, index=False) if fmt == "csv" else chunk.to_parquet(path, index=False)
    back2 = {RENAMED[c]: c for c in range(k)}
    for engine in ("pandas", "stream"):
        base = pair_view(cli_audit("t.csv", engine, f"o1_{engine}")["pairs"], identity(k),
                         directional_di=False)
        got = pair_view(cli_audit("t2.csv", engine, f"o2_{engine}")["pairs"], back2, directional_di=False)
        assert_same(got, base, f"ofijax audit --engine {engine}: rows permuted, groups renamed")
    for fmt in ("csv", "parquet"):
        got = pair_view(cli_audit(f"parts_{fmt}", "stream", f"o3_{fmt}")["pairs"], back2,
                        directional_di=False)
        assert_same(got, base, f"ofijax audit --engine stream, a directory of {fmt} parts: rows permuted, "
                               "groups renamed")


def test_cli_batch_audit_contract(tmp_path, monkeypatch):
    """``ofijax audit --pred P1 P2`` (a batch audit) writes the pair table of ``audit_batch`` on the
    same rows, and the same one for the file with its rows permuted and its groups renamed."""
    monkeypatch.chdir(tmp_path)
    df = cross_table()
    df["p2"] = 1 - df["p"]
    k = 3
    api = ofijax.audit_batch(df["y"].to_numpy(), {"p": df["p"].to_numpy(), "p2": df["p2"].to_numpy()},
                             sensitive_features=df["g"].to_numpy())
    codes = df["g"].map({NAMES[c]: c for c in range(k)}).to_numpy()
    cms_of = {c: brute_counts(df["y"].to_numpy(), df[c].to_numpy(), codes) for c in ("p", "p2")}
    perm = np.random.default_rng(8).permutation(len(df))
    df2 = df.iloc[perm].reset_index(drop=True)
    df2["g"] = df2["g"].map({NAMES[c]: RENAMED[c] for c in range(k)})
    df.to_csv("t.csv", index=False)
    df2.to_csv("t2.csv", index=False)
    for f, out, back in (("t.csv", "b1", identity(k)), ("t2.csv", "b2", {RENAMED[c]: c for c in range(k)})):
        rc, so, se = _cli(["audit", "--data", os.path.abspath(f), "--label", "y", "--pred", "p", "p2",
                           "--group", "g", "--out", out, "--no-plots"])
        assert rc == 0, se
        pairs = pd.read_csv(f"{out}/pairs.csv", keep_default_na=False, na_values=[""])
        recs = pairs.to_dict("records")
        for r in recs:  # the CSV round trip: text fields back to None where empty
            for c in ("disadvantaged", "favoured"):
                if c in r and isinstance(r[c], float) and math.isnan(r[c]):
                    r[c] = None
        directional = f == "t.csv"  # DI is directional: compared where the pairs keep their order
        got = pair_view(recs, back, candidate=True, directional_di=directional)
        assert_same(got, pair_view(api.pairs.to_dict("records"), identity(k), candidate=True,
                                   directional_di=directional), f"ofijax audit --pred p p2 on {f}")
        check_batch_references(pd.DataFrame(recs), cms_of, back)


def test_cli_group_codes_are_labels(tmp_path, monkeypatch, spark):
    """(c) + #37 item 4: group codes that look like numbers ("01", "1", "1.0") are three labels, in
    every engine, with the API's numbers for the same string labels."""
    monkeypatch.chdir(tmp_path)
    t = make_table(77, 90, 3)
    codes = np.array(["01", "1", "1.0"], dtype=object)
    df = pd.DataFrame({"y": t["y"], "p": t["p"], "g": codes[t["g"]]})
    df.to_csv("t.csv", index=False)
    df.to_parquet("t.parquet", index=False)
    back = {codes[c]: c for c in range(3)}
    base = _report_pairs(ofijax.audit(0, t["y"], t["p"], sensitive_features=codes[t["g"]],
                                      num_samples=0).pairs.to_dict("records"), back)
    bad = {}
    for fmt in ("csv", "parquet"):
        for engine in ("pandas", "stream", "spark"):
            try:
                rep = cli_audit(f"t.{fmt}", engine, f"o_{fmt}_{engine}")
                assert sorted(rep["groups"]) == sorted(codes), f"groups {rep['groups']}"
                assert_same(_report_pairs(rep["pairs"], back), base, f"{fmt} {engine}")
            except (AssertionError, KeyError) as exc:
                bad[f"{fmt} {engine}"] = str(exc)[:300]
    assert not bad, "\n".join(f"{n}: {m}" for n, m in bad.items())


def test_cli_group_column_types(tmp_path, monkeypatch, spark):
    """(c) for the CLI: a parquet group column stored as int64, string or dictionary (category), and
    the same codes in a CSV: the same report (labels are the codes as text) in every engine."""
    monkeypatch.chdir(tmp_path)
    t = make_table(79, 90, 3)
    codes = t["g"] + 10
    back = {str(c + 10): c for c in range(3)}
    base = _report_pairs(ofijax.audit(0, t["y"], t["p"], sensitive_features=codes.astype(str),
                                      num_samples=0).pairs.to_dict("records"), back)
    df = pd.DataFrame({"y": t["y"], "p": t["p"], "g": codes})
    df.to_csv("int.csv", index=False)
    df.to_parquet("int.parquet", index=False)
    df.assign(g=codes.astype(str)).to_parquet("str.parquet", index=False)
    df.assign(g=pd.Categorical(codes.astype(str))).to_parquet("cat.parquet", index=False)
    bad = {}
    for f in ("int.csv", "int.parquet", "str.parquet", "cat.parquet"):
        for engine in ("pandas", "stream", "spark"):
            try:
                rep = cli_audit(f, engine, f"o_{f}_{engine}")
                assert_same(_report_pairs(rep["pairs"], back), base, f"{f} {engine}")
            except (AssertionError, KeyError) as exc:
                bad[f"{f} {engine}"] = str(exc)[:300]
    assert not bad, "\n".join(f"{n}: {m}" for n, m in bad.items())


# Known engine differences, marked where the fix has not landed (issue #37): {case: reason}
KNOWN_CLI: dict = {}  # the Spark CSV quoting and True/False labels are fixed


def _cases(files, engines=("pandas", "stream", "spark")):
    return [pytest.param(f, e, id=f"{f}-{e}", marks=[pytest.mark.xfail(strict=True, reason=KNOWN_CLI[(f, e)])]
                         if (f, e) in KNOWN_CLI else []) for f in files for e in engines]


@pytest.mark.parametrize(("fname", "engine"), _cases(("w.csv", "w.parquet")))
def test_cli_group_labels_as_written(fname, engine, tmp_path, monkeypatch, spark):
    """Group labels are the file's text whatever it holds: a leading space, a comma and doubled
    quotes (CSV quoting, RFC 4180), non-ASCII: the same groups and numbers in every engine."""
    monkeypatch.chdir(tmp_path)
    t = make_table(81, 120, 4)
    codes = np.array(["a", " a", "a,b", 'é "q"'], dtype=object)
    df = pd.DataFrame({"y": t["y"], "p": t["p"], "g": codes[t["g"]]})
    df.to_csv(fname, index=False) if fname.endswith(".csv") else df.to_parquet(fname, index=False)
    back = {codes[c]: c for c in range(4)}
    base = _report_pairs(ofijax.audit(0, t["y"], t["p"], sensitive_features=codes[t["g"]],
                                      num_samples=0).pairs.to_dict("records"), back)
    rep = cli_audit(fname, engine, "out")
    assert sorted(rep["groups"]) == sorted(codes), f"groups {rep['groups']}"
    assert_same(_report_pairs(rep["pairs"], back), base, f"{fname} {engine}")


LABEL_FILES = {
    "float.csv": {"y": float, "p": float},
    "bool.csv": {"y": bool, "p": bool},
    "int8.parquet": {"y": "int8", "p": "int8"},
    "float.parquet": {"y": float, "p": float},
    "bool.parquet": {"y": bool, "p": bool},
    "str.parquet": {"y": str, "p": str},
}


@pytest.mark.parametrize(("fname", "engine"), _cases(tuple(LABEL_FILES)))
def test_cli_label_types_every_engine(fname, engine, tmp_path, monkeypatch, spark):
    """(c) for the CLI: label and prediction columns stored as int8, float, bool or text "0"/"1"
    (parquet), and as 0.0/1.0 or True/False (CSV): the int columns' report in every engine."""
    monkeypatch.chdir(tmp_path)
    t = make_table(80, 90, 3)
    df = pd.DataFrame({"y": t["y"], "p": t["p"], "g": _names(t["g"])}).astype(LABEL_FILES[fname])
    df.to_csv(fname, index=False) if fname.endswith(".csv") else df.to_parquet(fname, index=False)
    base = _report_pairs(ofijax.audit(0, t["y"], t["p"], sensitive_features=_names(t["g"]),
                                      num_samples=0).pairs.to_dict("records"), identity(3))
    rep = cli_audit(fname, engine, "out")
    assert_same(_report_pairs(rep["pairs"], identity(3)), base, f"{fname} {engine}")


def test_cli_intersections_every_engine(tmp_path, monkeypatch, spark):
    """``--group g --group h`` (intersections, one code "01" vs "1"): the same report.json (but
    command, data, provenance) from every engine and format, and the API's numbers."""
    monkeypatch.chdir(tmp_path)
    t = make_table(82, 150, 3)
    h = np.array(["01", "1"], dtype=object)[t["b"]]
    df = pd.DataFrame({"y": t["y"], "p": t["p"], "g": _names(t["g"]), "h": h})
    df.to_csv("i.csv", index=False)
    df.to_parquet("i.parquet", index=False)
    af = ofijax.audit(0, t["y"], t["p"], sensitive_features=df[["g", "h"]], num_samples=0)
    back = {group_label(grp): i for i, grp in enumerate(af.groups)}
    base = _report_pairs(af.to_dict()["pairs"], back)
    whole = {}
    for f in ("i.csv", "i.parquet"):
        for engine in ("pandas", "stream", "spark"):
            rc, so, se = _cli(["audit", "--data", os.path.abspath(f), "--label", "y", "--pred", "p", "--group",
                               "g", "--group", "h", "--engine", engine, "--out", f"o_{f}_{engine}", "--no-plots",
                               "--samples", "0"])
            assert rc == 0, f"{f} {engine}: {se.strip()[-300:]}"
            with open(f"o_{f}_{engine}/report.json", encoding="utf-8") as fh:
                rep = json.load(fh)
            assert_same(_report_pairs(rep["pairs"], back), base, f"{f} {engine} vs the API")
            whole[(f, engine)] = {k: v for k, v in rep.items() if k not in ("command", "data", "provenance")}
    first = whole.pop(("i.csv", "pandas"))
    for case, rep in whole.items():
        assert_same(rep, first, f"report.json, {case} vs i.csv pandas")


def test_cli_missing_value_rule(tmp_path, monkeypatch, spark):
    """#37 item 5: one missing-value rule in every engine: a literal "NA" is a group label (the same
    report from every engine), and an empty group field is missing (every engine refuses it: exit 2,
    no report)."""
    monkeypatch.chdir(tmp_path)
    t = make_table(78, 90, 3)
    codes = np.array(["NA", "b", "c"], dtype=object)
    with open("na.csv", "w", encoding="utf-8") as fh:
        fh.write("y,p,g\n" + "".join(f"{a},{b},{codes[c]}\n" for a, b, c in zip(t["y"], t["p"], t["g"])))
    back = {codes[c]: c for c in range(3)}
    base = _report_pairs(ofijax.audit(0, t["y"], t["p"], sensitive_features=codes[t["g"]],
                                      num_samples=0).pairs.to_dict("records"), back)
    bad = {}
    for engine in ("pandas", "stream", "spark"):
        try:
            rep = cli_audit("na.csv", engine, f"na_{engine}")
            assert_same(_report_pairs(rep["pairs"], back), base, engine)
        except (AssertionError, KeyError) as exc:
            bad[f"'NA' label, {engine}"] = str(exc)[:300]
    with open("empty.csv", "w", encoding="utf-8") as fh:
        fh.write("y,p,g\n" + "".join(f"{a},{b},{'' if i == 5 else codes[c]}\n"
                                     for i, (a, b, c) in enumerate(zip(t["y"], t["p"], t["g"]))))
    frame = pd.read_csv("empty.csv", dtype={"g": str}, keep_default_na=False, na_values=[""])
    assert frame["g"].isna().sum() == 1
    frame.to_parquet("null.parquet", index=False)  # the empty field as a parquet null
    for f in ("empty.csv", "null.parquet"):
        for engine in ("pandas", "stream", "spark"):
            out = f"em_{f}_{engine}"
            rc, so, se = _cli(["audit", "--data", os.path.abspath(f), "--label", "y", "--pred", "p",
                               "--group", "g", "--engine", engine, "--out", out, "--no-plots", "--samples", "0"])
            if rc != 2 or os.path.exists(out) or len(se.strip().splitlines()) != 1:
                bad[f"missing group value in {f}, {engine}"] = (
                    f"exit {rc}, report written: {os.path.exists(out)}, stderr {se.strip()[-200:]!r}")
    for engine in ("pandas", "stream", "spark"):  # --na-values NA: now "NA" is missing everywhere
        out = f"nav_{engine}"
        rc, so, se = _cli(["audit", "--data", os.path.abspath("na.csv"), "--label", "y", "--pred", "p",
                           "--group", "g", "--engine", engine, "--out", out, "--no-plots", "--samples", "0",
                           "--na-values", "NA"])
        if rc != 2 or os.path.exists(out) or len(se.strip().splitlines()) != 1:
            bad[f"--na-values NA, {engine}"] = (
                f"exit {rc}, report written: {os.path.exists(out)}, stderr {se.strip()[-200:]!r}")
    assert not bad, "\n".join(f"{n}: {m}" for n, m in bad.items())


def _scan_json(path, engine, out, *extra) -> dict:
    rc, so, se = _cli(["scan", "--data", str(path), "--label", "y", "--pred", "p", "--attr", "a", "b", "c",
                       "--engine", engine, "--samples", "0", "--out", str(out), *extra])
    assert rc == 0, f"ofijax scan --engine {engine}: exit {rc}: {se.strip()[-400:]}"
    with open(f"{out}/scan.json", encoding="utf-8") as fh:
        return json.load(fh)["results"]


def _scan_core(results: dict, back: dict) -> dict:
    return {name: {"subgroup": {c: frozenset(back[c][v] for v in vals) for c, vals in r["subgroup"].items()},
                   "score": r["score"], "q": r["q"]} for name, r in results.items()}


def _scan_frame(t, values=ATTR_VALUES):
    return pd.DataFrame({"y": t["y"], "p": t["p"], **{c: values[c][t[c]] for c in values}})


def test_cli_scan_contract(tmp_path, monkeypatch, spark):
    """``ofijax scan`` (FPR-/TPR-Scan in the pandas, stream and Spark engines, IJDI-Scan with
    --lam/--prob in the pandas engine): rows permuted give the same subgroups, scores and odds, and
    the engines agree. (Renamed attribute values change the fixed seed's restarts, a randomized output:
    covered with many restarts by test_scans_rows_names_types.)"""
    monkeypatch.chdir(tmp_path)
    t = make_table(31, 150, 2)
    _scan_frame(t).assign(prob=t["prob"]).to_csv("s.csv", index=False)
    perm = np.random.default_rng(4).permutation(150)
    tp = _permute_table(t, perm)
    _scan_frame(tp).assign(prob=tp["prob"]).to_csv("s2.csv", index=False)
    back = SCAN_BACK["str"]
    base = _scan_core(_scan_json("s.csv", "pandas", "o1"), back)
    assert set(base) == {"fpr_scan", "tpr_scan"}
    assert_same(_scan_core(_scan_json("s2.csv", "pandas", "o2"), back), base, "ofijax scan: rows permuted")
    assert_same(_scan_core(_scan_json("s.csv", "stream", "o3"), back), base,
                "ofijax scan --engine stream vs pandas", rtol=1e-9)
    assert_same(_scan_core(_scan_json("s2.csv", "stream", "o4"), back), base,
                "ofijax scan --engine stream: rows permuted", rtol=1e-9)
    assert_same(_scan_core(_scan_json(os.path.abspath("s2.csv"), "spark", "o7"), back), base,
                "ofijax scan --engine spark: rows permuted", rtol=1e-9)
    ijdi = ("--lam", "0.5", "--prob", "prob", "--side", "negative")
    base_ijdi = _scan_core(_scan_json("s.csv", "pandas", "o5", *ijdi), back)
    assert base_ijdi, "no IJDI result"
    assert_same(_scan_core(_scan_json("s2.csv", "pandas", "o6", *ijdi), back), base_ijdi,
                "ofijax scan --lam 0.5 --prob: rows permuted")


def test_cli_scan_attribute_labels_every_engine(tmp_path, monkeypatch, spark):
    """#37 items 4-5 for ``ofijax scan``: attribute codes "01", "1", "1.0" are three values and "NA"
    is a value, in every engine: the same subgroups and scores."""
    monkeypatch.chdir(tmp_path)
    t = make_table(31, 150, 2)
    values = {"a": np.array(["01", "1", "1.0"], dtype=object), "b": np.array(["NA", "b"], dtype=object),
              "c": np.array(["x", "y", "z", "w"], dtype=object)}
    _scan_frame(t, values).to_csv("s.csv", index=False)
    back = {c: {v: i for i, v in enumerate(vals)} for c, vals in values.items()}
    base = _scan_core(_scan_json(os.path.abspath("s.csv"), "pandas", "o1"), back)
    for engine in ("stream", "spark"):
        assert_same(_scan_core(_scan_json(os.path.abspath("s.csv"), engine, f"o_{engine}"), back), base,
                    f"ofijax scan --engine {engine} vs pandas", rtol=1e-9)


def test_cli_scan_binned_attribute_every_engine(tmp_path, monkeypatch, spark):
    """``ofijax scan --bins 3`` on a continuous attribute: the same bins, subgroups and scores in
    every engine, for the file's rows in any order."""
    monkeypatch.chdir(tmp_path)
    t = make_table(31, 150, 2)
    df = pd.DataFrame({"y": t["y"], "p": t["p"], "x": np.round(t["prob"] * 100, 1),
                       "b": ATTR_VALUES["b"][t["b"]]})
    df.to_csv("s.csv", index=False)
    df.iloc[np.random.default_rng(0).permutation(150)].to_csv("s2.csv", index=False)

    def run(f, engine):
        rc, so, se = _cli(["scan", "--data", os.path.abspath(f), "--label", "y", "--pred", "p", "--attr", "x",
                           "b", "--bins", "3", "--engine", engine, "--samples", "0", "--out", f"o_{f}_{engine}"])
        assert rc == 0, f"{f} {engine}: {se.strip()[-300:]}"
        with open(f"o_{f}_{engine}/scan.json", encoding="utf-8") as fh:
            res = json.load(fh)["results"]
        return {name: {"subgroup": {c: sorted(v) for c, v in r["subgroup"].items()}, "score": r["score"],
                       "q": r["q"]} for name, r in res.items()}

    base = run("s.csv", "pandas")
    assert set(base) == {"fpr_scan", "tpr_scan"}
    for f in ("s.csv", "s2.csv"):
        for engine in ("pandas", "stream", "spark"):
            if (f, engine) != ("s.csv", "pandas"):
                assert_same(run(f, engine), base, f"ofijax scan --bins 3, {f}, {engine}", rtol=1e-9)


def test_cli_scan_engines_same_fields(tmp_path, monkeypatch, spark):
    """``ofijax scan`` writes the same scan.json in every engine (but what names the input, the
    engine and the run: data, engine, provenance): ``size`` (rows of the subgroup), the count of
    scanned rows, ``num_samples``, the descriptions, ``top``."""
    monkeypatch.chdir(tmp_path)
    t = make_table(31, 150, 2)
    _scan_frame(t).to_csv("s.csv", index=False)
    whole = {}
    for engine in ("pandas", "stream", "spark"):
        _scan_json(os.path.abspath("s.csv"), engine, f"o_{engine}")
        with open(f"o_{engine}/scan.json", encoding="utf-8") as fh:
            whole[engine] = {k: v for k, v in json.load(fh).items()
                             if k not in ("data", "engine", "provenance")}
    a = whole["pandas"]["results"]
    for engine in ("stream", "spark"):
        b = whole[engine]["results"]
        for name in a:
            common = {"size", "scanned_size", "num_samples", "p_value", "side"}
            va = {c: a[name].get(c, "<missing>") for c in common}
            vb = {c: b[name].get(c, "<missing>") for c in common}
            assert va == vb, f"{name}: pandas engine {va} vs {engine} engine {vb}"
        assert_same(whole[engine], whole["pandas"], f"scan.json, {engine} vs pandas", rtol=1e-9)


def test_cli_audit_scan_options_every_engine(tmp_path, monkeypatch, spark):
    """#43 (CLI): ``ofijax audit --scan`` honours ``--bins`` (the --attr columns, cut from their cells
    by the one binning rule) and ``--top`` in the pandas, stream and Spark engines with one
    report.json (but command, data, provenance); ``--max-levels`` refuses a group column in the same
    words everywhere; what the counts cannot give is refused by name (``--threshold``, ``--bins`` on a
    --group column the pandas engine would cut), and an existing ``--out`` without ``--force`` too:
    exit 2, one line, the folder untouched."""
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(43)
    n = 240
    d = pd.DataFrame({"y": rng.integers(0, 2, n), "p": rng.integers(0, 2, n),
                      "g": rng.choice(["a", "b", "c"], n), "age": rng.integers(18, 80, n),
                      "score": rng.random(n).round(3)})
    d.loc[(d["g"] == "c") & (d["y"] == 0), "p"] = 1
    assert d["age"].nunique() > 20  # refused unless binned
    d.to_csv("t.csv", index=False)
    os.mkdir("parts")
    d.iloc[:120].to_csv("parts/p0.csv", index=False)
    d.iloc[120:].to_csv("parts/p1.csv", index=False)
    sources = {"pandas": "t.csv", "stream": "parts", "spark": "parts"}
    reports = {}
    for engine, src in sources.items():
        rep = cli_audit(src, engine, f"o_{engine}", "--scan", "--attr", "g", "age", "--bins", "4",
                        "--top", "2", "--scan-samples", "0")
        assert rep["data"]["engine"] == engine
        reports[engine] = {k: v for k, v in rep.items() if k not in ("command", "data", "provenance")}
    base = reports["pandas"]
    assert base["settings"]["scan_top_k"] == 2 and set(base["scan"]) == {"fpr_scan", "tpr_scan"}
    for engine in ("stream", "spark"):
        assert_same(reports[engine], base, f"ofijax audit --scan --bins 4 --top 2, {engine} vs pandas", rtol=1e-9)
    found = [r["subgroup"] for s in base["scan"].values() for r in s["top"]]
    assert sum(len(s["top"]) for s in base["scan"].values()) == 4
    ages = {v for sub in found for v in sub.get("age", [])}
    assert ages and all(v.split(": ")[0] in {"1", "2", "3", "4"} for v in ages), ages  # bin labels

    def refused(engine, *extra):
        rc, so, se = _cli(["audit", "--data", os.path.abspath(sources[engine]), "--label", "y",
                           "--engine", engine, "--samples", "0", "--no-plots", *extra])
        assert rc == 2 and len(se.strip().splitlines()) == 1, (engine, extra, rc, se[-300:])
        assert not os.path.exists("r") and os.listdir("exists") == []
        return se.strip().split("error: ", 1)[1]

    os.mkdir("exists")
    words = {e: refused(e, "--pred", "p", "--group", "g", "--max-levels", "2", "--out", "r") for e in sources}
    assert words["pandas"].startswith("--group: column 'g' has 3 distinct values (more than --max-levels 2)")
    assert words["stream"] == words["spark"] == words["pandas"]
    for engine in ("stream", "spark"):
        assert refused(engine, "--pred", "score", "--group", "g", "--threshold", "0.5", "--out", "r"
                       ).startswith("--threshold:")
        assert refused(engine, "--pred", "p", "--group", "age", "--bins", "4", "--out", "r").startswith("--bins:")
    for engine in sources:
        assert refused(engine, "--pred", "p", "--group", "g", "--out", "exists").startswith("--out:")
