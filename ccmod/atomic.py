"""Atomic output writing: every file ccmod writes goes through a temp file + rename."""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

from ccmod.errors import CcmodInputError


#: temp names handed out by this process (released when discarded or renamed)
_ACTIVE: dict[str, str] = {}


def refuse_directory(path: Path) -> Path:
    """``path``, refused in one line when it is a folder (an output file's name was asked
    for): what writing it would fail on, for a caller to check before costly work too."""
    if path.is_dir():
        raise CcmodInputError("is a directory, not a file", source=str(path),
                              hint="give a file name")
    return path


def temp_path(path) -> Path:
    """The hidden temporary file ``.NAME.ccmod-tmp`` next to ``path`` (renamed over it when
    complete), created empty.

    The name is fixed per target, so a run killed with SIGKILL leaves at most one such file
    per output, and the next run writing that output replaces it (no accumulation).
    Streaming writers that keep the file open across calls use this directly; everything
    else goes through :func:`atomic_path`.
    """
    path = refuse_directory(Path(path))
    # a second writer of the same target in this process (e.g. a raw pass and the final
    # table) takes the next name: names stay deterministic, so a rerun still replaces them
    k = 0
    tmp = path.parent / f".{path.name}.ccmod-tmp"
    while str(tmp.absolute()) in _ACTIVE:
        k += 1
        tmp = path.parent / f".{path.name}.{k}.ccmod-tmp"
    _ACTIVE[str(tmp.absolute())] = str(path)
    try:
        if tmp.is_symlink():
            tmp.unlink()
        # O_NOFOLLOW: never write through a link someone planted under the temp name
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0),
                     0o666)
    except OSError as exc:
        raise CcmodInputError(f"cannot write here: {exc.strerror or exc}", source=str(path),
                              hint="check the path and its permissions") from None
    os.close(fd)
    return tmp


@contextmanager
def atomic_path(path):
    """Yield a temporary path next to ``path``; rename it over ``path`` on success."""
    path = Path(path)
    ensure_dir(path.parent)
    tmp = temp_path(path)
    try:
        try:
            yield Path(tmp)
        except OSError as exc:
            if getattr(exc, "filename", None):
                raise
            # e.g. ENOSPC from a library writer: name the output, not an anonymous errno
            raise CcmodInputError(f"cannot write: {exc.strerror or exc}", source=str(path),
                                  hint="check free space and permissions") from None
        try:
            os.replace(tmp, path)
            release(tmp)
        except OSError as exc:
            raise CcmodInputError(f"cannot write: {exc.strerror or exc}", source=str(path),
                                  hint="check the path and its permissions") from None
    except BaseException:
        discard(tmp)
        raise


def release(path) -> None:
    """Forget a temp name handed out by :func:`temp_path` (renamed or removed)."""
    _ACTIVE.pop(str(Path(path).absolute()), None)


def outputs_being_written() -> list[str]:
    """Final names of the outputs whose temp files are open (for a disk-full message)."""
    return sorted(set(_ACTIVE.values()))


def discard(path) -> None:
    """Remove ``path`` if it exists (a temporary being abandoned); never fails."""
    release(path)
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
