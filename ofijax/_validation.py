"""Input checking shared by every public entry point.

Every check raises one :class:`ValueError` that names the offending argument and says how to fix
it. Nothing is silently coerced: labels must already be binary, counts must already be
non-negative integers, probabilities must already lie in [0, 1].

These helpers run on concrete (NumPy-convertible) inputs, outside ``jit``. Functions that are
meant to be traced (the metrics) skip them when given tracers.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

__all__ = [
    "as_numpy",
    "is_tracer",
    "device_array",
    "check_binary",
    "check_same_length",
    "check_finite",
    "check_probabilities",
    "check_counts",
    "check_nonempty",
    "check_choice",
    "check_fraction",
    "check_nonnegative_scalar",
    "align_pandas",
    "as_pandas",
    "convert_inputs",
    "columns_from_data",
    "check_unique_columns",
    "as_key",
]


def device_array(x: Any, dtype: Any = None) -> jax.Array:
    """``x`` (NumPy data) as a JAX array of ``dtype`` by a plain transfer.

    ``jnp.asarray`` of a NumPy array compiles a small XLA program for every new shape and dtype
    (~10-60 ms each on CPU; a first Bias Scan made seven of them), ``jax.device_put`` only copies
    (~0.5 ms). The dtype is kept exactly, so float64/int64 data needs ``jax_enable_x64`` (or a
    ``with jax.enable_x64(True):`` block) like any other path here.
    """
    return jax.device_put(np.asarray(x, dtype=dtype))


def is_tracer(x: Any) -> bool:
    """True when ``x`` is a JAX tracer (we are inside ``jit``/``vmap``/``grad``)."""
    return isinstance(x, jax.core.Tracer)


def as_numpy(x: Any, name: str) -> np.ndarray:
    """Convert ``x`` (list, NumPy, pandas, polars, pyarrow, JAX) to a NumPy array, naming ``name``
    on failure (a ``TypeError`` for a type that holds no rows, see :func:`as_pandas`)."""
    x = as_pandas(x, name)
    if hasattr(x, "to_numpy"):
        x = x.to_numpy()
    try:
        arr = np.asarray(x)
    except Exception as exc:  # pragma: no cover - exotic containers
        raise ValueError(f"{name}: cannot be converted to an array ({exc}).") from exc
    if arr.dtype == object:
        # pandas nullable / mixed columns: try a numeric view, else leave as object for labels.
        try:
            arr = arr.astype(float)
        except (TypeError, ValueError):
            pass
    return arr


def _preview(values: np.ndarray, limit: int = 10) -> str:
    vals = list(values[:limit])
    text = ", ".join(repr(v.item() if hasattr(v, "item") else v) for v in vals)
    if len(values) > limit:
        text += f", ... ({len(values)} distinct values)"
    return "[" + text + "]"


def check_finite(x: np.ndarray, name: str) -> None:
    """Raise if a numeric array holds NaN (or ±inf), saying how many and the first positions."""
    if x.dtype.kind not in "fc":
        return
    bad = ~np.isfinite(x)
    if bad.any():
        idx = np.flatnonzero(bad.reshape(-1))
        where = ", ".join(str(i) for i in idx[:5]) + (", ..." if idx.size > 5 else "")
        raise ValueError(
            f"{name}: {idx.size} value(s) are NaN or infinite (flat positions {where}); "
            "drop or impute those rows explicitly before calling."
        )


_LABEL_TEXT = {"0": 0, "1": 1}


def _text_labels(arr: np.ndarray, name: str) -> np.ndarray | None:
    """Labels given as text (a ``<U``/``S`` array, or an object array holding strings): the strings
    ``"0"`` and ``"1"`` map to 0 and 1 (the same rule for every container); any other string is
    refused. ``None`` when ``arr`` holds no strings."""
    if arr.dtype.kind in "US":
        flat = arr.reshape(-1)
    elif arr.dtype == object and arr.size:
        import pandas as pd

        kind = pd.api.types.infer_dtype(arr.reshape(-1), skipna=False)
        if kind not in ("string", "bytes") and not kind.startswith("mixed"):
            return None  # numbers, booleans, None/NaN: the numeric checks decide
        flat = arr.reshape(-1)
        if kind.startswith("mixed") and not any(isinstance(x, (str, bytes)) for x in flat):
            return None
    else:
        return None
    one = (flat == "1") | (flat == b"1")
    zero = (flat == "0") | (flat == b"0")
    if flat.dtype == object:  # numbers 0/1 mixed with text labels follow the same rule
        num = np.fromiter((not isinstance(x, (str, bytes)) and isinstance(x, (bool, np.bool_, int, np.integer,
                           float, np.floating)) and x in (0, 1) for x in flat), bool, flat.size)
        if num.any():
            vals = np.asarray([x if n else 0 for x, n in zip(flat, num)], dtype=np.float64)
            one |= num & (vals == 1)
            zero |= num & (vals == 0)
    ok = one | zero
    if not ok.all():
        bad = flat[~ok]
        def show(x: Any) -> str:
            if isinstance(x, bytes):
                x = x.decode(errors="replace")
            return repr(str(x) if isinstance(x, str) else (x.item() if hasattr(x, "item") else x))

        seen = sorted({show(x) for x in bad[:1000]})[:10]
        raise ValueError(
            f"{name}: must be binary 0/1 (1 = the beneficial outcome); saw values [{', '.join(seen)}]. "
            "Text labels are accepted only as '0' and '1'; map other labels to 0/1 first."
        )
    return one.astype(np.int8).reshape(arr.shape)


def check_binary(x: Any, name: str) -> np.ndarray:
    """Return ``x`` as an int8 array of 0/1, or raise naming the non-binary values seen.

    Accepts bool, integer or float arrays whose values are exactly 0 and 1, and text labels that
    are exactly ``"0"`` and ``"1"`` (one rule for NumPy ``<U1``/bytes arrays, object arrays,
    lists and pandas columns). Other labels (for example ``"yes"``/``"no"``, ``"1.0"`` or
    ``1``/``2``) are rejected: map them to 0/1 first, with 1 the beneficial outcome.

    >>> import numpy as np
    >>> from ofijax._validation import check_binary
    >>> check_binary(np.array(["0", "1", "1"]), "y_true").tolist()
    [0, 1, 1]
    >>> check_binary(np.array(["0", "1"], dtype=object), "y_true").tolist()
    [0, 1]
    """
    raw = as_pandas(x, name)
    if hasattr(raw, "to_numpy"):
        raw = raw.to_numpy()
    try:
        raw = np.asarray(raw)
    except Exception as exc:  # pragma: no cover - exotic containers
        raise ValueError(f"{name}: cannot be converted to an array ({exc}).") from exc
    text = _text_labels(raw, name)
    if text is not None:
        return text
    arr = as_numpy(x, name)
    if arr.dtype == bool:
        return arr.astype(np.int8)
    if arr.dtype.kind in "fc":
        check_finite(arr, name)
    if arr.dtype.kind not in "biufc":
        seen = np.unique(arr.astype(str))
        raise ValueError(
            f"{name}: must be binary 0/1 (1 = the beneficial outcome); saw values {_preview(seen)}. "
            "Map the labels to 0/1 first."
        )
    if arr.size == 0 or np.all((arr == 0) | (arr == 1)):  # one pass; np.unique sorts
        return arr.astype(np.int8)
    seen = np.unique(arr)
    if not np.all(np.isin(seen, [0, 1])):
        raise ValueError(
            f"{name}: must be binary 0/1 (1 = the beneficial outcome); saw values {_preview(seen)}. "
            "Map the labels to 0/1 first."
        )
    return arr.astype(np.int8)


def check_same_length(**arrays: Any) -> int:
    """Raise unless every array has the same length along its last axis; return that length."""
    lengths = {k: np.shape(v)[-1] if np.ndim(v) else None for k, v in arrays.items()}
    for k, n in lengths.items():
        if n is None:
            raise ValueError(f"{k}: must be a 1-D array of per-row values, got a scalar.")
    distinct = set(lengths.values())
    if len(distinct) > 1:
        first, n0 = next(iter(lengths.items()))
        bad = next(k for k, n in lengths.items() if n != n0)
        desc = ", ".join(f"{k} has {n}" for k, n in lengths.items())
        raise ValueError(f"{bad}: length mismatch ({desc} rows); pass one value per row in each.")
    return distinct.pop()


def check_probabilities(x: Any, name: str) -> np.ndarray:
    """Return ``x`` as a float array in [0, 1], or raise naming the bad values."""
    arr = as_numpy(x, name)
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"{name}: must be numeric probabilities in [0, 1], got dtype {arr.dtype}.")
    arr = arr.astype(np.float64)
    check_finite(arr, name)
    if arr.size and (arr.min() < 0 or arr.max() > 1):
        raise ValueError(
            f"{name}: probabilities must lie in [0, 1]; saw min {arr.min():.6g}, max {arr.max():.6g}."
        )
    return arr


def check_counts(x: Any, name: str) -> np.ndarray:
    """Return ``x`` as a float array of non-negative integer counts, or raise.

    Used where exact counts are required (combinatorics, samplers). Metrics themselves accept
    float counts (soft confusion matrices) and do not call this.
    """
    arr = as_numpy(x, name)
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"{name}: must be numeric counts, got dtype {arr.dtype}.")
    if arr.dtype.kind == "f":
        check_finite(arr, name)
        if np.any(arr != np.round(arr)):
            raise ValueError(f"{name}: counts must be whole numbers; got non-integer values.")
    if np.any(arr < 0):
        raise ValueError(f"{name}: counts must be non-negative; got a negative value.")
    return arr


def check_nonempty(n: Any, name: str) -> None:
    """Raise if a size is zero (an empty group or data set)."""
    if int(n) <= 0:
        raise ValueError(f"{name}: is empty (0 rows); every group must hold at least one row.")


def check_fraction(x: Any, name: str, example: str = "0.95") -> float:
    """``x`` as a float strictly between 0 and 1 (a confidence or significance level), or one
    ``ValueError`` naming ``name``; bools and strings are refused.

    >>> from ofijax._validation import check_fraction
    >>> check_fraction(0.9, "confidence")
    0.9
    """
    try:
        v = float(x)
    except (TypeError, ValueError):
        v = float("nan")
    if isinstance(x, (bool, str)) or not 0.0 < v < 1.0:
        raise ValueError(f"{name}: must lie strictly between 0 and 1, e.g. {example}; got {x!r}.")
    return v


def check_choice(value: Any, name: str, choices: tuple[str, ...]) -> str:
    """Raise unless ``value`` is one of ``choices``."""
    if value not in choices:
        opts = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name}: must be one of {opts}; got {value!r}.")
    return value


def check_nonnegative_scalar(value: Any, name: str) -> float:
    """Raise unless ``value`` is a finite real number ≥ 0."""
    try:
        v = float(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: must be a number ≥ 0; got {value!r}.") from exc
    if not np.isfinite(v) or v < 0:
        raise ValueError(f"{name}: must be a finite number ≥ 0; got {value!r}.")
    return v


# ------------------------------------------------------------------------------------------------
# The one input-conversion point: polars and pyarrow objects become pandas ones.
# ------------------------------------------------------------------------------------------------


def _origin(x: Any) -> str:
    """Top-level package of ``x``'s type (``"polars"``, ``"pyarrow"``, ...), without importing it."""
    return type(x).__module__.partition(".")[0]


def _polars_series(s: Any) -> Any:
    import pandas as pd

    name = s.name if s.name != "" else None
    try:
        out = s.to_pandas()  # needs pyarrow; keeps Enum/Categorical as a pandas Categorical
    except ImportError:  # pragma: no cover - polars without pyarrow
        return pd.Series(s.to_numpy(), name=name)
    return out.rename(name)


def _polars_frame(df: Any) -> Any:
    import pandas as pd

    try:
        return df.to_pandas()
    except ImportError:  # pragma: no cover - polars without pyarrow
        return pd.DataFrame({c: df.get_column(c).to_numpy() for c in df.columns})


def as_pandas(x: Any, name: str) -> Any:
    """``x`` with polars and pyarrow objects converted to pandas; every other input unchanged.

    * a polars ``DataFrame`` / pyarrow ``Table`` or ``RecordBatch`` → a pandas ``DataFrame``
      (same column names and order);
    * a polars ``Series`` / pyarrow ``Array`` or ``ChunkedArray`` → a pandas ``Series`` (a polars
      name ``""`` becomes ``None``).

    Converted objects get a fresh ``RangeIndex`` (polars and Arrow have no row labels, so they are
    matched by position, like NumPy arrays; :func:`convert_inputs` gives them the index of the
    pandas arguments of the same call). Nulls become NaN/None and are then refused by the usual
    checks. Neither polars nor pyarrow is imported unless ``x`` comes from it: they are optional.

    Raises ``TypeError`` naming ``name`` for inputs that hold no rows: a polars ``LazyFrame`` or
    expression (call ``.collect()`` first), a pyarrow dataset or other Arrow object (use
    :func:`ofijax.stats.collect` for data on disk), a ``set`` (no order), a generator or
    iterator (read once, no length), or an object that is not array-like at all.

    >>> import polars as pl
    >>> from ofijax._validation import as_pandas
    >>> as_pandas(pl.DataFrame({"g": ["a", "b"]}), "sensitive_features")["g"].tolist()
    ['a', 'b']
    """
    mod = _origin(x)
    if mod == "polars":
        kind = type(x).__name__
        if kind == "DataFrame":
            return _polars_frame(x)
        if kind == "Series":
            return _polars_series(x)
        hint = " (call .collect() on it first)" if kind == "LazyFrame" else ""
        raise TypeError(
            f"{name}: a polars {kind} holds no rows{hint}; pass a polars DataFrame or Series, a "
            "pandas/pyarrow object or a NumPy array."
        )
    if mod == "pyarrow":
        import pyarrow as pa

        if isinstance(x, (pa.Table, pa.RecordBatch)):
            # pandas metadata may restore a stored index: drop it, Arrow rows are positional
            return x.to_pandas().reset_index(drop=True)
        if isinstance(x, (pa.Array, pa.ChunkedArray)):
            return x.to_pandas()
        raise TypeError(
            f"{name}: a pyarrow {type(x).__name__} is not accepted; pass a pyarrow Table, "
            "RecordBatch, Array or ChunkedArray (for files or datasets on disk use "
            "ofijax.stats.collect)."
        )
    if isinstance(x, (set, frozenset)):
        raise TypeError(
            f"{name}: a {type(x).__name__} has no row order; pass a list, array or Series."
        )
    if hasattr(x, "__next__") or type(x).__name__ == "generator":
        raise TypeError(
            f"{name}: got an iterator ({type(x).__name__}), which can be read only once and has no "
            "length; pass a list or array (list(...) of it), or for batches of a large data set "
            "use ofijax.stats.collect."
        )
    if not (
        x is None
        or isinstance(x, (str, bytes, int, float, complex, np.generic, dict, list, tuple, range))
        or hasattr(x, "__array__")
        or hasattr(x, "__array_interface__")
        or (hasattr(x, "__len__") and hasattr(x, "__getitem__"))
        or is_tracer(x)
    ):
        raise TypeError(
            f"{name}: got a {type(x).__name__}, which is not array-like; pass a list, a NumPy "
            "array, or a pandas, polars or pyarrow Series/DataFrame."
        )
    return x


def check_unique_columns(x: Any, name: str) -> None:
    """Raise ``ValueError`` naming ``name`` when a DataFrame ``x`` has duplicate column names (each
    would select several columns, so a group column would silently be two)."""
    cols = getattr(x, "columns", None)
    if cols is None or not hasattr(x, "iloc"):
        return
    seen: set = set()
    dup = [c for c in cols if c in seen or seen.add(c)]
    if dup:
        raise ValueError(
            f"{name}: the DataFrame has duplicate column names ({', '.join(repr(c) for c in dict.fromkeys(dup))}); "
            "give every column a distinct name (e.g. df.columns = [...]) or drop the duplicates."
        )


def columns_from_data(data: Any, *, lists: tuple = (), **named: Any) -> dict[str, Any]:
    """Resolve arguments given as column names of ``data`` (seaborn/fairlearn style).

    A ``str`` argument names a column of ``data``; for the arguments listed in ``lists`` a list or
    tuple of strings names several columns (a DataFrame of them). Every other argument is
    returned unchanged. Without ``data`` a string argument is refused: a column name is not a
    column (``audit(0, df.label, df.pred, sensitive_features="sex")`` must say so, not fail in
    pandas).

    >>> import pandas as pd
    >>> from ofijax._validation import columns_from_data
    >>> df = pd.DataFrame({"y": [1, 0], "g": ["a", "b"]})
    >>> out = columns_from_data(df, y_true="y", sensitive_features=["g"], lists=("sensitive_features",))
    >>> out["y_true"].tolist(), list(out["sensitive_features"].columns)
    ([1, 0], ['g'])
    """
    df = None
    if data is not None:
        df = as_pandas(data, "data")
        if not (hasattr(df, "columns") and hasattr(df, "iloc")):
            raise TypeError(
                f"data: must be a DataFrame (pandas, polars or a pyarrow Table) whose columns the other "
                f"arguments name; got {type(data).__name__}."
            )
        check_unique_columns(df, "data")
    out: dict[str, Any] = {}
    for name, x in named.items():
        several = (name in lists and isinstance(x, (list, tuple)) and len(x) > 0
                   and all(isinstance(c, str) for c in x))
        if not isinstance(x, str) and not (several and df is not None):
            out[name] = x
            continue
        if df is None:
            raise ValueError(
                f"{name}: got the column name {x!r} but no data; pass the DataFrame too, e.g. "
                f"audit(key, 'label', 'pred', sensitive_features={x!r}, data=df), or pass the column "
                f"itself, {name}=df[{x!r}]."
            )
        cols = [x] if isinstance(x, str) else list(x)
        missing = [c for c in cols if c not in df.columns]
        if missing:
            shown = ", ".join(repr(c) for c in list(df.columns)[:20])
            raise ValueError(f"{name}: data has no column {missing[0]!r}; its columns are {shown}.")
        if len(set(cols)) != len(cols):
            raise ValueError(f"{name}: names a column twice ({cols!r}); name each column once.")
        out[name] = df[x] if isinstance(x, str) else df[cols]
    return out


def _pandas_like(x: Any) -> bool:
    return _pandas_index(x) is not None


def convert_inputs(**named: Any) -> dict[str, Any]:
    """:func:`as_pandas` on every keyword argument (and on the values of dict arguments).

    The one conversion point of the public entry points (the audits, the confusion-matrix
    builders, the scans). polars/pyarrow arguments carry no row labels, so they are matched by
    position: when the call also has a pandas argument, a converted argument of the same length
    takes that pandas argument's index (then :func:`align_pandas` sees equal indexes); one of
    another length raises ``ValueError`` naming it. Returns a dict with the same keys in order.

    >>> import pandas as pd, pyarrow as pa
    >>> from ofijax._validation import convert_inputs
    >>> out = convert_inputs(y_true=pd.Series([1, 0], index=[7, 9]), y_pred=pa.array([0, 1]))
    >>> out["y_pred"].index.tolist()
    [7, 9]
    """
    conv: dict[str, Any] = {}
    for k, x in named.items():
        if isinstance(x, dict):
            conv[k] = {c: as_pandas(col, f"{k}[{c!r}]") for c, col in x.items()}
        else:
            conv[k] = as_pandas(x, k)
    # reference rows: the first pandas argument, else the first converted one
    ref_name, ref_index = None, None
    for k, x in list(named.items()) + list(conv.items()):
        if _pandas_like(x):
            ref_name, ref_index = k, x.index
            break
    out: dict[str, Any] = {}
    for k, x in named.items():
        if isinstance(x, dict):
            out[k] = {c: _adopt(conv[k][c], col, f"{k}[{c!r}]", ref_name, ref_index)
                      for c, col in x.items()}
        else:
            out[k] = _adopt(conv[k], x, k, ref_name, ref_index)
    return out


def _adopt(conv: Any, orig: Any, name: str, ref_name: Any, ref_index: Any) -> Any:
    """A converted (polars/pyarrow) object takes the reference pandas index, matched by position."""
    if conv is orig or ref_index is None or not _pandas_like(conv):
        return conv
    if len(conv) != len(ref_index):
        raise ValueError(
            f"{name}: length mismatch ({name} has {len(conv)} rows, {ref_name} has "
            f"{len(ref_index)}); pass one value per row in each."
        )
    return conv.set_axis(ref_index)


def _pandas_index(x: Any) -> Any:
    """The index of a pandas Series/DataFrame (duck-typed, no pandas import), else ``None``."""
    if hasattr(x, "index") and hasattr(x, "iloc") and hasattr(x, "reindex"):
        return x.index
    return None


def align_pandas(**named_arrays: Any) -> dict[str, Any]:
    """Align pandas arguments on their index, or refuse; never match them by position silently.

    The one pandas policy of ofijax. polars and pyarrow arguments are first converted to pandas
    by :func:`convert_inputs` (matched by position: they have no row labels). Among the keyword arguments, those that are pandas
    ``Series``/``DataFrame`` objects are compared with the *first* pandas argument (the
    reference; its row order defines the rows):

    * identical indexes: returned unchanged;
    * the same unique labels in another order: the argument is reordered to the reference's
      order (``obj.reindex(reference.index)``), as pandas itself would align them;
    * anything else (labels missing on either side, duplicate labels, different lengths):
      ``ValueError`` naming the argument and saying how to fix it (``.reindex``/``.loc`` to
      select the common rows, or ``.reset_index(drop=True)`` on every argument to match by
      position on purpose).

    Non-pandas arguments (lists, NumPy/JAX arrays, ``None``) are passed through unchanged; they
    are matched by position with the reference's order. A ``dict`` argument (e.g. group columns
    ``{"sex": s, "race": r}``, or several candidates' predictions) is aligned value by value,
    each named ``name[key]`` in messages, and returned as a dict with the same keys. The returned
    dict has the same keys in the same order.

    >>> import pandas as pd
    >>> from ofijax._validation import align_pandas
    >>> a = pd.Series([1, 0, 1], index=["x", "y", "z"])
    >>> b = pd.Series([0, 1, 1], index=["z", "x", "y"])
    >>> align_pandas(y_true=a, y_pred=b)["y_pred"].tolist()
    [1, 1, 0]
    """
    named_arrays = convert_inputs(**named_arrays)
    if any(isinstance(obj, dict) for obj in named_arrays.values()):
        flat: dict[str, Any] = {}
        for name, obj in named_arrays.items():
            if isinstance(obj, dict):
                flat.update({f"{name}[{key!r}]": col for key, col in obj.items()})
            else:
                flat[name] = obj
        flat = align_pandas(**flat)
        return {name: ({key: flat[f"{name}[{key!r}]"] for key in obj} if isinstance(obj, dict)
                       else flat[name]) for name, obj in named_arrays.items()}
    ref_name, ref_index = None, None
    out: dict[str, Any] = {}
    for name, obj in named_arrays.items():
        idx = _pandas_index(obj)
        if idx is None:
            out[name] = obj
            continue
        if ref_index is None:
            ref_name, ref_index = name, idx
            out[name] = obj
            continue
        if idx.equals(ref_index):
            out[name] = obj
            continue
        same_labels = (
            len(idx) == len(ref_index)
            and idx.is_unique
            and ref_index.is_unique
            and len(idx.difference(ref_index)) == 0
        )
        if same_labels:
            out[name] = obj.reindex(ref_index)
            continue
        if not (idx.is_unique and ref_index.is_unique):
            why = "has duplicate labels and differs from"
        else:
            missing = len(ref_index.difference(idx))
            extra = len(idx.difference(ref_index))
            why = f"lacks {missing} and adds {extra} labels relative to"
        raise ValueError(
            f"{name}: its pandas index {why} {ref_name}'s index, and ofijax never matches pandas "
            f"rows by position. Select the common rows first (e.g. "
            f"{name}.reindex({ref_name}.index) or .loc[common] on both), or call "
            f".reset_index(drop=True) on every argument to match them by position on purpose."
        )
    return out


def as_key(key: Any, name: str = "key") -> Any:
    """The one PRNG-key policy of ofijax: a ``jax.random.key``/``PRNGKey`` or an int seed.

    A typed key (``jax.random.key(s)``) or a raw ``uint32[2]`` key (``jax.random.PRNGKey(s)``) is
    returned unchanged (a batch of keys keeps its leading axes); a Python or NumPy integer
    (not ``bool``) in ``[0, 2**64)`` becomes ``jax.random.key(seed)`` built from all 64 bits of
    the seed whatever ``jax_enable_x64`` says (seeds below 2**32 give the same key in both modes).
    Anything else (floats, bools, strings, ``None``, out-of-range ints) raises one ``TypeError``
    naming ``name``.

    >>> import jax
    >>> from ofijax._validation import as_key
    >>> bool((jax.random.key_data(as_key(3)) == jax.random.key_data(jax.random.key(3))).all())
    True
    """
    import jax

    if isinstance(key, (bool, np.bool_)):
        raise TypeError(f"{name}: must be a jax.random.key(...) or an int seed; got a bool.")
    if isinstance(key, (int, np.integer)):
        seed = int(key)
        if not 0 <= seed < 2**64:
            raise TypeError(f"{name}: an int seed must lie in [0, 2**64); got {seed}.")
        if (jax.config.jax_default_prng_impl == "threefry2x32"
                and not jax.config.jax_random_seed_offset):
            # jax.random.key(seed)'s key data, built without a compiled program (two, each traced
            # and lowered in every new process): threefry seeds with the high and low 32 bits.
            data = np.array([seed >> 32, seed & 0xFFFFFFFF], dtype=np.uint32)
            return jax.random.wrap_key_data(data, impl="threefry2x32")
        if seed >= 2**63:
            seed -= 2**64  # jax.random.key takes int64; same 64 bits
        # All 64 bits of the seed, whatever jax_enable_x64 says (in 32-bit mode jax.random.key
        # would keep only the low 32 bits, so seeds 2**32 apart would give the same key).
        with jax.enable_x64(True):
            return jax.random.key(seed)
    if isinstance(key, jax.Array) or isinstance(key, np.ndarray):
        dt = key.dtype
        if jax.dtypes.issubdtype(dt, jax.dtypes.prng_key):
            return key
        if dt == np.uint32 and key.ndim >= 1 and key.shape[-1] == 2:
            return key
    raise TypeError(
        f"{name}: must be a jax.random.key(...) / jax.random.PRNGKey(...) or an int seed; "
        f"got {type(key).__name__}."
    )
