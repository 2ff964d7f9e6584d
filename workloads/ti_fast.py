"""Vectorised fast path of the TI reader: whole blocks of lines tokenised with numpy.

The line-by-line parser (:class:`~workloads.ti_parse.TIParser`) costs a few microseconds
per line, which made reading a 10^6-record trace take as long as simulating it. Here a
file is cut into blocks of whole lines; in each block every token is located at once
(numpy over the bytes), and the lines whose meaning does not depend on parser state --
``compute``, ``send`` and ``recv`` with well-formed fields, the bulk of large traces --
become records without any Python object per line. Every other line (non-blocking
requests and waits, collectives, ``init``, comments-only lines excepted, and any line
this module is not *sure* about: odd numbers, huge values, bad ranks) goes through the
line parser itself, in file order, so behaviour and error messages (``file:line``) stay
exactly those of the line parser. The records of both kinds are merged by line number
(a line's records keep their order), which is the order the line parser appends them.

Numbers are converted exactly as ``float(token)`` / ``int(token)`` do: digit strings
arithmetically (at most 15 digits: exact in a double), anything else with numpy's
string-to-double cast, which rounds correctly like ``float``. Only printable ASCII,
tabs and newlines are handled here (``\\r\\n`` is read as a newline); a file with any
other byte is left to the line parser, whose whitespace and line-break rules (Unicode)
it then keeps.
"""
from __future__ import annotations

import numpy as np

from ccmod.workloads.base import OP_COMPUTE, OP_RECV, OP_SEND

#: files smaller than this are read by the line parser (numpy's fixed cost dominates)
FAST_MIN_BYTES = 1 << 16
#: bytes per block (whole lines): bounds the temporary arrays of one block
BLOCK_BYTES = 1 << 20
_ALLOWED = bytes(range(0x20, 0x7F)) + b"\t\n"
_BIG_FLOPS = 9.0e18          # TIParser's bound on compute flops
_MAX_COUNT = float(1 << 53)  # TIParser's bound on element counts
_I31 = 1 << 31
_NOT_UPPER = bytes(c for c in range(256) if not 65 <= c <= 90)
#: capital letters but E (every old-syntax marker has one), and the allowed bytes but them
_UPPER = bytes(c for c in range(65, 91) if c != 69)
_ALLOWED_NOT_UPPER = bytes(c for c in _ALLOWED if c not in _UPPER)
_FLOAT_CHARS = np.zeros(256, bool)
_FLOAT_CHARS[np.frombuffer(b"0123456789.eE+-", np.uint8)] = True


def _code(name: str) -> int:
    """The 8-byte little-endian code of an action name (as :func:`_action_codes`)."""
    return int.from_bytes(name.encode().ljust(8, b"\0"), "little")


_COMPUTE, _SEND, _RECV = _code("compute"), _code("send"), _code("recv")
_INIT = _code("init")


def untagged(data: bytes) -> bool:
    """:func:`~workloads.ti_parse.looks_untagged` of ``data``, quicker when ``data`` has no
    capital letter but E (every old-syntax marker has one)."""
    if not data.translate(None, _NOT_UPPER).replace(b"E", b""):
        return False
    return _has_marker(data)


def _has_marker(data) -> bool:
    """Whether an old-syntax marker occurs in ``data`` (bytes or a ``MappedText``)."""
    from ccmod.workloads.ti_parse import OLD_MARKERS
    return any(data.find(m.encode()) >= 0 for m in OLD_MARKERS)


def usable(text: str | bytes) -> bool:
    """True when ``text`` is large enough for the fast path to pay off."""
    return len(text) >= FAST_MIN_BYTES


def to_bytes(text: str | bytes) -> bytes | None:
    """``text`` as bytes for the fast path, or None when the line parser must read it."""
    got = fast_input(text)
    return None if got is None else got[0]


def fast_input(text: str | bytes) -> tuple[bytes, bool] | None:
    """``text`` (or its bytes) as bytes for the fast path and :func:`untagged` of them, or
    None when the line parser must read it.

    One ``translate`` pass finds both the bytes the fast path does not handle and the
    capital letters that may start an old-syntax marker (a trace without either, the
    usual case, is not scanned again)."""
    if not isinstance(text, (str, bytes)):     # ti_bytes.MappedText: ASCII, no \r or NUL
        from ccmod.workloads.ti_bytes import C_CTRL, C_UPPER
        if text.counts[C_CTRL]:
            return None
        return text, bool(text.counts[C_UPPER]) and _has_marker(text)
    if not text.isascii():
        return None
    data = text.encode("ascii") if isinstance(text, str) else text
    if b"\r" in data:
        if data.count(b"\r") != data.count(b"\r\n"):
            return None            # a lone \r is a line break for splitlines()
        data = data.replace(b"\r\n", b"\n")
    rest = data.translate(None, _ALLOWED_NOT_UPPER)
    if rest and rest.translate(None, _UPPER):
        return None                # control bytes: str.split()/splitlines() rules differ
    return data, bool(rest) and _has_marker(data)


def blocks(data: bytes, size: int = BLOCK_BYTES):
    """Yield (block, number of lines before it): whole lines of about ``size`` bytes."""
    start, line0, n = 0, 0, len(data)
    while start < n:
        end = data.find(b"\n", min(start + size, n) - 1) if start + size < n else n
        end = n if end < 0 else end + 1
        block = data[start:end]
        yield block, line0
        line0 += block.count(b"\n")
        start = end


class _Tokens:
    """Token boundaries of one block: per non-empty line its first token and count
    (found by one compiled pass over the bytes, :mod:`ccmod.workloads.ti_compiled`; with numba's
    JIT off, by numpy)."""

    def __init__(self, data: bytes):
        buf = np.frombuffer(data, np.uint8)
        if b"#" in data:
            buf = _blank_comments(buf)
        # buf plus 8 zero bytes, seen as the 8 bytes starting at each position (uint64,
        # little-endian, unaligned): a token of <= 8 bytes is then one gather
        pad = np.concatenate([buf, np.zeros(8, np.uint8)])
        self.buf = pad[:len(buf)]
        self.u64 = np.ndarray((len(buf) + 1,), dtype="<u8", buffer=pad, strides=(1,))
        bounds = _compiled("token_bounds")
        if bounds is not None:
            cap = len(buf) // 2 + 1
            st, en = np.empty(cap, np.int64), np.empty(cap, np.int64)
            tl, nl = np.empty(cap, np.int32), np.empty(len(buf) + 1, np.int64)
            k, n = bounds(self.buf, st, en, tl, nl)
            self.st, self.en, self.nl, tl = st[:k].copy(), en[:k].copy(), nl[:n].copy(), tl[:k]
        else:
            nw = ((buf != 32) & (buf != 10) & (buf != 9)).view(np.int8)
            edge = np.diff(nw, prepend=np.int8(0), append=np.int8(0))
            self.st = np.flatnonzero(edge == 1)
            self.en = np.flatnonzero(edge == -1)
            self.nl = np.flatnonzero(buf == 10)
            # line index (in block) of each token: newlines before its start
            tl = np.cumsum(buf == 10, dtype=np.int32)[self.st] if len(self.st) else self.st
        first = np.ones(len(tl), bool)
        first[1:] = tl[1:] != tl[:-1]
        self.first = np.flatnonzero(first)           # token index of each line's rank
        self.line_idx = tl[self.first]
        self.ntok = np.diff(np.append(self.first, len(tl)))

    def tok(self, k: int, rows):
        """(start, end) of token ``k`` of lines ``rows`` (rows must have > k tokens)."""
        i = self.first[rows] + k
        return self.st[i], self.en[i]

    def text(self, s: int, e: int) -> str:
        return self.buf[s:e].tobytes().decode("ascii")

    def line_text(self, li: int) -> str:
        s = int(self.nl[li - 1]) + 1 if li > 0 else 0
        e = int(self.nl[li]) if li < len(self.nl) else len(self.buf)
        return self.text(s, e)


def _blank_comments(buf):
    """A copy of ``buf`` with every ``#`` ... end of line replaced by spaces."""
    h = np.flatnonzero(buf == 35)
    nl = np.flatnonzero(buf == 10)
    li = np.searchsorted(nl, h)
    keep = np.ones(len(h), bool)
    keep[1:] = li[1:] != li[:-1]
    h, li = h[keep], li[keep]
    end = np.append(nl, len(buf))[li]           # the newline ending each '#' line
    delta = np.zeros(len(buf) + 1, np.int8)
    delta[h] = 1
    delta[end] -= 1
    out = buf.copy()
    out[np.cumsum(delta[:-1], dtype=np.int8) > 0] = 32
    return out


#: keeps the first L bytes of a little-endian uint64 (L = 0..8)
_KEEP = np.array([(1 << (8 * n)) - 1 for n in range(8)] + [(1 << 64) - 1], np.uint64)
_ZEROS = np.uint64(0x3030303030303030)      # "00000000"
_HI = np.uint64(0xF0F0F0F0F0F0F0F0)


def _digits(T, s, e, maxlen: int):
    """Values and validity of tokens [s, e) made of 1..maxlen ASCII digits (values are
    unspecified where not valid).

    Compiled (:mod:`ccmod.workloads.ti_compiled`, one pass over each token's bytes); with
    ``NUMBA_DISABLE_JIT=1`` the numpy version below, the same results.
    """
    digit_values = _compiled("digit_values")
    if digit_values is not None:
        val = np.empty(len(s), np.int64)
        ok = np.empty(len(s), np.bool_)
        digit_values(T.buf, s, e, maxlen, val, ok)
        return val, ok
    return _digits_numpy(T, s, e, maxlen)


def _compiled(name):
    """A compiled helper of :mod:`ccmod.workloads.ti_compiled`, or None when numba's JIT is off
    (interpreted, a loop over every byte would be far slower than numpy)."""
    from ccmod.jit import jit_enabled
    if not jit_enabled():
        return None
    from ccmod.workloads import ti_compiled
    return getattr(ti_compiled, name)


def _digits_numpy(T, s, e, maxlen: int):
    """:func:`_digits` with numpy: up to 8 digits at once per token (SWAR on the 8 bytes as
    one uint64: left-pad with '0', check every byte is a digit, combine 2 -> 4 -> 8
    digits); longer ones digit by digit."""
    L = e - s
    ok = (L >= 1) & (L <= maxlen)
    val = np.zeros(len(s), np.int64)
    short = np.flatnonzero(ok & (L <= 8))
    if short.size:
        n = L[short]
        shift = (8 * (8 - n)).astype(np.uint64)
        raw = T.u64[s[short]] & _KEEP[n]
        x = (raw << shift) | (_ZEROS & (_KEEP[8 - n]))
        good = ((x & _HI) == _ZEROS) & (((x + np.uint64(0x0606060606060606)) & _HI) == _ZEROS)
        x = x - _ZEROS
        x = ((x * np.uint64(10)) + (x >> np.uint64(8))) & np.uint64(0x00FF00FF00FF00FF)
        x = ((x * np.uint64(100)) + (x >> np.uint64(16))) & np.uint64(0x0000FFFF0000FFFF)
        x = ((x * np.uint64(10000)) + (x >> np.uint64(32))) & np.uint64(0x00000000FFFFFFFF)
        val[short] = x.astype(np.int64)
        ok[short] = good
    live = np.flatnonzero(ok & (L > 8))
    buf = T.buf
    j = 0
    while live.size:
        d = buf[s[live] + j] - np.uint8(48)          # wraps: non-digits become > 9
        bad = d > 9
        if bad.any():
            ok[live[bad]] = False
        val[live] = val[live] * 10 + d
        j += 1
        live = live[L[live] > j]
    return val, ok


def _floats(T, s, e):
    """``float(token)`` of tokens [s, e) and validity (numeric-looking, parsed)."""
    buf = T.buf
    v, ok = _digits(T, s, e, 15)                   # exact integers: the common case
    out = v.astype(np.float64)
    rest = np.flatnonzero(~ok)
    if not rest.size:
        return out, ok
    out[rest], ok[rest] = float_tokens(buf, s[rest], e[rest])
    return out, ok


def float_tokens(buf, rs, re_):
    """``float(token)`` of tokens [rs, re_) of ``buf`` and validity, with numpy's
    string-to-double cast (correctly rounded, as ``float``); tokens with a sign, a
    character outside ``0-9.eE+-`` or over 40 bytes are not valid (the line parser's)."""
    L = re_ - rs
    fine = (L >= 1) & (L <= 40)
    W = int(L[fine].max()) if fine.any() else 1
    idx = rs[:, None] + np.arange(W)
    inside = idx < re_[:, None]
    ch = np.where(inside, buf[np.minimum(idx, len(buf) - 1)], 0).astype(np.uint8)
    fine &= np.all(_FLOAT_CHARS[ch] | ~inside, axis=1)
    fine &= (ch[:, 0] != 43) & (ch[:, 0] != 45)    # a sign first: left to the line parser
    strs = np.ascontiguousarray(ch).view(f"S{W}").reshape(-1)
    vals = np.zeros(len(rs))
    try:
        with np.errstate(all="ignore"):
            vals[fine] = strs[fine].astype(np.float64)
    except ValueError:                              # one bad token: find them one by one
        for j in np.flatnonzero(fine):
            try:
                vals[j] = float(strs[j])
            except ValueError:
                fine[j] = False
    return vals, fine


def _action_codes(T: _Tokens, rows):
    """8-byte code of token 1 of ``rows`` (0 when longer than 8 bytes)."""
    s, e = T.tok(1, rows)
    L = e - s
    return np.where(L <= 8, T.u64[s] & _KEEP[np.minimum(L, 8)], 0)


class LazyLines:
    """``text.splitlines()`` made only if iterated (the parser's collective prescan).
    ``text`` may be :func:`to_bytes`' bytes of it: ASCII, ``\r\n`` made ``\n``, no
    other line break, so decoded they split into the same lines."""

    def __init__(self, text):
        self.text = text

    def __iter__(self):
        t = self.text
        return iter((t if isinstance(t, str) else t[:].decode("ascii")).splitlines())


def feed(p, data: bytes, fname: str, untagged: bool, all_lines) -> None:
    """Parse one file's ``data`` (from :func:`to_bytes`) into TIParser ``p``.

    Equivalent to ``p.feed(text.splitlines(), fname, untagged)``; ``all_lines`` is what
    that call's ``lines`` would be (iterated only by a collective's rank prescan).
    """
    if p.syntax == "untagged":
        untagged = True
    elif p.syntax == "tagged":
        untagged = False
    fid = p.b.file(fname)
    if _compiled("scan_lines") is not None:
        from ccmod.workloads import ti_scan      # one compiled pass per block
        ti_scan.feed(p, data, fname, fid, untagged, all_lines, BLOCK_BYTES)
        return
    for block, line0 in blocks(data):
        _feed_block(p, block, line0, fname, fid, untagged, all_lines)


def _feed_block(p, data, line0, fname, fid, untagged, all_lines):
    T = _Tokens(data)
    L = len(T.first)
    if not L:
        return
    buf, ntok = T.buf, T.ntok
    rank, ok = _digits(T, T.st[T.first], T.en[T.first], 10)
    ok &= rank < (_I31 if p.nranks is None else min(_I31, p.nranks))
    fast = np.zeros(L, bool)
    vec = None
    if ok.all():
        # every rank reads the same both ways: the parser's per-rank facts are set here,
        # in line order, before its own pass over the other lines
        u, first = np.unique(rank, return_index=True)
        for r, i in zip(u.tolist(), first.tolist()):
            p.first_line.setdefault(r, (fname, line0 + int(T.line_idx[i]) + 1))
            p.rank_tok.setdefault(str(r), r)
        vec, fast = _vectorise(p, T, rank, untagged)
    b = p.b
    b.close_lists()
    slow = np.flatnonzero(~fast)
    if slow.size:
        li = T.line_idx[slow].tolist()
        p.feed(all_lines, fname, untagged,
               numbered=((line0 + i + 1, T.line_text(i)) for i in li))
    lists = b.take_lists()
    if vec is None:
        b.add_chunk(lists, {k: np.zeros(0, np.int64) for k in lists})
        return
    vec["line"] = (line0 + 1 + T.line_idx[vec.pop("rows")]).astype(np.int64)
    vec["file_id"] = np.full(len(vec["line"]), fid, np.int32)
    b.add_chunk(lists, vec)


def _vectorise(p, T: _Tokens, rank, untagged: bool):
    """Records of the compute/send/recv lines this module is sure of, and their mask."""
    buf, ntok = T.buf, T.ntok
    L = len(ntok)
    code = np.zeros(L, np.uint64)
    two = np.flatnonzero(ntok >= 2)
    code[two] = _action_codes(T, two)
    # compute <flops>
    c = np.flatnonzero((code == _COMPUTE) & (ntok >= 3))
    flops, okc = _floats(T, *T.tok(2, c))
    okc &= (flops >= 0.0) & (flops < _BIG_FLOPS)
    c, dur = c[okc], flops[okc] * p.inv_rate
    # send / recv
    q = np.flatnonzero(((code == _SEND) & (ntok >= 4)) | ((code == _RECV) & (ntok >= 3)))
    n = ntok[q]
    peer, okq = _digits(T, *T.tok(2, q), 10)
    okq &= peer < _I31
    # which fields are tag / count / datatype (TIParser.feed's rules)
    tok3 = np.minimum(n - 1, 3)
    s3, e3 = T.st[T.first[q] + tok3], T.en[T.first[q] + tok3]
    neg = buf[s3] == 45
    t_abs, int3 = _digits(T, s3 + neg, e3, 10)
    long3 = (e3 - s3 - neg) > 10       # an integer the digit reader does not cover
    okq &= ~((n == 5) & long3)
    tagged5 = (n == 5) & int3 & (not untagged)
    has_tag = tagged5 | (n >= 6)
    tag = np.where(neg, -t_abs, t_abs)
    okq &= ~has_tag | (int3 & (tag >= -_I31) & (tag < _I31))
    tag = np.where(has_tag, tag, 0)
    k_cnt = np.where(has_tag, 4, 3)
    has_cnt = n >= 4
    kc = np.where(has_cnt, k_cnt, 2)   # a harmless token where there is no count
    cnt, okn = _floats(T, T.st[T.first[q] + kc], T.en[T.first[q] + kc])
    okq &= ~has_cnt | (okn & (cnt >= 0.0) & (cnt < _MAX_COUNT))
    has_dt = ((n == 5) & ~tagged5) | (n >= 6)
    kd = np.where(has_dt, k_cnt + 1, 2)
    sd, ed = T.st[T.first[q] + kd], T.en[T.first[q] + kd]
    dt, okd = _digits(T, sd, ed, 2)
    okq &= ~has_dt | (okd & (dt <= 59))
    from ccmod.workloads.ti_colls import DTYPE_BYTES, REPLAYABLE_IDS
    table = np.array([DTYPE_BYTES[i] if i in REPLAYABLE_IDS else 1 for i in range(60)],
                     np.int64)
    elem = np.where(has_dt, table[np.minimum(dt, 59)], 0)
    need = np.flatnonzero(okq & ~has_dt & has_cnt)
    if need.size:
        elem[need] = _rank_elem(p, T, rank, code, q[need])
    cnt = np.where(okq & has_cnt, cnt, 0.0)         # no cast warning on refused counts
    nb = np.where(has_cnt, (cnt * elem + 0.5).astype(np.int64), -1)
    is_send = code[q] == _SEND
    okq &= ~(is_send & ~has_cnt)
    inb = np.flatnonzero(okq & has_dt & ~((ed - sd == 1) & (dt <= 6)))
    p.in_bytes.extend(T.text(int(s), int(e)) for s, e in zip(sd[inb], ed[inb]))
    q, n_ok = q[okq], okq
    p.counts["compute"] = p.counts.get("compute", 0) + len(c)
    ns = int(np.count_nonzero(is_send[n_ok]))
    if ns:
        p.counts["send"] = p.counts.get("send", 0) + ns
    if len(q) - ns:
        p.counts["recv"] = p.counts.get("recv", 0) + len(q) - ns
    fast = np.zeros(L, bool)
    fast[c] = True
    fast[q] = True
    nc = len(c)
    # in the Workload's dtypes (values checked above): no wider copy is held until build
    rows = np.concatenate([c, q])
    o = np.argsort(rows, kind="stable")            # line order: no reordering at build
    vec = {
        "rows": rows[o],
        "rank": np.concatenate([rank[c], rank[q]]).astype(np.int32)[o],
        "op": np.concatenate([np.full(nc, OP_COMPUTE, np.int8),
                              np.where(is_send[n_ok], OP_SEND, OP_RECV).astype(np.int8)])[o],
        "peer": np.concatenate([np.full(nc, -1, np.int32), peer[n_ok].astype(np.int32)])[o],
        "tag": np.concatenate([np.zeros(nc, np.int32), tag[n_ok].astype(np.int32)])[o],
        "nbytes": np.concatenate([np.zeros(nc, np.int64), nb[n_ok]])[o],
        "duration_s": np.concatenate([dur, np.zeros(len(q))])[o],
        "req": np.full(nc + len(q), -1, np.int64),
    }
    return vec, fast


def _rank_elem(p, T: _Tokens, rank, code, rows):
    """Element size in force on each line of ``rows`` (a count without a datatype):
    the rank's ``init`` lines earlier in the block, else the rank's state before it."""
    default = p.elem_bytes or 1
    r = rank[rows]
    u, inv = np.unique(r, return_inverse=True)
    start = np.array([p.states[x].elem if x in p.states else default for x in u.tolist()],
                     np.int64)[inv]
    if p.elem_bytes is not None:
        return start
    ini = np.flatnonzero(code == _INIT)
    if not ini.size:
        return start
    # per rank, the latest init line before each row (rows and inits sorted by rank, line)
    allr = np.concatenate([rows, ini])
    is_init = np.concatenate([np.zeros(len(rows), bool), np.ones(len(ini), bool)])
    val = np.where(T.ntok[allr] > 2, 8, 1)
    o = np.lexsort((allr, rank[allr]))
    ro = rank[allr][o]
    pos = np.where(is_init[o], np.arange(len(o)), -1)
    last = np.maximum.accumulate(pos)
    seg = np.ones(len(o), bool)
    seg[1:] = ro[1:] != ro[:-1]
    seg_start = np.maximum.accumulate(np.where(seg, np.arange(len(o)), 0))
    got = last >= seg_start
    out_o = np.where(got, val[o][np.maximum(last, 0)], -1)
    out = np.empty(len(allr), np.int64)
    out[o] = out_o
    out = out[:len(rows)]
    return np.where(out >= 0, out, start)
