r"""The one report renderer of an audit (plain text and Markdown) and its formatting helpers.

:meth:`ofijax.AuditFrame.summary` and the ``ofijax audit`` command both call
:func:`render_report`; the command adds a header (data, command) and the heatmap images.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ofijax.auditing._verdicts import VERDICTS, format_number, severity_order

__all__ = ["HOW_TO_READ", "format_p", "group_label", "impact_lines", "render_report", "scan_lines", "to_jsonable"]

#: Most pairs listed in a rendered report (all of them are in ``AuditFrame.pairs`` / report.json).
MAX_LISTED = 50

HOW_TO_READ = r"""How to read this report

Each person in the data has a true outcome (label) and a prediction; "benefit" is the good
outcome (e.g. a loan granted, release on bail). For each group:

- n: number of people. TP, FN, FP, TN: counts of true positives (deserved the benefit and got
  it), false negatives (deserved it, were denied it), false positives (got it without deserving
  it by the label) and true negatives.
- selection rate b = (TP + FP)/n: share of the group given the benefit by the model.
- base rate E[b] = (TP + FN)/n: share of the group that deserves it by the label (what a perfect
  model would select).
- B = b − E[b] = (FP − FN)/n: the model's unjustified benefit per person: positive when the
  model gives the group more than its labels justify, negative when it denies more than it
  wrongly grants.

For each pair of groups i and j:

- OFI = B_i − B_j (Objective Fairness Index): how much more unjustified benefit the model gives
  i than j. 0 means the model's errors treat both groups alike, whatever their base rates.
- p: the probability of an |OFI| at least this large if both groups' confusion matrices were
  drawn from the same model (the null; "pooled": both drawn from the pair's combined counts,
  multinomial, computed exactly; "uniform": every confusion matrix equally likely, the OFI paper's
  very permissive null). "p (Holm)" adjusts p for testing all pairs at once (Holm's method; or
  Bonferroni, or none, as stated); the verdicts use the adjusted p.
- interval (per pair): a percentile bootstrap interval of OFI (people resampled within each
  group). It is NOT adjusted for the number of pairs, so with many pairs it can exclude 0 while
  the adjusted p is above alpha. The "simultaneous (Bonferroni)" interval uses the same resamples
  at confidence 1 − (1 − confidence)/(number of pairs): all of them cover their true OFI together
  with the stated confidence, which matches the multiplicity correction of the p-values. Both
  come from resampling, not from the null model of the test, so in borderline cases interval and
  p can still disagree; the verdicts use the adjusted p (or, when p cannot be computed, e.g. with
  fractional weights, whether the simultaneous interval excludes 0).
- DI (disparate impact) = b_i / b_j, the ratio of selection rates (the "paper" variant; the
  "pp_over_p" variant divides the predicted-positive by the actual-positive rate); undefined when
  no one in j is selected.
- impact ratio = min(b_i, b_j) / max(b_i, b_j), the lower selection rate over the higher, as
  regulators define it (e.g. NYC Local Law 144). The four-fifths rule of US employment law fails
  when it is below 0.8 (DI < 0.8 or DI > 1.25); a group that selects no one against one that
  selects someone fails, whichever is named first; it is undefined only when neither is selected.
- TE (treatment equality) = FN_i/FP_i − FN_j/FP_j.
- detectable |OFI| (report.json: detectable_ofi): the smallest |OFI| the pair's test would detect
  with 80% power at the unadjusted alpha, at these group sizes: (z_{1−α/2} + z_{0.8}) times the
  sd of OFI under the pooled null's cell probabilities (a normal approximation; the uniform null's
  variance under the uniform null). A pair without significance says how large a bias it could
  have missed.

Impact ratios (report.json: impact_ratios; no label needed): for each group column alone and
their intersection, each category's selection rate (or, with --scoring-rate, the share scoring
strictly above the full sample's median) over the highest rate (the reference, 1.00), as NYC
Local Law 144 audits lay them out. An empty group value is an unknown category: counted and left
out of that attribute's table only. A category under 2% of the known rows is listed but left out
of the ratios (--keep-small keeps it). Each row tests its rate against the reference's: Fisher's
exact test when an expected cell count is below 5, else the two-proportion z-test (the EEOC's
"two or three standard deviations"); the p-values are not adjusted for multiplicity.

Verdicts (OFI paper, §2.3), most severe first:

- algorithmic bias: OFI is significant (adjusted p < alpha): the model itself gives one group
  less unjustified benefit than the other; the report names that group.
- selection-rate disparity: the four-fifths rule fails (the groups are selected at clearly
  different rates) and OFI is not significant: no significant evidence, at this sample size, that
  the model's errors cause the gap. That is not proof that they do not; a gap that comes from
  different base rates reads the same way. (Called "systemic disparity" before ofijax #37.)
- too small to judge: a group has fewer people than the smallest group whose outcome could be
  significant at all at this alpha (2 / C(n + 3, 3) < alpha: 5 people at alpha = 0.05); no
  verdict is given.
- no evidence: neither OFI nor DI indicates a disparity. This is not proof of fairness.
"""


def group_label(group: Any) -> str:
    """A group as text: tuples of intersections joined by ``" & "``.

    >>> from ofijax.auditing.reporting import group_label
    >>> group_label(("Black", "F")), group_label(3)
    ('Black & F', '3')
    """
    if isinstance(group, tuple):
        return " & ".join(str(g) for g in group)
    return str(group)


def format_p(p: Any) -> str:
    """A p-value for people: ``"0.012"``, ``"3.10e-05"``, ``"<1e-12"``, ``"n/a"`` (NaN/None).

    >>> from ofijax.auditing.reporting import format_p
    >>> format_p(0.0123), format_p(3.1e-5), format_p(0.0), format_p(float("nan"))
    ('0.012', '3.10e-05', '<1e-12', 'n/a')
    """
    if p is None:
        return "n/a"
    p = float(p)
    if math.isnan(p):
        return "n/a"
    if p < 1e-12:
        return "<1e-12"
    return f"{p:.2e}" if p < 1e-3 else f"{p:.3f}"


def to_jsonable(obj: Any) -> Any:
    """Recursively replace NaN/inf with None, NumPy scalars with Python ones, tuples of group
    labels with lists (valid JSON with ``allow_nan=False``).

    >>> from ofijax.auditing.reporting import to_jsonable
    >>> import numpy as np
    >>> to_jsonable({"a": np.float64("nan"), "b": (np.int64(2), 1.5)})
    {'a': None, 'b': [2, 1.5]}
    """
    if isinstance(obj, dict):
        return {str(k): to_jsonable(x) for k, x in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(x) for x in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def _md_escape(x: Any) -> str:
    return str(x).replace("|", "\\|").replace("\n", " ")


def _md_table(df: pd.DataFrame) -> str:
    cols = list(df.columns)
    lines = ["| " + " | ".join(_md_escape(c) for c in cols) + " |", "|" + "---|" * len(cols)]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join(_md_escape(x) for x in row) + " |")
    return "\n".join(lines)


def _num(x: float, digits: int, sign: bool = False) -> str:
    """``x`` with ``digits`` decimals; values that round to zero print ``0.000``, never ``-0.000``."""
    return format_number(x, digits, sign, undefined="undef.")


def _count_line(af: Any) -> str:
    counts = af.pairs["verdict"].value_counts().to_dict()
    parts = [f"{counts[v_]} {v_}" for v_ in VERDICTS if counts.get(v_)]
    k = len(af.groups)
    return f"Findings: {', '.join(parts)} ({len(af.pairs)} pair(s) of {k} groups)."


def _settings_line(af: Any) -> str:
    s = af.settings
    corr = {"holm": "Holm", "bonferroni": "Bonferroni", "none": "no"}[s["correction"]]
    sim = "" if s["correction"] == "none" else ", and simultaneous over them by Bonferroni"
    boot = (f"{100 * s['confidence']:.0f}% percentile bootstrap intervals ({s['num_samples']} resamples; "
            f"per pair, unadjusted for the {len(af.pairs)} comparisons{sim})" if s["num_samples"]
            else "no bootstrap intervals")
    line = (f"OFI test: {s['null']} null ({s['method']}), {corr} correction over {len(af.pairs)} pair(s), "
            f"alpha = {s['alpha']}; {boot}; groups smaller than {s['min_group_size']} are too small to judge.")
    if s.get("bins"):
        line += " Binned: " + "; ".join(
            f"{c} at edges {', '.join(f'{e:g}' for e in edges)}" for c, edges in s["bins"].items()
        ) + "."
    return line


def scan_lines(scans: dict, md: bool = False) -> list[str]:
    """The scans' findings in words, one bullet per scan (and per subgroup of a top-k scan)."""
    lines = []
    for name, r in scans.items():
        top = r.get("top") or []
        if len(top) > 1 or r.get("top_k", 1) > 1:
            lines.append(f"{'- ' if md else '  - '}{name}: the top {len(top)} subgroup(s) (of "
                         f"{r.get('top_k', len(top))} asked), each found without the people of the earlier "
                         "ones; a family-wise p-value is the chance that any of them would score as high "
                         "if the error rate were the same in every subgroup:")
            lines += [f"{'  - ' if md else '      '}{t['description']}" for t in top]
        else:
            lines.append(f"{'- ' if md else '  - '}{name}: {r.get('description', r)}")
    return lines


def impact_lines(section: dict, md: bool = True) -> list[str]:
    """The impact-ratio tables of report.json's ``impact_ratios`` section as text or Markdown lines.

    >>> import ofijax
    >>> from ofijax.auditing.reporting import impact_lines, impact_ratios_section
    >>> t = ofijax.impact_ratios([1, 1, 0, 0], ["a", "a", "b", "b"], exclude_small=False)
    >>> impact_lines(impact_ratios_section(t))[0]
    '## Impact ratios'
    """
    rows = section.get("rows") or []
    scoring = section.get("kind") == "scoring"
    cnt, rate = ("scored_above", "scoring_rate") if scoring else ("selected", "selection_rate")
    out = ["## Impact ratios" + (" (scoring rate)" if scoring else ""), ""] if md else [
        "Impact ratios" + (" (scoring rate)" if scoring else "") + ":"]
    what = (f"share scoring above the full sample's median ({section.get('median')})"
            + ("; lower scores are better" if section.get("lower_is_better") else "")) if scoring else "selection rate"
    out.append(f"Per category the {what} and the impact ratio (rate over the highest rate). "
               f"{section.get('exclusion', '')}. Test: {section.get('test', '')}.")
    for a in dict.fromkeys(r["attribute"] for r in rows):
        tab = pd.DataFrame([{
            "category": r["category"], "n": r["n"], cnt.replace("_", " "): r[cnt],
            rate.replace("_", " "): _num(r[rate], 3),
            "impact ratio": "excluded" if r.get("excluded") else _num(r["impact_ratio"], 2),
            "p": "" if r.get("excluded") or r.get("reference") else format_p(r["p_value"]),
            "test": r["test"]} for r in rows if r["attribute"] == a])
        out += (["", f"### {a}", ""] if md else ["", f"  {a}:"])
        out.append(_md_table(tab) if md else tab.to_string(index=False))
        out.append(f"{'' if md else '  '}Unknown {a}: {section.get('unknown', {}).get(a, 0)} (left out of this table).")
    return out


def render_report(
    af: Any,
    fmt: str = "text",
    *,
    digits: int = 3,
    header: tuple | list = (),
    images: tuple | list = (),
    notes: tuple | list = (),
    explain: bool | None = None,
    max_listed: int = MAX_LISTED,
) -> str:
    """Render an :class:`~ofijax.AuditFrame` as plain text or Markdown.

    The order is the same in both: a count of verdicts, the findings (most severe first, in
    words), the groups' table, the pairs' table (most severe first), scans, notes, "How to read
    this report" and images.

    Args:
        af: the audit.
        fmt: ``"text"`` or ``"markdown"``.
        digits: decimals of the rates.
        header: lines shown after the title (data, command).
        images: image file names to embed (Markdown only).
        notes: extra notes (e.g. why heatmaps were skipped).
        explain: include "How to read this report" (default: Markdown yes, text no).
        max_listed: most findings and pairs listed; the rest are counted (all are in the frame).

    Examples:
        >>> import ofijax
        >>> af = ofijax.audit(0, [1, 0, 1, 1, 0, 0] * 5, [1, 0, 0, 1, 1, 0] * 5,
        ...                   sensitive_features=list("aabbab") * 5, num_samples=0)
        >>> print(ofijax.auditing.render_report(af).splitlines()[0])
        Findings: 1 algorithmic bias (1 pair(s) of 2 groups).
    """
    if fmt not in ("text", "markdown"):
        raise ValueError(f"fmt: must be 'text' or 'markdown'; got {fmt!r}.")
    md = fmt == "markdown"
    explain = md if explain is None else bool(explain)
    s = af.settings
    p = af.pairs
    ratio = p["impact_ratio"] if "impact_ratio" in p else p["di"]
    order = severity_order(p["verdict"], p["p_adjusted"], p["ofi"], ratio) if len(p) else np.arange(0)
    ps = p.iloc[order]

    def h(title: str) -> list[str]:
        return ["", f"## {title}", ""] if md else ["", f"{title}:"]

    lines: list[str] = ["# ofijax audit report", ""] if md else []
    lines += [f"- {x}" if md else x for x in header]
    if header:
        lines.append("")
    lines.append(f"**{_count_line(af)}**" if md else _count_line(af))
    lines.append(_settings_line(af))

    flagged = ps[ps["verdict"] != "no evidence"]
    lines += h("Findings, most severe first")
    shown = flagged.iloc[:max_listed]
    lines += [f"- {r}" if md else f"  - {r}" for r in shown["reading"]]
    if len(flagged) > len(shown):
        lines.append(f"{'- ' if md else '  - '}… and {len(flagged) - len(shown)} more finding(s) (all in the pairs table of the audit / report.json).")
    quiet = int((p["verdict"] == "no evidence").sum())
    if quiet:
        lines.append(
            f"{'- ' if md else '  - '}{'the other ' if len(flagged) else ''}{quiet} pair(s): no evidence of bias "
            "(OFI not significant, impact ratio within the four-fifths band or undefined)."
        )

    bg = af.by_group.reset_index(drop=True)
    groups = pd.DataFrame({
        "group": [group_label(g) for g in af.groups],
        "n": bg["n"], "TP": bg["tp"], "FN": bg["fn"], "FP": bg["fp"], "TN": bg["tn"],
        "selection rate b": bg["benefit"].map(lambda x: _num(x, digits)),
        "base rate E[b]": bg["expected_benefit"].map(lambda x: _num(x, digits)),
        "B = (FP-FN)/n": bg["marginal_benefit"].map(lambda x: _num(x, digits, True)),
    })
    title = f"Groups ({', '.join(map(str, af.names))})"
    if len(groups) > max_listed:
        title += f", first {max_listed} of {len(groups)}"
        groups = groups.iloc[:max_listed]
    lines += h(title)
    lines.append(_md_table(groups) if md else groups.to_string(index=False))

    corr = {"holm": "Holm", "bonferroni": "Bonferroni", "none": "unadjusted"}[s["correction"]]
    conf = f"{100 * s['confidence']:.0f}%"
    tab = pd.DataFrame({
        "i": [group_label(g) for g in ps["group_i"]],
        "j": [group_label(g) for g in ps["group_j"]],
        "OFI = B_i-B_j": ps["ofi"].map(lambda x: _num(x, digits, True)),
        "p": ps["p_value"].map(format_p),
        f"p ({corr})": ps["p_adjusted"].map(format_p),
        f"{conf} interval (per pair)": [
            "n/a" if pd.isna(a) else f"[{_num(a, digits, True)}, {_num(b, digits, True)}]"
            for a, b in zip(ps["ci_low"], ps["ci_high"])
        ],
        **({} if s["correction"] == "none" else {f"{conf} simultaneous (Bonferroni)": [
            "n/a" if pd.isna(a) else f"[{_num(a, digits, True)}, {_num(b, digits, True)}]"
            for a, b in zip(ps["ci_low_simultaneous"], ps["ci_high_simultaneous"])
        ]}),
        "DI": ps["di"].map(lambda x: _num(x, digits)),
        **({"impact ratio": ps["impact_ratio"].map(lambda x: _num(x, digits))} if "impact_ratio" in ps else {}),
        "4/5 rule": ps["four_fifths"],
        "verdict": ps["verdict"],
    })
    title = "Pairs, most severe first"
    if len(tab) > max_listed:
        title += f" (first {max_listed} of {len(tab)})"
        tab = tab.iloc[:max_listed]
    lines += h(title)
    lines.append(_md_table(tab) if md else tab.to_string(index=False))

    if af.scan:
        lines += h("Worst subgroups (scan)")
        lines += scan_lines(af.scan, md)
    all_notes = list(af.notes) + [n for n in notes if n]
    if all_notes:
        lines += h("Notes")
        lines += [f"- {n}" if md else f"  - {n}" for n in all_notes]
    if explain:
        body = HOW_TO_READ.strip().splitlines()
        lines += ["", "## " + body[0]] if md else ["", body[0] + ":"]
        lines += body[1:]
    if md and images:
        lines += h("Heatmaps")
        lines.append("OFI on a fixed scale from −0.5 (blue: i gets less unjustified benefit than j) to "
                     "+0.5 (red); DI on a log scale from 0.25 to 4 around 1; * = significant after the "
                     "multiplicity correction; values beyond the scale take its end colour.")
        lines.append("")
        lines += [f"![{im}]({im})" for im in images]
    return "\n".join(lines) + ("\n" if md else "")
