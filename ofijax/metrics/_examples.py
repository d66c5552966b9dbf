"""The OFI paper's Table 1 scenarios, as confusion matrices in the ofijax layout."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

__all__ = ["Table1Scenario", "paper_table1"]


class Table1Scenario(NamedTuple):
    """One row pair of the paper's Table 1: the groups i and j of a scenario.

    Attributes:
        name: "A", "B" or "alpha".
        cm_i: ``(4,)`` TP, FN, FP, TN of group i.
        cm_j: ``(4,)`` TP, FN, FP, TN of group j.
        law: the reading under Ricci v. DeStefano that the paper gives.
    """

    name: str
    cm_i: jax.Array
    cm_j: jax.Array
    law: str


def paper_table1() -> tuple[Table1Scenario, ...]:
    """The three scenarios of the OFI paper's Table 1 (Ricci v. DeStefano thought experiment).

    Examples:
        >>> import ofijax
        >>> [s.name for s in ofijax.paper_table1()]
        ['A', 'B', 'alpha']
        >>> ofijax.paper_table1()[0].cm_j
        Array([ 7,  0,  1, 10], dtype=int32)
    """
    rows = (
        ("A", (1, 0, 0, 5), (7, 0, 1, 10), "Likely no bias"),
        ("B", (0, 1, 0, 5), (0, 7, 0, 11), "Bias for i"),
        ("alpha", (1, 1, 0, 5), (1, 7, 0, 11), "Bias for i"),
    )
    return tuple(
        Table1Scenario(name, jnp.asarray(ci, jnp.int32), jnp.asarray(cj, jnp.int32), law)
        for name, ci, cj, law in rows
    )
