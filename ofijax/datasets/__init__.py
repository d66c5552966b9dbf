"""Benchmark data sets for fairness audits, shipped with the package (no network access).

Every loader returns a fresh :class:`pandas.DataFrame`. The raw files are gzipped copies of public
files (see ``ofijax/data/PROVENANCE.md``); on the first load in a process each file is decompressed
and its SHA-256 is checked against the digest of the original bytes recorded there.

Conventions used by the convenience columns (all ``int8``, 0/1, **1 = the beneficial outcome**, as
the OFI paper assumes):

* COMPAS: ``label_not_recid`` = 1 for "not a recidivist" (the flipped ``two_year_recid``),
  ``pred_low_risk`` = 1 for a "Low" COMPAS score (the beneficial prediction).
* German credit: ``label_good`` = 1 for a good credit risk.
* Adult: ``label_income_gt_50k`` = 1 for income > 50K.
* ACS Employment: ``label_employed`` = 1 for ``ESR == 1``.

Loaders:

* :func:`load_compas` -- ProPublica's COMPAS two-year files (general and violent) with ProPublica's
  standard filters, or the IJDI-Scan authors' preprocessed COMPAS file.
* :func:`load_german` -- Statlog German Credit (UCI ``german.data``) or the IJDI preprocessed CSV.
* :func:`load_adult` -- UCI Adult, official train/test split.
* :func:`load_acs_employment` -- Folktables ACSEmployment from *local* ACS PUMS person files.
"""

from ofijax.datasets._loaders import ACS_EMPLOYMENT_FEATURES as ACS_EMPLOYMENT_FEATURES
from ofijax.datasets._loaders import ACS_RACE_NAMES as ACS_RACE_NAMES
from ofijax.datasets._loaders import load_acs_employment as load_acs_employment
from ofijax.datasets._loaders import load_adult as load_adult
from ofijax.datasets._loaders import load_compas as load_compas
from ofijax.datasets._loaders import load_german as load_german

__all__ = [
    "load_compas",
    "load_german",
    "load_adult",
    "load_acs_employment",
    "ACS_RACE_NAMES",
    "ACS_EMPLOYMENT_FEATURES",
]
