"""Open-addressing hash tables in plain arrays, shared by the streamed run's tables.

A table is two arrays of a power-of-two size: ``hkey`` (a key >= 0, or -1 for an empty
bucket) and ``hval``. Linear probing from a key's *home* bucket, deletion by backward
shift (no tombstones: a lookup never walks over deleted entries). Users: message id ->
slot (:mod:`ccmod.kernel.slots`), channel key -> channel (:mod:`ccmod.kernel.matcher`),
(rank, request) -> outstanding request (:mod:`ccmod.kernel.requests`).

The tables differ only in how a key is spread over the buckets: each passes its own
``home(key, mask)`` (a compiled function) to these, from compiled code (each table's
module has small compiled wrappers). These are inlined into their callers in numba's IR
(``inline="always"``): a function passed as an argument to a compiled call is lowered as
the address of its Python object, and numba then refuses to cache the caller ("uses
dynamic globals"); inlined, ``home`` is a direct call, which LLVM inlines in turn (no call
left in the callers' machine code).

Plain arrays and no reference counting (``_nrt=False``): a typed Dict costs its calls
(~0.18 s per 1M records for the message ids), and numba's per-call reference counting of
array arguments dominated the matcher (see the modules).
"""
from __future__ import annotations

from numba import njit

import numpy as np

import ccmod.kernel.compiled  # noqa: F401  (numba's BLAS check without scipy.linalg)

#: the low bits of a key :func:`mix36` spreads (x * 0x45D9F3B stays below 2^63)
LOW36 = 0xFFFFFFFFF


@njit(cache=True, _nrt=False)
def mix36(x):
    """Spread the low 36 bits of ``x`` >= 0 over the low bits (two xor-shift-multiply
    rounds; the product stays within int64, so compiled and plain Python agree)."""
    x = x & LOW36
    x = (x ^ (x >> 16)) * 0x45D9F3B
    return x ^ (x >> 16)


@njit(_nrt=False, inline="always")      # into each caller: see the module doc
def find(hkey, key, home):
    """Bucket of ``key`` in ``hkey``, or the empty bucket where it would go."""
    mask = hkey.shape[0] - 1
    i = home(key, mask)
    while hkey[i] >= 0 and hkey[i] != key:
        i = (i + 1) & mask
    return i


@njit(_nrt=False, inline="always")      # into each caller: see the module doc
def remove(hkey, hval, i, home):
    """Empty bucket i, shifting later entries of its probe run back."""
    mask = hkey.shape[0] - 1
    j = i
    while True:
        j = (j + 1) & mask
        if hkey[j] < 0:
            break
        h = home(hkey[j], mask)
        # entry j may move to i unless its home lies cyclically in (i, j]
        if (h <= j and (h > i or i > j)) or (h > i and i > j):
            continue
        hkey[i] = hkey[j]
        hval[i] = hval[j]
        i = j
    hkey[i] = -1


@njit(_nrt=False, inline="always")      # into each caller: see the module doc
def rehash(okey, oval, hkey, hval, home):
    """Insert the old table's entries into the new (larger, empty) one."""
    mask = hkey.shape[0] - 1
    for j in range(okey.shape[0]):
        if okey[j] >= 0:
            i = home(okey[j], mask)
            while hkey[i] >= 0:
                i = (i + 1) & mask
            hkey[i] = okey[j]
            hval[i] = oval[j]


def table_size(entries: int) -> int:
    """Buckets for up to ``entries`` keys: a power of two at least twice as many (at
    most half full, short probe runs)."""
    return 1 << max(int(2 * entries - 1).bit_length(), 1)


def resized(hkey, hval, buckets: int, rehash_fn):
    """The table ``(hkey, hval)`` with ``buckets`` buckets: the same arrays when that is
    their size already, else new ones holding their entries (``rehash_fn``: the table's
    compiled wrapper of :func:`rehash`, which knows its ``home``)."""
    if buckets == len(hkey):
        return hkey, hval
    nkey, nval = np.full(buckets, -1, np.int64), np.zeros(buckets, np.int64)
    rehash_fn(hkey, hval, nkey, nval)
    return nkey, nval
