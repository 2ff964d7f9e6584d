"""Decimal digit strings to integers, compiled: the TI reader's hottest step.

:func:`ccmod.workloads.ti_fast._digits` reads every rank, peer, tag and count token of a
large trace; with numpy it took ~0.1 us per token in temporaries (most of the reading
time of a 10^6-record trace). One compiled pass reads each token's bytes once.
"""
from __future__ import annotations

import numpy as np
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


# -- one pass over a block of lines (ccmod.workloads.ti_scan) --------------------------
#: scan_lines' return codes
SCAN_DONE = 0       # the block's lines are all read
SCAN_FULL = 1       # an output array is full: hand over what is read, call again
SCAN_TABLE = 2      # a rank beyond the per-rank tables: grow them, call again
SCAN_BADRANK = 3    # a rank field this pass does not read: the block is the line parser's
#: indices of scan_lines' ``state`` array
ST_POS, ST_LINE, ST_NREC, ST_NSLOW, ST_NPEND, ST_NNEW, ST_NINB, ST_ARG = range(8)
#: rows of scan_lines' ``rec`` (records' integer columns) and ``side`` (per-block lists:
#: lines for the line parser, numbers left to convert, new ranks, byte-count datatypes)
R_LINE, R_RANK, R_OP, R_PEER, R_TAG, R_NB = range(6)
(S_SLOW_LINE, S_SLOW_S, S_SLOW_E, S_PEND_REC, S_PEND_S, S_PEND_E, S_NEW_RANK, S_NEW_LINE,
 S_INB_REC, S_INB_S, S_INB_E) = range(11)
_OP_COMPUTE, _OP_SEND, _OP_RECV = 0, 1, 2   # checked against workloads.base in ti_scan
_I31 = 1 << 31
#: an action name's bytes as a little-endian integer (its first 8 bytes)
_COMPUTE = int.from_bytes(b"compute", "little")
_SEND = int.from_bytes(b"send", "little")
_RECV = int.from_bytes(b"recv", "little")
_INIT = int.from_bytes(b"init", "little")


@njit(cache=True)
def scan_lines(buf, stop, untagged, rank_limit, max_table, inv_rate, elem_fixed, elem_tab,
               seen, dt_elem, state, rec, dur, base, side):
    """Read the TI lines of ``buf`` from byte ``state[ST_POS]`` until a line starts at or
    after ``stop`` (see :mod:`ccmod.workloads.ti_scan` for the rules and outputs).

    Well-formed ``compute``/``send``/``recv`` lines become records (columns ``rec[R_*]``
    and ``dur`` from index ``base`` on, in line order, 1-based line numbers; a count or
    flops field that is not a digit string of <= 15 digits is left in the ``S_PEND_*``
    rows of ``side`` for the caller's correctly rounding conversion); every other
    non-empty line is listed in the ``S_SLOW_*`` rows for the line parser. ``init`` lines
    also update the rank's element size in ``elem_tab`` (unless ``elem_fixed``); ``seen``
    marks ranks whose first line was reported in the ``S_NEW_*`` rows. Counters live in
    ``state``; the return value is one of the ``SCAN_*`` codes.

    One flat loop without helper calls: a call taking arrays costs reference counting
    per line (measured: 4x the whole pass); few array arguments: each adds to the
    first run's compile time.
    """
    n = buf.shape[0]
    pos, line = state[ST_POS], state[ST_LINE]
    nrec, nslow, npend = state[ST_NREC], state[ST_NSLOW], state[ST_NPEND]
    nnew, ninb = state[ST_NNEW], state[ST_NINB]
    # per token of the line (the first 6): bounds, value of its digits after an optional
    # leading '-', whether it is such a digit string, whether it starts with '-'
    ts = np.zeros(6, np.int64)
    te = np.zeros(6, np.int64)
    tv = np.zeros(6, np.int64)
    td = np.zeros(6, np.bool_)
    tneg = np.zeros(6, np.bool_)
    status = SCAN_DONE
    bad = False
    while pos < stop:
        if not bad and (base + nrec >= rec.shape[1] or max(nslow, npend, nnew, ninb)
                        >= side.shape[1]):
            status = SCAN_FULL
            break
        # tokens (space / tab separated; '#' starts a comment), read byte by byte once
        k = 0
        inside = False
        comment = False
        v = 0
        nd = 0          # digits so far in the token (after a leading '-'); -1: not digits
        code = 0
        i = pos
        while i < n:
            c = buf[i]
            if c == 10:
                break
            if not comment:
                if c == 32 or c == 9 or c == 35:
                    if inside:
                        if k < 6:
                            te[k], tv[k], td[k] = i, v, nd > 0
                        k += 1
                        inside = False
                    if c == 35:
                        comment = True
                else:
                    sign = False
                    if not inside:
                        inside = True
                        sign = c == 45
                        if k < 6:
                            ts[k] = i
                            tneg[k] = sign
                        v = 0
                        nd = 0
                    if not sign and nd >= 0:
                        d = int(c) - 48
                        if 0 <= d <= 9:
                            if nd < 18:         # longer ones are never read as integers
                                v = v * 10 + d
                            nd += 1
                        else:
                            nd = -1
                    if k == 1 and i - ts[1] < 8:
                        code |= int(c) << (8 * (i - ts[1]))
            i += 1
        if inside:
            if k < 6:
                te[k], tv[k], td[k] = i, v, nd > 0
            k += 1
        line_start, line_end = pos, i
        pos = i + 1
        line += 1
        if k == 0 or bad:
            continue
        # the rank: 1..10 digits, below the limit and inside the tables
        r = tv[0]
        if not td[0] or tneg[0] or te[0] - ts[0] > 10 or r >= rank_limit or (
                r >= elem_tab.shape[0] and r >= max_table):
            bad = True
            continue
        if r >= elem_tab.shape[0]:
            status = SCAN_TABLE
            state[ST_ARG] = r
            pos, line = line_start, line - 1
            break
        if seen[r] == 0:
            seen[r] = 1
            side[S_NEW_RANK, nnew] = r
            side[S_NEW_LINE, nnew] = line
            nnew += 1
        L1 = te[1] - ts[1] if k >= 2 else 0
        fast = False
        if k >= 3 and L1 == 7 and code == _COMPUTE:
            # compute <flops>
            j = base + nrec
            rec[R_LINE, j], rec[R_RANK, j], rec[R_OP, j] = line, r, _OP_COMPUTE
            rec[R_PEER, j], rec[R_TAG, j], rec[R_NB, j] = -1, 0, 0
            if td[2] and not tneg[2] and te[2] - ts[2] <= 15:
                dur[j] = float(tv[2]) * inv_rate
            else:
                dur[j] = 0.0
                side[S_PEND_REC, npend] = nrec
                side[S_PEND_S, npend], side[S_PEND_E, npend] = ts[2], te[2]
                npend += 1
            nrec += 1
            fast = True
        elif k >= 3 and L1 == 4 and (code == _SEND or code == _RECV):
            # send/recv: the line parser's field rules (TIParser.feed), checked one by one
            is_send = code == _SEND
            ok = not (is_send and k < 4)
            peer = tv[2]
            ok = ok and td[2] and not tneg[2] and te[2] - ts[2] <= 10 and peer < _I31
            tag = 0
            k_cnt = 3
            has_dt = False
            if ok and k >= 5:
                # 5 fields: <peer> <tag> <count> when the 4th is an integer (and the trace
                # is tagged), else old <peer> <count> <dtype>; 6+: <peer> <tag> <count> <dt>
                neg = tneg[3]
                len3 = te[3] - ts[3] - (1 if neg else 0)
                int3 = td[3] and len3 <= 10
                if k == 5 and len3 > 10:
                    ok = False                  # an integer the digit reader does not cover
                has_tag = k >= 6 or (int3 and not untagged)
                if has_tag:
                    tag = -tv[3] if neg else tv[3]
                    ok = ok and int3 and -_I31 <= tag < _I31
                    k_cnt = 4
                has_dt = k >= 6 or not has_tag
            nb = -1
            elem = 0
            dt_tok = False
            pend = False
            if ok and k >= 4:
                if has_dt:
                    j = k_cnt + 1
                    dt = tv[j]
                    if td[j] and not tneg[j] and te[j] - ts[j] <= 2 and dt <= 59:
                        elem = dt_elem[dt]
                        dt_tok = not (te[j] - ts[j] == 1 and dt <= 6)
                    else:
                        ok = False
                else:
                    elem = elem_tab[r]
                if td[k_cnt] and not tneg[k_cnt] and te[k_cnt] - ts[k_cnt] <= 15:
                    nb = int(float(tv[k_cnt]) * elem + 0.5)
                else:
                    pend = True                 # the caller converts; elem waits in nb
                    nb = elem
            if ok:
                j = base + nrec
                rec[R_LINE, j], rec[R_RANK, j] = line, r
                rec[R_OP, j] = _OP_SEND if is_send else _OP_RECV
                rec[R_PEER, j], rec[R_TAG, j], rec[R_NB, j], dur[j] = peer, tag, nb, 0.0
                if pend:
                    side[S_PEND_REC, npend] = nrec
                    side[S_PEND_S, npend], side[S_PEND_E, npend] = ts[k_cnt], te[k_cnt]
                    npend += 1
                if dt_tok:
                    side[S_INB_REC, ninb] = nrec
                    side[S_INB_S, ninb], side[S_INB_E, ninb] = ts[k_cnt + 1], te[k_cnt + 1]
                    ninb += 1
                nrec += 1
                fast = True
        elif k >= 2 and L1 == 4 and code == _INIT:
            if not elem_fixed:                  # SimGrid: init <x> -> MPI_DOUBLE sizes
                elem_tab[r] = 8 if k > 2 else 1
        if not fast:
            side[S_SLOW_LINE, nslow], side[S_SLOW_S, nslow] = line, line_start
            side[S_SLOW_E, nslow] = line_end
            nslow += 1
    state[ST_POS], state[ST_LINE] = min(pos, n), line
    state[ST_NREC], state[ST_NSLOW], state[ST_NPEND] = nrec, nslow, npend
    state[ST_NNEW], state[ST_NINB] = nnew, ninb
    if status == SCAN_DONE and bad:
        return SCAN_BADRANK
    return status


@njit(cache=True)
def exact_floats(buf, s, e, pow10, val, ok):
    """``float(token)`` of tokens ``buf[s[i]:e[i]]`` where one IEEE operation gives it
    exactly (Clinger's fast path): a plain decimal ``d[.d][e[+-]d]`` (no sign first)
    whose significant digits form an integer m <= 2^53 and whose power of ten p has
    |p| <= 22 (``pow10`` holds 1e0..1e22, exact doubles): then m * 10^p or m / 10^-p is
    a single correctly rounded operation on exact operands, so equal to ``float``.
    ``ok[i]`` is False for every other token (left to the caller's general conversion).
    """
    for i in range(s.shape[0]):
        a, b = s[i], e[i]
        j = a
        m = 0
        nd = 0          # significant digits in m (leading zeros do not count)
        seen = False    # any mantissa digit at all
        p = 0
        good = True
        while j < b and 48 <= buf[j] <= 57:
            d = int(buf[j]) - 48
            seen = True
            if nd > 0 or d != 0:
                if nd < 17:
                    m = m * 10 + d
                nd += 1
            j += 1
        if j < b and buf[j] == 46:                      # '.'
            j += 1
            while j < b and 48 <= buf[j] <= 57:
                d = int(buf[j]) - 48
                seen = True
                if nd > 0 or d != 0:
                    if nd < 17:
                        m = m * 10 + d
                    nd += 1
                p -= 1
                j += 1
        if nd > 16:
            good = False                                # m is not all there
        if j < b and (buf[j] == 101 or buf[j] == 69):   # 'e' / 'E'
            j += 1
            sign = 1
            if j < b and (buf[j] == 43 or buf[j] == 45):
                sign = -1 if buf[j] == 45 else 1
                j += 1
            x = 0
            nx = 0
            while j < b and 48 <= buf[j] <= 57:
                if x < 100000:
                    x = x * 10 + int(buf[j]) - 48
                nx += 1
                j += 1
            if nx == 0:
                good = False
            p += sign * x
        if j != b or not seen:
            good = False
        v = 0.0
        if good:
            if m == 0:
                v = 0.0
            elif m > 9007199254740992 or p < -22 or p > 22:
                good = False
            elif p >= 0:
                v = float(m) * pow10[p]
            else:
                v = float(m) / pow10[-p]
        val[i] = v
        ok[i] = good
