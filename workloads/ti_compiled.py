"""The TI reader's compiled steps (numba, cached; plain Python under NUMBA_DISABLE_JIT=1).

* :func:`scan_lines`: one pass over a block of lines making the records of the
  well-formed compute/send/recv lines (:mod:`ccmod.workloads.ti_scan` drives it), the
  common lines read 8 bytes at a time (:func:`_lead_digits`);
* :func:`exact_floats`: decimal tokens to doubles where the result is sure to be
  ``float``'s (Clinger's fast path, Eisel-Lemire: :func:`_to_double`, which the scan
  also runs on plain decimal flops);
* :func:`token_bounds`, :func:`digit_values`: token bounds and digit strings for
  :mod:`ccmod.workloads.ti_fast`'s numpy tokeniser (kept for its tests; with numba's JIT
  on the scan reads the file, with it off the numpy versions run).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ccmod.jit import jit_enabled, numba_startup

numba_startup()


# numba's intrinsics are not callable as Python: stand-ins for NUMBA_DISABLE_JIT=1 (under
# which only exact_floats runs, in tests; the reader takes ti_fast's numpy path)
def _py_trailing_zeros(x):
    return np.uint64((int(x) & -int(x)).bit_length() - 1 if x else 64)


def _py_leading_zeros(x):
    return np.uint64(64 - int(x).bit_length())


def _py_viewer(x, ty):
    return np.array(x, np.uint64).view(ty)[()]


if jit_enabled():
    from numba.cpython.unsafe.numbers import leading_zeros, trailing_zeros, viewer
else:
    leading_zeros, trailing_zeros, viewer = _py_leading_zeros, _py_trailing_zeros, _py_viewer


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
#: rows of scan_lines' ``rec`` and ``rec32`` (records' integer columns, in the Workload's
#: widths; ``ops`` the op column) and ``side`` (per-block lists: lines for the line
#: parser, numbers left to convert, new ranks, byte-count datatypes)
R_LINE, R_NB = range(2)
R32_RANK, R32_PEER, R32_TAG = range(3)
(S_SLOW_LINE, S_SLOW_S, S_SLOW_E, S_PEND_REC, S_PEND_S, S_PEND_E, S_NEW_RANK, S_NEW_LINE,
 S_INB_REC, S_INB_S, S_INB_E) = range(11)
_OP_COMPUTE, _OP_SEND, _OP_RECV = 0, 1, 2   # checked against workloads.base in ti_scan
_I31 = 1 << 31
#: an action name's bytes as a little-endian integer (its first 8 bytes)
_COMPUTE = int.from_bytes(b"compute", "little")
_SEND = int.from_bytes(b"send", "little")
_RECV = int.from_bytes(b"recv", "little")
_INIT = int.from_bytes(b"init", "little")


#: the 8 bytes of "compute " and (low 5 bytes) "send " / "recv " as little-endian uint64
_COMPUTE_SP, _SEND_SP, _RECV_SP = (np.uint64(int.from_bytes(w, "little"))
                                   for w in (b"compute ", b"send ", b"recv "))
_LOW40 = np.uint64((1 << 40) - 1)
#: the scan's own line reader needs this many bytes from a line's start (see scan_lines)
FAST_REACH = 64
_P10 = np.array([10 ** i for i in range(19)], np.int64)
_ZEROS8, _HIGH4, _SIX8 = (np.uint64(x) for x in (0x3030303030303030,   # "00000000"
                                                   0xF0F0F0F0F0F0F0F0, 0x0606060606060606))
_M8, _M16, _M32 = (np.uint64(x) for x in (0x00FF00FF00FF00FF, 0x0000FFFF0000FFFF, 0xFFFFFFFF))
_U0, _U1, _U3, _U8, _U9, _U16, _U32, _U52, _U63, _U64 = (
    np.uint64(x) for x in (0, 1, 3, 8, 9, 16, 32, 52, 63, 64))
_U10, _U100, _U10000, _BYTE = (np.uint64(x) for x in (10, 100, 10000, 255))


@njit(inline="always")
def _lead_digits(x):
    """``(value, count)`` (int64) of the ASCII digits that start ``x``, 8 bytes of text
    read as a little-endian uint64 (the first byte lowest); count 0..8, value 0 for none.

    A digit byte's high nibble is 3, and stays 3 plus 6 (a carry into the next byte comes
    only from a non-digit >= 0xFA: the first non-digit is found); the digits, shifted to
    the top bytes (leading zeros below), are summed 2, 4, then 8 at once."""
    bad = ((x & _HIGH4) ^ _ZEROS8) | (((x + _SIX8) & _HIGH4) ^ _ZEROS8)
    nd = trailing_zeros(bad) >> _U3     # no non-digit: 64 -> 8
    # the first nd bytes are digits: subtracting '0' borrows only above them
    y = (x - _ZEROS8) << ((_U64 - (nd << _U3)) & _U63)
    y = (y * _U10 + (y >> _U8)) & _M8
    y = (y * _U100 + (y >> _U16)) & _M16
    y = (y * _U10000 + (y >> _U32)) & _M32
    return (np.int64(y) if nd != _U0 else 0), np.int64(nd)


@njit(inline="always")
def _byte(x, k):
    """Byte ``k`` (0..7, int64) of the little-endian uint64 ``x``, as int64."""
    return np.int64((x >> (np.uint64(k) << _U3)) & _BYTE)


@njit(inline="always")
def _as_double(bits):
    """The double whose IEEE-754 bits are the uint64 ``bits``."""
    return viewer(bits, np.float64)


@njit(cache=True)
def scan_lines(buf, stop, untagged, rank_limit, max_table, inv_rate, elem_fixed, elem_tab,
               seen, dt_elem, state, rec, rec32, ops, dur, base, side, tok, tokb, u64, pow10,
               t_hi, t_lo):
    """Read the TI lines of ``buf`` from byte ``state[ST_POS]`` until a line starts at or
    after ``stop`` (see :mod:`ccmod.workloads.ti_scan` for the rules and outputs).

    Well-formed ``compute``/``send``/``recv`` lines become records (columns ``rec[R_*]``,
    ``rec32[R32_*]``, ``ops`` and ``dur`` from index ``base`` on, in line order, 1-based
    line numbers; a count or flops field that is not a digit string of <= 15 digits is left in the ``S_PEND_*``
    rows of ``side`` for the caller's correctly rounding conversion); every other
    non-empty line is listed in the ``S_SLOW_*`` rows for the line parser. ``init`` lines
    also update the rank's element size in ``elem_tab`` (unless ``elem_fixed``); ``seen``
    marks ranks whose first line was reported in the ``S_NEW_*`` rows. Counters live in
    ``state``; the return value is one of the ``SCAN_*`` codes. ``tok`` (int64[3, 6]) and
    ``tokb`` (bool[2, 6]), zeros, hold a line's tokens: allocated by the caller, because
    an allocation here (numba's ``np.zeros``) makes every process that loads this
    function from the cache import ``numba.np.arrayobj`` (its environment is pickled with
    the function's): ~30 ms of each read.

    The common lines (``<rank> compute <flops>``, tagged ``<rank> send|recv <peer> <tag>
    <count>``; single spaces, plain numbers, a newline) are read 8 bytes at a time
    (``u64``: ``buf`` seen as the uint64 at each byte; lines >= :data:`FAST_REACH` bytes
    from its end), plain decimal flops converted by :func:`_to_double` (``pow10``,
    ``t_hi``, ``t_lo``: :func:`exact_floats`'); any other line: the token reader.

    One flat loop without helper calls but inlined ones (scalars): a call taking arrays
    costs reference counting per line (measured: 4x the whole pass); few array
    arguments: each adds to the first run's compile time. Unsigned indices: numba then
    tests no negative index.
    """
    n = buf.shape[0]
    pos, line = state[ST_POS], state[ST_LINE]
    nrec, nslow, npend = state[ST_NREC], state[ST_NSLOW], state[ST_NPEND]
    nnew, ninb = state[ST_NNEW], state[ST_NINB]
    # per token of the line (the first 6): bounds, value of its digits after an optional
    # leading '-', whether it is such a digit string, whether it starts with '-'
    ts, te, tv = tok[0], tok[1], tok[2]
    td, tneg = tokb[0], tokb[1]
    status = SCAN_DONE
    bad = False
    reach = n - FAST_REACH          # lines starting at or before: no bounds test to read
    fast_stop = min(stop, reach + 1)
    rec_room, side_room = rec.shape[1] - base, side.shape[1]
    ntab = elem_tab.shape[0]
    r_line, r_nb = rec[R_LINE], rec[R_NB]
    r_rank, r_peer, r_tag = rec32[R32_RANK], rec32[R32_PEER], rec32[R32_TAG]
    while pos < stop:
        if not bad and (base + nrec >= rec.shape[1] or max(nslow, npend, nnew, ninb)
                        >= side.shape[1]):
            status = SCAN_FULL
            break
        if pos <= reach and not bad:
            # the common shapes, 8 bytes at a time, line after line; any doubt: the
            # token reader below reads the line
            fast = True
            while fast:
                x = u64[np.uint64(pos)]
                r, nr = _lead_digits(x)
                op = -1
                flops = 0.0
                peer = tag = nb = 0
                pend_s = -1
                i = pos + nr + 1
                if 1 <= nr <= 7 and _byte(x, nr) == 32 and r < rank_limit and r < ntab:
                    act = u64[np.uint64(i)]
                    if act == _COMPUTE_SP:
                        # <flops>: digits [. digits], <= 18 of them; then the newline
                        i += 8
                        a = i
                        v, nd = _lead_digits(u64[np.uint64(i)])
                        if nd == 8:
                            v2, nd2 = _lead_digits(u64[np.uint64(i + 8)])
                            v, nd = v * _P10[nd2] + v2, 8 + nd2
                        i += nd
                        c = buf[np.uint64(i)]
                        if c == 10 and 1 <= nd <= 15:
                            flops, op = float(v) * inv_rate, _OP_COMPUTE
                        elif c == 46 and nd <= 15:
                            i += 1
                            f, nf = _lead_digits(u64[np.uint64(i)])
                            if nf == 8:
                                f2, nf2 = _lead_digits(u64[np.uint64(i + 8)])
                                f, nf = f * _P10[nf2] + f2, 8 + nf2
                            i += nf
                            if buf[np.uint64(i)] == 10 and nf <= 15 and 1 <= nd + nf <= 18:
                                op = _OP_COMPUTE
                                val, sure = _to_double(v * _P10[nf] + f, -nf, pow10, t_hi, t_lo)
                                if sure:
                                    flops = val * inv_rate
                                else:
                                    pend_s = a      # the caller's general conversion
                    elif (act & _LOW40 == _SEND_SP or act & _LOW40 == _RECV_SP) and not untagged:
                        # <peer> <tag> <count>: digits (<= 7, 7, 15); then the newline
                        i += 5
                        x = u64[np.uint64(i)]
                        peer, n1 = _lead_digits(x)
                        if 1 <= n1 <= 7 and _byte(x, n1) == 32:
                            i += n1 + 1
                            x = u64[np.uint64(i)]
                            tag, n2 = _lead_digits(x)
                            if 1 <= n2 <= 7 and _byte(x, n2) == 32:
                                i += n2 + 1
                                v, nd = _lead_digits(u64[np.uint64(i)])
                                if nd == 8:
                                    v2, nd2 = _lead_digits(u64[np.uint64(i + 8)])
                                    v, nd = v * _P10[nd2] + v2, 8 + nd2
                                i += nd
                                if buf[np.uint64(i)] == 10 and 1 <= nd <= 15:
                                    nb = int(float(v) * elem_tab[np.uint64(r)] + 0.5)
                                    op = _OP_SEND if act & _LOW40 == _SEND_SP else _OP_RECV
                if op >= 0:
                    line += 1
                    if seen[np.uint64(r)] == 0:
                        seen[np.uint64(r)] = 1
                        side[S_NEW_RANK, nnew] = r
                        side[S_NEW_LINE, nnew] = line
                        nnew += 1
                    j = np.uint64(base + nrec)
                    r_line[j], r_rank[j], ops[j] = line, r, op
                    if op == _OP_COMPUTE:
                        r_peer[j], r_tag[j], r_nb[j], dur[j] = -1, 0, 0, flops
                        if pend_s >= 0:
                            side[S_PEND_REC, npend] = nrec
                            side[S_PEND_S, npend], side[S_PEND_E, npend] = pend_s, i
                            npend += 1
                    else:
                        r_peer[j], r_tag[j], r_nb[j], dur[j] = peer, tag, nb, 0.0
                    nrec += 1
                    pos = i + 1
                    # (nslow and ninb do not change here: the loop's test held for them)
                    if pos >= fast_stop or nrec >= rec_room or max(npend, nnew) >= side_room:
                        break
                else:
                    fast = False
            if fast:
                continue            # (the loop's tests again)
        # tokens (space / tab separated; '#' starts a comment), read byte by byte once
        k = 0
        code = 0
        i = pos
        while True:
            while i < n and (buf[i] == 32 or buf[i] == 9):
                i += 1
            if i >= n or buf[i] == 10:
                break
            if buf[i] == 35:                    # a comment: the rest of the line
                while i < n and buf[i] != 10:
                    i += 1
                break
            a = i
            if k == 1:                          # the action: its first 8 bytes as code
                while i < n:
                    c = buf[i]
                    if c == 32 or c == 9 or c == 10 or c == 35:
                        break
                    if i - a < 8:
                        code |= int(c) << (8 * (i - a))
                    i += 1
                v = 0
                nd = -1
            else:
                neg = buf[i] == 45
                if neg:
                    i += 1
                v = 0
                nd = 0                          # digits read; -1: not a digit string
                while i < n:
                    c = buf[i]
                    d = int(c) - 48
                    if 0 <= d <= 9:
                        if nd >= 0:
                            if nd < 18:         # longer ones are never read as integers
                                v = v * 10 + d
                            nd += 1
                    elif c == 32 or c == 9 or c == 10 or c == 35:
                        break
                    else:
                        nd = -1
                    i += 1
                if k < 6:
                    tneg[k] = neg
            if k < 6:
                ts[k], te[k], tv[k], td[k] = a, i, v, nd > 0
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
            rec[R_LINE, j], rec32[R32_RANK, j], ops[j] = line, r, _OP_COMPUTE
            rec32[R32_PEER, j], rec32[R32_TAG, j], rec[R_NB, j] = -1, 0, 0
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
                rec[R_LINE, j], rec32[R32_RANK, j] = line, r
                ops[j] = _OP_SEND if is_send else _OP_RECV
                rec32[R32_PEER, j], rec32[R32_TAG, j] = peer, tag
                rec[R_NB, j], dur[j] = nb, 0.0
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


_MAX64 = np.uint64(0xFFFFFFFFFFFFFFFF)
_TOP, _B52, _B53 = np.uint64(1 << 63), np.uint64(1 << 52), np.uint64(1 << 53)
_LOW9 = np.uint64(0x1FF)


def pow5_table():
    """Lemire's 128-bit significands of 5^q for q = -342..308, as (high, low) uint64
    halves: 5^q shifted to 128 bits and truncated for q >= 0; for q < 0, the 128 high
    bits of floor(2^b / 5^-q) + 1 (b: 127 + bit length of 5^-q when q >= -27, else
    twice that length + 128). Exact integer arithmetic (a few ms at first use)."""
    hi, lo = [], []
    for q in range(-342, 309):
        if q < 0:
            p5 = 5 ** -q
            z = p5.bit_length()
            c = (1 << (z + 127 if q >= -27 else 2 * z + 128)) // p5 + 1
        else:
            c = 5 ** q << max(0, 128 - (5 ** q).bit_length())
        c >>= max(0, c.bit_length() - 128)
        hi.append(c >> 64)
        lo.append(c & ((1 << 64) - 1))
    return np.array(hi, np.uint64), np.array(lo, np.uint64)


@njit(cache=True)
def _mul128(a, b):
    """(high, low) 64-bit halves of the 128-bit product of uint64 ``a`` and ``b``."""
    a_lo, a_hi = a & _M32, a >> _U32
    b_lo, b_hi = b & _M32, b >> _U32
    p0, p1, p2, p3 = a_lo * b_lo, a_lo * b_hi, a_hi * b_lo, a_hi * b_hi
    mid = (p0 >> _U32) + (p1 & _M32) + (p2 & _M32)
    return p3 + (p1 >> _U32) + (p2 >> _U32) + (mid >> _U32), (p0 & _M32) | (mid << _U32)


@njit(inline="always")
def _to_double(m, p, pow10, t_hi, t_lo):
    """``(m * 10^p as a double, sure)``: the correctly rounded value of the decimal m (an
    int64, 0 <= m < 10^18) times 10^p, where it is sure to be ``float``'s (``sure``; the
    value is 0.0 otherwise, left to the caller's general conversion):

    * Clinger's fast path: m <= 2^53 and |p| <= 22 (``pow10``: 1e0..1e22, exact doubles):
      m * 10^p or m / 10^-p is one correctly rounded operation on exact operands;
    * else the Eisel-Lemire algorithm (``t_hi``/``t_lo``: :func:`pow5_table`): m times
      the 128-bit 5^p, rounded to 53 bits when the truncated product decides the
      rounding; undecided cases (near halfway, subnormal, overflow) are not sure.

    Inlined (numba IR) in :func:`exact_floats` and :func:`scan_lines` alike."""
    good = True
    v = 0.0
    if m == 0:
        v = 0.0
    elif m <= 9007199254740992 and -22 <= p <= 22:
        v = float(m) * pow10[p] if p >= 0 else float(m) / pow10[-p]
    elif -342 <= p <= 308:
        # Eisel-Lemire: normalise m, multiply by the 128-bit 5^p
        w = np.uint64(m)
        lz = np.int64(leading_zeros(w))     # (m > 0)
        w = w << np.uint64(lz)
        hi, lo = _mul128(w, t_hi[p + 342])
        if hi & _LOW9 == _LOW9:         # the low bits may carry: 64 bits more
            yhi, _ = _mul128(w, t_lo[p + 342])
            if lo > _MAX64 - yhi:
                lo = lo - (_MAX64 - yhi) - _U1
                hi = hi + _U1
            else:
                lo = lo + yhi
            if lo == _MAX64 and not -27 <= p <= 55:
                good = False
        msb = hi >> _U63
        mant = hi >> (msb + _U9)
        e2 = ((217706 * p) >> 16) + 63 + 1023 + int(msb) - lz
        if lo <= _U1 and mant & _U3 == _U1:
            good = False                # maybe halfway between two doubles
        mant = (mant + (mant & _U1)) >> _U1
        if mant >= _B53:
            mant = _B52
            e2 += 1
        if e2 <= 0 or e2 >= 0x7FF:
            good = False                # subnormal or overflow
        if good:
            v = _as_double((np.uint64(e2) << _U52) | (mant & (_B52 - _U1)))
    else:
        good = False
    return v, good


@njit(cache=True)
def exact_floats(buf, s, e, pow10, t_hi, t_lo, val, ok):
    """``float(token)`` of tokens ``buf[s[i]:e[i]]`` written as plain decimals
    ``d[.d][e[+-]d]`` (no sign first) with at most 18 significant digits (an integer m,
    times 10^p), where the result is sure to be ``float``'s (``ok[i]``; False for every
    other token, left to the caller's general conversion): :func:`_to_double`.
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
                if nd < 18:
                    m = m * 10 + d
                nd += 1
            j += 1
        if j < b and buf[j] == 46:                      # '.'
            j += 1
            while j < b and 48 <= buf[j] <= 57:
                d = int(buf[j]) - 48
                seen = True
                if nd > 0 or d != 0:
                    if nd < 18:
                        m = m * 10 + d
                    nd += 1
                p -= 1
                j += 1
        if nd > 18:
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
            v, good = _to_double(m, p, pow10, t_hi, t_lo)
        val[i] = v
        ok[i] = good
