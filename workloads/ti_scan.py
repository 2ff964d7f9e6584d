"""Compiled fast path of the TI reader: one pass over a block's bytes makes the records.

:mod:`ccmod.workloads.ti_fast` located every token of a block with numpy and then
vectorised the well-formed ``compute``/``send``/``recv`` lines: about 20 numpy
temporaries per token, as much CPU as simulating the trace. Here one compiled pass
(:func:`ccmod.workloads.ti_compiled.scan_lines`) reads each line once and writes its
record straight into the output columns; the rules are those of ``ti_fast`` (so those of
the line parser, :class:`~workloads.ti_parse.TIParser`):

* a line whose meaning does not depend on parser state, ``compute`` and ``send``/``recv``
  with well-formed fields (digit strings for ranks, peers and tags; counts and flops that
  are digit strings of at most 15 digits, exact in a double), becomes a record here;
* a flops field written as a plain decimal (``49164.562032632326``: digits, a point,
  digits, <= 18 of them) is converted in the pass where the result is sure to be
  ``float``'s (Clinger's fast path, else the Eisel-Lemire algorithm:
  :func:`~ccmod.workloads.ti_compiled.exact_floats`' own code); any other number in a
  count or flops field (``1e6``, ``2.5``, an undecided decimal) is converted after the
  pass: by ``exact_floats`` where it is sure, else by :func:`ti_fast.float_tokens`
  (numpy's correctly rounding cast); all equal ``float``. A field that is not a number
  sends its line to the line parser;
* every other non-empty line (requests, waits, collectives, ``init`` ...) and every line
  this module is not sure about goes through the line parser, in file order, after the
  block's fast lines (which touch no parser state but the rank facts below), so records,
  values and error messages (``file:line``) are the line parser's;
* per rank, the element size in force (``init`` lines) and whether its first line was
  reported are kept in arrays indexed by rank (up to :data:`MAX_TABLE` ranks); a block
  with a rank field this pass does not read (``1.0``, ``-1``, too large, beyond the
  tables) goes wholly to the line parser, as in ``ti_fast``.

Used when numba's JIT is on; under ``NUMBA_DISABLE_JIT=1`` the numpy path of ``ti_fast``
reads the file (a byte loop interpreted would be far slower).
"""
from __future__ import annotations

import numpy as np

from ccmod.workloads.base import OP_COMPUTE, OP_RECV, OP_SEND

#: ranks below this have per-rank tables (elem size, first line seen): 2 x 9 bytes each
MAX_TABLE = 1 << 22
_BIG_FLOPS = 9.0e18          # TIParser's bound on compute flops
_MAX_COUNT = float(1 << 53)  # TIParser's bound on element counts
_I31 = 1 << 31
#: records per set of columns (a few blocks' worth; bounds the memory reserved at once)
COLUMN_ROWS = 1 << 22
#: pending numbers of a block converted by numpy's cast alone (see _flush)
_FEW_PENDING = 32
_POW10 = np.array([float(10 ** i) for i in range(23)])   # exact doubles
#: the records' integer columns: rows of the scan's ``rec`` (int64) and ``rec32`` (int32)
_COLS64 = ("line", "nbytes")
_COLS32 = ("rank", "peer", "tag")


def _pow5():
    """Lemire's table of 128-bit powers of five (made once per process)."""
    global _POW5
    if _POW5 is None:
        from ccmod.workloads.ti_compiled import pow5_table
        _POW5 = pow5_table()
    return _POW5


_POW5 = None


def side_rows(block_bytes: int) -> int:
    """Rows of the side lists of one block (a block with more lines of one kind is cut
    short: correct either way, see SCAN_FULL)."""
    return block_bytes // 8 + 64


def _dt_elem() -> np.ndarray:
    """Bytes per counted unit for datatype ids 0..59 (:func:`ti_colls.dtype`'s)."""
    from ccmod.workloads.ti_colls import DTYPE_BYTES, REPLAYABLE_IDS
    return np.array([DTYPE_BYTES[i] if i in REPLAYABLE_IDS else 1 for i in range(60)],
                    np.int64)


def _tables(p, size: int = 64):
    """Per-rank element sizes and first-line-seen flags, from the parser's state."""
    size = min(MAX_TABLE, max(size, max(p.states, default=-1) + 1,
                              max(p.first_line, default=-1) + 1))
    elem = np.full(size, p.elem_bytes or 1, np.int64)
    for r, st in p.states.items():
        if r < size:
            elem[r] = st.elem
    seen = np.zeros(size, np.uint8)
    for r in p.first_line:
        if r < size:
            seen[r] = 1
    return elem, seen


def _grow(p, elem, seen, rank: int):
    """The tables grown to hold ``rank`` (new ranks have no state yet: the default)."""
    size = min(MAX_TABLE, max(2 * len(elem), rank + 1))
    e2 = np.full(size, p.elem_bytes or 1, np.int64)
    e2[:len(elem)] = elem
    s2 = np.zeros(size, np.uint8)
    s2[:len(seen)] = seen
    return e2, s2


def _fresh(shape, dtype, populate=False):
    """``np.empty(shape, dtype)`` in an anonymous mapping of its own (zeros, in fact).

    The side lists are touched in part: numpy asks for transparent huge pages on arrays
    of 4 MB or more, under which the first write to each 2 MB makes all of it resident
    (~18 bytes per record of the read's peak at 1M records). A plain mapping takes its
    pages one at a time, as they are written. ``populate``: for columns sized to be
    filled (they become the Workload's), all its pages at once, in transparent huge pages
    where there are (:func:`ti_bytes.filled_mapping`: 40 MB in 3.8 ms against 14-19 ms
    with ``MAP_POPULATE``, 27-28 ms page by page; first-touch faults ~3 us each here)."""
    import mmap
    n = int(np.prod(shape)) * np.dtype(dtype).itemsize
    if n < 1 << 20:
        return np.empty(shape, dtype)
    if populate:
        from ccmod.workloads.ti_bytes import filled_mapping
        m = filled_mapping(n)
    else:
        m = mmap.mmap(-1, n, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    return np.frombuffer(m, dtype).reshape(shape)


def _release(row) -> None:
    """Give back the pages of ``row`` (a row of a :func:`_fresh` mapping whose values are
    no longer read): they would stay resident as long as the Workload's views of the
    other rows, 4 bytes per record for the ranks."""
    import mmap
    mm = row
    while isinstance(mm, (np.ndarray, memoryview)):
        mm = mm.base if isinstance(mm, np.ndarray) else mm.obj
    if not isinstance(mm, mmap.mmap) or not hasattr(mmap, "MADV_DONTNEED"):
        return                                  # a small np.empty: left as is
    start = row.ctypes.data - np.frombuffer(mm, np.uint8).ctypes.data
    page = mmap.PAGESIZE
    lo, hi = -(-start // page) * page, (start + row.nbytes) // page * page
    if hi > lo:
        mm.madvise(mmap.MADV_DONTNEED, lo, hi - lo)


def _count_lines(buf) -> int:
    """Lines of ``buf``: its newlines, plus one for a last line without one (numpy, 1 MB
    at a time: ~2.4 ms for 18 MB, no temporary the size of the file)."""
    step = 1 << 20
    nl = sum(int(np.count_nonzero(buf[o:o + step] == 10)) for o in range(0, len(buf), step))
    return nl + (1 if len(buf) and buf[-1] != 10 else 0)


def feed(p, data: bytes, fname: str, fid: int, untagged: bool, all_lines,
         block_bytes: int) -> None:
    """Parse one file's ``data`` (from :func:`ti_fast.to_bytes`) into TIParser ``p``,
    ``block_bytes`` at a time (see the module doc)."""
    from ccmod.workloads import ti_compiled as tc
    assert (tc._OP_COMPUTE, tc._OP_SEND, tc._OP_RECV) == (OP_COMPUTE, OP_SEND, OP_RECV)
    buf = np.frombuffer(data, np.uint8)
    n = len(buf)
    # a record line has >= 8 bytes and a newline (the last may lack it): a block of
    # block_bytes makes at most block_bytes // 8 + 2 records, and the rest of the file at
    # most its lines. The columns are filled block after block (each block's records stay views
    # of them) and made anew when the next block might not fit; sized by the lines left
    # (exact for a trace of record lines, the usual case), their pages are mapped at once.
    nlines = _count_lines(buf)
    rows, base = 0, 0
    side = _fresh((11, min(n // 8 + 2, side_rows(block_bytes))), np.int64)
    elem, seen = _tables(p)
    dt_elem = _dt_elem()
    state = np.zeros(8, np.int64)
    # the 8 bytes from each position as one little-endian uint64 (unaligned loads)
    u64 = np.ndarray((max(n - 7, 0),), "<u8", buffer=data, strides=(1,))
    pow5 = _pow5()
    pos, line0 = 0, 0
    while pos < n:
        left = nlines - line0 + 1
        need = min(min(block_bytes, n - pos) // 8 + 2, left)
        if base + need > rows:
            rows = min(max(need, COLUMN_ROWS), (n - pos) // 8 + 2, left)
            cols = (_fresh((len(_COLS64), rows), np.int64, True),
                    _fresh((len(_COLS32), rows), np.int32, True),
                    _fresh(rows, np.int8, True), _fresh(rows, np.float64, True))
            # the Workload keeps views of the other rows; the ranks are spent once built
            p.after_build.append(lambda rank_row=cols[1][_COLS32.index("rank")]:
                                 _release(rank_row))
            base = 0
        state[:] = 0
        state[tc.ST_POS], state[tc.ST_LINE] = pos, line0
        stop = min(n, pos + block_bytes)
        while True:
            limit = _I31 if p.nranks is None else min(_I31, p.nranks)
            status = tc.scan_lines(
                buf, stop, untagged, limit, MAX_TABLE, p.inv_rate, p.elem_bytes is not None,
                elem, seen, dt_elem, state, *cols, base, side, np.zeros((3, 6), np.int64),
                np.zeros((2, 6), np.bool_), u64, _POW10, *pow5)
            if status != tc.SCAN_TABLE:
                break
            elem, seen = _grow(p, elem, seen, int(state[tc.ST_ARG]))
        end, lines = int(state[tc.ST_POS]), int(state[tc.ST_LINE])
        if status == tc.SCAN_BADRANK:
            text = data[pos:end].decode("ascii")
            p.feed(all_lines, fname, untagged,
                   numbered=((line0 + i + 1, t) for i, t in enumerate(text.split("\n"))))
            elem, seen = _tables(p, len(elem))
        else:
            if status == tc.SCAN_FULL and end == pos:
                raise RuntimeError("TI scan made no progress")   # cannot happen: rows above
            base += _flush(p, data, buf, fname, fid, untagged, all_lines, cols, base, side,
                           state)
        pos, line0 = end, lines


def _flush(p, data, buf, fname, fid, untagged, all_lines, cols, base, side, state) -> int:
    """Hand one block's records to the builder (merged with its line-parsed lines);
    returns how many records it kept in ``cols`` (the scan's) from ``base`` on."""
    from ccmod.workloads import ti_compiled as tc
    from ccmod.workloads.ti_fast import float_tokens
    nrec, nslow, npend = (int(state[i]) for i in (tc.ST_NREC, tc.ST_NSLOW, tc.ST_NPEND))
    nnew, ninb = int(state[tc.ST_NNEW]), int(state[tc.ST_NINB])
    sl = slice(base, base + nrec)
    rec, rec32, ops, dur = cols
    block = {k: rec[i, sl] for i, k in enumerate(_COLS64)}
    block.update((k, rec32[i, sl]) for i, k in enumerate(_COLS32))
    block["op"], block["duration_s"] = ops[sl], dur[sl]
    slow = list(zip(*(side[i, :nslow].tolist() for i in (tc.S_SLOW_LINE, tc.S_SLOW_S,
                                                         tc.S_SLOW_E))))
    keep = None
    if npend:
        pend = side[tc.S_PEND_REC, :npend]
        pend_s = side[tc.S_PEND_S, :npend]
        pend_e = side[tc.S_PEND_E, :npend]
        if npend <= _FEW_PENDING and int((pend_e - pend_s).max()) <= 40:
            # a few (a trace's odd undecided float): the cast alone gives what both give
            # (exact_floats' tokens, <= 40 bytes, are the cast's too), and a process that
            # never needs exact_floats does not load it from numba's cache (~4 ms)
            vals, ok = float_tokens(buf, pend_s, pend_e)
        else:
            vals, ok = np.empty(npend, np.float64), np.empty(npend, np.bool_)
            tc.exact_floats(buf, pend_s, pend_e, _POW10, *_pow5(), vals, ok)
            rest = np.flatnonzero(~ok)
            if rest.size:               # others: the correctly rounding cast
                vals[rest], ok[rest] = float_tokens(buf, pend_s[rest], pend_e[rest])
        comp = block["op"][pend] == OP_COMPUTE
        ok &= (vals >= 0.0) & (vals < np.where(comp, _BIG_FLOPS, _MAX_COUNT))
        c, q = pend[comp & ok], pend[~comp & ok]
        block["duration_s"][c] = vals[comp & ok] * p.inv_rate
        # the scan left the element size in nbytes
        block["nbytes"][q] = (vals[~comp & ok] * block["nbytes"][q] + 0.5).astype(np.int64)
        if not ok.all():
            # not a number the cast reads: the line parser reads (and reports) the line
            bad = pend[~ok]
            for ln, s in zip(block["line"][bad].tolist(), pend_s[~ok].tolist()):
                le = data.find(b"\n", s)
                slow.append((ln, data.rfind(b"\n", 0, s) + 1, len(data) if le < 0 else le))
            slow.sort()
            keep = np.ones(nrec, bool)
            keep[bad] = False
            block = {k: a[keep] for k, a in block.items()}
    # every rank of the block reads the same both ways: its first line is set here, in
    # line order, before the line parser's pass over the other lines (as ti_fast does)
    for r, ln in zip(side[tc.S_NEW_RANK, :nnew].tolist(), side[tc.S_NEW_LINE, :nnew].tolist()):
        p.first_line.setdefault(r, (fname, ln))
        p.rank_tok.setdefault(str(r), r)
    if ninb:
        sel = np.ones(ninb, bool) if keep is None else keep[side[tc.S_INB_REC, :ninb]]
        p.in_bytes.extend(data[s:e].decode("ascii") for s, e in
                          zip(side[tc.S_INB_S, :ninb][sel].tolist(),
                              side[tc.S_INB_E, :ninb][sel].tolist()))
    kept = len(block["line"])
    op = block["op"]
    # the scan's records are compute, send or recv (np.bincount: 9x the time of this)
    n_comp, n_send = (int(np.count_nonzero(op == k)) for k in (OP_COMPUTE, OP_SEND))
    counts = p.counts
    counts["compute"] = counts.get("compute", 0) + n_comp
    for name, k in (("send", n_send), ("recv", kept - n_comp - n_send)):
        if k:
            counts[name] = counts.get(name, 0) + k
    b = p.b
    b.close_lists()
    if slow:
        p.feed(all_lines, fname, untagged,
               numbered=((ln, data[s:e].decode("ascii")) for ln, s, e in slow))
    lists = b.take_lists()
    # one value for every record of the block: broadcast (no memory until the builder
    # concatenates the blocks, after the file's bytes and the scan's columns are gone)
    block["req"] = np.broadcast_to(np.int64(-1), (kept,))
    block["file_id"] = np.broadcast_to(np.int32(fid), (kept,))
    b.add_chunk(lists, block)
    return nrec if keep is None else 0
