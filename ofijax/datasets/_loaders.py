"""Loaders of the embedded data sets (documented in :mod:`ofijax.datasets`)."""

from __future__ import annotations

import functools
import gzip
import hashlib
import io
import os
from collections.abc import Iterable
from importlib import resources

import numpy as np
import pandas as pd

from ofijax._validation import check_choice

#: SHA-256 of the ORIGINAL (uncompressed) bytes of each packaged file; see data/PROVENANCE.md.
_SHA256 = {
    "compas-scores-two-years.csv.gz": (
        "c451db85908b2f7fef1d83203bedf6b71ecda0d5af468d82ae62178f91d0cc7d"
    ),
    "compas-scores-two-years-violent.csv.gz": (
        "918e218ba181d4db8a7266977d23ca7a5ecf1bc7d5defd7b2f27bf3cbd9763e3"
    ),
    "ijdi_compas.csv.gz": "056ff0fac44aa27d6dce706c33acbbd1054b576b68242efdbb9d02fc85c4299c",
    "ijdi_german_credit.csv.gz": "ccd4712526db75da633d05c36862b50a163cf738a3c5e25aa1e73591da375457",
    "german.data.gz": "b21f3d81db8071257d5ff1deaeba1fd4303b62712e6fcc9715c7a86202cb5871",
    "adult.data.gz": "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
    "adult.test.gz": "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
}


@functools.cache
def _raw_bytes(name: str) -> bytes:
    """Decompress a packaged file and verify the SHA-256 of its original bytes."""
    if name not in _SHA256:  # pragma: no cover - internal misuse
        raise ValueError(f"name: unknown packaged data file {name!r}.")
    blob = resources.files("ofijax").joinpath("data", name).read_bytes()
    raw = gzip.decompress(blob)
    digest = hashlib.sha256(raw).hexdigest()
    if digest != _SHA256[name]:
        raise RuntimeError(
            f"packaged data file {name!r} is corrupt: sha256 {digest} != {_SHA256[name]} "
            "(see ofijax/data/PROVENANCE.md); reinstall ofijax."
        )
    return raw


def _check_bool(value: object, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name}: must be True or False; got {value!r}.")
    return bool(value)


# --------------------------------------------------------------------------------------------
# COMPAS
# --------------------------------------------------------------------------------------------

_COMPAS_FILES = {
    "general": ("compas-scores-two-years.csv.gz", "score_text", "decile_score"),
    "violent": ("compas-scores-two-years-violent.csv.gz", "v_score_text", "v_decile_score"),
}


@functools.cache
def _compas_frame(variant: str, filtered: bool) -> pd.DataFrame:
    if variant == "ijdi":
        # "None" is a category of Prior Offenses: do not let pandas turn it into NaN.
        df = pd.read_csv(
            io.BytesIO(_raw_bytes("ijdi_compas.csv.gz")), keep_default_na=False, na_values=[""]
        )
        df["label_not_recid"] = (1 - df["ReoffendedWithinTwoYears"]).astype(np.int8)
        df["pred_low_risk"] = (df["COMPASPredictedDecileScore"] <= 4).astype(np.int8)
        df["risk_decile"] = df["COMPASPredictedDecileScore"].astype(np.int64)
        return df
    fname, text_col, decile_col = _COMPAS_FILES[variant]
    # Keep literal strings such as "N/A" (a score_text value ProPublica filters on); only empty
    # fields are missing.
    df = pd.read_csv(io.BytesIO(_raw_bytes(fname)), keep_default_na=False, na_values=[""])
    if filtered:
        days = pd.to_numeric(df["days_b_screening_arrest"], errors="coerce")
        keep = (
            (days.abs() <= 30)  # NaN compares False: rows without the field drop out
            & (df["is_recid"] != -1)
            & (df["c_charge_degree"] != "O")
            & (df[text_col] != "N/A")
            & df[text_col].notna()
        )
        df = df.loc[keep].reset_index(drop=True)
    df["label_not_recid"] = (1 - df["two_year_recid"]).astype(np.int8)
    df["pred_low_risk"] = (df[text_col] == "Low").astype(np.int8)
    df["risk_decile"] = df[decile_col].astype(np.int64)
    return df


def load_compas(variant: str = "general", filtered: bool | None = None) -> pd.DataFrame:
    """ProPublica's COMPAS two-year data (Broward County, FL), one row per defendant.

    Variants:

    * ``"general"`` -- ``compas-scores-two-years.csv`` (7,214 raw rows, 53 columns). Label
      ``two_year_recid`` = recidivism within two years; score ``score_text``/``decile_score``.
      ``filtered=True`` (the default) applies ProPublica's filters:
      ``|days_b_screening_arrest| <= 30`` (rows where it is missing drop out),
      ``is_recid != -1``, ``c_charge_degree != "O"``, ``score_text != "N/A"`` -> **6,172 rows**
      (African-American 3,175, Caucasian 2,103, Hispanic 509, Other 343, Asian 31,
      Native American 11).
    * ``"violent"`` -- ``compas-scores-two-years-violent.csv`` (4,743 raw rows, 54 columns): here
      ``two_year_recid`` is two-year *violent* recidivism and the score is the violence score
      ``v_score_text``/``v_decile_score``. Same filters with ``v_score_text`` -> **4,020 rows**
      (African-American 1,918, Caucasian 1,459, Hispanic 355, Other 255, Asian 26,
      Native American 7). This is the data behind the OFI paper's COMPAS figure.
    * ``"ijdi"`` -- the IJDI-Scan authors' preprocessed file (**7,214 rows**, unfiltered, the same
      people row for row as the raw general file). Columns: ``Sex`` (Male/Female), ``Race``,
      ``Prior Offenses`` ({"None", "1 to 5", "Over 5"}), ``Under 25`` (bool), ``ChargeDegree``
      (F/M), ``ReoffendedWithinTwoYears`` (0/1), ``COMPASPredictedDecileScore`` (1-10). The
      first five are the IJDI scan features. No filter can be applied (``filtered`` must be
      ``None`` or ``False``).

    For "general"/"violent" the frame keeps every original column under pandas' names (the
    duplicated header entries come back as ``decile_score.1``, ``priors_count.1`` and, in the
    violent file, ``two_year_recid.1``; the copies are identical). Literal strings such as
    ``"N/A"`` are kept as strings; only empty fields are missing. Group column: ``race``.

    Convenience columns added to every variant (int8 unless noted):

    * ``label_not_recid`` -- 1 - the two-year label: **1 = not a recidivist** (the beneficial
      label, the OFI paper's flip). Use it as ``y_true``.
    * ``pred_low_risk`` -- **1 = "Low" score** (the beneficial prediction), 0 = Medium/High. Use
      it as ``y_pred``. For "ijdi" (no score text) it is ``decile <= 4``, which is exactly
      ProPublica's Low band (deciles 1-4) in the general file.
    * ``risk_decile`` (int64) -- the decile score (1-10) behind ``pred_low_risk``
      (``decile_score``, ``v_decile_score`` or ``COMPASPredictedDecileScore``).

    Args:
        variant: ``"general"``, ``"violent"`` or ``"ijdi"``.
        filtered: apply ProPublica's filters. ``None`` (default) means ``True`` for
            "general"/"violent" and ``False`` for "ijdi".

    Returns:
        A new DataFrame (safe to modify).

    Raises:
        ValueError: unknown ``variant``, non-boolean ``filtered``, or ``filtered=True`` with
            ``variant="ijdi"``.

    Example:
        >>> df = load_compas("violent")
        >>> len(df), int(df["label_not_recid"].sum()), int(df["pred_low_risk"].sum())
        (4020, 3368, 2913)
    """
    check_choice(variant, "variant", ("general", "violent", "ijdi"))
    if filtered is None:
        filtered = variant != "ijdi"
    filtered = _check_bool(filtered, "filtered")
    if variant == "ijdi" and filtered:
        raise ValueError(
            "filtered: the IJDI COMPAS file has no columns to filter on; "
            "use filtered=None or False with variant='ijdi'."
        )
    return _compas_frame(variant, filtered).copy()


# --------------------------------------------------------------------------------------------
# German credit
# --------------------------------------------------------------------------------------------

_GERMAN_COLUMNS = [
    "checking_status",  # A11..A14
    "duration_months",
    "credit_history",  # A30..A34
    "purpose",  # A40..A410
    "credit_amount",
    "savings",  # A61..A65
    "employment_since",  # A71..A75
    "installment_rate",
    "personal_status_sex",  # A91..A95
    "other_debtors",  # A101..A103
    "residence_since",
    "property",  # A121..A124
    "age",
    "other_installment_plans",  # A141..A143
    "housing",  # A151..A153
    "existing_credits",
    "job",  # A171..A174
    "num_dependents",
    "telephone",  # A191, A192
    "foreign_worker",  # A201, A202
    "credit_class",  # 1 = good, 2 = bad
]
_GERMAN_SEX = {"A91": "male", "A92": "female", "A93": "male", "A94": "male", "A95": "female"}


@functools.cache
def _german_frame(variant: str) -> pd.DataFrame:
    if variant == "uci":
        df = pd.read_csv(
            io.BytesIO(_raw_bytes("german.data.gz")),
            sep=" ",
            header=None,
            names=_GERMAN_COLUMNS,
            keep_default_na=False,
        )
        df["sex"] = df["personal_status_sex"].map(_GERMAN_SEX)
        df["label_good"] = (df["credit_class"] == 1).astype(np.int8)
        return df
    df = pd.read_csv(
        io.BytesIO(_raw_bytes("ijdi_german_credit.csv.gz")),
        keep_default_na=False,
        na_values=["NA", ""],
    )
    df["label_good"] = (df["Risk"] == "good").astype(np.int8)
    return df


def load_german(variant: str = "uci") -> pd.DataFrame:
    """Statlog (German Credit) data, 1,000 loan applicants (700 good, 300 bad risks).

    Variants:

    * ``"uci"`` -- UCI ``german.data`` (space separated, attribute codes as in ``german.doc``).
      **1,000 rows**, columns: ``checking_status`` (A11-A14), ``duration_months``,
      ``credit_history`` (A30-A34), ``purpose`` (A40-A410), ``credit_amount``, ``savings``
      (A61-A65), ``employment_since`` (A71-A75), ``installment_rate``, ``personal_status_sex``
      (A91-A95), ``other_debtors`` (A101-A103), ``residence_since``, ``property`` (A121-A124),
      ``age``, ``other_installment_plans`` (A141-A143), ``housing`` (A151-A153),
      ``existing_credits``, ``job`` (A171-A174), ``num_dependents``, ``telephone`` (A191/A192),
      ``foreign_worker`` (A201/A202), ``credit_class`` (1 = good, 2 = bad); plus ``sex``
      ("male" for A91/A93/A94, "female" for A92/A95: 690/310).
    * ``"ijdi"`` -- the IJDI-Scan authors' preprocessed CSV (Kaggle "german credit data with
      risk", row-aligned with the UCI file). **1,000 rows**, columns: ``col_0`` (row index),
      ``Age``, ``Sex`` (male/female), ``Job`` (0-3), ``Housing`` (own/rent/free),
      ``Saving accounts``, ``Checking account`` (the file's literal ``NA`` is read as missing:
      183 and 394 rows), ``Credit amount``, ``Duration``, ``Purpose``, ``Risk`` (good/bad).

    Convenience column in both: ``label_good`` (int8, **1 = good credit risk**, 700 rows).

    Args:
        variant: ``"uci"`` or ``"ijdi"``.

    Returns:
        A new DataFrame.

    Raises:
        ValueError: unknown ``variant``.

    Example:
        >>> df = load_german("uci")
        >>> df.shape, int(df["label_good"].sum()), df["sex"].value_counts()["female"]
        ((1000, 23), 700, np.int64(310))
    """
    check_choice(variant, "variant", ("uci", "ijdi"))
    return _german_frame(variant).copy()


# --------------------------------------------------------------------------------------------
# Adult
# --------------------------------------------------------------------------------------------

_ADULT_COLUMNS = [
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education_num",
    "marital_status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital_gain",
    "capital_loss",
    "hours_per_week",
    "native_country",
    "income",
]


@functools.cache
def _adult_frame(split: str) -> pd.DataFrame:
    name = "adult.data.gz" if split == "train" else "adult.test.gz"
    df = pd.read_csv(
        io.BytesIO(_raw_bytes(name)),
        header=None,
        names=_ADULT_COLUMNS,
        skiprows=1 if split == "test" else 0,  # adult.test starts with "|1x3 Cross validator"
        skipinitialspace=True,
        keep_default_na=False,
        na_values=["?"],
    )
    df["income"] = df["income"].str.rstrip(".")  # test labels carry a trailing dot
    df["label_income_gt_50k"] = (df["income"] == ">50K").astype(np.int8)
    return df


def load_adult(split: str = "train") -> pd.DataFrame:
    """UCI Adult (1994 US Census extract), the official train/test split.

    **32,561 rows** (``split="train"``, ``adult.data``; 7,841 with income > 50K) or
    **16,281 rows** (``split="test"``, ``adult.test``; 3,846 > 50K; the banner line is skipped
    and the labels' trailing ``"."`` removed). Columns: ``age``, ``workclass``, ``fnlwgt``,
    ``education``, ``education_num``, ``marital_status``, ``occupation``, ``relationship``,
    ``race`` (White, Black, Asian-Pac-Islander, Amer-Indian-Eskimo, Other), ``sex``,
    ``capital_gain``, ``capital_loss``, ``hours_per_week``, ``native_country``, ``income``
    ("<=50K"/">50K"), plus ``label_income_gt_50k`` (int8, **1 = income > 50K**, the beneficial
    label; use as ``y_true``; group column ``race``). ``"?"`` (missing) is read as NaN in
    ``workclass``, ``occupation`` and ``native_country``.

    Args:
        split: ``"train"`` or ``"test"``.

    Returns:
        A new DataFrame.

    Raises:
        ValueError: unknown ``split``.

    Example:
        >>> tr, te = load_adult("train"), load_adult("test")
        >>> len(tr), len(te), int(te["label_income_gt_50k"].sum())
        (32561, 16281, 3846)
    """
    check_choice(split, "split", ("train", "test"))
    return _adult_frame(split).copy()


# --------------------------------------------------------------------------------------------
# ACS Employment (folktables, local files only)
# --------------------------------------------------------------------------------------------

#: RAC1P codes of the ACS PUMS person file.
ACS_RACE_NAMES = {
    1: "White",
    2: "Black",
    3: "American Indian",
    4: "Alaska Native",
    5: "American Indian and/or Alaska Native",
    6: "Asian",
    7: "Native Hawaiian / Pacific Islander",
    8: "Some other race",
    9: "Two or more races",
}

#: The 16 features of folktables' ACSEmployment task (RAC1P is also the group).
ACS_EMPLOYMENT_FEATURES = (
    "AGEP",
    "SCHL",
    "MAR",
    "RELP",
    "DIS",
    "ESP",
    "CIT",
    "MIG",
    "MIL",
    "ANC",
    "NATIVITY",
    "DEAR",
    "DEYE",
    "DREM",
    "SEX",
    "RAC1P",
)


#: US state FIPS codes, as folktables names its 1-Year person files (psam_pNN.csv).
_STATE_CODES = {
    "AL": "01",
    "AK": "02",
    "AZ": "04",
    "AR": "05",
    "CA": "06",
    "CO": "08",
    "CT": "09",
    "DE": "10",
    "FL": "12",
    "GA": "13",
    "HI": "15",
    "ID": "16",
    "IL": "17",
    "IN": "18",
    "IA": "19",
    "KS": "20",
    "KY": "21",
    "LA": "22",
    "ME": "23",
    "MD": "24",
    "MA": "25",
    "MI": "26",
    "MN": "27",
    "MS": "28",
    "MO": "29",
    "MT": "30",
    "NE": "31",
    "NV": "32",
    "NH": "33",
    "NJ": "34",
    "NM": "35",
    "NY": "36",
    "NC": "37",
    "ND": "38",
    "OH": "39",
    "OK": "40",
    "OR": "41",
    "PA": "42",
    "RI": "44",
    "SC": "45",
    "SD": "46",
    "TN": "47",
    "TX": "48",
    "UT": "49",
    "VT": "50",
    "VA": "51",
    "WA": "53",
    "WV": "54",
    "WI": "55",
    "WY": "56",
    "PR": "72",
}


def _acs_person_file(root_dir: str, state: str, year: int) -> str:
    """The path folktables 0.0.12 reads for a 1-Year person file (see folktables.load_acs)."""
    if year >= 2017:
        fname = f"psam_p{_STATE_CODES[state]}.csv"
    else:
        fname = f"ss{str(year)[-2:]}p{state.lower()}.csv"
    return os.path.join(root_dir, str(year), "1-Year", fname)


def load_acs_employment(
    root_dir: str | os.PathLike,
    state: str = "GA",
    years: int | Iterable[int] = (2014, 2015, 2016, 2017),
) -> pd.DataFrame:
    """Folktables' ACSEmployment task built from local ACS PUMS 1-Year person files.

    Uses the real ``folktables`` package: for each year,
    ``ACSDataSource(survey_year=str(year), horizon="1-Year", survey="person",
    root_dir=root_dir).get_data(states=[state], download=False)`` followed by
    ``ACSEmployment.df_to_pandas`` (no row filter). Missing values become **0.0**, not -1:
    folktables' postprocess is ``np.nan_to_num(x, -1)``, whose second positional argument is
    ``copy``, so the intended -1 fill never happens (kept as is, to match folktables and the
    OFI authors' pipeline). Nothing is downloaded. folktables expects the Census file names
    under ``root_dir``:

    * ``{root_dir}/{year}/1-Year/ss{yy}p{st}.csv`` for 2014-2016 (e.g. ``ss14pga.csv``),
    * ``{root_dir}/{year}/1-Year/psam_p{fips}.csv`` from 2017 (e.g. ``psam_p13.csv`` for GA).

    The OFI paper used GA, 2014-2017 (393,236 rows).

    Returns one row per person, years concatenated in the order given, with columns: the 16
    features ``AGEP, SCHL, MAR, RELP, DIS, ESP, CIT, MIG, MIL, ANC, NATIVITY, DEAR, DEYE, DREM,
    SEX, RAC1P`` (float, 0 = missing), ``label_employed`` (int8, **1 = employed**, ``ESR == 1``),
    ``race`` (the RAC1P name from :data:`ACS_RACE_NAMES`) and ``year``.

    Args:
        root_dir: folder holding the ACS files in folktables' layout.
        state: two-letter state code, e.g. ``"GA"``.
        years: one year or several (each >= 2014).

    Returns:
        A new DataFrame.

    Raises:
        ValueError: bad ``state`` or ``years``.
        FileNotFoundError: a person file is missing (the message names ``root_dir`` and the
            expected path). Checked before folktables is called, so nothing is created on disk.
        ImportError: folktables is not installed.
    """
    try:
        from folktables import ACSDataSource, ACSEmployment
        from folktables.load_acs import state_list
    except ImportError as exc:  # pragma: no cover - optional dependency
        raise ImportError(
            "load_acs_employment needs the optional dependency folktables (pip install folktables)."
        ) from exc
    if not isinstance(state, str) or state not in state_list:
        raise ValueError(f"state: must be a two-letter ACS state code such as 'GA'; got {state!r}.")
    if isinstance(years, (int, np.integer)):
        years = [int(years)]
    try:
        years = [int(y) for y in years]
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"years: must be an int or a list of ints >= 2014; got {years!r}."
        ) from exc
    if not years or any(y < 2014 for y in years):
        raise ValueError(f"years: must be a non-empty list of years >= 2014; got {years!r}.")
    root = os.fspath(root_dir)
    for y in years:
        path = _acs_person_file(root, state, y)
        if not os.path.isfile(path):
            raise FileNotFoundError(
                f"root_dir: no ACS {y} 1-Year person file for {state} at {path!r}; place the "
                "Census PUMS CSV there (downloads are not attempted)."
            )
    frames = []
    for y in years:
        source = ACSDataSource(survey_year=str(y), horizon="1-Year", survey="person", root_dir=root)
        raw = source.get_data(states=[state], download=False)
        features, target, _group = ACSEmployment.df_to_pandas(raw)
        df = features.reset_index(drop=True).copy()
        df["label_employed"] = target.iloc[:, 0].to_numpy().astype(np.int8)
        df["race"] = df["RAC1P"].astype(int).map(ACS_RACE_NAMES)
        df["year"] = y
        frames.append(df)
    return pd.concat(frames, ignore_index=True)
