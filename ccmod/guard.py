"""Small input guards shared by readers, networks and the CLI (issue 14: hardening).

Everything a user-supplied file or option can carry into an error message, a memory
allocation or a file open goes through one of these:

* :func:`sanitize` / :func:`excerpt` - text from a file never reaches the terminal raw
  (no control characters, no long quotes of a file that did not parse);
* :func:`check_int` / :func:`check_float` - values that overflow numpy's int64 / float64
  fail as ``file:line: what`` instead of ``OverflowError``;
* :func:`inside_folder` - paths listed in a file (description files) stay in that file's
  folder unless ``--allow-outside-paths`` (or ``CCMOD_ALLOW_OUTSIDE_PATHS=1``) is given;
* :func:`open_gzip_bounded` / :func:`read_gzip_bounded` - decompression stops at a limit
  proportional to the compressed size, with a clear message.
"""
from __future__ import annotations

import gzip
import io
import math
import os
from pathlib import Path

from ccmod.errors import CcmodInputError, one_line
#: the largest integer a count/size field may hold (numpy int64, with headroom for sums)
INT_MAX = 2 ** 62
#: decompressed bytes allowed per compressed byte (text traces compress 5-30x; 200x is far
#: beyond any real trace and well below a gzip bomb's 1000x)
GZIP_RATIO = 200
#: floor of the decompression limit (small files)
GZIP_FLOOR_BYTES = 64 << 20

_allow_outside = False


def sanitize(text) -> str:
    """``text`` with control characters shown as ``\\xNN`` (never raw on a terminal)."""
    return one_line(text)


def excerpt(text, limit: int = 32) -> str:
    """A short, sanitised excerpt of ``text`` (content of a file quoted in an error)."""
    s = sanitize(text)
    return s if len(s) <= limit else s[:limit] + "..."


def set_allow_outside_paths(flag: bool) -> None:
    """Let description files name files outside their folder (``--allow-outside-paths``)."""
    global _allow_outside
    _allow_outside = bool(flag)


def outside_paths_allowed() -> bool:
    return _allow_outside or os.environ.get("CCMOD_ALLOW_OUTSIDE_PATHS", "") not in ("", "0")


def inside_folder(path: Path, folder: Path) -> bool:
    """True if ``path`` (symlinks resolved) lies in ``folder`` or below, or the user
    allowed paths outside (:func:`set_allow_outside_paths`)."""
    if outside_paths_allowed():
        return True
    try:
        Path(path).resolve().relative_to(Path(folder).resolve())
        return True
    except (ValueError, OSError, RuntimeError):
        return False


def check_int(value, what: str, source=None, line=None, lo: int = -INT_MAX,
              hi: int = INT_MAX) -> int:
    """``int(value)`` if it is an integer in ``[lo, hi]``, else a one-line input error."""
    try:
        f = float(value)
        v = int(value) if not isinstance(value, float) else (int(f) if f.is_integer() else None)
    except (TypeError, ValueError, OverflowError):
        v = None
    if v is None:
        raise CcmodInputError(f"{what} '{excerpt(value)}' is not an integer", source=source,
                              line=line)
    if not lo <= v <= hi:
        raise CcmodInputError(f"{what} {excerpt(value)} is out of range ({lo}..{hi})",
                              source=source, line=line)
    return v


def check_float(value, what: str, source=None, line=None, lo: float = -math.inf,
                hi: float = math.inf) -> float:
    """``float(value)`` if finite and in ``[lo, hi]``, else a one-line input error."""
    try:
        v = float(value)
    except (TypeError, ValueError, OverflowError):
        v = math.nan
    if not math.isfinite(v) or not lo <= v <= hi:
        raise CcmodInputError(f"{what} {excerpt(value)} is not a finite number in range",
                              source=source, line=line,
                              hint=f"expected {lo:g}..{hi:g}")
    return v


def gzip_limit(path) -> int:
    """Decompressed-size limit of a gzip file: ``GZIP_RATIO`` x its size, at least
    ``GZIP_FLOOR_BYTES`` (``CCMOD_GZIP_LIMIT`` bytes overrides it)."""
    env = os.environ.get("CCMOD_GZIP_LIMIT")
    if env:
        try:
            return max(1, int(float(env)))
        except ValueError:
            pass
    try:
        size = os.path.getsize(path)
    except OSError:
        size = 0
    return max(GZIP_FLOOR_BYTES, GZIP_RATIO * size)


class _BoundedReader(io.RawIOBase):
    """A raw byte stream over a gzip file that fails once ``limit`` bytes came out."""

    def __init__(self, path, limit: int):
        self._f = gzip.open(path, "rb")
        self._path, self._limit, self._n = str(path), limit, 0

    def readable(self):
        return True

    def readinto(self, b):
        chunk = self._f.read(min(len(b), 1 << 20))
        self._n += len(chunk)
        if self._n > self._limit:
            raise CcmodInputError(
                f"decompresses to more than {self._limit:,} bytes ({GZIP_RATIO}x its "
                "compressed size): refusing a likely gzip bomb", source=self._path,
                hint="decompress it yourself if it is genuine, or set CCMOD_GZIP_LIMIT=BYTES")
        b[:len(chunk)] = chunk
        return len(chunk)

    def close(self):
        try:
            self._f.close()
        finally:
            super().close()


def open_gzip_bounded(path, mode: str = "rb", encoding: str = "utf-8", errors: str = "strict"):
    """Open a gzip file for streaming reads that stop at :func:`gzip_limit`."""
    raw = io.BufferedReader(_BoundedReader(path, gzip_limit(path)), buffer_size=1 << 20)
    if "t" in mode:
        return io.TextIOWrapper(raw, encoding=encoding, errors=errors)
    return raw


def read_gzip_bounded(path, nbytes: int | None = None) -> bytes:
    """All (or the first ``nbytes``) decompressed bytes of ``path``, bounded."""
    with open_gzip_bounded(path) as f:
        return f.read() if nbytes is None else f.read(nbytes)


#: a network may have this many nodes whatever the run needs ...
UNUSED_NODES_FLOOR = 1 << 16
#: ... and at most this many times the nodes the run uses
UNUSED_NODES_FACTOR = 64


def check_network_size(network: str, nnodes: int, needed, names: str, param: str,
                       source: str = "--network") -> None:
    """Refuse up front a network far larger than the run uses (e.g. a 1M-node mesh for an
    8-rank trace): its per-link state would cost memory and time for links no message can
    cross. ``needed`` None (no run sizes it) skips the check."""
    if needed is None:
        return
    limit = max(UNUSED_NODES_FLOOR, UNUSED_NODES_FACTOR * int(needed))
    if nnodes > limit:
        raise CcmodInputError(
            f"network '{network}' would have {nnodes:,} nodes ({names}) but the run uses "
            f"{int(needed):,}: building state for {nnodes - int(needed):,} unused nodes is "
            f"refused (at most {limit:,} nodes for this run)", source=source,
            hint=f"lower {param}= or omit it to size the network from the run")


def check_declared_ranks(nranks: int, path, what: str = "declares") -> None:
    """Refuse a rank/task count that the file cannot hold: per-rank state is allocated
    before the records are read, so a 1 KB header declaring 1e9 tasks must fail here. A
    rank needs at least a few bytes of records; ``64 Ki`` ranks are always allowed."""
    try:
        size = os.path.getsize(path)
    except OSError:
        size = 0
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    limit = max(1 << 16, size * (GZIP_RATIO if gz else 1))
    if nranks > limit:
        raise CcmodInputError(f"{what} {nranks:,} ranks but the file is {size:,} bytes: "
                              "too small to hold records for them", source=str(path),
                              line=1, hint="is the header corrupt?")
