"""The layout of ``ofijax.cli`` (issue #38): modules of at most 700 lines along the command's seams,
each private module opening with a docstring that says what it owns, the old import paths kept,
comments that say what and why now (no history, no issue numbers), and the parser's defaults
agreeing with the library's.

Fast: reads the source and builds the parser; runs no command.
"""

from __future__ import annotations

import ast
import io
import pathlib
import re
import tokenize

import pytest

import ofijax.cli

CLI = pathlib.Path(ofijax.cli.__file__).parent
MODULES = sorted(CLI.glob("*.py"))
MAX_LINES = 700


def test_the_split_modules_exist():
    names = {p.stem for p in MODULES}
    assert {"_main", "_parser", "_prepare", "_audit_cmd", "_scan_cmd", "_sources", "_output"} <= names


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_module_size_and_docstring(path):
    text = path.read_text(encoding="utf-8")
    lines = text.count("\n")
    assert lines <= MAX_LINES, f"{path.name}: {lines} lines (at most {MAX_LINES})"
    doc = ast.get_docstring(ast.parse(text))
    assert doc, f"{path.name}: no module docstring"
    if path.stem != "__init__":
        first = doc.split("\n\n")[0]
        assert len(first.split()) >= 8, f"{path.name}: the docstring's first paragraph is too short: {first!r}"


# history and issue numbers belong in CHANGELOG.md / experiments/notes/cli.md, not in the code
_HISTORY = re.compile(r"(#\d+\b|\bissue \d+|\bround \d+|\btried\b|\bused to\b|\bbefore #|\bpreviously\b"
                      r"|\d+(\.\d+)?\s*x (faster|slower)|\b\d+(\.\d+)?\s*(ms|s) (faster|slower))", re.IGNORECASE)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_comments_and_docstrings_carry_no_history(path):
    text = path.read_text(encoding="utf-8")
    bad = []
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT and _HISTORY.search(tok.string):
            bad.append((tok.start[0], tok.string))
    tree = ast.parse(text)
    for node in [tree, *ast.walk(tree)]:
        if isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node) or ""
            if _HISTORY.search(doc):
                bad.append((getattr(node, "lineno", 1), _HISTORY.search(doc).group(0)))
    assert not bad, f"{path.name}: history in comments/docstrings: {bad}"


def test_history_pattern_can_fail():
    assert _HISTORY.search("# before #37 this was slower")
    assert _HISTORY.search("# tried a dict here")
    assert _HISTORY.search("# 2.5x faster than pandas")
    assert not _HISTORY.search("# the counts path has no bins for the audit's groups")


def test_old_import_paths_still_work():
    from ofijax.cli import _audit_cmd, _main, _parser, _prepare

    assert _main.main is ofijax.cli.main
    assert _main.build_parser is _parser.build_parser is ofijax.cli.build_parser
    assert _main.load_table is _prepare.load_table is ofijax.cli.load_table
    assert _main.prepare is _prepare.prepare is ofijax.cli.prepare
    assert _main.METHODS is _parser.METHODS and _main.NA_RULE is _parser.NA_RULE
    assert _main.check_draws is _prepare.check_draws
    assert _main.audit_header is _audit_cmd.audit_header
    assert set(_main.__all__) <= set(dir(_main))


def _defaults(command: str) -> dict:
    parser = ofijax.cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return {a.dest: a.default for a in sub.choices[command]._actions
            if a.default != "==SUPPRESS=="}  # deprecated spellings share the dest, without a default


def test_parser_defaults_agree_with_the_library():
    from ofijax.auditing import MAX_LEVELS
    from ofijax.cli import _parser

    assert _parser.MAX_LEVELS == MAX_LEVELS
    for command in ("audit", "scan"):
        assert _defaults(command)["max_levels"] == MAX_LEVELS, command
    assert set(_parser.METHODS) == {"auto", "exact", "saddlepoint", "monte_carlo"}
    audit, scan, simulate = _defaults("audit"), _defaults("scan"), _defaults("simulate")
    assert (audit["samples"], audit["scan_samples"], scan["samples"]) == (
        _parser.AUDIT_SAMPLES, _parser.AUDIT_SCAN_SAMPLES, _parser.SCAN_SAMPLES)
    assert (simulate["samples"], simulate["bins"]) == (_parser.SIMULATE_SAMPLES, _parser.SIMULATE_BINS)
    from ofijax.cli._output import BATCH_ROWS

    assert audit["batch_size"] == scan["batch_size"] == BATCH_ROWS


def test_batch_audit_keeps_the_output_rule(tmp_path):
    """The batch audit (``--score --thresholds``) writes its report by the one rule of every command:
    an existing ``--out`` is refused without ``--force`` (exit 2, one line, the folder untouched; the
    check comes before the work) and replaced whole with it."""
    import contextlib

    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(5)
    n = 60
    pd.DataFrame({"y": rng.integers(0, 2, n), "s": rng.random(n).round(2),
                  "g": rng.choice(["a", "b"], n)}).to_csv(tmp_path / "t.csv", index=False)
    out = tmp_path / "rep"
    out.mkdir()
    (out / "mine.txt").write_text("keep")
    argv = ["audit", "--data", str(tmp_path / "t.csv"), "--label", "y", "--score", "s",
            "--thresholds", "0.4:0.6:0.2", "--group", "g", "--no-plots", "--out", str(out)]
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = ofijax.cli.main(argv)
    assert rc == 2 and len(err.getvalue().strip().splitlines()) == 1 and "--force" in err.getvalue()
    assert sorted(p.name for p in out.iterdir()) == ["mine.txt"]
    with contextlib.redirect_stdout(io.StringIO()):
        assert ofijax.cli.main([*argv, "--force"]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert "mine.txt" not in names and {"batch.json", "candidates.csv", "report.md"} <= set(names)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary folder left
