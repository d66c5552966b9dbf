r"""``report.html``: the audit a person reads, one self-contained page.

Built from the JSON-ready report (the dict written to report.json), so every number on the page
is the number in the file. Inline CSS, heatmaps as inline SVG, no script, no network (a
Content-Security-Policy forbids any load); printable (``@media print``). Order: summary (what was
audited, data, rows, exclusions, settings), verdicts in plain words, groups, pairs (intervals,
p-values, the detectable effect), heatmaps, impact-ratio tables, scan findings, provenance, then
methods and caveats.

Cheap: string building only (no matplotlib, no JAX), linear in the number of pairs shown.
"""

from __future__ import annotations

import html
import math
from typing import Any

from ofijax.auditing._report import HOW_TO_READ, MAX_LISTED, format_p, scan_lines
from ofijax.auditing._verdicts import VERDICTS, format_number

__all__ = ["render_html", "MAX_SVG_GROUPS"]

#: Most groups drawn in a heatmap (as the PNG heatmaps).
MAX_SVG_GROUPS = 30

_CSS = """
:root{--ink:#1b1f24;--mute:#5b6470;--line:#d5dae0;--bg:#fff;--soft:#f4f6f8;--bad:#b3261e;--warn:#8a5a00;--ok:#1e6b35}
*{box-sizing:border-box}
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;color:var(--ink);
background:var(--bg);margin:0 auto;max-width:1100px;padding:24px 28px}
h1{font-size:1.6em;margin:0 0 .2em}h2{font-size:1.25em;margin:1.6em 0 .5em;border-bottom:2px solid var(--line);
padding-bottom:.2em}h3{font-size:1.05em;margin:1.2em 0 .4em}
.sub{color:var(--mute);margin:0 0 1em}
.summary{background:var(--soft);border:1px solid var(--line);border-radius:6px;padding:12px 16px}
.summary dl{display:grid;grid-template-columns:max-content 1fr;gap:4px 14px;margin:0}
.summary dt{font-weight:600;color:var(--mute)}.summary dd{margin:0}
.counts{display:flex;flex-wrap:wrap;gap:10px;margin:12px 0 0}
.count{border:1px solid var(--line);border-radius:6px;padding:6px 10px;background:#fff}
.count b{font-size:1.2em;margin-right:4px}
table{border-collapse:collapse;width:100%;margin:.4em 0 1em;font-size:.92em}
th,td{border:1px solid var(--line);padding:4px 7px;text-align:left;vertical-align:top}
th{background:var(--soft);font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.excluded td{color:var(--mute);font-style:italic}
.v-bias{color:var(--bad);font-weight:600}.v-disp{color:var(--warn);font-weight:600}
.v-small{color:var(--mute)}.v-none{color:var(--ok)}
.sig{color:var(--bad);font-weight:600}
ul.findings li{margin:.35em 0}
.figs{display:flex;flex-wrap:wrap;gap:18px}
figure{margin:0}figcaption{color:var(--mute);font-size:.85em;max-width:520px}
.note{color:var(--mute);font-size:.9em}
.methods{white-space:pre-wrap;font-size:.88em;background:var(--soft);border:1px solid var(--line);
border-radius:6px;padding:10px 14px}
@media print{body{max-width:none;padding:0;font-size:11pt}h2{break-after:avoid}
table,figure,.summary{break-inside:avoid}a{color:inherit;text-decoration:none}
.scroll{overflow:visible}table{font-size:8pt}}
.scroll{overflow-x:auto}
"""

_VCLASS = {"algorithmic bias": "v-bias", "selection-rate disparity": "v-disp",
           "too small to judge": "v-small", "no evidence": "v-none"}


def _e(x: Any) -> str:
    return html.escape("" if x is None else str(x), quote=True)


def _num(x: Any, digits: int = 3, sign: bool = False) -> str:
    return format_number(x, digits, sign, undefined="undef.")


def _table(head: list[str], rows: list[list[str]], *, num: set[int] = frozenset(), classes: list[str] | None = None,
           raw: set[int] = frozenset()) -> str:
    """An HTML table; cells are escaped unless their column is in ``raw`` (already HTML)."""
    out = ["<table><thead><tr>", *(f"<th>{_e(h)}</th>" for h in head), "</tr></thead><tbody>"]
    for r, row in enumerate(rows):
        cls = f' class="{classes[r]}"' if classes and classes[r] else ""
        cells = []
        for c, x in enumerate(row):
            text = x if c in raw else _e(x)
            cells.append(f'<td class="num">{text}</td>' if c in num else f"<td>{text}</td>")
        out.append(f"<tr{cls}>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _lerp(c0: tuple, c1: tuple, t: float) -> str:
    r, g, b = (round(a + (b_ - a) * t) for a, b_ in zip(c0, c1))
    return f"#{r:02x}{g:02x}{b:02x}"


_BLUE, _WHITE, _RED, _GREY = (33, 102, 172), (247, 247, 247), (178, 24, 43), (200, 200, 200)


def _diverging(t: float) -> str:
    """t in [-1, 1] → blue … white … red."""
    if t is None or math.isnan(t):
        return _lerp(_GREY, _GREY, 0)
    t = max(-1.0, min(1.0, t))
    return _lerp(_WHITE, _RED, t) if t >= 0 else _lerp(_WHITE, _BLUE, -t)


def heatmap_svg(labels: list[str], values: list[list[Any]], marks: list[list[bool]], *, title: str,
                scale: str) -> str:
    """A k × k heatmap as inline SVG: ``scale`` ``"ofi"`` (−0.5 … +0.5) or ``"di"`` (log, 0.25 … 4)."""
    k = len(labels)
    cell = 40 if k <= 8 else (24 if k <= 16 else 16)
    short = [lb if len(lb) <= 22 else lb[:21] + "…" for lb in labels]
    left = 8 + 7 * max(len(s) for s in short)
    top = 24 + 7 * max(len(s) for s in short)
    w, h = max(left + k * cell + 10, 12 + 6 * len(title)), top + k * cell + 10
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
             f'role="img" aria-label="{_e(title)}" font-family="sans-serif" font-size="11">',
             f'<text x="4" y="14" font-weight="bold">{_e(title)}</text>']
    for i in range(k):
        y = top + i * cell
        parts.append(f'<text x="{left - 4}" y="{y + cell / 2 + 4}" text-anchor="end">{_e(short[i])}</text>')
        x = left + i * cell + cell / 2
        parts.append(f'<text transform="translate({x + 4},{top - 4}) rotate(-90)">{_e(short[i])}</text>')
        for j in range(k):
            v = values[i][j]
            v = float("nan") if v is None else float(v)
            if scale == "ofi":
                t = v / 0.5
            else:
                t = math.log(v) / math.log(4.0) if v > 0 and math.isfinite(v) else (
                    -1.0 if v == 0 else float("nan"))
            fill = _diverging(t)
            parts.append(f'<rect x="{left + j * cell}" y="{y}" width="{cell}" height="{cell}" fill="{fill}" '
                         f'stroke="#fff"><title>{_e(labels[i])} vs {_e(labels[j])}: '
                         f'{_e(_num(v, 3, scale == "ofi"))}</title></rect>')
            star = "*" if i != j and marks[i][j] else ""
            if k <= 8 and i != j:  # the value in the cell (and * when significant)
                txt = _num(v, 2, scale == "ofi").replace("undef.", "–")
                parts.append(f'<text x="{left + j * cell + cell / 2}" y="{y + cell / 2 + 4}" text-anchor="middle" '
                             f'font-size="9">{_e(txt)}{star}</text>')
            elif star:
                parts.append(f'<text x="{left + j * cell + cell / 2}" y="{y + cell / 2 + 5}" '
                             f'text-anchor="middle" font-size="{max(10, cell // 2)}">*</text>')
    parts.append("</svg>")
    return "".join(parts)


def _summary(report: dict) -> str:
    d = report.get("data", {})
    prov = report.get("provenance", {})
    items = []
    rows = d.get("rows")
    src = f"{d.get('source', '')}"
    items.append(("Data", src))
    read = prov.get("rows_read", rows)
    used = prov.get("rows_used", rows)
    excl = []
    if d.get("rows_dropped"):
        excl.append(f"{d['rows_dropped']} dropped for missing values (--dropna)")
    if read is not None and used is not None and read != used and not d.get("rows_dropped"):
        excl.append(f"{read - used} not used")
    verb = "scanned" if report.get("kind") == "scan" else "audited"
    items.append(("Rows", f"{read} read, {used} {verb}" + (f" ({'; '.join(excl)})" if excl else "")))
    imp = report.get("impact_ratios") or {}
    if imp.get("rows"):
        small = [f"{r['attribute']} = {r['category']} ({r['n']})" for r in imp["rows"] if r.get("excluded")]
        unk = {a: u for a, u in (imp.get("unknown") or {}).items() if u}
        text = (f"{len(small)} categor{'y' if len(small) == 1 else 'ies'} under "
                f"{100 * float(imp.get('min_share') or 0.02):g}% left out of the impact ratios (listed): "
                + ", ".join(small[:8]) + (" …" if len(small) > 8 else "") if small
                else "no category left out of the impact ratios")
        if unk:
            text += "; unknown values (left out of that attribute's table): " + ", ".join(
                f"{a} {u:,}" for a, u in unk.items())
        items.append(("Exclusions", text))
    cols = [f"prediction {d.get('pred')!s}" if d.get("pred") else None,
            f"label {d.get('label')!s}" if d.get("label") else "no label (OFI needs labels)",
            f"groups by {', '.join(map(str, d.get('group', [])))}"]
    if d.get("threshold") is not None:
        cols[0] += f" (score >= {d['threshold']:g})"
    items.append(("Columns", "; ".join(c for c in cols if c)))
    items.append(("Orientation", "label/prediction 1 was the harmful outcome: flipped (--harmful-label)"
                  if d.get("harmful_label") else "label/prediction 1 = the beneficial outcome"))
    s = report.get("settings")
    if s:
        text = (f"OFI test: {s.get('null')} null ({s.get('method')}), {s.get('correction')} correction, "
                f"alpha = {s.get('alpha')}")
        if s.get("num_samples") and "confidence" in s:
            text += f"; bootstrap {s['num_samples']} resamples at {100 * float(s['confidence']):.0f}%"
        if s.get("min_group_size") is not None:
            text += f"; smallest group judged: {s['min_group_size']}"
        items.append(("Settings", text))
    if report.get("command"):
        items.append(("Command", report["command"]))
    dl = "".join(f"<dt>{_e(a)}</dt><dd>{_e(b)}</dd>" for a, b in items)
    counts = report.get("verdict_counts") or {}
    cbox = "".join(f'<div class="count {_VCLASS.get(v, "")}"><b>{int(counts.get(v, 0))}</b>{_e(v)}</div>'
                   for v in VERDICTS if v in counts)
    return f'<section class="summary" id="summary"><dl>{dl}</dl>' + (
        f'<div class="counts">{cbox}</div>' if cbox else "") + "</section>"


def _impact_html(imp: dict) -> str:
    rows = imp.get("rows") or []
    if not rows:
        return ""
    scoring = imp.get("kind") == "scoring"
    cnt, rate = ("scored_above", "scoring_rate") if scoring else ("selected", "selection_rate")
    out = ['<section id="impact"><h2>Impact ratios' + (" (scoring rate)" if scoring else "") + "</h2>"]
    intro = ("Per category: the number assessed, the number "
             + ("scoring above the median score of the full sample"
                + (f" ({imp['median']:g}; lower scores are better)" if imp.get("lower_is_better")
                   else f" ({imp['median']:g})" if imp.get("median") is not None else "")
                if scoring else "selected")
             + ", the rate and the impact ratio (the rate over the highest rate, which reads 1.00). "
             + f"{imp.get('exclusion', '')}. Test: {imp.get('test', '')}. No label is needed.")
    out.append(f'<p class="note">{_e(intro)}</p>')
    if imp.get("weights"):
        out.append(f'<p class="note">Weights: {_e(imp["weights"])}.</p>')
    unknown = imp.get("unknown") or {}
    attrs = list(dict.fromkeys(r["attribute"] for r in rows))
    for a in attrs:
        rs = [r for r in rows if r["attribute"] == a]
        body, classes = [], []
        for r in rs:
            p = r.get("p_value")
            ptxt = "" if p is None else format_p(p)
            sig = r.get("significant")
            body.append([
                r["category"], f"{r['n']:,}", f"{r[cnt]:,}", _num(r[rate], 3),
                "" if r.get("impact_ratio") is None else _num(r["impact_ratio"], 2),
                f"{100 * r['share']:.1f}%",
                "" if r.get("z") is None else _num(r["z"], 2, True),
                f'<span class="sig">{_e(ptxt)}</span>' if sig else _e(ptxt),
                r.get("test", ""),
            ])
            classes.append("excluded" if r.get("excluded") else "")
        head = ["category", "n", "scored above median" if scoring else "selected",
                "scoring rate" if scoring else "selection rate", "impact ratio", "share", "z", "p", "test"]
        out.append(f"<h3>{_e(a)}</h3>")
        out.append(_table(head, body, num={1, 2, 3, 4, 5, 6, 7}, classes=classes, raw={7}))
        u = unknown.get(a, 0)
        out.append(f'<p class="note">Unknown {_e(a)}: {int(u):,} (left out of this table).</p>')
    if imp.get("unknown_outcome"):
        out.append(f'<p class="note">{int(imp["unknown_outcome"]):,} row(s) with no prediction/score are left '
                   "out of every table.</p>")
    out.append("</section>")
    return "".join(out)


def _pairs_html(report: dict, max_listed: int) -> str:
    pairs = report.get("pairs") or []
    if not pairs:
        return ""
    s = report.get("settings", {})
    rank = {v: r for r, v in enumerate(VERDICTS)}
    order = sorted(range(len(pairs)), key=lambda t: (rank.get(pairs[t]["verdict"], 9),
                                                     pairs[t].get("p_adjusted") if pairs[t].get("p_adjusted")
                                                     is not None else 2.0,
                                                     -abs(pairs[t].get("ofi") or 0.0)))
    conf = f"{100 * float(s.get('confidence', 0.95)):.0f}%"
    body, head = [], ["i", "j", "n_i", "n_j", "OFI = B_i − B_j", f"{conf} interval", "p", "p (adjusted)",
                      "detectable |OFI|", "DI", "impact ratio", "verdict"]
    for t in order[:max_listed]:
        r = pairs[t]
        lo, hi = r.get("ci_low"), r.get("ci_high")
        body.append([
            r["group_i"], r["group_j"], f"{r['n_i']:,}" if isinstance(r["n_i"], int) else _num(r["n_i"], 1),
            f"{r['n_j']:,}" if isinstance(r["n_j"], int) else _num(r["n_j"], 1), _num(r["ofi"], 3, True),
            "n/a" if lo is None else f"[{_num(lo, 3, True)}, {_num(hi, 3, True)}]",
            format_p(r.get("p_value")), format_p(r.get("p_adjusted")),
            "" if r.get("detectable_ofi") is None else _num(r["detectable_ofi"], 3),
            _num(r.get("di"), 2), _num(r.get("impact_ratio"), 2),
            f'<span class="{_VCLASS.get(r["verdict"], "")}">{_e(r["verdict"])}</span>',
        ])
    more = (f'<p class="note">First {max_listed} of {len(pairs)} pairs; all are in report.json.</p>'
            if len(pairs) > max_listed else "")
    how = pairs[0].get("detectable_method")
    note = (f'<p class="note">detectable |OFI|: the smallest |OFI| the pair\'s test detects with {_e(how)}. '
            "Intervals are per pair (not adjusted for multiplicity).</p>" if how else "")
    return ('<section id="pairs"><h2>Pairs, most severe first</h2>'
            + _table(head, body, num={2, 3, 4, 5, 6, 7, 8, 9, 10}, raw={11}) + more + note + "</section>")


def _groups_html(report: dict, max_listed: int) -> str:
    bg = report.get("by_group") or []
    if not bg:
        return ""
    head = ["group", "n", "TP", "FN", "FP", "TN", "selection rate b", "base rate E[b]", "B = (FP−FN)/n"]
    body = [[r["group"], r["n"], r["tp"], r["fn"], r["fp"], r["tn"], _num(r.get("benefit")),
             _num(r.get("expected_benefit")), _num(r.get("marginal_benefit"), 3, True)] for r in bg[:max_listed]]
    cols = ", ".join(map(str, report.get("group_columns", [])))
    return (f'<section id="groups"><h2>Groups ({_e(cols)})</h2>'
            + _table(head, body, num=set(range(1, 9))) + "</section>")


def _heatmaps_html(report: dict) -> str:
    pw = report.get("pairwise") or {}
    groups = report.get("groups") or []
    k = len(groups)
    if not pw or k < 2:
        return ""
    if k > MAX_SVG_GROUPS:
        return (f'<section id="heatmaps"><h2>Heatmaps</h2><p class="note">Skipped: {k} groups exceed the '
                f"{MAX_SVG_GROUPS} a readable heatmap holds; every pair is in the table and report.json.</p>"
                "</section>")
    alpha = float((report.get("settings") or {}).get("alpha", 0.05))
    padj = pw.get("p_adjusted") or [[None] * k for _ in range(k)]
    marks = [[padj[i][j] is not None and padj[i][j] < alpha for j in range(k)] for i in range(k)]
    ofi = heatmap_svg(groups, pw["ofi"], marks, title="OFI(i, j) = B_i − B_j (row i, column j)",
                      scale="ofi") if pw.get("ofi") else ""
    di = heatmap_svg(groups, pw["di"], marks, title="DI(i, j) = b_i / b_j (row i, column j)",
                     scale="di") if pw.get("di") else ""
    cap = ("OFI on a fixed scale from −0.5 (blue: i gets less unjustified benefit than j) to +0.5 (red); DI on "
           "a log scale from 0.25 (blue) to 4 (red) around 1; grey: undefined; * = OFI significant after the "
           "multiplicity correction; values beyond the scale take its end colour.")
    if not ofi:
        cap = ("DI (the selection-rate ratio, no label needed) on a log scale from 0.25 (blue) to 4 (red) "
               "around 1; grey: undefined (nobody selected in j).")
    figs = "".join(f"<figure>{f}</figure>" for f in (ofi, di) if f)
    return (f'<section id="heatmaps"><h2>Heatmaps</h2><div class="figs">{figs}</div>'
            f'<p class="note">{_e(cap)}</p></section>')


def _provenance_html(report: dict) -> str:
    p = report.get("provenance")
    if not p:
        return ""
    items = [("schema_version", report.get("schema_version")), ("audit date (UTC)", p.get("date")),
             ("ofijax", p.get("ofijax")), ("JAX", p.get("jax")), ("NumPy", p.get("numpy")),
             ("Python", p.get("python")), ("platform", p.get("platform")), ("command", p.get("command")),
             ("seed", p.get("seed")), ("rows read", p.get("rows_read")), ("rows used", p.get("rows_used"))]
    body = [[a, "" if b is None else b] for a, b in items]
    files = p.get("inputs") or []
    ftab = _table(["input", "bytes", "SHA-256"], [[f.get("path"), f.get("bytes"), f.get("sha256")] for f in files],
                  num={1}) if files else ""
    return ('<section id="provenance"><h2>Provenance</h2>' + _table(["item", "value"], body) + ftab
            + (f'<p class="note">{_e(p["inputs_note"])}</p>' if p.get("inputs_note") else "") + "</section>")


def _frame_html(df: Any, max_listed: int) -> str:
    """A DataFrame as a table (numbers right-aligned, floats with 3 decimals)."""
    import numbers

    t = df.head(max_listed)
    head = [str(c) for c in t.columns]
    body, num = [], set()
    for row in t.itertuples(index=False):
        cells = []
        for c, x in enumerate(row):
            if isinstance(x, bool) or x is None:
                cells.append("" if x is None else str(x))
            elif isinstance(x, numbers.Integral):
                cells.append(f"{int(x):,}")
                num.add(c)
            elif isinstance(x, numbers.Real):
                cells.append(_num(float(x), 3))
                num.add(c)
            else:
                cells.append(str(x))
        body.append(cells)
    more = (f'<p class="note">First {max_listed} of {len(df)} rows; all are in the JSON report.</p>'
            if len(df) > max_listed else "")
    return '<div class="scroll">' + _table(head, body, num=num) + "</div>" + more


def render_html(report: dict, *, title: str = "ofijax audit report", max_listed: int = MAX_LISTED,
                extra_sections: tuple = (), figures: tuple = ()) -> str:
    """The self-contained ``report.html`` of a report dict (the content of report.json).

    Args:
        report: the JSON-ready report (``data``, ``settings``, ``verdict_counts``, ``pairs``,
            ``by_group``, ``pairwise``, ``impact_ratios``, ``scan``, ``notes``, ``provenance``;
            any may be missing).
        title: the page title.
        max_listed: most pairs and groups listed (all are in report.json).
        extra_sections: ``(heading, table)`` or ``(heading, table, note)`` added before the
            provenance (e.g. a batch audit's candidates and frontier); ``table`` is a DataFrame
            (escaped, shown up to ``max_listed`` rows) or None.
        figures: ``(caption, png_bytes)`` embedded as data URIs after the extra sections.

    Example:
        >>> from ofijax.auditing._html import render_html
        >>> page = render_html({"data": {"source": "x.csv", "rows": 3, "group": ["g"]}})
        >>> page.startswith("<!DOCTYPE html>") and "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
        True
    """
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; style-src \'unsafe-inline\'; '
             'img-src data:">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
             f"<h1>{_e(title)}</h1>"]
    prov = report.get("provenance") or {}
    sub = "; ".join(x for x in (f"ofijax {prov.get('ofijax') or report.get('ofijax_version') or ''}".strip(),
                                prov.get("date")) if x)
    parts.append(f'<p class="sub">{_e(sub)}</p>')
    parts.append(_summary(report))
    pairs = report.get("pairs") or []
    if pairs:
        rank = {v: r for r, v in enumerate(VERDICTS)}
        flagged = sorted((r for r in pairs if r["verdict"] != "no evidence"),
                         key=lambda r: (rank.get(r["verdict"], 9), r.get("p_adjusted") if r.get("p_adjusted")
                                        is not None else 2.0))
        quiet = len(pairs) - len(flagged)
        lis = "".join(f'<li><span class="{_VCLASS.get(r["verdict"], "")}">{_e(r["verdict"])}</span>: '
                      f"{_e(r['reading'])}</li>" for r in flagged[:max_listed])
        if len(flagged) > max_listed:
            lis += f"<li>… and {len(flagged) - max_listed} more finding(s) (all in report.json).</li>"
        if quiet:
            lis += (f'<li><span class="v-none">no evidence</span>: {quiet} pair(s) (OFI not significant, '
                    "impact ratio within the four-fifths band or undefined); each pair's reading, with the "
                    "effect its test could detect, is in report.json.</li>")
        parts.append(f'<section id="verdicts"><h2>Verdicts</h2><ul class="findings">{lis}</ul></section>')
    elif report.get("impact_ratios"):
        parts.append('<section id="verdicts"><h2>Verdicts</h2><p>No OFI verdicts: OFI needs true labels '
                     "(--label). The impact-ratio tables below need none; their tests say which gaps in "
                     "selection rates are more than noise.</p></section>")
    parts.append(_groups_html(report, max_listed))
    parts.append(_pairs_html(report, max_listed))
    parts.append(_heatmaps_html(report))
    parts.append(_impact_html(report.get("impact_ratios") or {}))
    scan = report.get("scan")
    if scan:
        lis = "".join(f"<li>{_e(line.strip()[2:] if line.strip().startswith('- ') else line.strip())}</li>"
                      for line in scan_lines(scan, md=True))
        parts.append(f'<section id="scan"><h2>Worst subgroups (scan)</h2><ul>{lis}</ul></section>')
    for sec in extra_sections:
        head, tab, note = (tuple(sec) + (None,))[:3]
        body = "" if tab is None else _frame_html(tab, max_listed)
        parts.append(f"<section><h2>{_e(head)}</h2>{body}"
                     + (f'<p class="note">{_e(note)}</p>' if note else "") + "</section>")
    if figures:
        import base64

        figs = "".join(f'<figure><img alt="{_e(cap)}" style="max-width:100%" src="data:image/png;base64,'
                       f'{base64.b64encode(png).decode("ascii")}"><figcaption>{_e(cap)}</figcaption></figure>'
                       for cap, png in figures)
        parts.append(f'<section id="figures"><h2>Figures</h2><div class="figs">{figs}</div></section>')
    parts.append(_provenance_html(report))
    notes = list(report.get("notes") or [])
    meth = HOW_TO_READ.strip().split("\n", 1)[1].strip()
    parts.append('<section id="methods"><h2>Methods and caveats</h2>'
                 + ("<ul>" + "".join(f"<li>{_e(n)}</li>" for n in notes) + "</ul>" if notes else "")
                 + f'<div class="methods">{_e(meth)}</div>'
                 + '<p class="note">Impact ratios follow NYC Local Law 144 (6 RCNY 5-301 to 5-303) and the '
                   "EEOC's four-fifths rule (29 CFR 1607.4(D)). The law sets no 0.8 threshold for reporting; "
                   "the four-fifths rule itself says smaller differences may matter where they are "
                   "statistically significant and larger ones may not where numbers are small: read the "
                   "p-values and the detectable effect with the ratios.</p></section>")
    parts.append("</body></html>\n")
    return "".join(p for p in parts if p)
