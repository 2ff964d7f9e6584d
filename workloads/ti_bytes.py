"""A large TI file's bytes, read into memory whose pages are mapped at once, and one
compiled pass that says what the reader must know before parsing them.

Reading a 20 MB trace with ``f.read()`` fills a new ``bytes`` object: every 4 KiB page of
it is faulted in on first write, ~3 us each on the development VM (~15 ms of a 1M-record
read). Here the file is read into an anonymous mapping in transparent huge pages (one
fault per 2 MiB; :func:`filled_mapping`) that is a snapshot of the file, like
``read()``'s (a file mapping would fault on a concurrent truncation instead). The
mapping supports what the fast reader asks of its input: the buffer protocol, slicing to
``bytes``, ``find``/``rfind`` and ``len``.

:func:`census` replaces ``isascii``, the ``\\r`` and NUL searches and ``translate`` (four
passes, ~12 ms for 23 MB) by one vectorised pass (~1 ms), compiled; under ``NUMBA_DISABLE_JIT=1`` the file is read
as plain ``bytes`` instead (an interpreted byte loop would take seconds).
"""
from __future__ import annotations

import mmap

import numpy as np
from numba import njit

from ccmod.jit import numba_startup

numba_startup()

#: census flags (indices of :func:`census`' ``out``)
C_HIGH, C_CTRL, C_UPPER, C_CR, C_NUL = range(5)


class MappedText(mmap.mmap):
    """A file's bytes in an anonymous mapping, with their :func:`census` (``counts``:
    flags, nonzero where the bytes hold the kind)."""

    counts: np.ndarray


@njit(cache=True)
def census(buf, out):
    """Whether ``buf`` (uint8) holds bytes >= 128, control bytes other than tab, newline
    and carriage return (or DEL), capital letters but E (an old-syntax marker has one),
    carriage returns and NULs: ``out[C_*]`` nonzero. One-byte OR accumulators, which
    LLVM vectorises: ~1 ms for 23 MB (counting sums in int64 took ~10)."""
    high = np.uint8(0)
    ctrl = np.uint8(0)
    upper = np.uint8(0)
    cr = np.uint8(0)
    nul = np.uint8(0)
    for i in range(buf.shape[0]):
        c = buf[i]
        high |= c >= 128
        ctrl |= ((c < 32) & (c != 9) & (c != 10) & (c != 13)) | (c == 127)
        upper |= (c >= 65) & (c <= 90) & (c != 69)
        cr |= c == 13
        nul |= c == 0
    out[C_HIGH], out[C_CTRL], out[C_UPPER], out[C_CR], out[C_NUL] = high, ctrl, upper, cr, nul


def filled_mapping(nbytes: int, cls=mmap.mmap, touch: bool = True):
    """An anonymous private mapping of ``nbytes`` for memory that will be written whole
    (``cls``: :class:`mmap.mmap` or a subclass), its pages made at once.

    Transparent huge pages where the kernel gives them for ``MADV_HUGEPAGE`` (one fault
    per 2 MiB: 40 MB took 3.8 ms against 18.6 ms with ``MAP_POPULATE``'s 4 KiB pages, and
    the engine later reads the Workload's columns through fewer TLB entries: light16's
    first loop 0.127 -> 0.092 s with its columns in huge pages); ``touch``: one byte per
    4 KiB written now, else the caller's first writes fault them. Elsewhere
    ``MAP_POPULATE`` (Linux) or plain pages. ``madvise`` with huge pages must come before
    any page exists, so the two are not combined."""
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
    huge = getattr(mmap, "MADV_HUGEPAGE", None)
    if huge is None:
        return cls(-1, nbytes, flags=flags | getattr(mmap, "MAP_POPULATE", 0))
    m = cls(-1, nbytes, flags=flags)
    try:
        m.madvise(huge)
    except OSError:                             # no transparent huge pages here
        pass
    if touch:
        np.frombuffer(m, np.uint8)[::mmap.PAGESIZE] = 0
    return m


def read_mapped(f, size: int) -> MappedText | None:
    """The rest of open binary file ``f`` (``size`` bytes by its ``fstat``) in a
    :class:`MappedText` with its census, or None when the file did not hold exactly
    ``size`` bytes (it changed while read: the caller reads it the plain way)."""
    if not hasattr(mmap, "MAP_ANONYMOUS"):      # not a POSIX mmap (Windows)
        return None
    m = filled_mapping(size, MappedText, touch=False)     # readinto writes it all
    view = memoryview(m)
    got = 0
    try:
        while got < size:
            k = f.readinto(view[got:])
            if not k:
                break
            got += k
    finally:
        view.release()
    if got != size or f.read(1):
        return None
    m.counts = np.zeros(5, np.uint8)
    census(np.frombuffer(m, np.uint8), m.counts)
    return m
