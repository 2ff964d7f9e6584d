"""Decimal digit strings to integers, compiled: the TI reader's hottest step.

:func:`ccmod.workloads.ti_fast._digits` reads every rank, peer, tag and count token of a
large trace; with numpy it took ~0.1 us per token in temporaries (most of the reading
time of a 10^6-record trace). One compiled pass reads each token's bytes once.
"""
from __future__ import annotations

from numba import njit

from ccmod.jit import numba_startup

numba_startup()


@njit(cache=True)
def digit_values(buf, s, e, maxlen, val, ok):
    """``val[i]`` = the integer of bytes ``buf[s[i]:e[i]]`` and ``ok[i]`` = whether they are
    1..``maxlen`` ASCII digits (``val[i]`` is unspecified where ``ok[i]`` is False)."""
    for i in range(s.shape[0]):
        a, b = s[i], e[i]
        good = 1 <= b - a <= maxlen
        v = 0
        if good:
            for j in range(a, b):
                d = int(buf[j]) - 48
                if d < 0 or d > 9:
                    good = False
                    break
                v = v * 10 + d
        val[i] = v
        ok[i] = good


@njit(cache=True)
def token_bounds(buf, st, en, tl, nl):
    """Whitespace-separated tokens of ``buf`` (space, tab, newline): their ``[st, en)``
    byte ranges and ``tl`` the line (newlines before the start) of each, ``nl`` the
    positions of the newlines. The arrays must be large enough (tokens: ``len(buf) // 2
    + 1``); returns ``(tokens, newlines)``, the counts filled."""
    k = 0
    n = 0
    inside = False
    for i in range(buf.shape[0]):
        c = buf[i]
        if c == 32 or c == 10 or c == 9:
            if inside:
                en[k] = i
                k += 1
                inside = False
            if c == 10:
                nl[n] = i
                n += 1
        elif not inside:
            st[k] = i
            tl[k] = n
            inside = True
    if inside:
        en[k] = buf.shape[0]
        k += 1
    return k, n
