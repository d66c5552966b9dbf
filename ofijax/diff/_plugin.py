"""The plug-in group-blind rule behind ``OFIClassifier(method="plugin")``.

Private module; it owns the rule's three parts and nothing of the estimator's conventions: the
group model :math:`s(x) = P(\\text{group} \\mid x)` (multinomial logistic regression trained
with Adam on mini-batches, like the label model), the exact search of the multipliers
:math:`\\lambda` on the training rows (the rule's predictions only change where a row's score
crosses 0, so a line search over those breakpoints with cumulative sums finds every distinct
prediction vector; counts and rates are float64 whatever ``jax_enable_x64`` says), and the
score :math:`2\\eta(x) - 1 + \\sum_g \\lambda_g s_g(x)/\\pi_g` in float64. With
:math:`\\mathcal{B}_g = PR_g - BR_g`, equal marginal benefit across groups is a linear
constraint on the predictions, and the accuracy-optimal classifier of ``x`` alone under it has
this form (the Lagrangian of the constraint; cf. Menon & Williamson 2018, Zeng et al. 2022).
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ofijax.diff._train import epoch_batches

__all__ = [
    "MAX_STEPS",
    "NEWTON_STEPS",
    "PATH_BISECTIONS",
    "PATH_POINTS",
    "PATH_TEMPERATURE",
    "choose_multipliers",
    "fit_group_model",
    "fit_plugin",
    "given_logits",
    "group_apply",
    "group_probabilities",
    "plugin_scores",
    "rule_scores",
    "training_gaps",
]

#: Steps of the multiplier search with more than two groups (each step is the best of one exact
#: line search per direction; it stops earlier when the tolerance is met or no step improves).
#: Two groups need one line search, which is exact.
MAX_STEPS = 50
#: The shrink path's smoothing temperature of hard decisions (scores are of order 1), its grid
#: of shrink factors, Newton steps per point and bisections of the first feasible interval. The
#: path is a starting point for the exact greedy steps; with T = 0.1 the two searches together met
#: the tolerance on 25 of 26 synthetic 3- to 6-group problems (experiments/notes/diff.md, "The
#: plug-in rule with more than two groups").
PATH_TEMPERATURE = 0.1
PATH_POINTS = 11
NEWTON_STEPS = 30
PATH_BISECTIONS = 8


def group_apply(params: Any, x: jax.Array) -> jax.Array:
    """Group logits ``(N, G)`` of the multinomial logistic model."""
    return x @ params["w"] + params["b"]


def given_logits(params: Any, x: jax.Array) -> jax.Array:
    """An ``apply_fn`` whose "parameters" are the logits themselves (for ``evaluate`` of
    predictions computed outside JAX)."""
    return params


@functools.partial(jax.jit, static_argnames=("optimizer", "num_epochs", "batch_size"))
def _group_program(key, params, x, gw, w, *, optimizer, num_epochs, batch_size):
    """Adam on shuffled mini-batches of the weighted softmax cross-entropy of the groups; the
    last batch of an epoch is filled up with weight-0 rows so every batch has one shape."""
    n = x.shape[0]

    def loss(p, xb, gb, wb):
        logp = jax.nn.log_softmax(group_apply(p, xb), axis=-1)
        per = -jnp.sum(gb * logp, axis=-1)
        return jnp.sum(wb * per) / jnp.maximum(jnp.sum(wb), 1e-12)

    def epoch(carry, k):
        idx, valid = epoch_batches(k, n, batch_size, w.dtype)

        def body(c, inp):
            ix, v = inp
            p, o = c
            val, g = jax.value_and_grad(loss)(p, x[ix], gw[ix], w[ix] * v)
            upd, o = optimizer.update(g, o, p)
            return (jax.tree.map(lambda a, b: a + b, p, upd), o), val

        carry, vals = jax.lax.scan(body, carry, (idx, valid))
        return carry, jnp.mean(vals)

    (params, _), curve = jax.lax.scan(epoch, (params, optimizer.init(params)),
                                      jax.random.split(key, num_epochs))
    return params, curve


def fit_group_model(
    key: Any, x: jax.Array, gw: np.ndarray, w: np.ndarray, optimizer: Any, num_epochs: int,
    batch_size: int,
) -> tuple[dict, np.ndarray]:
    """Train :math:`s(x) = \\mathrm{softmax}(xW + b)` on one-hot groups ``gw`` ``(N, G)`` with
    row weights ``w``; returns NumPy ``({"w": (D, G), "b": (G,)}, per-epoch mean loss)``.

    Starts from :math:`W = 0`, :math:`b = \\log \\pi` (the group shares), so a model that learns
    nothing predicts the shares.
    """
    dtype = x.dtype
    share = np.asarray(gw, np.float64).T @ w / np.sum(w)
    params = {"w": jnp.zeros((x.shape[1], gw.shape[1]), dtype),
              "b": jnp.asarray(np.log(np.maximum(share, 1e-12)), dtype)}
    params, curve = _group_program(key, params, x, jnp.asarray(gw, dtype), jnp.asarray(w, dtype),
                                   optimizer=optimizer, num_epochs=int(num_epochs),
                                   batch_size=int(batch_size))
    return jax.tree.map(np.asarray, params), np.asarray(curve)


def group_probabilities(params: Any, x: jax.Array) -> np.ndarray:
    """``(N, G)`` float64 group probabilities (softmax of the group logits, in float64)."""
    z = np.asarray(group_apply(jax.tree.map(lambda a: jnp.asarray(a, x.dtype), params), x),
                   np.float64)
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def plugin_scores(eta_logits: np.ndarray, probs: np.ndarray, coef: np.ndarray) -> np.ndarray:
    """The rule's score :math:`2\\eta - 1 + \\sum_g c_g s_g` in float64, with
    :math:`2\\sigma(z) - 1 = \\tanh(z/2)` for the label model's logit :math:`z` and
    :math:`c_g = \\lambda_g / \\pi_g`."""
    return np.tanh(np.asarray(eta_logits, np.float64) / 2) + probs @ np.asarray(coef, np.float64)


def rule_scores(eta_logits: np.ndarray, group_params: Any, x: jax.Array,
                coef: np.ndarray) -> np.ndarray:
    """The rule's float64 scores of standardized rows ``x`` given the label model's logits."""
    return plugin_scores(eta_logits, group_probabilities(group_params, x), coef)


def fit_plugin(
    key: Any, x: jax.Array, eta_logits: np.ndarray, yb: np.ndarray, gw: np.ndarray,
    w: np.ndarray, tau: float, optimizer: Any, num_epochs: int, batch_size: int,
) -> tuple[dict, np.ndarray]:
    """The group model (:func:`fit_group_model`) and the coefficients
    (:func:`choose_multipliers`) of the rule on standardized training rows ``x``:
    ``(group_params, coef)``, NumPy."""
    params, _ = fit_group_model(key, x, gw, w, optimizer, num_epochs, batch_size)
    coef = choose_multipliers(eta_logits, group_probabilities(params, x),
                              np.asarray(yb, np.float64), gw, w, tau)
    return params, coef


def training_gaps(pred: np.ndarray, yb: np.ndarray, gw: np.ndarray, w: np.ndarray) -> tuple:
    """Per-group :math:`\\mathcal{B}_g = (\\sum w\\,\\hat y - \\sum w\\,y)/\\sum w` (float64; NaN
    for a group of weight 0) and the weighted accuracy of hard predictions ``pred`` (0/1)."""
    gw, w = np.asarray(gw, np.float64), np.asarray(w, np.float64)  # counts: float64 always
    wg = gw * w[:, None]
    size = wg.sum(axis=0)
    b = np.where(size > 0, (wg.T @ pred - wg.T @ yb) / np.where(size > 0, size, 1.0), np.nan)
    return b, float(np.sum(w * (pred == yb)) / np.sum(w))


def _line_search(
    a: np.ndarray, d: np.ndarray, yb: np.ndarray, wg: np.ndarray, w: np.ndarray, tau: float,
) -> tuple[float, float, float, float]:
    """The step ``t`` of the scores ``a + t d`` (predictions: > 0) nearest 0 at the least excess.

    Every distinct prediction vector along the line is one interval between consecutive
    breakpoints ``−a_i/d_i``. Objective, lexicographic: the excess ``max(0, max_g B_g − min_g B_g
    − tau)``, then the interval's distance from 0 (0 for the interval holding 0), then the
    accuracy (higher). The step returned is 0 in the interval holding 0, else the interval's
    midpoint (the outer two: the extreme breakpoint ∓ 1). Group counts at all intervals come
    from cumulative sums over the sorted breakpoints. Returns ``(t, excess, distance,
    accuracy)``.
    """
    moving = d != 0
    bp = np.where(moving, -a / np.where(moving, d, 1.0), np.inf)
    u = np.unique(bp[moving])
    lo = np.concatenate([[-np.inf], u])
    hi = np.concatenate([u, [np.inf]])
    mid = np.concatenate([[u[0] - 1.0], (u[:-1] + u[1:]) / 2, [u[-1] + 1.0]]) if u.size else \
        np.zeros(1)
    holds0 = (lo < 0) & (hi > 0)
    rep = np.where(holds0, 0.0, mid)
    dist = np.where(holds0, 0.0, np.minimum(np.abs(lo), np.abs(hi)))
    # predictions at t = -inf: rows with d < 0 are positive, fixed rows by the sign of a
    pred0 = np.where(moving, d < 0, a > 0).astype(np.float64)
    order = np.argsort(bp, kind="stable")[: int(moving.sum())]
    flip = np.where(d[order] > 0, 1.0, -1.0)  # +1: turns positive past its breakpoint
    k = np.searchsorted(bp[order], rep, side="left")  # rows whose breakpoint is < t
    size = wg.sum(axis=0)
    pos = wg.T @ pred0 + np.concatenate(
        [np.zeros((1, wg.shape[1])), np.cumsum(flip[:, None] * wg[order], axis=0)])[k]
    right = np.sum(w * (pred0 == yb)) + np.concatenate(
        [[0.0], np.cumsum(w[order] * np.where((flip > 0) == (yb[order] > 0), 1.0, -1.0))])[k]
    b = (pos - (wg.T @ yb)[None, :]) / np.where(size > 0, size, 1.0)[None, :]
    b = np.where(size[None, :] > 0, b, np.nan)
    excess = np.maximum(np.nanmax(b, axis=1) - np.nanmin(b, axis=1) - tau, 0.0)
    best = np.lexsort((-right, dist, excess))[0]
    return (float(rep[best]), float(excess[best]), float(dist[best]),
            float(right[best] / np.sum(w)))


def _greedy(eta_logits, probs, yb, gw, w, tau, coef, dirs, steps) -> np.ndarray:
    """From ``coef``, take each best exact line step over ``dirs`` (least excess, then nearest,
    then accuracy, then the direction's index) while it strictly lowers the excess."""
    wg = gw * w[:, None]
    share = wg.sum(axis=0) / np.sum(w)
    current = _standing(eta_logits, probs, yb, gw, w, tau, coef)[0]
    for _ in range(steps):
        if current == 0.0:
            break
        a = plugin_scores(eta_logits, probs, coef)
        found = [_line_search(a, probs @ (v / share), yb, wg, w, tau) for v in dirs]
        best = min(range(len(dirs)), key=lambda k: (found[k][1], found[k][2], -found[k][3], k))
        t, excess = found[best][:2]
        if t == 0.0 or excess >= current:
            break
        coef = coef + t * dirs[best] / share
        current = excess
    return coef


def _standing(eta_logits, probs, yb, gw, w, tau, coef) -> tuple[float, float]:
    """``(excess of the hard training max|OFI| over tau, −training accuracy)`` at ``coef``."""
    b, acc = training_gaps((plugin_scores(eta_logits, probs, coef) > 0).astype(np.float64), yb,
                           gw, w)
    return max(float(np.nanmax(b) - np.nanmin(b)) - tau, 0.0), -acc


def _shrink_path(eta_logits, probs, yb, gw, w, tau) -> np.ndarray:
    """The coefficients on the path that shrinks every group's deviation from the mean soft
    :math:`\\tilde{\\mathcal{B}}` by the factor :math:`1 - \\alpha` (soft counts
    :math:`\\sigma(\\text{score}/T)`, :data:`PATH_TEMPERATURE`), solved by damped Newton steps in
    the plane :math:`\\pi \\cdot c = 0` (affine invariant: its basis does not matter) on a grid of
    :math:`\\alpha`, then bisected to the first :math:`\\alpha` whose hard training max|OFI| is
    ≤ ``tau`` (the end of the path, soft parity, if none)."""
    from scipy.linalg import null_space
    from scipy.special import expit

    wg = gw * w[:, None]
    size = wg.sum(axis=0)
    share = size / np.sum(w)
    basis = null_space(share[None, :])  # (G, G - 1)
    a = plugin_scores(eta_logits, probs, np.zeros(probs.shape[1]))
    center = np.eye(probs.shape[1]) - 1.0 / probs.shape[1]

    def soft(c):
        p = expit((a + probs @ c) / PATH_TEMPERATURE)
        jac = (wg * (p * (1 - p) / PATH_TEMPERATURE)[:, None]).T @ probs / size[:, None]
        return center @ ((wg.T @ (p - yb)) / size), center @ jac @ basis

    dev0 = soft(np.zeros(probs.shape[1]))[0]

    def solve(alpha, c):
        for _ in range(NEWTON_STEPS):
            r, j = soft(c)
            r = r - (1 - alpha) * dev0
            norm = float(np.linalg.norm(r))
            if norm < 1e-9:
                break
            step = basis @ np.linalg.lstsq(j, -r, rcond=None)[0]
            for frac in 0.5 ** np.arange(12):
                r2 = soft(c + frac * step)[0] - (1 - alpha) * dev0
                if np.linalg.norm(r2) < norm:
                    c = c + frac * step
                    break
            else:
                break
        return c

    def feasible(c):
        return _standing(eta_logits, probs, yb, gw, w, tau, c)[0] == 0.0

    c, lo = np.zeros(probs.shape[1]), 0.0
    for alpha in np.linspace(0, 1, PATH_POINTS)[1:]:
        nxt = solve(alpha, c)
        if feasible(nxt):
            hi, best = alpha, nxt
            for _ in range(PATH_BISECTIONS):
                mid = (lo + hi) / 2
                cm = solve(mid, c)
                if feasible(cm):
                    hi, best = mid, cm
                else:
                    lo, c = mid, cm
            return best
        c, lo = nxt, alpha
    return c


def choose_multipliers(
    eta_logits: np.ndarray, probs: np.ndarray, yb: np.ndarray, gw: np.ndarray, w: np.ndarray,
    tau: float,
) -> np.ndarray:
    """Coefficients :math:`c_g = \\lambda_g/\\pi_g` (``(G,)``, :math:`\\sum_g \\lambda_g = 0`) of the
    rule on the training rows: training max|OFI| ≤ ``tau`` near the unconstrained rule.

    A step :math:`t` along a direction :math:`v` (:math:`\\sum_g v_g = 0`) adds :math:`t v` to
    :math:`\\lambda`, i.e. :math:`t \\sum_g v_g s_g/\\pi_g` to every score. With two groups
    every direction is the one line of the family, and one exact line search (from
    :math:`\\lambda = 0`) finds the smallest :math:`|\\lambda|` that meets ``tau`` (the least
    excess when none does; ties: the higher training accuracy). With the Bayes rule at
    :math:`\\lambda = 0` the population accuracy falls as :math:`|\\lambda|` grows, so the
    nearest feasible :math:`\\lambda` is the constrained optimum; maximizing *training* accuracy
    over all :math:`\\lambda` would fit noise far from it.

    With more groups there is no such line. Two deterministic searches run and the better
    result (least excess over ``tau``, then the higher training accuracy) is returned: (1) from
    :math:`\\lambda = 0`, greedy exact line steps over the directions :math:`e_g - \\pi` and
    :math:`e_i - e_j` (groups in a canonical order: training :math:`\\mathcal{B}` at
    :math:`\\lambda = 0`, size, mean probability; not their labels) while they strictly lower the
    excess, at most :data:`MAX_STEPS`; (2) the same greedy steps from the first point of
    :func:`_shrink_path` (all groups' deviations shrunk together) that meets ``tau``, or from its
    end. Not guaranteed optimal; the estimator warns when ``tau`` is not met.
    """
    n, g = probs.shape
    gw, w = np.asarray(gw, np.float64), np.asarray(w, np.float64)  # counts: float64 always
    coef = np.zeros(g)
    if g < 2:
        return coef
    yb = np.asarray(yb, np.float64)
    wg = gw * w[:, None]
    share = wg.sum(axis=0) / np.sum(w)
    b0, _ = training_gaps((plugin_scores(eta_logits, probs, coef) > 0).astype(np.float64), yb,
                          gw, w)
    order = np.lexsort((probs.mean(axis=0), wg.sum(axis=0), b0))
    eye = np.eye(g)
    dirs = [eye[j] - share for j in order]
    if g == 2:
        return _greedy(eta_logits, probs, yb, gw, w, tau, coef, dirs[:1], 1)
    dirs += [eye[i] - eye[j] for k, i in enumerate(order) for j in order[k + 1:]]
    if _standing(eta_logits, probs, yb, gw, w, tau, coef)[0] == 0.0:
        return coef
    found = [_greedy(eta_logits, probs, yb, gw, w, tau, start, dirs, MAX_STEPS)
             for start in (coef, _shrink_path(eta_logits, probs, yb, gw, w, tau))]
    return min(found, key=lambda c: _standing(eta_logits, probs, yb, gw, w, tau, c))
