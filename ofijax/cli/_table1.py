"""The OFI paper's Table 1 recomputed by the library (``ofijax table1``)."""

from __future__ import annotations

__all__ = ["table1_report"]


def table1_report() -> str:
    """The paper's Table 1 recomputed by ofijax, as a plain-text table."""
    from fractions import Fraction

    import ofijax

    lines = [
        "OFI paper, Table 1 (Ricci v. DeStefano scenarios), recomputed by ofijax",
        f"{'scen.':<6}{'grp':<4}{'TP':>4}{'FN':>4}{'FP':>4}{'TN':>4}{'n':>4}"
        f"{'b':>8}{'E[b]':>8}{'B':>8}{'OFI':>9}{'DI':>8}{'DI(1 by context)':>18}  law",
    ]
    for s in ofijax.paper_table1():
        o = float(ofijax.ofi(s.cm_i, s.cm_j))
        di = float(ofijax.disparate_impact(s.cm_i, s.cm_j))
        di1 = float(ofijax.disparate_impact(s.cm_i, s.cm_j, undefined="one"))
        for grp, cm in (("i", s.cm_i), ("j", s.cm_j)):
            tp, fn, fp, tn = (int(x) for x in cm)
            n = tp + fn + fp + tn
            b, eb, mb = Fraction(tp + fp, n), Fraction(tp + fn, n), Fraction(fp - fn, n)
            head = f"{s.name:<6}{grp:<4}{tp:>4}{fn:>4}{fp:>4}{tn:>4}{n:>4}"
            fracs = f"{str(b):>8}{str(eb):>8}{str(mb):>8}"
            if grp == "i":
                lines.append(f"{head}{fracs}{o:>9.2f}{di:>8.2f}{di1:>18.2f}  {s.law}")
            else:
                lines.append(f"{head}{fracs}")
    lines.append("OFI = B_i - B_j; DI = (P^_i/n_i)/(P^_j/n_j), NaN when 0/0 (paper: '1 by context').")
    return "\n".join(lines)
