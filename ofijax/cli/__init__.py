"""The ``ofijax`` command line: ``audit``, ``scan``, ``simulate`` and ``table1``.

Example:
    >>> from ofijax.cli import build_parser
    >>> build_parser().prog
    'ofijax'
"""

from ofijax.cli._main import main as main
from ofijax.cli._parser import build_parser as build_parser
from ofijax.cli._prepare import load_table as load_table
from ofijax.cli._prepare import prepare as prepare
from ofijax.cli._table1 import table1_report as table1_report

__all__ = ["main", "build_parser", "load_table", "prepare", "table1_report"]
