"""Command-line entry point: ``python -m ofijax`` / ``ofijax`` (see :mod:`ofijax.cli`)."""

from __future__ import annotations


def main(argv: list[str] | None = None) -> int:
    """Run the ``ofijax`` command line; returns the exit status."""
    from ofijax.cli import main as cli_main

    return cli_main(argv)


if __name__ == "__main__":
    raise SystemExit(main())
