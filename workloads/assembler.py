"""Trace assembly for the real-trace readers (OTF2, DUMPI, Paraver, liballprof).

Readers translate their format into *timed MPI calls per rank*; :class:`TraceAssembler`
turns those into a runnable :class:`~workloads.base.Workload`:

* compute = measured time between the end of one MPI call and the start of the next
  (times ``compute_scale``);
* point-to-point calls become OP_SEND/OP_RECV/OP_ISEND/OP_IRECV/OP_WAIT with request ids
  that are unique per rank (trace request handles are often recycled);
* collectives are collected per communicator instance and decomposed at the end with
  :func:`workloads.collectives.expand`, so that ``v``-variants can use the byte counts
  recorded by *every* member and sub-communicators are translated to world ranks;
* wildcard receives (ANY_SOURCE/ANY_TAG) are resolved against the recorded sends;
* messages that cannot be mapped (unknown communicator member, unmatched send or receive)
  are dropped on both sides so the workload stays runnable, and are counted in
  ``meta["unmapped_messages"]`` with an explanatory note.
"""
from __future__ import annotations

from collections import defaultdict

from ccmod.errors import CcmodInputError
from ccmod.workloads.base import (OP_IRECV, OP_ISEND, OP_RECV, OP_SEND, OP_WAIT, OP_WAITALL,
                            WorkloadBuilder)

#: MPI wildcard marker used by the readers for ANY_SOURCE / ANY_TAG
ANY = -1
#: collectives whose members must all pass the same count
_SAME_COUNT = frozenset({"bcast", "reduce", "allreduce", "allgather", "alltoall"})
_P2P, _COMPUTE, _COLL = 0, 1, 2

#: MPI call name (lower case, without ``mpi_``) -> collectives.expand kind
COLLECTIVE_KINDS = {
    "barrier": "barrier", "bcast": "bcast", "reduce": "reduce", "allreduce": "allreduce",
    "gather": "gather", "gatherv": "gatherv", "scatter": "scatter", "scatterv": "scatterv",
    "allgather": "allgather", "allgatherv": "allgatherv", "alltoall": "alltoall",
    "alltoallv": "alltoallv", "reduce_scatter": "reduce_scatter",
    "reduce_scatter_block": "reduce_scatter",
}

class _CommProxy:
    """Builder facade for :func:`collectives.expand` on a sub-communicator.

    expand() works in communicator-local ranks; this proxy translates the rank and the peer
    of every op to world ranks before appending it to the real builder.
    """

    def __init__(self, builder: WorkloadBuilder, members):
        self.b, self.m = builder, members

    def add(self, rank, op, peer=-1, nbytes=0, duration_s=0.0, tag=0, req=-1, line=0,
            file_id=0):
        self.b.add(self.m[rank], op, self.m[peer] if peer >= 0 else peer, nbytes, duration_s,
                   tag, req, line, file_id)

    def compute(self, rank, duration_s, **kw):
        self.b.compute(self.m[rank], duration_s, **kw)

    def send(self, rank, dst, nbytes, tag=0, **kw):
        self.add(rank, OP_SEND, dst, int(nbytes), tag=tag, **kw)

    def recv(self, rank, src, nbytes=-1, tag=0, **kw):
        self.add(rank, OP_RECV, src, int(nbytes), tag=tag, **kw)

    def isend(self, rank, dst, nbytes, req, tag=0, **kw):
        self.add(rank, OP_ISEND, dst, int(nbytes), tag=tag, req=req, **kw)

    def irecv(self, rank, src, req, nbytes=-1, tag=0, **kw):
        self.add(rank, OP_IRECV, src, int(nbytes), tag=tag, req=req, **kw)

    def wait(self, rank, req, **kw):
        self.add(rank, OP_WAIT, req=req, **kw)

    def waitall(self, rank, **kw):  # pragma: no cover - expand never emits it
        self.add(rank, OP_WAITALL, **kw)

    def barrier(self, rank, **kw):  # pragma: no cover - sub-comm barriers use dissemination
        raise CcmodInputError("a barrier on a sub-communicator cannot be a native barrier")


class CollInstance:
    """One collective call on one communicator, seen by all its members."""

    __slots__ = ("kind", "members", "size", "parts", "gid", "agreed")

    def __init__(self, kind, members, size):
        self.kind, self.members, self.size = kind, members, size
        self.parts: dict[int, dict] = {}   # local rank -> info recorded by that member
        self.gid = -1
        self.agreed = None                 # the count all members use (_agreed_nbytes)


class TraceAssembler:
    """Collect timed MPI calls per rank and compile them to a Workload.

    Parameters
    ----------
    nranks : int
    fmt : str
        Format name stored in ``meta["format"]``.
    compute_scale : float
        Multiplies every measured compute gap.
    collectives : dict, optional
        kind -> algorithm name for :func:`collectives.expand`.
    """

    def __init__(self, nranks: int, fmt: str, *, compute_scale: float = 1.0,
                 collectives: dict | None = None):
        if nranks < 1:
            raise CcmodInputError(f"{fmt} trace has no MPI ranks")
        self.nranks, self.fmt = int(nranks), fmt
        self.scale = float(compute_scale)
        if not self.scale >= 0:
            raise CcmodInputError(f"compute_scale must be >= 0, got {compute_scale}",
                                  source="compute_scale")
        self.algs = dict(collectives or {})
        self.files: list[str] = []
        self._fid: dict[str, int] = {}
        self.ops = [[] for _ in range(self.nranks)]
        self.last_exit = [None] * self.nranks
        self.next_req = [0] * self.nranks
        self.active = [dict() for _ in range(self.nranks)]   # trace request -> entry|None
        self.colls: dict[tuple, list[CollInstance]] = {}
        self.coll_count: dict[tuple, int] = defaultdict(int)
        self.stats: dict[str, int] = defaultdict(int)
        self.notes: list[str] = []
        self.meta: dict = {"format": fmt}
        from ccmod.workloads.measured import TracedTime
        self.traced = TracedTime(self.nranks)   # measured window and MPI time (meta)
        # the MPI call each rank is in: its start time until a message record needs it, then
        # a [t_start, t_end] list shared by the call's entries (its end is filled in when
        # the call returns), or a (t_start, t_end) tuple when the reader knows both ends;
        # made lazily so calls without messages cost nothing
        self._call: list = [None] * self.nranks
        self._pairs: list = []                  # matched (src, send entry, recv entry)

    # -- bookkeeping --------------------------------------------------------------------
    def file(self, name: str) -> int:
        if name not in self._fid:
            self._fid[name] = len(self.files)
            self.files.append(name)
        return self._fid[name]

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def count(self, key: str, n: int = 1) -> None:
        self.stats[key] += n

    def unmapped_collective(self, members, rank: int, why: str) -> bool:
        """True when ``rank`` is not among the known ``members`` of a collective's
        communicator: the call is then skipped, counted as ``unmapped_collectives`` and
        explained once (``collectives on communicators <why> were skipped``)."""
        if members is not None and rank in members:
            return False
        self.count("unmapped_collectives")
        self.note(f"collectives on communicators {why} were skipped (unmapped_collectives)")
        return True

    # -- time ---------------------------------------------------------------------------
    def mpi_enter(self, rank: int, t_s: float, line: int = 0, fid: int = 0,
                  name: str | None = None) -> None:
        """Start of an MPI call: the time since the previous call's end is compute.

        ``name`` (e.g. ``MPI_Init``) lets the measured time keep MPI_Init/MPI_Finalize
        apart, since they are not replayed."""
        self.traced.enter(rank, t_s, name)
        self._call[rank] = t_s
        last = self.last_exit[rank]
        if last is not None:
            gap = t_s - last
            if gap > 0:
                self.ops[rank].append([_COMPUTE, gap * self.scale, line, fid])
            elif gap < 0:
                self.count("negative_gaps")

    def compute(self, rank: int, seconds: float, line: int = 0, fid: int = 0) -> None:
        """Measured compute of ``seconds`` (scaled by ``compute_scale``)."""
        if seconds > 0:
            self.ops[rank].append([_COMPUTE, seconds * self.scale, line, fid])

    def mpi_leave(self, rank: int, t_s: float) -> None:
        self.traced.leave(rank, t_s)
        self.last_exit[rank] = t_s
        c = self._call[rank]
        if isinstance(c, list):
            c[1] = t_s
        self._call[rank] = None

    def call_span(self, rank: int, t0_s: float, t1_s: float) -> None:
        """The MPI call whose records follow runs from ``t0_s`` to ``t1_s`` (for readers
        that know a call's both ends up front instead of calling mpi_enter/mpi_leave)."""
        self._call[rank] = (t0_s, t1_s)

    def _window(self, rank, t_s):
        c = self._call[rank]
        if c is None:                 # a record outside any call: its own time
            return (t_s, t_s)
        if not isinstance(c, (list, tuple)):
            c = self._call[rank] = [c, c]
        return c

    # -- point to point -----------------------------------------------------------------
    def _p2p(self, rank, op, peer, nbytes, tag, req, line, fid, t_s):
        # [.., t_s, posting call window, completing call window (known for blocking ops)]
        win = self._window(rank, t_s)
        e = [_P2P, op, peer, int(nbytes), int(tag), req, line, fid, t_s, win,
             win if op in (OP_SEND, OP_RECV) else None]
        self.ops[rank].append(e)
        return e

    def send(self, rank, dst, nbytes, tag=0, *, line=0, fid=0, t_s=0.0):
        """Blocking send; ``dst=None`` = unmappable (counted, nothing emitted)."""
        if dst is None:
            self.count("unmapped_sends")
            return None
        return self._p2p(rank, OP_SEND, dst, nbytes, tag, -1, line, fid, t_s)

    def recv(self, rank, src, nbytes=-1, tag=0, *, line=0, fid=0, t_s=0.0):
        if src is None:
            self.count("unmapped_recvs")
            return None
        return self._p2p(rank, OP_RECV, src, nbytes, tag, -1, line, fid, t_s)

    def _new_req(self, rank):
        r = self.next_req[rank]
        self.next_req[rank] = r + 1
        return r

    def post(self, rank, op, peer, nbytes, tag, trace_req, *, line=0, fid=0, t_s=0.0):
        """Post an isend (op=OP_ISEND) or irecv (OP_IRECV) under the trace's request handle.

        ``peer=None`` = unmappable: nothing is emitted, but the handle is remembered so that
        its completion is dropped too. Returns the entry (mutable, for late-filled irecvs).
        """
        act = self.active[rank]
        if trace_req in act and act[trace_req] is not None:
            self.count("requests_never_completed")
        if peer is None:
            self.count("unmapped_sends" if op == OP_ISEND else "unmapped_recvs")
            act[trace_req] = None
            return None
        e = self._p2p(rank, op, peer, nbytes, tag, self._new_req(rank), line, fid, t_s)
        act[trace_req] = e
        return e

    def pending(self, rank, trace_req):
        """The posted, not yet completed entry of ``trace_req`` (None if unknown/dropped)."""
        return self.active[rank].get(trace_req)

    def complete(self, rank, trace_req, *, line=0, fid=0, t_s=0.0) -> bool:
        """Completion of a request (Wait/Test...): OP_WAIT on its id. Unknown handles are
        counted (``meta["unknown_requests"]``) and ignored."""
        act = self.active[rank]
        if trace_req not in act:
            self.count("unknown_requests")
            return False
        e = act.pop(trace_req)
        if e is None:
            return False
        win = self._window(rank, t_s)
        e[10] = win
        self.ops[rank].append([_P2P, OP_WAIT, -1, 0, 0, e[5], line, fid, t_s, win, win])
        return True

    def drop_request(self, rank, trace_req, reason="cancelled_requests") -> None:
        """Forget a posted request that never transfers a message (e.g. cancelled)."""
        e = self.active[rank].pop(trace_req, None)
        if e is not None:
            ops = self.ops[rank]
            for i in range(len(ops) - 1, -1, -1):
                if ops[i] is e:
                    del ops[i]
                    break
            self.count(reason)

    def outstanding(self, rank):
        """Trace handles posted on ``rank`` and not completed yet (posting order)."""
        return list(self.active[rank])

    # -- collectives --------------------------------------------------------------------
    def collective(self, rank, kind, comm_key, members, local_rank, *, root=0, nbytes=0,
                   recv_nbytes=None, send_counts=None, recv_counts=None, sent_total=None,
                   recv_total=None, is_root=False, line=0, fid=0, t_s=0.0):
        """Record rank's part of a collective call on communicator ``comm_key``.

        ``members`` lists the world ranks of the communicator (local rank order); the k-th
        call on a communicator is the same instance on all members (MPI ordering rule).
        ``sent_total``/``recv_total`` (bytes) let missing v-variant counts be filled from
        the other members' records.
        """
        key = (comm_key, tuple(members))
        idx = self.coll_count[(key, rank)]
        self.coll_count[(key, rank)] = idx + 1
        insts = self.colls.setdefault(key, [])
        while len(insts) <= idx:
            insts.append(CollInstance(kind, list(members), len(members)))
        inst = insts[idx]
        if inst.kind != kind:
            self.count("collective_kind_mismatch")
            self.note("collective calls differ between members of one communicator "
                      "(mismatched instances are dropped)")
            inst.kind = None
        inst.parts[local_rank] = dict(root=root, nbytes=nbytes, recv_nbytes=recv_nbytes,
                                      send_counts=send_counts, recv_counts=recv_counts,
                                      sent_total=sent_total, recv_total=recv_total,
                                      is_root=bool(is_root))
        self.ops[rank].append([_COLL, inst, local_rank, line, fid, t_s])

    # -- compile ------------------------------------------------------------------------
    def build(self, **meta):
        """Resolve wildcards, balance channels, expand collectives; return the Workload."""
        from ccmod.workloads import collectives as C

        self._resolve_wildcards()
        self._balance()
        b = WorkloadBuilder(self.nranks)
        for f in self.files:
            b.file(f)
        gid = 0
        for r in range(self.nranks):
            for e in self.ops[r]:
                if e[0] == _COLL and e[1].gid < 0 and self._complete(e[1]):
                    e[1].gid = gid
                    gid += 1
        n_coll = 0
        for r in range(self.nranks):
            for e in self.ops[r]:
                kind = e[0]
                if kind == _P2P:
                    _, op, peer, nbytes, tag, req, line, fid = e[:8]
                    b.add(r, op, peer, nbytes, 0.0, tag, req, line, fid)
                elif kind == _COMPUTE:
                    b.add(r, 0, -1, 0, e[1], 0, -1, e[2], e[3])
                else:
                    inst, local = e[1], e[2]
                    if inst.gid < 0:
                        continue
                    self._expand(C, b, inst, local, e[3], e[4])
                    n_coll += 1
        incomplete = sum(1 for insts in self.colls.values() for i in insts if i.gid < 0)
        if incomplete:
            self.stats["incomplete_collectives"] = incomplete
            self.note(f"{incomplete} collective call(s) not recorded by every member of their "
                      "communicator (truncated trace or unknown members) were dropped")
        b.meta.update(self.meta)
        b.meta.update(meta)
        b.meta["nranks"] = self.nranks
        b.meta["collective_calls"] = n_coll
        st = self.stats
        unm = max(st.get("unmapped_sends", 0), st.get("unmapped_recvs", 0))
        # a lost message shows as an unmapped or unmatched end on each side it was traced
        b.meta["unmapped_messages"] = int(max(
            st.get("unmapped_sends", 0) + st.get("unmatched_sends", 0),
            st.get("unmapped_recvs", 0) + st.get("unmatched_recvs", 0)))
        for k, v in sorted(self.stats.items()):
            b.meta[k] = int(v)
        if unm:
            self.note(f"{unm} message(s) could not be mapped to world ranks and were dropped on "
                      "both sides (see unmapped_sends/unmapped_recvs)")
        b.meta["notes"] = list(self.notes)
        measured = self.traced.summary()
        if measured is not None:
            b.meta["measured"] = measured
        w = b.build()
        w.message_times = self._message_times()
        return w

    def _message_times(self):
        """Measured call times of every matched message (workloads.msgtimes)."""
        from ccmod.workloads.msgtimes import MessageTimes
        nan = float("nan")
        rows = []
        for src, se, re_ in self._pairs:
            done = re_[10]
            rows.append((src, se[2], se[3], se[9][0], re_[9][0],
                         nan if done is None else done[0], nan if done is None else done[1]))
        return MessageTimes.from_rows(rows)

    @staticmethod
    def _complete(inst: CollInstance) -> bool:
        return inst.kind is not None and len(inst.parts) == inst.size

    def _expand(self, C, b, inst, local, line, fid):
        k, p = inst.kind, inst.size
        part = inst.parts[local]
        parts = [inst.parts[i] for i in range(p)]
        flagged = [i for i, q in enumerate(parts) if q["is_root"]]
        root = flagged[0] if flagged else int(part["root"])
        if not 0 <= root < p and k in ("bcast", "scatter", "scatterv", "reduce", "gather",
                                       "gatherv"):
            # root not recorded: the member that sends (bcast/scatter) or receives the data
            side = "sent_total" if k in ("bcast", "scatter", "scatterv") else "recv_total"
            root = next((i for i, q in enumerate(parts) if (q[side] or 0) > 0), 0)
        nbytes = part["nbytes"]
        if k in _SAME_COUNT:
            # MPI requires every member to pass the same count: a trace that disagrees
            # (corrupt or erroneous) gets one size for all, or its sends and receives
            # would not pair up (the root's, else the most common one)
            nbytes = self._agreed_nbytes(inst, parts, root if k in ("bcast", "reduce") else -1)
        kw = dict(nbytes=max(int(nbytes or 0), 0), recv_nbytes=part["recv_nbytes"],
                  send_counts=part["send_counts"], recv_counts=part["recv_counts"],
                  root=root if 0 <= root < p else 0)
        if k == "gatherv" and kw["recv_counts"] is None:
            kw["recv_counts"] = [int(q["nbytes"] or 0) for q in parts]
        elif k == "scatterv" and kw["send_counts"] is None:
            kw["send_counts"] = [int(q["recv_nbytes"] if q["recv_nbytes"] is not None
                                     else q["nbytes"] or 0) for q in parts]
        elif k == "allgatherv" and kw["recv_counts"] is None:
            kw["recv_counts"] = [int(q["nbytes"] or 0) for q in parts]
        elif k == "reduce_scatter" and kw["recv_counts"] is None:
            kw["recv_counts"] = [int(q["recv_nbytes"] if q["recv_nbytes"] is not None
                                     else q["nbytes"] or 0) for q in parts]
        elif k == "alltoallv":
            if kw["send_counts"] is None:  # only totals known: spread evenly (documented)
                kw["send_counts"] = [int(part["sent_total"] or 0) // p] * p
                self.count("alltoallv_uniform_approx")
            if kw["recv_counts"] is None:
                kw["recv_counts"] = [
                    int(q["send_counts"][local]) if q["send_counts"] is not None
                    else int(q["sent_total"] or 0) // p for q in parts]
        alg = self.algs.get(k)
        world = inst.members == list(range(self.nranks))
        target = b if world else _CommProxy(b, inst.members)
        if k == "barrier" and not world and alg == "native":
            alg = "dissemination"
        C.expand(target, local, p, k, inst.gid, algorithm=alg, line=line, file_id=fid, **kw)

    def _agreed_nbytes(self, inst, parts, root):
        if inst.agreed is None:
            sizes = [int(q["nbytes"] or 0) for q in parts]
            if 0 <= root < len(sizes):
                inst.agreed = sizes[root]
            else:   # most common size; ties go to the larger
                inst.agreed = max(set(sizes), key=lambda v: (sizes.count(v), v))
            if any(v != inst.agreed for v in sizes):
                self.count("collective_size_mismatch")
                self.note("members of a collective call passed different counts (an "
                          "erroneous or corrupt trace): all use the root's or the most "
                          "common size (collective_size_mismatch)")
        return inst.agreed

    # -- wildcard receives and channel balance ------------------------------------------
    def _resolve_wildcards(self):
        """Give ANY_SOURCE/ANY_TAG receives the source/tag of the send they would match.

        Receives of a rank are processed in posting order; each takes the earliest (by
        trace time) unclaimed send addressed to it that fits its source/tag filter. Explicit
        receives on a channel take that channel's sends in FIFO order, as MPI does.
        """
        if not any(e[0] == _P2P and e[1] in (OP_RECV, OP_IRECV) and ANY in (e[2], e[4])
                   for ops in self.ops for e in ops):
            return
        inbox = defaultdict(list)   # dst -> [send entries in (time, src, order)]
        for s, ops in enumerate(self.ops):
            for i, e in enumerate(ops):
                if e[0] == _P2P and e[1] in (OP_SEND, OP_ISEND):
                    inbox[e[2]].append((e[8], s, i, e))
        n_wild = 0
        for r, ops in enumerate(self.ops):
            cand = sorted(inbox.get(r, ()), key=lambda x: (x[0], x[1], x[2]))
            taken = [False] * len(cand)
            by_src = defaultdict(list)          # src -> candidate indices (time order)
            for j, (_t, s, _i, _se) in enumerate(cand):
                by_src[s].append(j)
            head = {s: 0 for s in by_src}
            first = 0
            for e in ops:
                if e[0] != _P2P or e[1] not in (OP_RECV, OP_IRECV):
                    continue
                src, tag = e[2], e[4]
                if src != ANY:
                    idxs = by_src.get(src, ())
                    k = head.get(src, 0)
                    while k < len(idxs) and taken[idxs[k]]:
                        k += 1
                    head[src] = k
                    seq = (idxs[m] for m in range(k, len(idxs)))
                else:
                    while first < len(cand) and taken[first]:
                        first += 1
                    seq = range(first, len(cand))
                for j in seq:
                    if taken[j] or (tag != ANY and cand[j][3][4] != tag):
                        continue
                    taken[j] = True
                    if src == ANY or tag == ANY:
                        e[2], e[4] = cand[j][1], cand[j][3][4]
                        n_wild += 1
                    break
        if n_wild:
            self.stats["wildcard_receives_resolved"] = n_wild
            self.note("ANY_SOURCE/ANY_TAG receives were given the source and tag of the "
                      "earliest (by trace time) unclaimed send to that rank")

    def _balance(self):
        """Drop unmatched sends/receives (FIFO per channel) and give receives the size of
        the send they match; count both. Keeps the workload free of orphan messages."""
        sends, recvs = defaultdict(list), defaultdict(list)
        for r, ops in enumerate(self.ops):
            for e in ops:
                if e[0] != _P2P:
                    continue
                if e[1] in (OP_SEND, OP_ISEND):
                    sends[(r, e[2], e[4])].append(e)
                elif e[1] in (OP_RECV, OP_IRECV):
                    if e[2] == ANY or e[4] == ANY:
                        recvs[("wild", r)].append(e)
                    else:
                        recvs[(e[2], r, e[4])].append(e)
        drop = set()
        mism = 0
        for ch in set(sends) | set(recvs):
            ss, rr = sends.get(ch, []), recvs.get(ch, [])
            for se, re_ in zip(ss, rr):
                if re_[3] >= 0 and re_[3] != se[3]:
                    mism += 1
                re_[3] = se[3]
                self._pairs.append((ch[0], se, re_))
            for e in ss[len(rr):]:
                drop.add(id(e))
                self.stats["unmatched_sends"] += 1
            for e in rr[len(ss):]:
                drop.add(id(e))
                self.stats["unmatched_recvs"] += 1
        if mism:
            self.stats["recv_size_mismatches"] = mism
            self.note("receive sizes were set to the size of the matching send "
                      "(recv_size_mismatches counts where the trace disagreed)")
        if not drop:
            return
        self.note("sends without a matching receive (or the reverse) were dropped with their "
                  "waits (unmatched_sends/unmatched_recvs)")
        for r in range(self.nranks):
            dead_reqs = {e[5] for e in self.ops[r] if id(e) in drop and e[5] >= 0}
            self.ops[r] = [e for e in self.ops[r] if id(e) not in drop and not (
                e[0] == _P2P and e[1] == OP_WAIT and e[5] in dead_reqs)]
