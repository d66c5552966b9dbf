"""Names that left the :mod:`ofijax.auditing` facade, importable from it for one more release.

The facade's module ``__getattr__`` (PEP 562): a name in :data:`MOVED` is returned from its new
home with a ``DeprecationWarning`` that names the home; any other name is an ``AttributeError``.
Remove a name here one release after it moved (see CHANGELOG).
"""

from __future__ import annotations

import warnings
from typing import Any

from ofijax.auditing import reporting

__all__ = ["MOVED"]

#: Old facade name → the module that now holds it (report/CLI plumbing).
MOVED = {name: reporting for name in reporting.__all__}


def __getattr__(name: str) -> Any:
    home = MOVED.get(name)
    if home is None:
        raise AttributeError(f"module 'ofijax.auditing' has no attribute {name!r}")
    warnings.warn(
        f"ofijax.auditing.{name} is deprecated and leaves ofijax.auditing in the next release: "
        f"import it from {home.__name__} (report/CLI plumbing, not a stable API).",
        DeprecationWarning, stacklevel=2,
    )
    return getattr(home, name)
