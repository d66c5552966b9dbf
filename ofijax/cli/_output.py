"""Report folders of the ``ofijax`` command: refuse to clobber, write atomically.

A report is written into a temporary folder beside ``--out`` and renamed into place only when
every file is written, so a failure leaves nothing partial; an existing ``--out`` is refused
unless ``--force`` (then it is replaced, after the new report is complete).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator

__all__ = ["CLIError", "check_out_dir", "report_dir"]


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
