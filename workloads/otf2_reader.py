"""OTF2 (Score-P) trace reader, through the ``otf2`` Python bindings.

Mapping
-------
* Ranks: the MPI ``COMM_LOCATIONS`` group gives the world-rank order of the locations;
  without it, location groups named ``MPI Rank N`` (else definition order).
* Compute: time outside top-level ``MPI_*`` regions (Enter/Leave), times ``compute_scale``.
* MpiSend/MpiRecv -> OP_SEND/OP_RECV; MpiIsend -> OP_ISEND, MpiIsendComplete -> OP_WAIT;
  MpiIrecvRequest -> OP_IRECV (peer/tag/size filled from the matching MpiIrecv), MpiIrecv
  -> OP_WAIT; cancelled requests are dropped. Inside ``MPI_Sendrecv*`` the send and the
  receive become isend + irecv + two waits.
* MpiCollectiveEnd -> :func:`workloads.collectives.expand` with Score-P's byte counts
  converted to MPI counts (see docs/readers.md).
* Communicator-local ranks are translated to world ranks through the communicator's group.
  A group of type ``COMM_SELF`` is, by the OTF2 definition, the calling process alone; this
  recovers the Score-P traces whose split/self communicators are unified to an *empty*
  COMM_SELF member list. Any other unmappable message is counted and dropped on both sides.
"""
from __future__ import annotations

import os
import re

from ccmod.errors import CcmodInputError
from ccmod.workloads.assembler import TraceAssembler
from ccmod.workloads.reader_input import input_guard, reject_options
from ccmod.workloads.base import OP_IRECV, OP_ISEND
from ccmod.workloads.registry import READERS

_RANK_RE = re.compile(r"(\d+)\s*$")
_SENDRECV = ("MPI_Sendrecv", "MPI_Sendrecv_replace")
#: OTF2 CollectiveOp name -> expand kind (SCAN/EXSCAN/ALLTOALLW have no decomposition)
_KINDS = {"BARRIER": "barrier", "BCAST": "bcast", "GATHER": "gather", "GATHERV": "gatherv",
          "SCATTER": "scatter", "SCATTERV": "scatterv", "ALLGATHER": "allgather",
          "ALLGATHERV": "allgatherv", "ALLTOALL": "alltoall", "ALLTOALLV": "alltoallv",
          "REDUCE": "reduce", "ALLREDUCE": "allreduce", "REDUCE_SCATTER": "reduce_scatter",
          "REDUCE_SCATTER_BLOCK": "reduce_scatter"}
_NO_ROOT = 0xFFFFFFFF


def _anchor(path) -> str | None:
    p = os.fspath(path)
    if os.path.isdir(p):
        cand = os.path.join(p, "traces.otf2")
        if os.path.isfile(cand):
            return cand
        found = sorted(f for f in os.listdir(p) if f.endswith(".otf2"))
        return os.path.join(p, found[0]) if len(found) == 1 else None
    return p if p.endswith(".otf2") else None


def _otf2_errors():
    errs = []
    try:
        import _otf2
        errs.append(_otf2.Error)
    except Exception:  # pragma: no cover - depends on the bindings build
        pass
    try:
        from otf2.error import Error
        errs.append(Error)
    except Exception:  # pragma: no cover
        pass
    return tuple(errs) or (RuntimeError,)


class _CStderr:
    """Capture what the OTF2 C library prints on file descriptor 2 while reading.

    The library reports corrupt files on stderr before returning an error code; the text
    is kept for the error message instead of reaching the user's terminal.
    """

    def __enter__(self):
        import tempfile
        self.text = ""
        try:
            self._tmp = tempfile.TemporaryFile()
            self._saved = os.dup(2)
            os.dup2(self._tmp.fileno(), 2)
        except OSError:   # pragma: no cover - no fd 2 (embedded interpreters)
            self._saved = None
        return self

    def __exit__(self, *exc):
        if self._saved is not None:
            os.dup2(self._saved, 2)
            os.close(self._saved)
            self._tmp.seek(0)
            self.text = self._tmp.read().decode("utf-8", "replace")
            self._tmp.close()
        return False

    def first_line(self) -> str:
        if self._saved is not None:
            self._tmp.flush()
            self._tmp.seek(0)
            data = self._tmp.read().decode("utf-8", "replace")
            self._tmp.seek(0, 2)
            for line in data.splitlines():
                if "error" in line:
                    return line.split("error:", 1)[-1].strip()
        return ""


class _Ranks:
    """World rank of each location and communicator translation."""

    def __init__(self, defs):
        from otf2.enums import GroupType, Paradigm
        self.GroupType = GroupType
        self.loc_rank: dict = {}
        order = None
        for g in defs.groups:
            if g.group_type == GroupType.COMM_LOCATIONS and g.paradigm == Paradigm.MPI:
                order = list(g.members)
                break
        if order:
            for i, loc in enumerate(order):
                self.loc_rank[loc] = i
        else:
            # one location (the first, i.e. the master thread) per MPI process
            groups = [lg for lg in defs.location_groups]
            nums = [_RANK_RE.search(lg.name or "") for lg in groups]
            if all(nums) and len({int(m.group(1)) for m in nums}) == len(groups):
                grank = {lg: int(m.group(1)) for lg, m in zip(groups, nums)}
            else:
                grank = {lg: i for i, lg in enumerate(groups)}
            seen = set()
            for loc in defs.locations:
                g = loc.group
                if g in grank and g not in seen:
                    seen.add(g)
                    self.loc_rank[loc] = grank[g]
        #: locations not read (other threads of a process): their MPI calls are ignored
        self.other_locations = sum(1 for loc in defs.locations if loc not in self.loc_rank)
        self.nranks = (max(self.loc_rank.values()) + 1) if self.loc_rank else 0
        self._comm_cache: dict = {}

    def members(self, comm, rank):
        """World ranks of ``comm`` in local order, or None if unknown. COMM_SELF -> [rank]."""
        if comm is None:
            return None
        g = comm.group
        if g is None:
            return None
        if g.group_type == self.GroupType.COMM_SELF:
            return [rank]
        key = comm._ref if hasattr(comm, "_ref") else id(comm)
        if key not in self._comm_cache:
            mem = list(g.members)
            out = []
            for m in mem:
                r = self.loc_rank.get(m)
                if r is None:   # members may be location groups in some producers
                    r = next((v for k, v in self.loc_rank.items() if k.group is m), None)
                if r is None:
                    out = None
                    break
                out.append(r)
            self._comm_cache[key] = out if out else None
        return self._comm_cache[key]

    def comm_key(self, comm, rank):
        """Communicator identity: COMM_SELF-type comms are distinct per process."""
        ref = comm._ref if hasattr(comm, "_ref") else id(comm)
        if comm.group is not None and comm.group.group_type == self.GroupType.COMM_SELF:
            return (ref, rank)
        return (ref,)


@READERS.register()
class Otf2Reader:
    """Score-P OTF2 trace (anchor ``traces.otf2``) via the ``otf2`` bindings."""

    name = "otf2"
    description = "Score-P OTF2 trace (anchor file *.otf2 or its directory) via the otf2 bindings"
    extensions = (".otf2",)

    @staticmethod
    def sniff(path) -> bool:
        a = _anchor(path)
        if a is None or not os.path.isfile(a):
            return False
        try:
            with open(a, "rb") as f:
                head = f.read(4096)
        except OSError:
            return False
        return b"OTF2" in head[:64]

    @staticmethod
    def read(path, *, compute_rate=1e9, compute_scale=1.0, collectives=None, **opts):
        a = _anchor(path)
        if a is None or not os.path.isfile(a):
            raise CcmodInputError("not an OTF2 trace (no .otf2 anchor file)", source=str(path),
                                  hint="give the traces.otf2 file or its directory")
        try:
            import otf2
        except ImportError:  # pragma: no cover - dependency is declared
            raise CcmodInputError("reading OTF2 needs the 'otf2' Python package",
                                  source=a, hint="pip install otf2") from None
        reject_options(opts, "OTF2", a)
        errors = _otf2_errors()
        state = {"n": 0}
        with _CStderr() as lib_err:
            try:
                with input_guard(a, lambda: state["n"] or None, "unreadable OTF2 trace"):
                    with otf2.reader.open(a) as tr:
                        return _convert(tr, a, state, compute_scale, collectives)
            except errors as exc:
                first = lib_err.first_line()
                raise CcmodInputError(
                    f"unreadable OTF2 trace: {exc}" + (f" [{first}]" if first else ""),
                    source=a, line=(state["n"] or None) if state["n"] else None,
                    hint="check that traces.def and traces/ are complete") from None


def _convert(tr, anchor, state, compute_scale, collectives):
    defs = tr.definitions
    ranks = _Ranks(defs)
    if ranks.nranks == 0:
        raise CcmodInputError("OTF2 trace defines no MPI locations", source=anchor)
    clock = defs.clock_properties
    res = float(clock.timer_resolution)
    if not res > 0:
        raise CcmodInputError("OTF2 trace has a zero timer resolution", source=anchor)
    t0 = clock.global_offset
    asm = TraceAssembler(ranks.nranks, "otf2", compute_scale=compute_scale,
                         collectives=collectives)
    fid = asm.file(anchor)
    length = getattr(clock, "trace_length", None)
    if length:
        asm.traced.bounds(0.0, float(length) / res)   # the clock's whole trace window
    n = ranks.nranks
    depth = [0] * n
    region = [None] * n          # current top-level MPI region name
    coll_seen = [False] * n
    sr_buf = [None] * n          # buffered (send, recv) inside MPI_Sendrecv
    nb_coll = 0
    self_msgs = 0

    def peer(comm, local, rank, sending=False):
        nonlocal self_msgs
        mem = ranks.members(comm, rank)
        if mem is None or not 0 <= local < len(mem):
            return None
        w = mem[local]
        if w == rank and sending:
            self_msgs += 1
        return w

    for loc, ev in tr.events:
        state["n"] += 1
        rank = ranks.loc_rank.get(loc)
        if rank is None:
            continue
        t = (ev.time - t0) / res
        ln = state["n"]
        name = type(ev).__name__
        if name == "Enter" or name == "Leave":
            rname = ev.region.name or ""
            if not rname.startswith("MPI_"):
                continue
            if name == "Enter":
                if depth[rank] == 0:
                    asm.mpi_enter(rank, t, ln, fid, rname)
                    region[rank] = rname
                    coll_seen[rank] = False
                    if rname in _SENDRECV:
                        sr_buf[rank] = []
                depth[rank] += 1
            else:
                depth[rank] = max(depth[rank] - 1, 0)
                if depth[rank] == 0:
                    if sr_buf[rank] is not None:
                        _flush_sendrecv(asm, rank, sr_buf[rank], ln, fid, t)
                        sr_buf[rank] = None
                    if (rname.startswith("MPI_I") and rname[5:6].islower()
                            and rname[5:].lower() in _NB_COLLS and not coll_seen[rank]):
                        nb_coll += 1
                    asm.mpi_leave(rank, t)
            continue
        if name == "MpiSend":
            dst = peer(ev.communicator, ev.receiver, rank, True)
            if sr_buf[rank] is not None:
                sr_buf[rank].append(("s", dst, ev.msg_length, ev.msg_tag))
            else:
                asm.send(rank, dst, ev.msg_length, ev.msg_tag, line=ln, fid=fid, t_s=t)
        elif name == "MpiRecv":
            src = peer(ev.communicator, ev.sender, rank)
            if sr_buf[rank] is not None:
                sr_buf[rank].append(("r", src, ev.msg_length, ev.msg_tag))
            else:
                asm.recv(rank, src, ev.msg_length, ev.msg_tag, line=ln, fid=fid, t_s=t)
        elif name == "MpiIsend":
            dst = peer(ev.communicator, ev.receiver, rank, True)
            asm.post(rank, OP_ISEND, dst, ev.msg_length, ev.msg_tag, ev.request_id,
                     line=ln, fid=fid, t_s=t)
        elif name == "MpiIsendComplete":
            asm.complete(rank, ev.request_id, line=ln, fid=fid, t_s=t)
        elif name == "MpiIrecvRequest":
            # peer/tag/size are only known at completion (MpiIrecv): placeholder entry
            asm.post(rank, OP_IRECV, -2, -1, 0, ev.request_id, line=ln, fid=fid, t_s=t)
        elif name == "MpiIrecv":
            src = peer(ev.communicator, ev.sender, rank)
            e = asm.pending(rank, ev.request_id)
            if e is None and ev.request_id not in asm.active[rank]:
                # producer without MpiIrecvRequest: post and complete here
                e = asm.post(rank, OP_IRECV, src, ev.msg_length, ev.msg_tag, ev.request_id,
                             line=ln, fid=fid, t_s=t)
            if src is None:
                asm.drop_request(rank, ev.request_id, "unmapped_recvs")
            elif e is not None:
                e[2], e[3], e[4] = src, int(ev.msg_length), int(ev.msg_tag)
                asm.complete(rank, ev.request_id, line=ln, fid=fid, t_s=t)
        elif name == "MpiRequestCancelled":
            asm.drop_request(rank, ev.request_id)
        elif name == "MpiCollectiveEnd":
            coll_seen[rank] = True
            _collective(asm, ranks, rank, ev, ln, fid, t)
    # irecv placeholders never completed carry no peer: drop them
    for r in range(n):
        for h in asm.outstanding(r):
            e = asm.pending(r, h)
            if e is not None and e[2] == -2:
                asm.drop_request(r, h, "irecv_never_completed")
    if nb_coll:
        asm.count("nonblocking_collectives_skipped", nb_coll)
        asm.note("non-blocking collective regions without MpiCollective events carry no "
                 "sizes and were skipped (nonblocking_collectives_skipped)")
    if self_msgs:
        asm.note("messages on self communicators (COMM_SELF-type groups) are mapped to the "
                 "calling rank itself (self_messages)")
    if ranks.other_locations:
        asm.note(f"{ranks.other_locations} non-master thread location(s) were not read "
                 "(only the master thread of each MPI process carries its MPI calls here)")
    from ccmod.workloads.placement import otf2_placement
    placed = otf2_placement(ranks.loc_rank, n)
    if placed is not None:
        asm.meta["placement"] = placed
    return asm.build(clock_resolution_s=1.0 / res, timer_resolution_hz=res,
                     trace_length_s=float(clock.trace_length) / res,
                     self_messages=self_msgs, anchor=anchor)


_NB_COLLS = {"barrier", "bcast", "reduce", "allreduce", "gather", "gatherv", "scatter",
             "scatterv", "allgather", "allgatherv", "alltoall", "alltoallv", "alltoallw",
             "reduce_scatter", "reduce_scatter_block", "scan", "exscan"}


def _flush_sendrecv(asm, rank, buf, ln, fid, t):
    """MPI_Sendrecv -> isend + irecv + wait + wait (cannot deadlock in replay)."""
    hs = []
    for i, (kind, p, nb, tag) in enumerate(buf):
        h = ("sendrecv", ln, i)
        asm.post(rank, OP_ISEND if kind == "s" else OP_IRECV, p, nb, tag, h,
                 line=ln, fid=fid, t_s=t)
        hs.append(h)
    for h in hs:
        asm.complete(rank, h, line=ln, fid=fid, t_s=t)


def _collective(asm, ranks, rank, ev, ln, fid, t):
    op = str(ev.collective_op).rsplit(".", 1)[-1]
    kind = _KINDS.get(op)
    if kind is None:
        asm.count("unsupported_collectives")
        asm.note(f"collective {op} has no point-to-point decomposition and was skipped")
        return
    comm = ev.communicator
    mem = ranks.members(comm, rank)
    if asm.unmapped_collective(mem, rank, "with unknown members"):
        return
    p = len(mem)
    local = mem.index(rank)
    sent, recvd = int(ev.size_sent), int(ev.size_received)
    root = -1 if ev.root == _NO_ROOT else int(ev.root)
    is_root = root == local
    # Score-P byte conventions (checked on the sst-macro sample): totals over all peers,
    # the root of bcast/scatter counts p blocks sent, the root of gather/reduce p received.
    kw = {}
    if kind == "bcast":
        kw["nbytes"] = sent // p if is_root else recvd
    elif kind in ("reduce", "gather", "gatherv"):
        kw["nbytes"] = sent
    elif kind in ("scatter",):
        kw["nbytes"] = recvd
    elif kind == "scatterv":
        kw["nbytes"] = recvd
        kw["recv_nbytes"] = recvd
    elif kind in ("allreduce", "alltoall"):
        kw["nbytes"] = sent // p
    elif kind in ("allgather", "allgatherv"):
        kw["nbytes"] = sent // p
    elif kind == "alltoallv":
        kw["nbytes"] = sent // p
    elif kind == "reduce_scatter":
        kw["nbytes"] = recvd
        kw["recv_nbytes"] = recvd
    asm.collective(rank, kind, ranks.comm_key(comm, rank), mem, local,
                   root=max(root, 0), sent_total=sent, recv_total=recvd, line=ln, fid=fid,
                   t_s=t, **kw)
