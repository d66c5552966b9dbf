"""The scikit-learn parameter protocol shared by ofijax's estimators, without importing
scikit-learn: ``get_params`` / ``set_params`` read and write the constructor's arguments (stored
unchanged as attributes), with ``name__sub`` passed on to a nested estimator, as
``sklearn.base.BaseEstimator`` does, so ``clone``, ``Pipeline`` and ``GridSearchCV`` work."""

from __future__ import annotations

import inspect
from typing import Any

__all__ = ["ParamsMixin"]


class ParamsMixin:
    """``get_params(deep)`` / ``set_params(**params)`` from the signature of ``__init__``."""

    @classmethod
    def _get_param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return sorted(p for p in sig.parameters if p != "self")

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's arguments; with ``deep``, also ``name__sub`` for every argument that is
        itself an estimator (an instance with ``get_params``)."""
        out = {name: getattr(self, name) for name in self._get_param_names()}
        if deep:
            for name, value in list(out.items()):
                if hasattr(value, "get_params") and not isinstance(value, type):
                    out.update({f"{name}__{k}": v for k, v in value.get_params(deep=True).items()})
        return out

    def set_params(self, **params: Any) -> Any:
        """Set constructor arguments (``name__sub`` sets a nested estimator's); unknown names are
        one ``ValueError`` naming the parameter and listing the valid ones. Returns ``self``."""
        valid = self._get_param_names()
        nested: dict[str, dict[str, Any]] = {}
        for key, value in params.items():
            head, sep, rest = key.partition("__")
            if head not in valid:
                raise ValueError(
                    f"{head}: not a parameter of {type(self).__name__}; valid parameters: "
                    f"{', '.join(valid)}."
                )
            if sep:
                nested.setdefault(head, {})[rest] = value
            else:
                setattr(self, head, value)
        for head, sub in nested.items():
            getattr(self, head).set_params(**sub)
        return self
