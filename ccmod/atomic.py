"""Atomic output writing: every file ccmod writes goes through a temp file + rename."""
from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path

from ccmod.errors import CcmodInputError


def temp_path(path) -> Path:
    """A fresh hidden temporary file next to ``path`` (to be renamed over it when complete).

    Streaming writers that keep the file open across calls use this directly; everything
    else goes through :func:`atomic_path`.
    """
    path = Path(path)
    if path.is_dir():
        raise CcmodInputError("is a directory, not a file", source=str(path),
                              hint="give a file name")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise CcmodInputError(f"cannot write here: {exc.strerror or exc}", source=str(path),
                              hint="check the path and its permissions") from None
    os.close(fd)
    # mkstemp makes 0600 files; outputs should get the usual permissions (umask)
    umask = os.umask(0)
    os.umask(umask)
    try:
        os.chmod(tmp, 0o666 & ~umask)
    except OSError:
        pass
    return Path(tmp)


@contextmanager
def atomic_path(path):
    """Yield a temporary path next to ``path``; rename it over ``path`` on success."""
    path = Path(path)
    ensure_dir(path.parent)
    tmp = temp_path(path)
    try:
        yield Path(tmp)
        try:
            os.replace(tmp, path)
        except OSError as exc:
            raise CcmodInputError(f"cannot write: {exc.strerror or exc}", source=str(path),
                                  hint="check the path and its permissions") from None
    except BaseException:
        discard(tmp)
        raise


def discard(path) -> None:
    """Remove ``path`` if it exists (a temporary being abandoned); never fails."""
    try:
        os.unlink(path)
    except OSError:
        pass


def ensure_dir(path, what: str = "output directory") -> Path:
    """Create the directory ``path`` (and its parents) if needed; return it as a Path.

    A failure (permissions, a file in the way) is a :class:`CcmodInputError` naming
    ``what`` and the path, not a traceback.
    """
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CcmodInputError(f"cannot create {what}: {exc.strerror or exc}",
                              source=str(path)) from None
    return path


def atomic_write_text(path, text: str) -> None:
    with atomic_path(path) as tmp:
        Path(tmp).write_text(text)


def atomic_write_bytes(path, data: bytes) -> None:
    with atomic_path(path) as tmp:
        Path(tmp).write_bytes(data)
