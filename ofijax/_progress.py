"""The one progress helper of ofijax (stderr, no extra dependency).

Progress is shown when ``OFIJAX_PROGRESS`` is ``1`` (forced), or when it is unset and stderr is a
terminal; ``OFIJAX_PROGRESS=0`` switches it off everywhere. Nothing is printed for runs shorter
than ``delay`` seconds, so quick calls stay silent.

>>> from ofijax._progress import Progress
>>> with Progress(3, "demo", enabled=False) as p:
...     for _ in range(3):
...         p.update(1)
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any

__all__ = ["Progress", "progress_enabled", "track"]


def progress_enabled() -> bool:
    """``OFIJAX_PROGRESS=1`` forces progress on, ``0`` off; unset: on when stderr is a terminal."""
    env = os.environ.get("OFIJAX_PROGRESS", "").strip().lower()
    if env in ("0", "false", "no", "off"):
        return False
    if env in ("1", "true", "yes", "on"):
        return True
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


class Progress:
    """A counter that redraws one stderr line: ``desc: done/total unit (rate/s, eta)``.

    Args:
        total: expected count (``None`` if unknown).
        desc: what is being counted, e.g. ``"replicates"``.
        unit: the unit shown after the counts.
        enabled: ``None`` = :func:`progress_enabled`.
        delay: seconds before the first line is drawn.
    """

    def __init__(self, total: int | None, desc: str, *, unit: str = "", enabled: bool | None = None,
                 delay: float = 2.0, stream: Any = None):
        self.total, self.desc, self.unit = total, desc, unit
        self.enabled = progress_enabled() if enabled is None else bool(enabled)
        self.delay = delay
        self.stream = stream if stream is not None else sys.stderr
        self.done = 0
        self._t0 = time.perf_counter()
        self._last = 0.0
        self._drawn = False

    def update(self, n: int = 1) -> None:
        self.done += int(n)
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self._t0 < self.delay or (now - self._last < 0.2 and self.done != self.total):
            return
        self._last = now
        self._draw(now)

    def _draw(self, now: float) -> None:
        el = max(now - self._t0, 1e-9)
        rate = self.done / el
        tot = "" if self.total is None else f"/{self.total:,}"
        eta = ""
        if self.total and rate > 0 and self.done < self.total:
            eta = f", eta {(self.total - self.done) / rate:.0f} s"
        unit = f" {self.unit}" if self.unit else ""
        self.stream.write(f"\r{self.desc}: {self.done:,}{tot}{unit} ({rate:,.0f}/s, {el:.0f} s{eta})")
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        if self.enabled and self._drawn:
            self._draw(time.perf_counter())
            self.stream.write("\n")
            self.stream.flush()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def track(iterable: Iterable, desc: str, *, total: int | None = None, unit: str = "",
          enabled: bool | None = None) -> Iterator:
    """Iterate with a :class:`Progress` line (counts one per item)."""
    if total is None:
        try:
            total = len(iterable)  # type: ignore[arg-type]
        except TypeError:
            total = None
    with Progress(total, desc, unit=unit, enabled=enabled) as p:
        for item in iterable:
            yield item
            p.update(1)
