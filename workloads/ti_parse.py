"""The hot loop of the SimGrid TI reader: action lines -> Workload records.

One :class:`TIParser` is fed the lines of every file of one trace (one file holding
all ranks, or one file per rank) and then :meth:`TIParser.finish` compiles the
:class:`~workloads.base.Workload`. Speed matters (benchmarks read 10^6-line files):
lines are split once, the frequent actions are handled inline with direct list
appends, and every error path is slow but precise (``file:line: what (usage)``).
"""
from __future__ import annotations

import difflib
import itertools

import numpy as np

from ccmod.errors import CcmodInputError
from ccmod.workloads.base import (OP_AMREQUEST, OP_BARRIER, OP_COMPUTE, OP_IRECV, OP_ISEND, OP_RECV,
                            OP_SEND, OP_WAIT, OP_WAITALL, WorkloadBuilder)
from ccmod.workloads.ti_colls import (COLL_ALIASES, COLL_USAGE, KIND, REPLAYABLE_IDS, ArgError,
                                      count, dtype, get_expand, integer, parse as parse_coll)

_BIG = 9.0e18
#: largest element count accepted (x 32-byte elements stays inside int64)
_MAXCOUNT = float(1 << 53)
_MAXRANK = 1 << 31

P2P_USAGE = {
    "send": "send <dst> <tag> <count> [<dtype>]  (old: send <dst> <count>)",
    "isend": "isend <dst> <tag> <count> [<dtype>]  (old: Isend <dst> <count>)",
    "recv": "recv <src> <tag> <count> [<dtype>]  (old: recv <src> [<count>])",
    "irecv": "irecv <src> <tag> <count> [<dtype>]  (old: Irecv <src> [<count>])",
    "wait": "wait <src> <dst> <tag>  (old: wait)",
    "test": "test <src> <dst> <tag>",
    "waitall": "waitall",
    "barrier": "barrier",
    "compute": "compute <flops>",
    "sleep": "sleep <seconds>",
    "amrequest": "amrequest <dst> <bytes> <handler_flops>  (ccmod extension: LoPC active message)",
    "init": "init [<anything>: sizes in MPI_DOUBLE (8 bytes) instead of bytes]",
    "finalize": "finalize",
    "comm_size": "comm_size <n>",
    "comm_split": "comm_split ...", "comm_dup": "comm_dup ...",
    "location": "location <file> <line>",
}
#: actions read and dropped (no effect on communication): counted in meta
IGNORED = ("init", "finalize", "comm_size", "comm_split", "comm_dup", "location")
_SEND = {"send": OP_SEND, "isend": OP_ISEND, "Isend": OP_ISEND}
_RECV = {"recv": OP_RECV, "irecv": OP_IRECV, "Irecv": OP_IRECV}
_CANON = {"Isend": "isend", "Irecv": "irecv", "waitAll": "waitall"}
VALID_ACTIONS = sorted(set(P2P_USAGE) | set(COLL_ALIASES) | set(_SEND) | set(_RECV)
                       | {"waitAll"})
#: substrings that only old (untagged, <= 2016) SimGrid traces contain
OLD_MARKERS = (" Isend ", " Irecv ", " waitAll", " allReduce ", " allToAll ", " allToAllV ",
               " allGatherV ", " reduceScatter ")


_REPLAYABLE_TOKENS = frozenset(str(i) for i in REPLAYABLE_IDS)
#: how ``wait <src> <dst> <tag>`` names processes: ``auto`` decides from the trace
WAIT_IDS = ("auto", "rank", "pid")
_WAIT_IDS_TEXT = {
    "rank": "ranks (current SimGrid)",
    "pid": "actor PIDs = rank + 1 (SimGrid 3.21 to 3.26)",
}


def looks_untagged(text: str) -> bool:
    """True if ``text`` uses old SimGrid action names (sends then have no tag field)."""
    return any(m in text for m in OLD_MARKERS)


class _Rank:
    """Per-rank replay state: request ids, outstanding requests, element size."""

    __slots__ = ("next_req", "outst", "bykey", "tested", "elem", "coll_seq")

    def __init__(self, elem: int):
        self.next_req = 0
        self.outst: dict[int, tuple] = {}     # req -> (key, is_recv, line, file_id), posting order
        self.bykey: dict[tuple, list] = {}    # (src, dst, tag) -> [req, ...] FIFO
        self.tested: set = set()
        self.elem = elem
        self.coll_seq = 0


class TIParser:
    """Accumulate the records of one TI trace.

    Parameters
    ----------
    nranks : int or None
        Number of ranks when known from the layout (description file, directory);
        ``None`` for one file holding every rank (then N = highest rank + 1).
    compute_rate : float
        flop/s used to turn ``compute <flops>`` into seconds.
    compute_scale : float
        Multiplies every compute / sleep duration.
    collectives : dict or None
        kind -> algorithm name, passed to ``workloads.collectives.expand``.
    syntax : {"auto", "tagged", "untagged"}
        How to read the ambiguous 3-argument ``send <a> <b> <c>``: current SimGrid
        (``<dst> <tag> <count>``) or old (``<dst> <count> <dtype>``).
    elem_bytes : int or None
        Force the default element size (else 8 after ``init <x>``, 1 after ``init``).
    wait_ids : {"auto", "rank", "pid"}
        How ``wait <src> <dst> <tag>`` names the processes: ranks (current SimGrid) or
        SimGrid actor PIDs, rank + 1 (SimGrid 3.21 to 3.26 wrote ``Request::src()`` /
        ``dst()``, which held PIDs). ``auto`` decides from the first wait that only one
        reading fits (the waiting rank must be one of the two ends, PIDs are 1..N), or
        that only one reading matches an outstanding request.
    """

    def __init__(self, nranks=None, compute_rate=1e9, compute_scale=1.0, collectives=None,
                 syntax="auto", elem_bytes=None, wait_ids="auto"):
        self.b = WorkloadBuilder(nranks)
        #: called once the Workload is built (the fast reader frees its scratch pages)
        self.after_build: list = []
        self.nranks = nranks
        self.inv_rate = float(compute_scale) / float(compute_rate)
        self.compute_rate = float(compute_rate)
        self.compute_scale = float(compute_scale)
        self.collectives = dict(collectives or {})
        self.syntax = syntax
        self.elem_bytes = elem_bytes
        self.rank_tok: dict[str, int] = {}
        self.int_tok: dict[str, int] = {}
        self.states: dict[int, _Rank] = {}
        self.counts: dict[str, int] = {}
        self.first_line: dict[int, tuple] = {}
        self.notes: list[str] = []
        self.implicit_waitall = 0
        self.ignored_waits = 0
        self.wait_ids = None if wait_ids == "auto" else wait_ids
        self.wait_ids_how = "given" if self.wait_ids else None
        self.ambiguous_waits = 0
        self.in_bytes: list = []     # datatype ids whose counts SMPI wrote in bytes

    # ------------------------------------------------------------------ helpers
    def _state(self, r: int) -> _Rank:
        st = self.states.get(r)
        if st is None:
            st = self.states[r] = _Rank(self.elem_bytes or 1)
        return st

    def _rank(self, tok: str, fname: str, ln: int) -> int:
        try:
            r = integer(tok, "rank")
        except ArgError:
            raise CcmodInputError(f"bad rank '{tok}'", source=fname, line=ln,
                                  hint="each line is '<rank> <action> <args>'") from None
        if r >= _MAXRANK:
            raise CcmodInputError(f"rank {r} too large", source=fname, line=ln,
                                  hint="ranks are 0..N-1 with N < 2^31")
        if self.nranks is not None and r >= self.nranks:
            raise CcmodInputError(f"rank {r} outside 0..{self.nranks - 1}", source=fname,
                                  line=ln, hint=f"the trace has {self.nranks} ranks")
        self.rank_tok[tok] = r
        self.first_line.setdefault(r, (fname, ln))
        return r

    def _peer(self, tok: str, what: str = "peer rank") -> int:
        v = self.int_tok.get(tok)
        if v is None:
            v = integer(tok, what)
            if v >= 2147483648:
                raise ArgError(f"{what} '{tok}' too large", "must be < 2^31")
            self.int_tok[tok] = v
        return v

    def _tag(self, tok: str) -> int:
        """Tags may be negative (ccmod writes its collectives' internal tags so)."""
        v = self.int_tok.get(tok)
        if v is None:
            try:
                v = int(tok)
            except ValueError:
                raise ArgError(f"bad tag '{tok}'", "tags are integers") from None
            if not -_MAXRANK <= v < _MAXRANK:
                raise ArgError(f"tag '{tok}' out of range", "-2^31 <= tag < 2^31")
            if v >= 0:
                self.int_tok[tok] = v
        return v

    def _error(self, exc, parts, fname, ln) -> CcmodInputError:
        act = parts[1] if len(parts) > 1 else ""
        usage = P2P_USAGE.get(_CANON.get(act, act)) or COLL_USAGE.get(COLL_ALIASES.get(act, ""))
        if isinstance(exc, CcmodInputError):
            if exc.source is None:
                return CcmodInputError(exc.what, source=fname, line=ln, hint=exc.hint)
            return exc
        if isinstance(exc, ArgError):
            return CcmodInputError(f"{exc.what} in '{act}'", source=fname, line=ln,
                                   hint=exc.hint or (f"usage: {usage}" if usage else None))
        if isinstance(exc, IndexError):
            if not act:
                return CcmodInputError("missing action after the rank", source=fname, line=ln,
                                       hint="each line is '<rank> <action> <args>'")
            return CcmodInputError(f"missing argument for '{act}'", source=fname, line=ln,
                                   hint=f"usage: {usage}")
        # ValueError from a fast path: find the offending token the slow way
        for tok in parts[2:]:
            try:
                count(tok, "")
            except ArgError:
                return CcmodInputError(f"bad number '{tok}' in '{act}'", source=fname,
                                       line=ln, hint=f"usage: {usage}")
        return CcmodInputError(f"bad arguments for '{act}'", source=fname, line=ln,
                               hint=f"usage: {usage}")

    def _unknown(self, act, fname, ln):
        close = difflib.get_close_matches(act, VALID_ACTIONS, n=1)
        hint = (f"did you mean '{close[0]}'? " if close else "") + \
            "valid actions: " + ", ".join(VALID_ACTIONS)
        if act.rstrip("0123456789") in ("finalize", "init", "compute", "barrier") and \
                act[-1:].isdigit():
            hint = ("looks like two lines joined: per-rank files without a final newline "
                    "were concatenated; read them through a description file or a folder")
        return CcmodInputError(f"unknown action '{act}'", source=fname, line=ln, hint=hint)

    def prescan(self, lines, fname):
        """Set ``nranks`` from every rank field of a one-file trace (needed by collectives)."""
        seen: dict[int, int] = {}
        for ln, raw in enumerate(lines, 1):
            head = raw.split(None, 1)
            if not head or head[0][0] == "#":
                continue
            try:
                r = int(head[0])
            except ValueError:
                continue  # the main pass reports it with its line
            if r >= 0 and r not in seen:
                seen[r] = ln
        n = max(seen) + 1 if seen else 0
        missing = _missing(seen, n)
        if missing:
            top = max(seen)
            shown = ", ".join(map(str, missing[:5])) + (" ..." if len(missing) > 5 else "")
            raise CcmodInputError(
                f"ranks must be numbered 0..N-1 without gaps: highest rank is {top} but "
                f"rank(s) {shown} have no line", source=fname, line=seen[top],
                hint="fix the rank field, or list per-rank files in a description file")
        self.nranks = n
        self.b.nranks = n

    # ------------------------------------------------------------------ main loop
    def feed(self, lines, fname: str, untagged: bool = False, numbered=None) -> None:
        """Parse the action ``lines`` of file ``fname`` (one file of the trace).

        ``numbered`` (``(line number, text)`` pairs) restricts the pass to those lines;
        ``lines`` is then only read when a collective needs every rank (prescan).
        """
        if self.syntax == "untagged":
            untagged = True
        elif self.syntax == "tagged":
            untagged = False
        b = self.b
        fid = b.file(fname)
        cols = b._cols
        A_r, A_op, A_peer, A_tag = (cols[k].append for k in ("rank", "op", "peer", "tag"))
        A_nb, A_dur, A_req, A_ln, A_fid = (cols[k].append for k in
                                          ("nbytes", "duration_s", "req", "line", "file_id"))
        rank_tok, int_tok, counts, states = self.rank_tok, self.int_tok, self.counts, self.states
        inv_rate = self.inv_rate
        state = self._state
        r = -1
        parts: list[str] = []
        ln = 0
        try:
            for ln, raw in enumerate(lines, 1) if numbered is None else numbered:
                if "#" in raw:
                    raw = raw[:raw.index("#")]
                parts = raw.split()
                if not parts:
                    continue
                r = rank_tok.get(parts[0])
                if r is None:
                    r = self._rank(parts[0], fname, ln)
                act = parts[1]
                counts[act] = counts.get(act, 0) + 1
                if act == "compute":
                    v = float(parts[2])
                    if not 0.0 <= v < _BIG:
                        raise ValueError
                    A_r(r); A_op(OP_COMPUTE); A_peer(-1); A_tag(0); A_nb(0)
                    A_dur(v * inv_rate); A_req(-1); A_ln(ln); A_fid(fid)
                    continue
                op = _SEND.get(act) or _RECV.get(act)
                if op is not None:
                    n = len(parts)
                    peer = int_tok.get(parts[2])
                    if peer is None:
                        peer = self._peer(parts[2])
                    st = states.get(r) or state(r)
                    if n == 3:                       # old recv without size
                        if op != OP_RECV and op != OP_IRECV:
                            raise IndexError
                        tag, cnt, dt = 0, None, None
                    elif n == 4 or (n == 5 and (untagged or not _is_int(parts[3]))):
                        tag, cnt = 0, parts[3]
                        dt = parts[4] if n == 5 else None
                    else:
                        tag = int_tok.get(parts[3])
                        if tag is None:
                            tag = self._tag(parts[3])
                        cnt = parts[4]
                        dt = parts[5] if n > 5 else None
                    if cnt is None:
                        nb = -1
                    else:
                        v = float(cnt)
                        if not 0.0 <= v < _MAXCOUNT:
                            raise ValueError
                        if dt is None:
                            elem = st.elem
                        else:
                            elem = dtype(dt)
                            if dt not in _REPLAYABLE_TOKENS:
                                self.in_bytes.append(dt)
                        nb = int(v * elem + 0.5)
                    if op == OP_SEND or op == OP_RECV:
                        req = -1
                    else:
                        req = st.next_req
                        st.next_req = req + 1
                        is_recv = op == OP_IRECV
                        key = (peer, r, tag) if is_recv else (r, peer, tag)
                        st.outst[req] = (key, is_recv, ln, fid)
                        lst = st.bykey.get(key)
                        if lst is None:
                            st.bykey[key] = [req]
                        else:
                            lst.append(req)
                    A_r(r); A_op(op); A_peer(peer); A_tag(tag); A_nb(nb)
                    A_dur(0.0); A_req(req); A_ln(ln); A_fid(fid)
                    continue
                if act == "wait":
                    st = states.get(r) or state(r)
                    req = self._wait(st, parts, r, fname, ln)
                    if req >= 0:
                        A_r(r); A_op(OP_WAIT); A_peer(-1); A_tag(0); A_nb(0)
                        A_dur(0.0); A_req(req); A_ln(ln); A_fid(fid)
                    continue
                if act == "waitall" or act == "waitAll":
                    st = states.get(r) or state(r)
                    st.outst.clear()
                    st.bykey.clear()
                    A_r(r); A_op(OP_WAITALL); A_peer(-1); A_tag(0); A_nb(0)
                    A_dur(0.0); A_req(-1); A_ln(ln); A_fid(fid)
                    continue
                if act == "barrier" and "barrier" not in self.collectives:
                    st = states.get(r) or state(r)
                    st.coll_seq += 1
                    A_r(r); A_op(OP_BARRIER); A_peer(-1); A_tag(0); A_nb(0)
                    A_dur(0.0); A_req(-1); A_ln(ln); A_fid(fid)
                    continue
                self._other(act, r, parts, lines, fname, fid, ln)
        except (ValueError, IndexError, ArgError, CcmodInputError) as exc:
            raise self._error(exc, parts, fname, ln) from None
        except OverflowError:
            raise self._error(ValueError(), parts, fname, ln) from None

    def _wait_key(self, st: _Rank, parts, r, fname, ln) -> tuple:
        """(src rank, dst rank, tag) named by ``wait``/``test`` fields, ranks or PIDs."""
        a, b, tag = self._peer(parts[2]), self._peer(parts[3]), self._tag(parts[4])
        mode = self.wait_ids
        if mode is None:
            n = self.nranks
            rank_ok = r in (a, b) and (n is None or max(a, b) < n)
            pid_ok = r + 1 in (a, b) and min(a, b) >= 1 and (n is None or max(a, b) <= n)
            if rank_ok != pid_ok:
                mode = "rank" if rank_ok else "pid"
                self.wait_ids, self.wait_ids_how = mode, f"{fname}:{ln}"
            elif rank_ok:
                # both readings fit the fields: the outstanding requests decide
                m_rank = any(q in st.outst for q in st.bykey.get((a, b, tag), ()))
                m_pid = any(q in st.outst for q in st.bykey.get((a - 1, b - 1, tag), ()))
                if m_rank != m_pid:
                    mode = "rank" if m_rank else "pid"
                    self.wait_ids, self.wait_ids_how = mode, f"{fname}:{ln}"
                else:
                    self.ambiguous_waits += 1
                    mode = "rank"
            else:
                mode = "rank"   # fits neither: reported as unmatched below
        return (a - 1, b - 1, tag) if mode == "pid" else (a, b, tag)

    def _wait(self, st: _Rank, parts, r, fname="", ln=0) -> int:
        """Return the request id a ``wait`` line completes (-1: ignore the line)."""
        if len(parts) == 2:
            # Old SimGrid (2013-2014 replay): ``wait`` pops the most recently posted irecv of the
            # rank (a LIFO stack of irecvs; isends are completed only by waitAll/the end).
            for req in reversed(st.outst):
                key, is_recv = st.outst[req][:2]
                if is_recv:
                    del st.outst[req]
                    return req
            raise ArgError("'wait' without arguments but no outstanding irecv",
                           "old-syntax wait completes the latest irecv; use "
                           "'wait <src> <dst> <tag>' for an isend")
        key = self._wait_key(st, parts, r, fname, ln)
        lst = st.bykey.get(key)
        while lst:
            req = lst.pop(0)
            if req in st.outst:
                del st.outst[req]
                return req
        if key in st.tested:
            # SimGrid: a request completed by a successful test leaves nothing to wait
            self.ignored_waits += 1
            return -1
        shown = (f"src={key[0] + 1} dst={key[1] + 1} (PIDs, i.e. ranks {key[0]} and "
                 f"{key[1]})" if self.wait_ids == "pid" else f"src={key[0]} dst={key[1]}")
        how = self.wait_ids_how
        why = ("" if how is None else
               f"; this trace's waits were read as {_WAIT_IDS_TEXT[self.wait_ids]}"
               + ("" if how == "given" else f" (decided at {how})"))
        raise ArgError(f"unmatched wait: no outstanding isend/irecv with {shown} "
                       f"tag={key[2]} on rank {r}",
                       "every wait needs an earlier isend/irecv of the same rank" + why
                       + "; the reader option wait_ids=rank|pid forces a reading")

    def _other(self, act, r, parts, lines, fname, fid, ln):
        """Rare actions: collectives, test, sleep, init and the ignored ones."""
        st = self.states.get(r) or self._state(r)
        name = COLL_ALIASES.get(act)
        if name is not None or act == "barrier":
            self._collective(name or "barrier", st, r, parts, lines, fname, fid, ln)
            return
        if act == "test":
            if len(parts) >= 5:
                st.tested.add(self._wait_key(st, parts, r, fname, ln))
            return
        if act == "amrequest":
            # ccmod extension: blocking active-message request/reply (handlers interrupt
            # compute on the target; see ccmod/handlers.py); handler cost in flops
            if len(parts) < 5:
                raise ArgError("amrequest needs <dst> <bytes> <handler_flops>")
            dst = self._peer(parts[2])
            nb = count(parts[3], "bytes")
            h = count(parts[4], "handler flops")
            self.b.add(r, OP_AMREQUEST, peer=dst, nbytes=int(nb),
                       duration_s=h / self.compute_rate * self.compute_scale, line=ln,
                       file_id=fid)
            return
        if act == "sleep":
            v = count(parts[2], "seconds")
            self.b.add(r, OP_COMPUTE, duration_s=v * self.compute_scale, line=ln, file_id=fid)
            return
        if act == "init":
            if self.elem_bytes is None:
                # SimGrid: 'init' with an argument -> MPI_DOUBLE default type, else MPI_BYTE
                st.elem = 8 if len(parts) > 2 else 1
            return
        if act in IGNORED:
            return
        self.counts[act] -= 1
        raise self._unknown(act, fname, ln)

    def _collective(self, name, st, r, parts, lines, fname, fid, ln):
        if self.nranks is None:
            self.prescan(lines, fname)
        n = self.nranks
        seq = st.coll_seq
        st.coll_seq += 1
        expand = get_expand()
        if name == "barrier":
            kw, comp = {}, 0.0
        else:
            kw, comp = parse_coll(name, parts, n, st.elem, self.in_bytes)
        if "root" in kw and kw["root"] >= n:
            raise ArgError(f"root {kw['root']} outside ranks 0..{n - 1}")
        kind = KIND.get(name, name)
        # default req_base: the collective uses private negative request ids, which never
        # collide with the trace's own (>= 0); its tags are negative too
        expand(self.b, r, n, kind, seq, algorithm=self.collectives.get(kind), line=ln,
               file_id=fid, compute_s=comp * self.inv_rate, **kw)

    # ------------------------------------------------------------------ result
    def finish(self, what: str):
        """Check rank numbering and peers, close open requests, build the Workload."""
        b = self.b
        if not self.first_line:
            raise CcmodInputError("no action lines found", source=what,
                                  hint="a TI line is '<rank> <action> <args>'")
        seen = set(self.rank_tok.values())
        if self.nranks is None:
            n = max(seen) + 1
            missing = _missing(seen, n)
            if missing:
                fname, ln = self.first_line[max(seen)]
                shown = ", ".join(map(str, missing[:5])) + (" ..." if len(missing) > 5 else "")
                raise CcmodInputError(
                    f"ranks must be numbered 0..N-1 without gaps: highest rank is {n - 1} "
                    f"but rank(s) {shown} have no line", source=fname, line=ln,
                    hint="fix the rank field, or list per-rank files in a description file")
            self.nranks = n
        n = self.nranks
        b.nranks = n
        # SimGrid completes the requests still outstanding when a rank's trace ends
        for r, st in sorted(self.states.items()):
            if st.outst:
                _, _, ln, fid = next(reversed(st.outst.values()))
                b.add(r, OP_WAITALL, line=ln, file_id=fid)
                self.implicit_waitall += 1
        w = b.build()
        for release in self.after_build:
            release()
        bad = np.flatnonzero(w.peer >= n)
        if bad.size:
            i = int(bad[0])
            f, ln = w.where(i)
            raise CcmodInputError(f"peer rank {int(w.peer[i])} outside ranks 0..{n - 1}",
                                  source=f, line=ln, hint=f"the trace has {n} ranks")
        counts = {k: v for k, v in sorted(self.counts.items()) if v}
        w.meta.update({
            "format": "ti", "compute_rate": self.compute_rate, "compute_unit": "flops",
            "compute_scale": self.compute_scale, "action_counts": counts,
            "implicit_waitall": self.implicit_waitall, "ignored_waits": self.ignored_waits,
            "collectives": dict(self.collectives),
            "wait_ids": self.wait_ids or "none",
            "counts_in_bytes": len(self.in_bytes),
        })
        if self.wait_ids is not None:
            how = self.wait_ids_how
            self.notes.append(
                f"'wait <src> <dst> <tag>' read with {_WAIT_IDS_TEXT[self.wait_ids]}"
                + (" (forced)" if how == "given" else f", decided at {how}")
                + (f"; {self.ambiguous_waits} earlier wait(s) fitted both readings and were "
                   "read as ranks" if self.ambiguous_waits and self.wait_ids == "pid" else ""))
        if self.in_bytes:
            ids = sorted(set(self.in_bytes), key=int)
            self.notes.append(
                f"{len(self.in_bytes)} count(s) with datatype id(s) {', '.join(ids)} read as "
                "bytes: SMPI writes a count of elements only for the datatypes it replays "
                "(ids 0-6: double, int, char, short, long, float, byte), else count x size")
        if self.implicit_waitall:
            self.notes.append(f"{self.implicit_waitall} rank(s) ended with outstanding "
                              "requests: an OP_WAITALL was appended (as SimGrid does)")
        split = sum(self.counts.get(k, 0) for k in ("comm_split", "comm_dup"))
        if split:
            self.notes.append(f"{split} comm_split/comm_dup line(s) ignored: every collective "
                              "spans all ranks (MPI_COMM_WORLD), as in SimGrid's replay")
        if self.ignored_waits:
            self.notes.append(f"{self.ignored_waits} wait(s) on requests already tested "
                              "were ignored (as SimGrid does)")
        w.meta["notes"] = list(self.notes)
        return w


def _missing(seen, n: int, show: int = 6) -> list[int]:
    """Up to ``show`` ranks of 0..n-1 absent from ``seen`` (cheap even for a huge n)."""
    if len(seen) >= n:
        return []
    return list(itertools.islice((r for r in range(n) if r not in seen), show))


def _is_int(tok: str) -> bool:
    return tok.isdigit() or (tok[:1] == "-" and tok[1:].isdigit())
