"""Report folders of the ``ofijax`` command (refuse to clobber, write atomically), and the few
helpers every command and engine shares (option names in messages, the report's data section).

A report is written into a temporary folder beside ``--out`` and renamed into place only when
every file is written, so a failure leaves nothing partial; an existing ``--out`` is refused
unless ``--force`` (then it is replaced, after the new report is complete).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator

__all__ = ["CLIError", "check_out_dir", "report_dir", "as_option", "option_name", "data_section",
           "OPTION_OF", "SCHEMA_VERSION", "BATCH_ROWS", "PLOT_DPI", "input_files", "start_hashing", "provenance"]

#: Version of report.json's layout; 1.0 holds ``schema_version``, ``provenance``,
#: ``impact_ratios`` and the pairs' ``detectable_ofi``. Raise it when a key changes meaning.
SCHEMA_VERSION = "1.0"

#: Rows per Arrow batch of the streaming reads (``--batch-size``): stats.collect's default, a few
#: columns x 1 Mi rows stays in tens of MiB.
BATCH_ROWS = 1 << 20
#: Bytes per read while hashing an input (4 MiB): large enough that hashlib releases the GIL and
#: the hashing thread overlaps the audit.
HASH_CHUNK = 1 << 22
#: Bytes per block of pyarrow's CSV reader for --scoring-rate (16 MiB): several batches per file
#: and a bounded memory per block.
CSV_BLOCK = 1 << 24
#: Resolution of the PNG plots the commands write (sharp on screen, files of tens of KiB).
PLOT_DPI = 110


class CLIError(ValueError):
    """An error in the user's input: reported in one line, exit status 2."""


def check_out_dir(out: str, force: bool, option: str = "--out") -> None:
    """Refuse an ``--out`` that is a file, or an existing folder without ``--force``."""
    if not out:
        raise CLIError(f"{option}: needs a folder name.")
    if os.path.exists(out) and not os.path.isdir(out):
        raise CLIError(f"{option}: {out!r} is a file, not a folder; pass a folder name for the report.")
    if os.path.isdir(out) and not force:
        raise CLIError(f"{option}: {out!r} already exists; pass --force to replace it, or choose another folder.")
    parent = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(parent):
        raise CLIError(f"{option}: the parent folder {parent!r} does not exist.")
    if not os.access(parent, os.W_OK):
        raise CLIError(f"{option}: cannot write in {parent!r} (permission denied).")


@contextlib.contextmanager
def report_dir(out: str, force: bool, option: str = "--out") -> Iterator[str]:
    """Yield a temporary folder; on success it becomes ``out`` (replacing it with ``force``)."""
    check_out_dir(out, force, option)
    parent = os.path.dirname(os.path.abspath(out))
    tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(os.path.abspath(out))}.tmp-", dir=parent)
    try:
        yield tmp
        os.chmod(tmp, 0o755)
        if os.path.isdir(out):
            old = tempfile.mkdtemp(prefix=f".{os.path.basename(os.path.abspath(out))}.old-", dir=parent)
            os.rmdir(old)
            os.replace(out, old)
            os.replace(tmp, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


#: Python argument names of the API → the CLI options the user typed (for error messages).
OPTION_OF = {
    "y_true": "--label", "y_pred": "--pred", "sensitive_features": "--group", "sample_weight": "--weight",
    "bins": "--bins", "max_levels": "--max-levels", "alpha": "--alpha", "confidence": "--confidence",
    "num_samples": "--samples", "scan_num_samples": "--scan-samples", "scan_features": "--attr",
    "scan_probabilities": "--prob", "key": "--seed", "method": "--method", "null": "--null",
    "correction": "--correction", "di_variant": "--di-variant",
}


def as_option(exc: Exception, mapping: dict | None = None) -> CLIError:
    """Re-word an API error so that it names the CLI option, not the Python argument."""
    msg = str(exc).strip().replace("\n", " ")
    mapping = OPTION_OF if mapping is None else {**OPTION_OF, **mapping}
    head, sep, rest = msg.partition(":")
    base = head.split("[")[0].strip()
    if sep and base in mapping:
        msg = mapping[base] + head[len(base):] + sep + rest
    msg = msg.replace("raise max_levels", "raise --max-levels").replace("max_levels = ", "--max-levels ")
    msg = re.sub(r"pass bins=\{[^}]*\} \(quantile bins; CLI: (--bins \d+)\) or explicit edges",
                 r"pass \1 (quantile bins)", msg)
    msg = re.sub(r"\b(method|null|correction|di_variant)='(\w+)'",
                 lambda m: f"--{m.group(1).replace('_', '-')} {m.group(2)}", msg)
    for name, opt in mapping.items():  # Python names left in the text (only those with "_")
        if "_" in name:
            msg = re.sub(rf"(?<![\w-]){name}(?!\w)", opt, msg)
    return CLIError(msg)


def option_name(args, dest: str, default: str) -> str:
    """The spelling of an option the user typed (an older alias included), for messages."""
    return (getattr(args, "spelled", None) or {}).get(dest) or default


def data_section(args, *, source: str, rows: int, dropped: int, positive: dict, engine: str) -> dict:
    """The ``data`` part of report.json: the same keys from every engine."""
    return {
        "source": source, "rows": int(rows), "rows_dropped": int(dropped),
        "label": args.label, "pred": args.pred, "group": list(args.group),
        "positive": positive, "harmful_label": bool(args.harmful_label),
        "weight": args.weight, "groups_selected": args.groups, "threshold": args.threshold,
        "na_values": list(args.na_values or []), "engine": engine,
    }


def input_files(data: str | None) -> list[str]:
    """The files read for ``--data``: the file, every file under a folder, or a glob's matches."""
    import glob

    if not data:
        return []
    if os.path.isfile(data):
        return [data]
    if os.path.isdir(data):
        out = []
        for root, dirs, files in os.walk(data):
            dirs.sort()
            out += [os.path.join(root, f) for f in sorted(files) if not f.startswith((".", "_"))]
        return out
    return sorted(f for f in glob.glob(data) if os.path.isfile(f))


def _sha256(path: str) -> dict:
    import hashlib

    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(HASH_CHUNK):
            h.update(chunk)
            size += len(chunk)
    return {"path": path, "bytes": size, "sha256": h.hexdigest()}


def start_hashing(data: str | None):
    """Start hashing the input files on a background thread (it overlaps the audit); returns a
    callable that gives the list of ``{path, bytes, sha256}`` (waiting for it if need be)."""
    import threading

    files = input_files(data)
    result: list = []

    def work():
        for f in files:
            try:
                result.append(_sha256(f))
            except OSError as exc:
                result.append({"path": f, "bytes": None, "sha256": None, "error": str(exc)})

    t = threading.Thread(target=work, name="ofijax-sha256", daemon=True)
    t.start()

    def get() -> list:
        t.join()
        return list(result)
    return get


def provenance(args, *, rows_read: int | None, rows_used: int | None, inputs=None) -> dict:
    """The ``provenance`` part of report.json: versions, command, seed, inputs with SHA-256, rows
    read and used, the audit date (UTC)."""
    import datetime
    import platform
    from importlib import metadata

    def version(name: str) -> str | None:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    from ofijax import __version__

    files = inputs() if callable(inputs) else list(inputs or [])
    return {
        "ofijax": __version__, "jax": version("jax"), "jaxlib": version("jaxlib"), "numpy": version("numpy"),
        "python": platform.python_version(), "platform": platform.platform(),
        "command": "ofijax " + " ".join(getattr(args, "argv", []) or []),
        "seed": getattr(args, "seed", None),
        "inputs": files,
        "inputs_note": None if getattr(args, "data", None) else
        "embedded COMPAS data shipped with ofijax (sha256-checked on load; see ofijax/data/PROVENANCE.md)",
        "rows_read": None if rows_read is None else int(rows_read),
        "rows_used": None if rows_used is None else int(rows_used),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }


def add_report_extras(report: dict, args, *, impact=None, rows_read=None, rows_used=None, inputs=None) -> dict:
    """``schema_version`` first, then the report, ``impact_ratios`` (a table of
    :func:`ofijax.impact_ratios`) and ``provenance``; returns a new dict."""
    from ofijax.auditing.reporting import impact_ratios_section

    out = {"schema_version": SCHEMA_VERSION, **report}
    if impact is not None:
        out["impact_ratios"] = impact_ratios_section(impact)
    out["provenance"] = provenance(args, rows_read=rows_read, rows_used=rows_used, inputs=inputs)
    return out


def label_strings(col, na: list, *, keep_categories: bool = True):
    """An Arrow column of group labels as strings (NaN → null; ``na`` strings → null), as the
    stream engine reads them (``ofijax.stats.collect(..., as_strings=True)``); a categorical of
    strings keeps its declared categories when ``keep_categories`` and no ``na`` is given."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_dictionary(col.type):
        if keep_categories and pa.types.is_string(col.type.value_type) and not na:
            return col
        col = col.cast(col.type.value_type)
    if pa.types.is_floating(col.type):
        col = pc.if_else(pc.is_nan(col), pa.scalar(None, col.type), col)
    if not pa.types.is_string(col.type):
        col = col.cast(pa.string())
    if na:
        col = pc.if_else(pc.is_in(col, value_set=pa.array(na, pa.string())), pa.scalar(None, pa.string()), col)
    return col


def score_batches(files: list, fmt: str, groups: list, score: str, *, na_values=(), batch_size: int = BATCH_ROWS):
    """Batches (pandas DataFrames) of the group columns, as text (an empty field or a null is
    missing, as every engine reads them), and the score column of ``files``, read with Arrow in
    bounded memory: the input of :func:`ofijax.auditing.reporting.scoring_from_batches`."""
    import pyarrow as pa

    na = [str(v) for v in na_values or ()]
    cols = list(dict.fromkeys([*groups, score]))

    def text(col):
        return label_strings(col, na, keep_categories=False)

    def frame(batch):
        data = {}
        for c in cols:
            col = batch.column(batch.schema.get_field_index(c))
            data[c] = text(col).to_pandas() if c in groups and c != score else col.to_pandas()
        import pandas as pd

        return pd.DataFrame(data)

    for f in files:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            pf = pq.ParquetFile(f)
            missing = [c for c in cols if c not in pf.schema_arrow.names]
            if missing:
                raise CLIError(f"--scoring-rate: file {f!r} has no column {missing[0]!r}.")
            for b in pf.iter_batches(columns=cols, batch_size=batch_size):
                yield frame(b)
        else:
            import pyarrow.csv as pcsv

            sep = "\t" if f.lower().endswith((".tsv", ".tsv.gz", ".tab")) else ","
            conv = pcsv.ConvertOptions(include_columns=cols, column_types={g: pa.string() for g in groups},
                                       null_values=["", *na], strings_can_be_null=True,
                                       quoted_strings_can_be_null=True)
            try:
                reader = pcsv.open_csv(f, parse_options=pcsv.ParseOptions(delimiter=sep), convert_options=conv,
                                       read_options=pcsv.ReadOptions(block_size=CSV_BLOCK))
            except (pa.ArrowInvalid, KeyError) as exc:
                raise CLIError(f"--scoring-rate: cannot read {score!r} from {f!r} "
                               f"({str(exc).splitlines()[0]}).") from None
            for b in reader:
                yield frame(b)
