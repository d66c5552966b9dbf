"""Feature bases and 1-D solvers of the Bias Scan engine vs. row-level NumPy."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ofijax.scan import _basis as B
from ofijax.scan import _solve as S


@pytest.fixture(autouse=True)
def _x64():
    with jax.enable_x64(True):
        yield


def _rows_F(t, p):
    """Row-level F(t) = Σ log1p(p·expm1(t)) and F'(t) = Σ p e^t / (1 - p + p e^t)."""
    x = np.expm1(t)[:, None]
    return np.log1p(p[None, :] * x).sum(1), (p * (1 + x) / (1 + p * x)).sum(1)


@pytest.mark.parametrize("q_bounds", [(1e-6, 1e6), (1e-3, 1e3)])
@pytest.mark.parametrize("direction", ["positive", "negative"])
def test_chebyshev_error_bound(direction, q_bounds):
    """|F_cheb - F| ≤ n·(ρ^{-K} + 4·K·T·eps + RANK_TOL) on the interval (truncation + round-off +
    reduced-rank bound stated in ``_basis``), for random p including 0, 1 and tiny p."""
    rng = np.random.default_rng(0)
    p = np.concatenate([rng.uniform(0, 1, 500), [0.0, 1.0, 1e-9, 1e-4, 1 - 1e-9, 0.001]])
    n = p.size
    cells = np.zeros(n, np.int32)
    basis = B.make_basis("chebyshev", direction=direction, q_bounds=q_bounds)
    k = basis.num_nodes
    assert basis.num_features < k  # the reduced-rank projection is in use
    a, b = float(basis.t_lo), float(basis.t_hi)
    h = 0.5 * (b - a)
    rho = math.pi / h + math.sqrt((math.pi / h) ** 2 + 1)
    assert rho ** (-k) <= 1e-13 < rho ** (-(k - 1))  # K is the smallest meeting the target
    phi = B.features(jnp.asarray(p), jnp.asarray(cells), 1, basis)[0]
    layout = B.make_layout(cells, 1, B.layout_group(basis))
    phi_blocked = B.features(jnp.asarray(p), jnp.asarray(cells), 1, basis, layout)[0]
    t = np.linspace(a, b, 997)
    f, df = B.basis_eval(basis, jnp.asarray(t))
    F_ref, dF_ref = _rows_F(t, p)
    bound = n * (rho ** (-k) + 4 * k * max(abs(a), b) * np.finfo(float).eps + B.RANK_TOL)
    np.testing.assert_allclose(np.asarray(f @ phi), F_ref, rtol=0, atol=bound)
    np.testing.assert_allclose(np.asarray(f @ phi_blocked), F_ref, rtol=0, atol=bound)
    # derivative: interpolant derivative loses ~K² / h
    np.testing.assert_allclose(np.asarray(df @ phi), dF_ref, rtol=0, atol=bound * k * k / h)


def test_log_positive_within_one_ulp_of_numpy():
    """_log_positive (the blocked features' log) is within 1 ulp of np.log on positive normal
    float64 over the whole range, at the √½ split of the mantissa and at powers of two, and
    log(1) is exactly 0 (padding slots' factor)."""
    rng = np.random.default_rng(11)
    sqrt_half = math.sqrt(0.5)
    x = np.concatenate([
        np.exp(rng.uniform(-700, 700, 200_000)),  # the whole range
        1.0 + rng.uniform(-0.3, 0.5, 100_000),  # near 1, where log's relative error matters
        2.0 ** np.arange(-1020, 1021, dtype=float),
        np.nextafter(sqrt_half, 0) * 2.0 ** rng.integers(-50, 50, 50),
        sqrt_half * 2.0 ** rng.integers(-50, 50, 50),
        np.nextafter(sqrt_half, 1) * 2.0 ** rng.integers(-50, 50, 50),
        [1.0, np.nextafter(1.0, 0), np.nextafter(1.0, 2), np.finfo(float).tiny,
         np.finfo(float).max],
    ])
    got = np.asarray(B._log_positive(jnp.asarray(x)))
    ref = np.log(x)
    ulps = np.abs(got - ref) / np.spacing(np.abs(ref))
    assert np.all(np.where(ref == 0, got == 0, ulps <= 1.0)), float(ulps.max())
    assert float(B._log_positive(jnp.asarray(1.0))) == 0.0


@pytest.mark.parametrize("q_bounds", [(1e-6, 1e6), (1e-3, 1e3), (0.5, 2.0), (1e-9, 3.0)])
@pytest.mark.parametrize("direction", ["positive", "negative"])
def test_chebyshev_endpoints_closed_form_equal_basis_eval(direction, q_bounds):
    """A Chebyshev basis's endpoints() (closed form: T_k(∓1), T_k'(∓1)/half, projected when the
    basis is reduced) are basis_eval's values at t_lo and t_hi bit for bit, eagerly and under jit,
    for full-rank and reduced bases."""
    import dataclasses

    basis = B.make_basis("chebyshev", direction=direction, q_bounds=q_bounds)
    full = dataclasses.replace(basis, proj=None)

    def both(b):
        f, df = B.basis_eval(b, jnp.stack([b.t_lo, b.t_hi]))
        return (f[0], df[0], f[1], df[1]), b.endpoints()

    for ref, got in (both(full), jax.jit(both)(full)):
        for r, g in zip(ref, got):
            assert np.array_equal(np.asarray(r), np.asarray(g))
    for ref, got in (both(basis), jax.jit(both)(basis)):  # reduced: the projected values
        for r, g in zip(ref, got):
            assert np.array_equal(np.asarray(r), np.asarray(g))
    k = full.num_nodes
    assert np.array_equal(np.asarray(full.endpoints()[0]), (-1.0) ** np.arange(k))


def test_block_size_follows_rows_per_cell_and_blocked_features_match():
    """block_size: G = 1 for one row per cell, 16 for 10, 32 for 160 (capped by max_group); the
    blocked features of a mixed table equal the row-by-row ones (≤ 1e-12 relative)."""
    assert B.block_size(np.ones(50, np.int64), 32) == 1
    assert B.block_size(np.full(50, 10), 32) == 16
    assert B.block_size(np.full(50, 160), 32) == 32
    assert B.block_size(np.full(50, 160), 8) == 8
    rng = np.random.default_rng(4)
    sizes = np.concatenate([np.ones(300, int), rng.integers(2, 40, 60), [500, 2000]])
    cells = np.repeat(np.arange(sizes.size), sizes)
    rng.shuffle(cells)
    p = rng.uniform(0, 1, cells.size)
    basis = B.make_basis("chebyshev", direction="positive")
    layout = B.make_layout(cells, sizes.size, B.layout_group(basis))
    assert layout.group == B.block_size(sizes, B.layout_group(basis))
    assert layout.slot_row.shape[0] == layout.group * int(np.sum(-(-sizes // layout.group)))
    plain = B.features(jnp.asarray(p), jnp.asarray(cells), sizes.size, basis)
    blocked = B.features(jnp.asarray(p), jnp.asarray(cells), sizes.size, basis, layout)
    scale = np.abs(np.asarray(plain)).max(axis=1, keepdims=True)
    np.testing.assert_allclose(np.asarray(blocked) / scale, np.asarray(plain) / scale,
                               rtol=0, atol=1e-12)


@pytest.mark.parametrize("reduced", [False, True])
def test_blocked_features_of_one_or_two_row_cells_match(reduced):
    """Cells of one or two rows (G ≤ 2: each chunk's logs mapped onto the features before they
    are summed, over several chunks) give the row-by-row features (≤ 1e-12 relative), full and
    reduced-rank basis."""
    rng = np.random.default_rng(5)
    sizes = rng.choice([1, 1, 1, 2], 6000)
    cells = np.repeat(np.arange(sizes.size), sizes)
    rng.shuffle(cells)
    p = rng.uniform(0, 1, cells.size)
    p[:20] = [0.0, 1.0, 1e-12, 1 - 1e-12, 0.5] * 4
    basis = B.make_basis("chebyshev", direction="positive", reduced=reduced)
    layout = B.make_layout(cells, sizes.size, B.layout_group(basis))
    blocks = layout.block_cell.shape[0]
    assert layout.group <= 2 and blocks < 2 * sizes.size  # the per-chunk mapping
    assert layout.group * blocks > B._PROJECT_CHUNK  # over more than one chunk
    plain = B.features(jnp.asarray(p), jnp.asarray(cells), sizes.size, basis)
    blocked = B.features(jnp.asarray(p), jnp.asarray(cells), sizes.size, basis, layout)
    assert blocked.shape == (sizes.size, basis.num_features)
    # relative to each cell's largest feature, at least 1: a cell whose one row has p = 1e-12
    # holds features ~1e-6 whose log-of-product round-off (~1e-16, as in every blocked path)
    # is 1e-10 of them
    scale = np.maximum(np.abs(np.asarray(plain)).max(axis=1, keepdims=True), 1.0)
    np.testing.assert_allclose(np.asarray(blocked) / scale, np.asarray(plain) / scale,
                               rtol=0, atol=1e-12)
    # summed straight into padded cells (total rows): the same features bit for bit, zero rows
    # after them; likewise row by row; with columns appended (tail), those columns exactly
    total = sizes.size + 777
    tail = np.random.default_rng(6).normal(size=(total, 4))
    tail[:, 3] = 0.0
    for lay, ref in ((layout, blocked), (None, plain)):
        padded = np.asarray(B.features(jnp.asarray(p), jnp.asarray(cells), sizes.size, basis,
                                       lay, total=total))
        assert padded.shape == (total, basis.num_features)
        np.testing.assert_array_equal(padded[:sizes.size], np.asarray(ref))
        assert not padded[sizes.size:].any()
        wide = np.asarray(B.features(jnp.asarray(p), jnp.asarray(cells), sizes.size, basis, lay,
                                     total=total, tail=jnp.asarray(tail)))
        np.testing.assert_array_equal(wide, np.concatenate([padded, tail], axis=1))
    with pytest.raises(ValueError, match="total"):
        B.features(jnp.asarray(p), jnp.asarray(cells), sizes.size, basis, layout, total=10)
    with pytest.raises(ValueError, match="tail"):
        B.features(jnp.asarray(p), jnp.asarray(cells), sizes.size, basis, layout, total=total,
                   tail=jnp.zeros((total - 1, 4)))


def test_chebyshev_scores_match_rows():
    """Maximised scores from Chebyshev features == row-level maximisation (random p, many sets)."""
    rng = np.random.default_rng(1)
    n, c = 3000, 12
    p = rng.uniform(0.02, 0.98, n)
    cell = rng.integers(0, c, n).astype(np.int32)
    odds = p / (1 - p) * np.where(cell < 4, 3.0, 1.0)
    y = (rng.uniform(size=n) < odds / (1 + odds)).astype(float)
    basis = B.make_basis("chebyshev", direction="positive")
    phi = B.features(jnp.asarray(p), jnp.asarray(cell), c, basis)
    Y = jax.ops.segment_sum(jnp.asarray(y), jnp.asarray(cell), c)
    sets = rng.uniform(size=(20, c)) < 0.5
    w = jnp.asarray(sets, jnp.float64)
    g, t = S.maximize(basis, w @ phi, w @ Y)
    grid = np.linspace(0, math.log(1e6), 1001)
    for i in range(20):
        rows = sets[i][cell]

        def G(s, rows=rows):
            s = np.atleast_1d(s)
            return y[rows].sum() * s - np.log1p(np.multiply.outer(np.expm1(s), p[rows])).sum(1)

        at_t = G(float(t[i]))[0]
        assert float(g[i]) == pytest.approx(at_t, abs=1e-9)  # the score is G at the reported t
        assert at_t >= G(grid).max() - 1e-9  # and no grid point beats it
        h = 1e-5  # t is a stationary point (or 0 when the slope there is negative)
        if float(t[i]) > 0:
            assert at_t >= max(G(float(t[i]) - h)[0], G(float(t[i]) + h)[0]) - 1e-12


def test_exact_single_p_closed_form():
    """Exact basis, one p: score = n·KL(r‖p) for r > p (positive) / r < p (negative), else 0."""
    basis_pos = B.make_basis("exact", direction="positive", p_values=[0.3])
    basis_neg = B.make_basis("exact", direction="negative", p_values=[0.3])
    n = np.array([10.0, 50.0, 200.0, 7.0, 40.0, 1.0])
    y = np.array([6.0, 10.0, 80.0, 2.0, 40.0, 0.0])
    phi = jnp.asarray(n[:, None])

    def kl(r, p):
        out = np.zeros_like(r)
        a = r > 0
        out[a] += r[a] * np.log(r[a] / p)
        b = r < 1
        out[b] += (1 - r[b]) * np.log((1 - r[b]) / (1 - p))
        return out

    r = y / n
    expect_pos = np.where(r > 0.3, n * kl(r, 0.3), 0.0)
    expect_neg = np.where(r < 0.3, n * kl(r, 0.3), 0.0)
    g_pos, t_pos = S.maximize(basis_pos, phi, jnp.asarray(y))
    g_neg, _ = S.maximize(basis_neg, phi, jnp.asarray(y))
    finite = r < 1  # r = 1 (positive) / r = 0 (negative): q̂ at the bracket end, checked below
    np.testing.assert_allclose(np.asarray(g_pos)[finite], expect_pos[finite], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(g_neg)[r > 0], expect_neg[r > 0], rtol=1e-12, atol=1e-12)
    assert float(g_neg[5]) == pytest.approx(-math.log(0.7 + 0.3e-6), rel=1e-12)
    q = np.exp(np.asarray(t_pos))
    q_ref = (r / np.maximum(1 - r, 1e-300)) * (0.7 / 0.3)
    np.testing.assert_allclose(q[[0, 2]], q_ref[[0, 2]], rtol=1e-12)
    # Y = n: q̂ = ∞, the bracket end is returned and the score is the value there
    T = math.log(1e6)
    assert q[4] == pytest.approx(1e6)
    assert float(g_pos[4]) == pytest.approx(40 * (T - math.log(0.7 + 0.3 * 1e6)), rel=1e-12)
    # the bisection path (two p values, one empty) agrees with the closed form
    basis2 = B.make_basis("exact", direction="positive", p_values=[0.3, 0.6])
    phi2 = jnp.asarray(np.stack([n, np.zeros_like(n)], 1))
    g2, _ = S.maximize(basis2, phi2, jnp.asarray(y))
    np.testing.assert_allclose(np.asarray(g2)[finite], expect_pos[finite], rtol=1e-10, atol=1e-10)


def test_crossings_are_roots():
    basis = B.make_basis("chebyshev", direction="positive")
    rng = np.random.default_rng(2)
    p = rng.uniform(0.1, 0.5, 300)
    y = (rng.uniform(size=300) < 0.6).astype(float)
    phi = B.features(jnp.asarray(p), jnp.zeros(300, jnp.int32), 1, basis)
    Y = jnp.asarray([y.sum()])
    g, t = S.maximize(basis, phi, Y)
    c = 0.25 * float(g[0])
    lo, hi = S.crossings(basis, phi, Y, t, c)
    G = lambda s: float(S.value_at(basis, phi, Y, jnp.asarray([s]))[0])  # noqa: E731
    assert 0 < float(lo[0]) < float(t[0]) < float(hi[0]) < math.log(1e6)
    assert G(float(lo[0])) == pytest.approx(c, abs=1e-8)
    assert G(float(hi[0])) == pytest.approx(c, abs=1e-8)


def test_features_exact_counts_and_linearity():
    p = np.array([0.1, 0.5, 0.1, 0.9, 0.5, 0.5])
    cell = np.array([0, 0, 1, 1, 1, 2], np.int32)
    basis = B.make_basis("exact", direction="positive", p_values=p)
    phi = np.asarray(B.features(jnp.asarray(p), jnp.asarray(cell), 3, basis))
    np.testing.assert_array_equal(phi, [[1, 1, 0], [1, 1, 1], [0, 1, 0]])
    cb = B.make_basis("chebyshev", direction="negative")
    f_all = B.features(jnp.asarray(p), jnp.asarray(cell), 3, cb)
    f_one = B.features(jnp.asarray(p), jnp.zeros(6, jnp.int32), 1, cb)
    np.testing.assert_allclose(np.asarray(f_all.sum(0)), np.asarray(f_one[0]), atol=1e-12)


@pytest.mark.parametrize("direction", ["positive", "negative"])
def test_reduced_rank_matches_full_basis(direction):
    """The reduced-rank basis (r < K features) agrees with the full Chebyshev basis to RANK_TOL per
    row, in F and in the maximised score, and costs fewer features."""
    rng = np.random.default_rng(3)
    p = np.concatenate([rng.uniform(0, 1, 400), [0.0, 1.0, 1e-10, 1 - 1e-10]])
    n = p.size
    cells = (np.arange(n) % 7).astype(np.int32)
    full = B.make_basis("chebyshev", direction=direction, reduced=False)
    red = B.make_basis("chebyshev", direction=direction)
    assert red.num_nodes == full.num_features == 68 and red.num_features <= 56
    pf = B.features(jnp.asarray(p), jnp.asarray(cells), 7, full)
    pr = B.features(jnp.asarray(p), jnp.asarray(cells), 7, red)
    t = np.linspace(float(full.t_lo), float(full.t_hi), 301)
    ff, _ = B.basis_eval(full, jnp.asarray(t))
    fr, _ = B.basis_eval(red, jnp.asarray(t))
    np.testing.assert_allclose(np.asarray(fr @ pr.T), np.asarray(ff @ pf.T), rtol=0,
                               atol=n * B.RANK_TOL)
    y = (rng.uniform(size=n) < p).astype(float)
    Y = jax.ops.segment_sum(jnp.asarray(y), jnp.asarray(cells), 7)
    sets = jnp.asarray(rng.uniform(size=(15, 7)) < 0.6, jnp.float64)
    g_full, _ = S.maximize(full, sets @ pf, sets @ Y)
    g_red, _ = S.maximize(red, sets @ pr, sets @ Y)
    np.testing.assert_allclose(np.asarray(g_red), np.asarray(g_full), rtol=0, atol=1e-8)


def _set_sums(rng, p, basis, lift, ncell, n_sets, lo):
    """Features and outcome sums of ``n_sets`` random unions of ``ncell`` random cells of rows
    with expectations ``p`` and outcomes drawn at odds × ``lift``."""
    odds = p / (1 - p + 1e-300) * lift
    y = (rng.uniform(size=p.size) < odds / (1 + odds)).astype(float)
    cells = jnp.asarray(rng.integers(0, ncell, p.size).astype(np.int32))
    phi_c = B.features(jnp.asarray(p), cells, ncell, basis)
    y_c = jax.ops.segment_sum(jnp.asarray(y), cells, ncell)
    sets = jnp.asarray(rng.uniform(size=(n_sets, ncell)) < rng.uniform(lo, 1, (n_sets, 1)),
                       jnp.float64)
    return sets @ phi_c, sets @ y_c


@pytest.mark.parametrize("kind,direction", [("chebyshev", "positive"), ("exact", "negative")])
def test_newton_solver_matches_fine_bisection(kind, direction, monkeypatch):
    """The halvings + safeguarded Newton solver against 60 plain halvings (bracket ~1e-17):
    maximiser, score and both crossings, with thresholds from 0 (a crossing at the bracket end
    t = 0) up to just below the maximum (crossings next to t̂, where G is flat)."""
    rng = np.random.default_rng(11)
    n, ncell = 2000, 48
    if kind == "exact":
        pv = np.array([0.1, 0.35, 0.6, 0.9])
        p = rng.choice(pv, n)
        basis = B.make_basis("exact", direction=direction, p_values=pv)
    else:
        p = rng.uniform(0, 1, n) ** 2
        basis = B.make_basis("chebyshev", direction=direction)
    phi, Y = _set_sums(rng, p, basis, 2.0 if direction == "positive" else 0.5, ncell, 60, 0.02)

    def solve(c):
        g, t = S.maximize(basis, phi, Y)
        lo, hi = S.crossings(basis, phi, Y, t, c)
        return [np.asarray(a) for a in (g, t, lo, hi)]

    g_ref, _ = S.maximize(basis, phi, Y)
    for c in [0.0, float(np.quantile(np.asarray(g_ref), 0.5)), float(np.max(g_ref)) * 0.999]:
        new = solve(c)
        monkeypatch.setattr(S, "NEWTON", False)
        monkeypatch.setattr(S, "N_ITER", 60)
        ref = solve(c)
        monkeypatch.setattr(S, "NEWTON", True)
        ok = ref[0] > c
        assert ok.sum() >= 1
        np.testing.assert_allclose(new[0], ref[0], rtol=1e-11, atol=1e-12)
        np.testing.assert_allclose(new[1], ref[1], rtol=0, atol=1e-10)
        np.testing.assert_allclose(new[2][ok], ref[2][ok], rtol=0, atol=1e-10)
        np.testing.assert_allclose(new[3][ok], ref[3][ok], rtol=0, atol=1e-10)


@pytest.mark.parametrize("direction", ["positive", "negative"])
def test_grid_bracket_holds_the_root_and_matches_halvings(direction, monkeypatch):
    """The grid bracket (one product with the series' table on 31 grid points) holds the root
    of the maximiser's slope and of both crossings, is at most (b - a)/32 wide (what 5 halvings
    leave) and stays ordered; and the solver gives the same results with it as with the
    halvings (GRID off), to round-off."""
    rng = np.random.default_rng(5)
    basis = B.make_basis("chebyshev", direction=direction)
    n, ncell = 1500, 30
    p = rng.uniform(0.02, 0.98, n)
    phi, Y = _set_sums(rng, p, basis, 2.5 if direction == "positive" else 0.4, ncell, 40, 0.05)
    a, b = float(basis.t_lo), float(basis.t_hi)
    full = B.make_basis("chebyshev", direction=direction, reduced=False)
    coef_f = phi @ basis.proj.T  # the full Chebyshev coefficients of F
    d = jnp.asarray(S._deriv_matrix(coef_f.shape[-1]))
    half = 0.5 * (b - a)

    def slope(t):  # Y - F'(t) by the full basis, one point per set
        _, df = B.basis_eval(full, jnp.asarray(t))
        return np.asarray(Y) - np.einsum("sk,sk->s", np.asarray(coef_f), np.asarray(df))

    lo0, hi0 = jnp.full(40, a), jnp.full(40, b)
    lo, hi = S._grid_bracket(basis, coef_f @ d, 1.0 / half,
                             lambda t, v: Y[:, None] - v > 0, lo0, hi0)
    lo, hi = np.asarray(lo), np.asarray(hi)
    assert np.all(lo < hi) and np.all(hi - lo <= (b - a) / 32 * (1 + 1e-12))
    s_lo, s_hi = slope(lo), slope(hi)
    inner = (lo > a) & (hi < b)
    assert np.all(s_lo[lo > a] > 0) and np.all(s_hi[hi < b] <= 0) and inner.any()
    # the solver with and without the grid
    g, t = S.maximize(basis, phi, Y)
    c = float(np.quantile(np.asarray(g), 0.4))
    new = [np.asarray(x) for x in (g, t, *S.crossings(basis, phi, Y, t, c))]
    monkeypatch.setattr(S, "GRID", False)
    g2, t2 = S.maximize(basis, phi, Y)
    old = [np.asarray(x) for x in (g2, t2, *S.crossings(basis, phi, Y, t2, c))]
    ok = old[0] > c
    assert ok.sum() >= 5
    np.testing.assert_allclose(new[0], old[0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(new[1], old[1], rtol=0, atol=1e-10)
    for i in (2, 3):
        np.testing.assert_allclose(new[i][ok], old[i][ok], rtol=0, atol=1e-10)
