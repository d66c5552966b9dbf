"""ofijax: a pure-functional JAX toolkit for legally grounded fairness auditing."""

__version__ = "0.1.0"
__all__ = ["__version__"]
