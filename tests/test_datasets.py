"""Tests for ofijax.datasets: row counts, columns, filters, checksums and the ACS loader."""

from __future__ import annotations

import gzip
import hashlib
import re
from importlib import resources

import numpy as np
import pandas as pd
import pytest

from ofijax import datasets
from ofijax.datasets import _loaders, load_acs_employment, load_adult, load_compas, load_german

PROPUBLICA_RACES = {
    "African-American",
    "Caucasian",
    "Hispanic",
    "Other",
    "Asian",
    "Native American",
}


# ---------------------------------------------------------------------------- packaging


def test_every_packaged_file_matches_provenance_and_checksum():
    data = resources.files("ofijax").joinpath("data")
    prov = data.joinpath("PROVENANCE.md").read_text()
    # Each file listed in the loader's checksum table is in PROVENANCE.md with the same digest.
    for name, digest in _loaders._SHA256.items():
        row = [line for line in prov.splitlines() if line.startswith(f"| `{name}`")]
        assert len(row) == 1, name
        assert digest in row[0], name
        raw = gzip.decompress(data.joinpath(name).read_bytes())
        assert hashlib.sha256(raw).hexdigest() == digest
    gz = sorted(p.name for p in data.iterdir() if p.name.endswith(".gz"))
    assert gz == sorted(_loaders._SHA256)
    total = sum(data.joinpath(n).read_bytes().__len__() for n in gz)
    assert total < 5_000_000


def test_corrupt_file_is_detected(monkeypatch):
    monkeypatch.setitem(_loaders._SHA256, "german.data.gz", "0" * 64)
    _loaders._raw_bytes.cache_clear()
    try:
        with pytest.raises(RuntimeError, match="corrupt"):
            _loaders._raw_bytes("german.data.gz")
    finally:
        monkeypatch.undo()
        _loaders._raw_bytes.cache_clear()


# ---------------------------------------------------------------------------- COMPAS


def _raw_compas(variant):
    name = _loaders._COMPAS_FILES[variant][0]
    raw = gzip.decompress(resources.files("ofijax").joinpath("data", name).read_bytes())
    import io

    return pd.read_csv(io.BytesIO(raw))


@pytest.mark.parametrize(
    ("variant", "rows", "text", "races"),
    [
        (
            "general",
            6172,
            "score_text",
            {
                "African-American": 3175,
                "Caucasian": 2103,
                "Hispanic": 509,
                "Other": 343,
                "Asian": 31,
                "Native American": 11,
            },
        ),
        (
            "violent",
            4020,
            "v_score_text",
            {
                "African-American": 1918,
                "Caucasian": 1459,
                "Hispanic": 355,
                "Other": 255,
                "Asian": 26,
                "Native American": 7,
            },
        ),
    ],
)
def test_compas_filtered_counts_and_convenience_columns(variant, rows, text, races):
    df = load_compas(variant)
    assert len(df) == rows
    assert df["race"].value_counts().to_dict() == races
    assert df["days_b_screening_arrest"].abs().max() <= 30
    assert (df["is_recid"] != -1).all() and (df["c_charge_degree"] != "O").all()
    for col in ("label_not_recid", "pred_low_risk", "risk_decile", "decile_score.1"):
        assert col in df.columns
    assert df["label_not_recid"].dtype == np.int8 and df["pred_low_risk"].dtype == np.int8
    np.testing.assert_array_equal(df["label_not_recid"], 1 - df["two_year_recid"])
    np.testing.assert_array_equal(df["pred_low_risk"], (df[text] == "Low").astype(int))
    # ProPublica's Low band is deciles 1-4.
    np.testing.assert_array_equal(df["pred_low_risk"], (df["risk_decile"] <= 4).astype(int))
    # Independent re-derivation of the filter with plain pandas on the raw file.
    raw = _raw_compas(variant)
    keep = (
        raw["days_b_screening_arrest"].between(-30, 30)
        & (raw["is_recid"] != -1)
        & (raw["c_charge_degree"] != "O")
        & (raw[text] != "N/A")
    )
    np.testing.assert_array_equal(df["id"].to_numpy(), raw.loc[keep, "id"].to_numpy())


def test_compas_unfiltered_and_ijdi():
    raw = load_compas("general", filtered=False)
    assert raw.shape[0] == 7214
    ij = load_compas("ijdi")
    assert ij.shape == (7214, 10)
    assert list(ij.columns[:7]) == [
        "Sex",
        "Race",
        "Prior Offenses",
        "Under 25",
        "ChargeDegree",
        "ReoffendedWithinTwoYears",
        "COMPASPredictedDecileScore",
    ]
    # "None" is a category, not a missing value.
    assert ij["Prior Offenses"].value_counts().to_dict() == {
        "1 to 5": 3540,
        "None": 2150,
        "Over 5": 1524,
    }
    # Row-for-row the same people as the raw general file.
    np.testing.assert_array_equal(ij["Race"].to_numpy(), raw["race"].to_numpy())
    np.testing.assert_array_equal(ij["label_not_recid"], raw["label_not_recid"])
    np.testing.assert_array_equal(ij["pred_low_risk"], raw["pred_low_risk"])
    assert set(ij["Race"]) == PROPUBLICA_RACES


def test_compas_returns_fresh_copies():
    a = load_compas("violent")
    a.loc[0, "race"] = "changed"
    assert load_compas("violent").loc[0, "race"] != "changed"


@pytest.mark.parametrize(
    ("kwargs", "arg"),
    [
        ({"variant": "violet"}, "variant"),
        ({"variant": "general", "filtered": "yes"}, "filtered"),
        ({"variant": "ijdi", "filtered": True}, "filtered"),
    ],
)
def test_compas_bad_arguments(kwargs, arg):
    with pytest.raises(ValueError, match=rf"^{arg}:"):
        load_compas(**kwargs)


# ---------------------------------------------------------------------------- German, Adult


def test_german_variants():
    uci = load_german("uci")
    assert uci.shape == (1000, 23)
    assert uci["credit_class"].value_counts().to_dict() == {1: 700, 2: 300}
    assert uci["personal_status_sex"].value_counts().to_dict() == {
        "A93": 548,
        "A92": 310,
        "A94": 92,
        "A91": 50,
    }
    assert int(uci["label_good"].sum()) == 700
    ij = load_german("ijdi")
    assert ij.shape == (1000, 12)
    assert ij["Saving accounts"].isna().sum() == 183
    assert ij["Checking account"].isna().sum() == 394
    # Row-aligned with the UCI file.
    np.testing.assert_array_equal(ij["Age"], uci["age"])
    np.testing.assert_array_equal(ij["Credit amount"], uci["credit_amount"])
    np.testing.assert_array_equal(ij["label_good"], uci["label_good"])
    with pytest.raises(ValueError, match="^variant:"):
        load_german("kaggle")


def test_adult_splits():
    tr, te = load_adult("train"), load_adult("test")
    assert tr.shape == (32561, 16) and te.shape == (16281, 16)
    assert list(tr.columns) == list(te.columns)
    assert tr["income"].value_counts().to_dict() == {"<=50K": 24720, ">50K": 7841}
    assert te["income"].value_counts().to_dict() == {"<=50K": 12435, ">50K": 3846}
    assert tr["race"].value_counts().to_dict() == {
        "White": 27816,
        "Black": 3124,
        "Asian-Pac-Islander": 1039,
        "Amer-Indian-Eskimo": 311,
        "Other": 271,
    }
    assert int(tr.isna().any(axis=1).sum()) == 2399
    assert int(te.isna().any(axis=1).sum()) == 1221
    assert tr["age"].dtype.kind == "i"
    with pytest.raises(ValueError, match="^split:"):
        load_adult("validation")


# ---------------------------------------------------------------------------- ACS (folktables)

# A few columns of the real ACS PUMS person-file header (RT, SERIALNO, ... are what folktables
# reads positionally / by dtype), plus every ACSEmployment feature and the target ESR.
ACS_COLUMNS = [
    "RT",
    "SERIALNO",
    "DIVISION",
    "SPORDER",
    "PUMA",
    "REGION",
    "ST",
    "ADJINC",
    "PWGTP",
    "AGEP",
    "CIT",
    "COW",
    "DEAR",
    "DEYE",
    "DREM",
    "ESP",
    "ESR",
    "MAR",
    "MIG",
    "MIL",
    "NATIVITY",
    "PINCP",
    "RELP",
    "SCHL",
    "SEX",
    "WKHP",
    "DIS",
    "ANC",
    "RAC1P",
    "SOCP",
    "NAICSP",
]


def _acs_rows(rng, n, year):
    rows = []
    for i in range(n):
        r = {c: "" for c in ACS_COLUMNS}
        r.update(
            RT="P",
            SERIALNO=f"{year}GQ{i:07d}",
            DIVISION=5,
            SPORDER=1,
            PUMA=1100,
            REGION=3,
            ST=13,
            ADJINC=1011189,
            PWGTP=int(rng.integers(1, 300)),
            AGEP=int(rng.integers(0, 95)),
            CIT=int(rng.integers(1, 6)),
            DEAR=int(rng.integers(1, 3)),
            DEYE=int(rng.integers(1, 3)),
            MAR=int(rng.integers(1, 6)),
            MIG=int(rng.integers(1, 4)),
            NATIVITY=int(rng.integers(1, 3)),
            RELP=int(rng.integers(0, 18)),
            SCHL=int(rng.integers(1, 25)),
            SEX=int(rng.integers(1, 3)),
            DIS=int(rng.integers(1, 3)),
            ANC=int(rng.integers(1, 5)),
            RAC1P=int(rng.integers(1, 10)),
            SOCP="1191XX",
            NAICSP="722Z",
        )
        if r["AGEP"] >= 5:
            r["DREM"] = int(rng.integers(1, 3))
        if r["AGEP"] >= 16:
            r["ESR"] = int(rng.integers(1, 7))
            r["MIL"] = int(rng.integers(1, 5))
            r["WKHP"] = int(rng.integers(1, 60))
            r["PINCP"] = int(rng.integers(0, 90000))
        if r["AGEP"] < 18:
            r["ESP"] = int(rng.integers(1, 9))
        rows.append(r)
    return pd.DataFrame(rows, columns=ACS_COLUMNS)


@pytest.fixture
def acs_root(tmp_path):
    rng = np.random.default_rng(0)
    frames = {}
    for year, fname in [(2016, "ss16pga.csv"), (2017, "psam_p13.csv")]:
        d = tmp_path / str(year) / "1-Year"
        d.mkdir(parents=True)
        df = _acs_rows(rng, 25 if year == 2016 else 15, year)
        df.to_csv(d / fname, index=False)
        frames[year] = df
    return tmp_path, frames


def test_acs_employment_on_synthetic_person_files(acs_root):
    root, frames = acs_root
    df = load_acs_employment(root, state="GA", years=[2016, 2017])
    assert len(df) == 40
    feats = list(datasets.ACS_EMPLOYMENT_FEATURES)
    assert list(df.columns) == feats + ["label_employed", "race", "year"]
    expected = pd.concat([frames[2016], frames[2017]], ignore_index=True)
    # Target: ESR == 1 (missing ESR -> not employed).
    esr = pd.to_numeric(expected["ESR"], errors="coerce")
    np.testing.assert_array_equal(df["label_employed"], (esr == 1).astype(int))
    # Features as numbers. folktables' postprocess is np.nan_to_num(x, -1), whose second
    # positional argument is `copy`, so missing values become 0.0 (not -1).
    for c in feats:
        want = pd.to_numeric(expected[c], errors="coerce").fillna(0).to_numpy(float)
        np.testing.assert_array_equal(df[c].to_numpy(float), want, err_msg=c)
    assert (df["DREM"] == 0).sum() == (expected["AGEP"] < 5).sum() > 0
    np.testing.assert_array_equal(df["year"], [2016] * 25 + [2017] * 15)
    assert df["race"].iloc[0] == datasets.ACS_RACE_NAMES[int(expected["RAC1P"].iloc[0])]
    one = load_acs_employment(root, state="GA", years=2017)
    assert len(one) == 15


def test_acs_employment_errors(acs_root, tmp_path_factory):
    root, _ = acs_root
    with pytest.raises(ValueError, match="^state:"):
        load_acs_employment(root, state="Georgia", years=[2017])
    with pytest.raises(ValueError, match="^years:"):
        load_acs_employment(root, state="GA", years=[2013])
    with pytest.raises(ValueError, match="^years:"):
        load_acs_employment(root, state="GA", years=["twenty"])
    empty = tmp_path_factory.mktemp("empty")
    with pytest.raises(FileNotFoundError, match=re.escape("psam_p13.csv")):
        load_acs_employment(empty, state="GA", years=[2018])
    assert list(empty.iterdir()) == []  # nothing created on disk


def test_state_codes_match_folktables():
    from folktables.load_acs import _STATE_CODES as folktables_codes

    assert {k: _loaders._STATE_CODES.get(k) for k in folktables_codes} == dict(folktables_codes)
