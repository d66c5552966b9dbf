"""The one progress helper of ofijax (stderr, no extra dependency).

Progress is shown when ``OFIJAX_PROGRESS`` is ``1`` (forced), or when it is unset and stderr is a
terminal; ``OFIJAX_PROGRESS=0`` switches it off everywhere. Nothing is printed for runs shorter
than ``delay`` seconds, so quick calls stay silent.

:class:`Progress` counts items (replicates, samples, rows); :class:`Notice` covers one long call
that has nothing to count, e.g. the first scan of a shape, which compiles an XLA program: a timer
prints ``message…`` once ``delay`` seconds have passed and ``done (… s)`` when the call ends.

>>> from ofijax._progress import Progress
>>> with Progress(3, "demo", enabled=False) as p:
...     for _ in range(3):
...         p.update(1)
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any

__all__ = ["DELAY", "Notice", "Progress", "progress_enabled", "track"]

#: Seconds a call runs before its progress line or notice is first drawn.
DELAY = 2.0


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
                 delay: float | None = None, stream: Any = None):
        self.total, self.desc, self.unit = total, desc, unit
        self.enabled = progress_enabled() if enabled is None else bool(enabled)
        self.delay = DELAY if delay is None else delay
        self.stream = stream if stream is not None else sys.stderr
        self.done = 0
        self._t0 = time.perf_counter()
        self._last = 0.0
        self._drawn = False
        self._closed = False
        try:  # on a terminal, erase what a longer earlier line left
            self._erase = "\x1b[K" if self.stream.isatty() else ""
        except (AttributeError, ValueError):
            self._erase = ""
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        if self.enabled:  # a first line even when the first update is late (compiling)
            self._timer = threading.Timer(self.delay, self._first_line)
            self._timer.daemon = True
            self._timer.start()

    def _first_line(self) -> None:
        with self._lock:
            if self._closed or self._drawn:
                return
            unit = f" {self.unit}" if self.unit else ""
            tot = "" if self.total is None else f"/{self.total:,}"
            self.stream.write(f"\r{self.desc}: {self.done:,}{tot}{unit} (starting; a first call "
                              "compiles first…)")
            self.stream.flush()
            self._drawn = True

    def update(self, n: int = 1) -> None:
        self.done += int(n)
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self._t0 < self.delay or (now - self._last < 0.2 and self.done != self.total):
            return
        self._last = now
        with self._lock:
            self._draw(now)

    def _draw(self, now: float) -> None:
        el = max(now - self._t0, 1e-9)
        rate = self.done / el
        tot = "" if self.total is None else f"/{self.total:,}"
        eta = ""
        if self.total and rate > 0 and self.done < self.total:
            eta = f", eta {(self.total - self.done) / rate:.0f} s"
        unit = f" {self.unit}" if self.unit else ""
        self.stream.write(f"\r{self.desc}: {self.done:,}{tot}{unit} ({rate:,.0f}/s, {el:.0f} s{eta})"
                          f"{self._erase}")
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
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


class Notice:
    """A one-off stderr notice for a long call with nothing to count (context manager).

    If the ``with`` block is still running after ``delay`` seconds, ``message…`` is written (from
    a timer thread; XLA compilation releases the GIL), and ``done (N s)`` when the block ends.
    Silent when disabled (see :func:`progress_enabled`) or when the block ends sooner.

    >>> with Notice("compiling", enabled=False):
    ...     pass
    """

    def __init__(self, message: str, *, enabled: bool | None = None, delay: float | None = None,
                 stream: Any = None):
        self.message = message
        self.enabled = progress_enabled() if enabled is None else bool(enabled)
        self.delay = DELAY if delay is None else delay
        self.stream = stream if stream is not None else sys.stderr
        self.shown = False
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()
        self._t0 = 0.0

    def _show(self) -> None:
        with self._lock:
            if self._timer is None:  # the block already ended
                return
            self.stream.write(f"{self.message}…")
            self.stream.flush()
            self.shown = True

    def __enter__(self) -> Notice:
        self._t0 = time.perf_counter()
        if self.enabled:
            self._timer = threading.Timer(self.delay, self._show)
            self._timer.daemon = True
            self._timer.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        with self._lock:
            timer, self._timer = self._timer, None
            if timer is not None:
                timer.cancel()
            if self.shown:
                self.stream.write(f" done ({time.perf_counter() - self._t0:.1f} s)\n")
                self.stream.flush()
