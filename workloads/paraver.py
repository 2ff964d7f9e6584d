"""Paraver trace reader (.prv / .prv.gz with .pcf and .row), e.g. Extrae traces.

Mapping
-------
* Ranks: task ``t`` of application ``a`` -> world rank ``offset[a] + t - 1``.
* MPI calls: events of type 50000001..50000099 (Extrae): a non-zero value opens the call
  named by the .pcf (``VALUES`` of that type), value 0 closes it. Thread 1 of each task.
* Messages: communication records (``3:``) give both sides with world task ids, size and
  tag. The send belongs to the call containing the logical send time, the receive to the
  call containing the logical receive time; for MPI_Irecv the physical receive time locates
  the MPI_Wait*/Test* that completes it. MPI_Isend completion is not recorded: its OP_WAIT is
  placed at the next Waitall/Waitsome/Testall/Testsome, or the next MPI_Wait/Waitany that
  completes no receive, else at the end of the trace.
* Compute: time in state 1 (Running) between the end of one MPI call and the start of the
  next (states of thread 1), times ``compute_scale``. Tasks without state records use the
  whole gap.
* Collectives: the collective call's event record carries Extrae's sizes (50100001 sent,
  50100002 received, 50100003 root flag, 50100004 communicator); old traces use ``4:``
  global-operation records. Members of a communicator come from the ``c:`` lines.
"""
from __future__ import annotations

import os
import re
from collections import defaultdict

from ccmod.errors import CcmodInputError
from ccmod.guard import check_declared_ranks, open_gzip_bounded
from ccmod.workloads.assembler import COLLECTIVE_KINDS, TraceAssembler
from ccmod.workloads.paraver_match import (_IRECV, _ISEND, _SENDRECV, _WAIT_ALL, _WAIT_ONE,
                                           CCMOD_COMPLETES, CCMOD_COMPUTE,
                                           CCMOD_NATIVE_BARRIER, CCMOD_POSTS, _attach,
                                           _messages_inside_collectives, exact_seconds)
from ccmod.workloads.reader_input import input_guard, reject_options
from ccmod.workloads.base import OP_IRECV, OP_ISEND
from ccmod.workloads.registry import READERS

_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
_MPI_TYPE_MIN, _MPI_TYPE_MAX = 50000001, 50000099
_GSEND, _GRECV, _GROOT, _GCOMM = 50100001, 50100002, 50100003, 50100004
#: Extrae value ids seen in real .pcf files (used only when no .pcf is found)
_FALLBACK_NAMES = {1: "MPI_Send", 2: "MPI_Recv", 7: "MPI_Bcast", 8: "MPI_Barrier",
                   9: "MPI_Reduce", 10: "MPI_Allreduce", 19: "MPI_Comm_rank",
                   20: "MPI_Comm_size", 22: "MPI_Comm_dup", 25: "MPI_Comm_free",
                   31: "MPI_Init", 32: "MPI_Finalize", 41: "MPI_Sendrecv",
                   43: "MPI_Cart_create"}
#: Dimemas/Paraver global-operation ids of ``4:`` records
_GLOBAL_OPS = {0: "barrier", 1: "bcast", 2: "gather", 3: "gatherv", 4: "scatter",
               5: "scatterv", 6: "allgather", 7: "allgatherv", 8: "alltoall", 9: "alltoallv",
               10: "reduce", 11: "allreduce", 12: "reduce_scatter"}


def _base(path: str) -> str:
    p = os.fspath(path)
    for suf in (".prv.gz", ".prv"):
        if p.endswith(suf):
            return p[: -len(suf)]
    return p


def _open_text(path: str):
    with open(path, "rb") as f:
        magic = f.read(2)
    if magic == b"\x1f\x8b":
        return open_gzip_bounded(path, "rt", encoding="utf-8", errors="strict")
    return open(path, encoding="utf-8", errors="strict")


def read_pcf(path: str) -> tuple[dict[int, dict[int, str]], float | None]:
    """Return ({event type: {value: label}}, time unit in seconds or None) of a .pcf file."""
    names: dict[int, dict[int, str]] = {}
    unit = None
    types: list[int] = []
    mode = None
    with input_guard(path, what="malformed .pcf file"):
        with open(path, encoding="utf-8", errors="replace") as f:
            for raw in f:
                line = raw.strip()
                if not line:
                    if mode == "values":
                        mode, types = None, []
                    continue
                if line == "EVENT_TYPE":
                    mode, types = "types", []
                    continue
                if line == "VALUES":
                    mode = "values" if types else None
                    continue
                if line.startswith("UNITS"):
                    u = line.split()[-1].upper()
                    unit = {"NANOSEC": 1e-9, "MICROSEC": 1e-6, "MILLISEC": 1e-3,
                            "SEC": 1.0}.get(u, unit)
                    continue
                parts = line.split(None, 2)
                if mode == "types" and len(parts) >= 2 and parts[1].isdigit():
                    types.append(int(parts[1]))
                elif mode == "values" and parts and parts[0].lstrip("-").isdigit():
                    label = line.split(None, 1)[1].strip() if len(parts) > 1 else ""
                    for t in types:
                        names.setdefault(t, {})[int(parts[0])] = label
                elif mode == "types" and line.isupper():
                    mode = None
    return names, unit


def _split_top(s: str) -> list[str]:
    """Split on ':' outside parentheses."""
    out, depth, cur = [], 0, []
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == ":" and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return out


def parse_header(line: str, source: str):
    """Return (time unit in s or None, total time, [ntasks per application])."""
    if not line.startswith("#Paraver"):
        raise CcmodInputError("not a Paraver trace (first line must start with '#Paraver')",
                              source=source, line=1)
    close = line.find("):")
    if close < 0:
        raise CcmodInputError("malformed Paraver header (no '(date):')", source=source, line=1)
    toks = _split_top(line[close + 2:].strip())
    m = re.fullmatch(r"(\d+)(?:_(ns|us|ms|s))?", toks[0].strip()) if toks else None
    if m is None or len(toks) < 3:
        raise CcmodInputError(f"malformed Paraver header '{line.strip()[:80]}'",
                              source=source, line=1)
    unit = _UNITS[m.group(2)] if m.group(2) else None
    napp = int(toks[2])
    if napp < 1 or len(toks) < 3 + napp:
        raise CcmodInputError("Paraver header lists fewer applications than it declares",
                              source=source, line=1)
    ntasks = []
    for spec in toks[3:3 + napp]:
        mt = re.match(r"\s*(\d+)\s*\(", spec)
        if mt is None:
            raise CcmodInputError(f"malformed application spec '{spec}' in Paraver header",
                                  source=source, line=1)
        ntasks.append(int(mt.group(1)))
    return unit, int(m.group(1)), ntasks


class _Call:
    __slots__ = ("t0", "t1", "name", "g", "items", "typ", "posts", "done", "exact")

    def __init__(self, t0, name):
        self.t0, self.t1, self.name, self.g, self.items = t0, t0, name, None, []
        self.typ = 0
        self.posts, self.done = [], []        # ccmod's own record indices (1-based)
        self.exact = []                       # ccmod's own exact compute before the call

    def kind(self):
        nm = self.name[4:].lower() if self.name.startswith("MPI_") else self.name.lower()
        return nm


@READERS.register()
class ParaverReader:
    """Paraver .prv/.prv.gz trace (Extrae); MPI call names from the .pcf."""

    name = "paraver"
    description = "Paraver trace (.prv or .prv.gz, with .pcf/.row), e.g. from Extrae"
    extensions = (".prv", ".prv.gz")

    @staticmethod
    def sniff(path) -> bool:
        p = os.fspath(path)
        if not os.path.isfile(p):
            return False
        try:
            with _open_text(p) as f:
                return f.read(8) == "#Paraver"
        except Exception:
            return False

    @staticmethod
    def read(path, *, compute_rate=1e9, compute_scale=1.0, collectives=None,
             collective_messages="auto", **opts):
        """Read a Paraver trace.

        ``collective_messages``: ``"expand"`` decomposes collective calls with
        :mod:`workloads.collectives`; ``"records"`` takes their messages from the
        communication records (tracers such as MPICH-1 era ones record the point-to-point
        messages that implement a collective); ``"auto"`` picks ``records`` when some
        communication record lies inside a collective call, else ``expand``.
        """
        p = os.fspath(path)
        if collective_messages not in ("auto", "records", "expand"):
            raise CcmodInputError(f"collective_messages must be auto, records or expand, not "
                                  f"'{collective_messages}'", source="collective_messages")
        reject_options(opts, "Paraver", p)
        if not os.path.isfile(p):
            raise CcmodInputError("Paraver trace not found", source=p)
        pcf = _base(p) + ".pcf"
        names, pcf_unit = read_pcf(pcf) if os.path.isfile(pcf) else ({}, None)
        state = {"n": 0}
        with input_guard(p, lambda: state["n"] or None, "malformed Paraver trace"):
            with _open_text(p) as f:
                return _convert(f, p, state, names, pcf_unit, os.path.isfile(pcf),
                                compute_scale, collectives, collective_messages)


def _convert(f, path, state, names, pcf_unit, have_pcf, compute_scale, collectives,
             coll_mode):
    header = f.readline()
    state["n"] = 1
    unit, ftime, ntasks = parse_header(header, path)
    offs = [0]
    for k in ntasks:
        offs.append(offs[-1] + k)
    nranks = offs[-1]
    check_declared_ranks(nranks, path, "the header declares")
    notes = []
    if unit is None:
        unit = pcf_unit or 1e-6
        notes.append(f"header has no time unit; using {'the .pcf UNITS' if pcf_unit else 'µs'}")
    calls = [[] for _ in range(nranks)]
    open_call = [dict() for _ in range(nranks)]   # event type -> open call
    running = [[] for _ in range(nranks)]
    has_states = [False] * nranks
    comms: dict[tuple, list[int]] = {}
    grecs = []                   # (rank, time, comm, send, recv, opid) from 4: records
    crecs = []                   # communication records
    unknown_vals = set()
    # event types that delimit MPI calls: per the .pcf (values named MPI_*), else Extrae's
    call_types = ({t for t, v in names.items() if _MPI_TYPE_MIN <= t <= _MPI_TYPE_MAX
                   and any(str(lbl).startswith("MPI_") for lbl in v.values())}
                  if have_pcf else set(range(_MPI_TYPE_MIN, _MPI_TYPE_MIN + 5)))

    rank_cache: dict[tuple, int] = {}

    def rank_of(appl, task, ln):
        r = rank_cache.get((appl, task))
        if r is not None:
            return r
        a, t = int(appl), int(task)
        if not (1 <= a <= len(ntasks) and 1 <= t <= ntasks[a - 1]):
            raise CcmodInputError(f"record refers to application {a} task {t}, not in the "
                                  "header", source=path, line=ln)
        r = rank_cache[(appl, task)] = offs[a - 1] + t - 1
        return r

    # event types compared as strings: most event pairs (hardware counters) are skipped
    # without converting them to integers
    call_s = {str(t): t for t in call_types}
    glob_s = {str(t): t for t in range(_GSEND, _GCOMM + 1)}
    own_s = {str(CCMOD_POSTS): "posts", str(CCMOD_COMPLETES): "done",
             str(CCMOD_COMPUTE): "exact"}
    native_barrier = own_output = False     # ccmod's own output (private event types)

    for raw in f:
        state["n"] += 1
        ln = state["n"]
        if not raw or raw[0] == "#" or raw == "\n":
            continue
        kind = raw[0]
        if kind == "1":
            x = raw.split(":")
            if len(x) < 8:
                raise CcmodInputError("state record needs 8 fields", source=path, line=ln)
            if x[4] != "1":
                continue
            r = rank_of(x[2], x[3], ln)
            has_states[r] = True
            if int(x[7]) == 1:
                running[r].append((int(x[5]), int(x[6])))
        elif kind == "2":
            x = raw.split(":")
            if len(x) < 8 or len(x) % 2:
                raise CcmodInputError("event record needs type:value pairs", source=path,
                                      line=ln)
            if x[4] != "1":
                continue
            r = rank_of(x[2], x[3], ln)
            t = int(x[5])
            g = None
            begun = None
            for i in range(6, len(x) - 1, 2):
                ts = x[i]
                if ts in call_s:
                    typ, val = call_s[ts], int(x[i + 1])
                    # Paraver semantics: an event sets the current value of its type;
                    # a new non-zero value starts a new call, 0 ends it
                    c = open_call[r].pop(typ, None)
                    if c is not None:
                        c.t1 = t
                    if val == 0:
                        continue
                    label = names.get(typ, {}).get(val) or (
                        None if have_pcf else _FALLBACK_NAMES.get(val))
                    if label is None:
                        unknown_vals.add((typ, val))
                        label = f"MPI_unknown_{typ}_{val}"
                    c = _Call(t, label)
                    c.typ = typ
                    calls[r].append(c)
                    open_call[r][typ] = begun = c
                elif ts in glob_s:
                    g = g or {}
                    g[glob_s[ts]] = int(x[i + 1])
                elif ts in own_s and begun is not None:
                    getattr(begun, own_s[ts]).append(int(x[i + 1]))
                    own_output = True
                elif ts == str(CCMOD_NATIVE_BARRIER):
                    native_barrier = True
            if g is not None and begun is not None:
                begun.g = g
        elif kind == "3":
            x = raw.split(":")
            if len(x) < 15:
                raise CcmodInputError("communication record needs 15 fields", source=path,
                                      line=ln)
            rs, rr = rank_of(x[2], x[3], ln), rank_of(x[8], x[9], ln)
            crecs.append((rs, int(x[5]), rr, int(x[11]), int(x[12]), int(x[13]),
                          int(x[14]), ln))
        elif kind == "4":
            x = raw.split(":")
            if len(x) < 10:
                raise CcmodInputError("global operation record needs 10 fields", source=path,
                                      line=ln)
            grecs.append((rank_of(x[2], x[3], ln), int(x[5]), int(x[6]), int(x[7]),
                          int(x[8]), int(x[9])))
        elif kind == "c":
            x = raw.strip().split(":")
            if len(x) < 4:
                raise CcmodInputError("communicator record needs c:appl:id:n:tasks...",
                                      source=path, line=ln)
            a, cid, k = int(x[1]), int(x[2]), int(x[3])
            tasks = [int(v) for v in x[4:4 + k]]
            if all(1 <= v <= ntasks[a - 1] for v in tasks) and len(tasks) == k:
                comms[(a, cid)] = [offs[a - 1] + v - 1 for v in tasks]
        elif kind in "0123456789":
            raise CcmodInputError(f"unknown Paraver record type '{raw.split(':', 1)[0]}'",
                                  source=path, line=ln)
    for r in range(nranks):
        for c in open_call[r].values():   # never closed: zero length at its start
            c.t1 = c.t0
        calls[r].sort(key=lambda c: c.t0)
    if native_barrier:
        # ccmod's own output: its barriers were pure synchronisations (OP_BARRIER)
        collectives = {"barrier": "native", **(collectives or {})}
    asm = TraceAssembler(nranks, "paraver", compute_scale=compute_scale,
                         collectives=collectives)
    fid = asm.file(path)
    asm.traced.bounds(0.0, ftime * unit)        # the header's total trace time
    waited = _attach(calls, crecs, grecs, asm)
    inside = _messages_inside_collectives(calls)
    if coll_mode == "auto":
        coll_mode = "records" if inside else "expand"
        if inside:
            asm.note(f"{inside} message end(s) lie inside collective calls: the tracer recorded "
                     "the messages implementing the collectives, so they are replayed as "
                     "recorded and collectives are not decomposed (collective_messages=records)")
    world = list(range(nranks))
    for r in range(nranks):
        _emit_rank(asm, r, calls[r], running[r] if has_states[r] else None, unit, comms,
                   world, fid, waited, coll_mode == "records")
    for note in notes:
        asm.note(note)
    if unknown_vals:
        asm.note(f"{len(unknown_vals)} MPI event value(s) have no name in the .pcf; their "
                 "calls are treated as blocking point-to-point")
    from ccmod.workloads.placement import paraver_placement
    toks = _split_top(header[header.find("):") + 2:].strip())
    placed = paraver_placement(toks[3:3 + len(ntasks)], _base(path), numbered=own_output)
    if placed is not None:
        asm.meta["placement"] = placed
    return asm.build(time_unit_s=unit, clock_resolution_s=unit, communication_records=len(crecs),
                     applications=len(ntasks), pcf=have_pcf, collective_messages=coll_mode)


def _running_between(run, k, a, b):
    """Sum of running time in (a, b); ``k`` = first interval index that may overlap."""
    tot = 0
    n = len(run)
    while k < n and run[k][1] <= a:
        k += 1
    j = k
    while j < n and run[j][0] < b:
        lo, hi = max(run[j][0], a), min(run[j][1], b)
        if hi > lo:
            tot += hi - lo
        j += 1
    return tot, k


def _emit_rank(asm, r, cl, run, unit, comms, world, fid, waited, from_records):
    if run is not None:
        run.sort()
    k = 0
    last = None
    out_isends: list = []          # handles of isends whose completion is not recorded
    completed_here = set()
    for c in cl:
        asm.traced.call(r, c.t0 * unit, c.t1 * unit, c.name)
        asm.call_span(r, c.t0 * unit, c.t1 * unit)   # per-message times (msgtimes)
        if c.exact:
            # ccmod's own output: the compute records before this call, exactly (not
            # rounded to the trace's ns)
            for v in c.exact:
                asm.compute(r, exact_seconds(v))
        elif last is not None and c.t0 > last:
            if run is None:
                gap = c.t0 - last
            else:
                gap, k = _running_between(run, k, last, c.t0)
            if gap > 0:
                asm.compute(r, gap * unit)
        last = c.t1 if last is None else max(c.t1, last)
        t_s = c.t0 * unit
        nm = c.name[4:].lower() if c.name.startswith("MPI_") else c.name.lower()
        items = sorted(c.items, key=lambda it: (it[0], it[1]))
        kind = COLLECTIVE_KINDS.get(nm)
        if kind is not None or (c.g is not None and "op" in c.g and not items):
            if from_records:
                asm.count("collectives_from_records")
            else:
                _collective(asm, r, c, kind, comms, world, fid, t_s)
                continue
        sr = []
        for (t, typ, peer, size, tag, idx, ln) in items:
            if typ == "s":
                if nm in _ISEND:
                    h = ("s", idx)
                    asm.post(r, OP_ISEND, peer, size, tag, h, line=ln, fid=fid, t_s=t * unit)
                    out_isends.append(h)
                elif nm in _SENDRECV:
                    sr.append((OP_ISEND, peer, size, tag, ("s", idx), ln))
                else:
                    asm.send(r, peer, size, tag, line=ln, fid=fid, t_s=t * unit)
            elif typ == "r":
                if nm in _IRECV:
                    asm.post(r, OP_IRECV, peer, size, tag, ("r", idx), line=ln, fid=fid,
                             t_s=t * unit)
                elif nm in _SENDRECV:
                    sr.append((OP_IRECV, peer, size, tag, ("r", idx), ln))
                else:
                    asm.recv(r, peer, size, tag, line=ln, fid=fid, t_s=t * unit)
            else:
                asm.complete(r, ("r", idx), line=ln, fid=fid, t_s=t * unit)
                completed_here.add(id(c))
        for op, peer, size, tag, h, ln in sr:
            asm.post(r, op, peer, size, tag, h, line=ln, fid=fid, t_s=t_s)
        for *_x, h, ln in sr:
            asm.complete(r, h, line=ln, fid=fid, t_s=t_s)
        # irecvs whose completion is inside the Irecv call itself (or unknown)
        if nm in _IRECV:
            for (_t, typ, _p, _s, _tg, idx, ln) in items:
                if typ == "r" and idx not in waited:
                    asm.complete(r, ("r", idx), line=ln, fid=fid, t_s=t_s)
        # ccmod's own output names the isends a wait completes
        for h in [("s", i - 1) for i in c.done if ("s", i - 1) in out_isends]:
            asm.complete(r, h, fid=fid, t_s=t_s)
            out_isends.remove(h)
            completed_here.add(id(c))
        if out_isends and nm in _WAIT_ALL:
            for h in out_isends:
                asm.complete(r, h, fid=fid, t_s=t_s)
            out_isends = []
        elif out_isends and nm in _WAIT_ONE and id(c) not in completed_here:
            asm.complete(r, out_isends.pop(0), fid=fid, t_s=t_s)
        if nm == "finalize" and out_isends:
            for h in out_isends:
                asm.complete(r, h, fid=fid, t_s=t_s)
            out_isends = []
    for h in out_isends:
        asm.complete(r, h, fid=fid)
    if out_isends:
        asm.note("isends never followed by a wait call were completed at the end of the rank")


def _collective(asm, r, c, kind, comms, world, fid, t_s):
    g = c.g or {}
    if kind is None:
        kind = _GLOBAL_OPS.get(g.get("op"))
        if kind is None:
            asm.count("unsupported_collectives")
            return
    snd, rcv = int(g.get(_GSEND, 0)), int(g.get(_GRECV, 0))
    comm = g.get(_GCOMM)
    if comm is None:
        mem = world
    else:
        mem = comms.get((1, comm))
        if mem is None:
            mem = next((m for (a, cid), m in comms.items() if cid == comm), None)
    if asm.unmapped_collective(mem, r, "without a 'c:' definition"):
        return
    local = mem.index(r)
    kw = {}
    if kind == "bcast":
        kw["nbytes"] = max(snd, rcv)
    elif kind in ("scatter", "scatterv", "reduce_scatter"):
        kw["nbytes"] = rcv
        kw["recv_nbytes"] = rcv
    else:
        kw["nbytes"] = snd if snd > 0 else rcv
    asm.collective(r, kind, ("comm", comm), mem, local, root=-1,
                   is_root=bool(g.get(_GROOT)), sent_total=snd, recv_total=rcv, fid=fid,
                   t_s=t_s, **kw)
