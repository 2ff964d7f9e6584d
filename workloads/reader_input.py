"""Input helpers shared by the real-trace readers: one-line errors and rank-file sets.

:func:`input_guard` turns a parser's low-level exception into one
:class:`~ccmod.errors.CcmodInputError` naming the file and record;
:func:`numbered_rank_files` finds the per-rank files of a trace; :func:`reject_options`
fails on reader options a reader does not know.
"""
from __future__ import annotations

import contextlib
import glob
import gzip
import os
import struct
import zlib

from ccmod.errors import CcmodError, CcmodInputError

#: exceptions a parser may raise on malformed input (converted to CcmodInputError)
BAD_INPUT = (OSError, ValueError, struct.error, KeyError, IndexError, EOFError, zlib.error,
             gzip.BadGzipFile, UnicodeDecodeError, OverflowError, TypeError, AttributeError)


def numbered_rank_files(path: str, regex, glob_tail: str, label: str,
                        hint: str | None = None) -> list[str]:
    """The files next to ``path`` whose names differ from its name only by the rank number.

    ``regex`` matches a base name with the shared prefix as group 1 and the rank as group 2
    (``path`` itself must match); ``glob_tail`` follows the prefix in the glob listing the
    candidates (``"-*.bin"``). The ranks found must be exactly 0..n-1, else the error says
    ``rank files <label> are not numbered 0..n-1``.
    """
    prefix = regex.match(os.path.basename(path)).group(1)
    d = os.path.dirname(os.path.abspath(path))
    found = {}
    for p in glob.glob(os.path.join(glob.escape(d), glob.escape(prefix) + glob_tail)):
        mm = regex.match(os.path.basename(p))
        if mm and mm.group(1) == prefix:
            found[int(mm.group(2))] = p
    n = len(found)
    if sorted(found) != list(range(n)):
        raise CcmodInputError(f"rank files {label} are not numbered 0..{n - 1}", source=path,
                              hint=hint)
    return [found[r] for r in range(n)]


def reject_options(opts: dict, reader: str, source) -> None:
    """Fail on reader options the ``reader`` does not know (``**opts`` left over)."""
    if opts:
        raise CcmodInputError(f"unknown {reader} reader option(s): {', '.join(sorted(opts))}",
                              source=source)


@contextlib.contextmanager
def input_guard(source: str, where=None, what: str = "malformed trace"):
    """Convert parser exceptions into one-line :class:`CcmodInputError`.

    ``where`` is a zero-argument callable returning the current record/line number.
    """
    try:
        yield
    except CcmodError:
        raise
    except BAD_INPUT as exc:
        line = None
        if where is not None:
            with contextlib.suppress(Exception):
                line = where()
        raise CcmodInputError(f"{what}: {describe_exception(exc)}", source=str(source),
                              line=line, hint="is the file corrupt or of another format?") \
            from None


def describe_exception(exc: BaseException) -> str:
    """What a parser exception says about the input, in words (not Python's text)."""
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8 text"
    if isinstance(exc, OverflowError):
        return "a number out of range"
    if isinstance(exc, (zlib.error, gzip.BadGzipFile, EOFError)):
        return "corrupt or truncated compressed data"
    text = str(exc)
    if "int_max_str_digits" in text or "Exceeds the limit" in text:
        return "a number with thousands of digits"
    if isinstance(exc, OSError):
        return exc.strerror or type(exc).__name__
    from ccmod.guard import excerpt
    return f"{type(exc).__name__}: {excerpt(text, 120)}"
