"""Dimemas traces (BSC, text ``.dim``), registered as ``dimemas``.

The format is the one Dimemas' own reader parses (``Simulator/input/file_data_access.c``
in bsc-performance-tools/dimemas) and its converters write (``Dimemas_Generation.c``,
shared by ``prv2dim``; Extrae's ``mpi2trf``)::

    #DIMEMAS:NAME:OFFSETS[,POS]:NTASKS(THREADS_1,...,THREADS_N),NCOMMS
    d:1:COMM_ID:SIZE:TASK_1:...:TASK_SIZE        communicator (0-based task ids)
    1:TASK:THREAD:SECONDS                         CPU burst
    2:TASK:THREAD:DEST[:DEST_THREAD]:SIZE:TAG:COMM:SYNC     send (SYNC bit 0 synchronous,
                                                  bit 1 immediate = MPI_Isend)
    3:TASK:THREAD:SRC[:SRC_THREAD]:SIZE:TAG:COMM:TYPE       receive (TYPE 0 Recv,
                                                  1 Irecv, 2 Wait of an earlier Irecv)
    10:TASK:THREAD:GLOP:COMM:ROOT:ROOT_THREAD:SENT:RECVD[:SYNC]   collective
    20:TASK:THREAD:TYPE:VALUE                     event (MPI call markers; ignored)
    0:TASK:THREAD                                 no-op
    s:TASK:OFFSET_1:...                           offsets of each thread (ignored)

Mapping: task ``t`` is rank ``t``; only thread 0 of a task is read (others counted).
Bursts are seconds (``mpi2trf`` divides Extrae's ns by 1e9 and prints ``%.6f``/``%.9f``),
times ``compute_scale``. Sends are blocking ``send`` unless immediate (``isend``; Dimemas
records no completion of an immediate send, so it is completed at the end of its rank, as
``MPI_Finalize`` would). ``TYPE 2`` completes the oldest pending ``Irecv`` with the same
source, tag and communicator. Global operations use Dimemas' ids (0 barrier, 1 bcast,
2 gather, 3 gatherv, 4 scatter, 5 scatterv, 6 allgather, 7 allgatherv, 8 alltoall,
9 alltoallv, 10 reduce, 11 allreduce, 12 reduce_scatter; 13 scan is skipped) and are
decomposed over the communicator's members with :mod:`workloads.collectives`. ROOT is a
flag (1 on the root's record, 0 elsewhere, as ``prv2dim`` writes it); when every member
gives the same value it is read as the root's task id instead.
"""
from __future__ import annotations

import os
import re
from collections import defaultdict, deque

from ccmod.errors import CcmodInputError
from ccmod.guard import INT_MAX, check_declared_ranks, check_float, check_int, excerpt
from ccmod.workloads.assembler import TraceAssembler
from ccmod.workloads.base import OP_IRECV, OP_ISEND, file_head
from ccmod.workloads.reader_input import input_guard, reject_options
from ccmod.workloads.registry import READERS

#: Dimemas global operation ids (``DimemasCollectiveDef`` of Dimemas_Generation.c)
GLOBAL_OPS = {0: "barrier", 1: "bcast", 2: "gather", 3: "gatherv", 4: "scatter",
              5: "scatterv", 6: "allgather", 7: "allgatherv", 8: "alltoall", 9: "alltoallv",
              10: "reduce", 11: "allreduce", 12: "reduce_scatter"}
_HEADER = re.compile(r"#DIMEMAS:([^:]*):(\d+)(?:,(\d+))?:(\d+)\(([^)]*)\),(\d+)\s*$")
_TAG_MAX = 2 ** 31 - 1
_FIELDS = "op:task:thread:..."


def _err(what, path, ln, hint=None):
    return CcmodInputError(what, source=path, line=ln, hint=hint)


class _Ctx:
    """Per-file parse state shared by the record handlers."""

    def __init__(self, path, ntasks, asm, fid):
        self.path, self.ntasks, self.asm, self.fid = path, ntasks, asm, fid
        self.comms: dict[int, list[int]] = {}
        self.irecvs = [defaultdict(deque) for _ in range(ntasks)]   # (src,tag,comm) -> reqs
        self.isends = [[] for _ in range(ntasks)]
        self.nreq = [0] * ntasks
        self.globs: list = []                    # (rank, glop, comm, root, sent, recv, ln)

    def int_(self, text, what, ln, lo=0, hi=INT_MAX):
        return check_int(text.strip(), what, source=self.path, line=ln, lo=lo, hi=hi)

    def task(self, text, what, ln):
        return self.int_(text, what, ln, 0, self.ntasks - 1)


def _header(line: str, path: str):
    m = _HEADER.match(line.strip())
    if m is None:
        raise _err(f"not a Dimemas header '{excerpt(line.strip(), 60)}'", path, 1,
                   "the first line is #DIMEMAS:NAME:OFFSETS:NTASKS(THREADS,...),NCOMMS; "
                   "old SDDF traces must be translated with Dimemas' trf2dim")
    ntasks = check_int(m.group(4), "task count", source=path, line=1, lo=1)
    check_declared_ranks(ntasks, path, "the header declares")
    threads = [t for t in m.group(5).split(",") if t.strip()]
    if len(threads) != ntasks:
        raise _err(f"header lists {len(threads)} thread counts for {ntasks} tasks", path, 1)
    return m.group(1).strip('"'), ntasks


def _send(cx, rank, f, ln):
    if len(f) not in (5, 6):
        raise _err(f"send record has {len(f)} fields after {_FIELDS}, expected "
                   "DEST[:DEST_THREAD]:SIZE:TAG:COMM:SYNC", cx.path, ln)
    dst = cx.task(f[0], "destination task", ln)
    size, tag, comm, sync = (cx.int_(f[-4], "message size", ln),
                             cx.int_(f[-3], "tag", ln, -_TAG_MAX, _TAG_MAX),
                             cx.int_(f[-2], "communicator", ln, -INT_MAX),
                             cx.int_(f[-1], "synchronism", ln, 0, 3))
    if sync & 2:
        h = ("s", cx.nreq[rank])
        cx.nreq[rank] += 1
        cx.asm.post(rank, OP_ISEND, dst, size, tag, h, line=ln, fid=cx.fid)
        cx.isends[rank].append(h)
    else:
        cx.asm.send(rank, dst, size, tag, line=ln, fid=cx.fid)
        if sync & 1:
            cx.asm.count("synchronous_sends")
    del comm


def _recv(cx, rank, f, ln):
    if len(f) not in (5, 6):
        raise _err(f"receive record has {len(f)} fields after {_FIELDS}, expected "
                   "SRC[:SRC_THREAD]:SIZE:TAG:COMM:TYPE", cx.path, ln)
    src = cx.task(f[0], "source task", ln)
    size, tag, comm, typ = (cx.int_(f[-4], "message size", ln),
                            cx.int_(f[-3], "tag", ln, -_TAG_MAX, _TAG_MAX),
                            cx.int_(f[-2], "communicator", ln, -INT_MAX),
                            cx.int_(f[-1], "receive type", ln, 0, 2))
    key = (src, tag, comm)
    if typ == 0:
        cx.asm.recv(rank, src, size, tag, line=ln, fid=cx.fid)
    elif typ == 1:
        h = ("r", cx.nreq[rank])
        cx.nreq[rank] += 1
        cx.asm.post(rank, OP_IRECV, src, size, tag, h, line=ln, fid=cx.fid)
        cx.irecvs[rank][key].append(h)
    elif cx.irecvs[rank][key]:
        cx.asm.complete(rank, cx.irecvs[rank][key].popleft(), line=ln, fid=cx.fid)
    else:
        # a Wait with no Irecv before it: the receive happens here
        cx.asm.recv(rank, src, size, tag, line=ln, fid=cx.fid)
        cx.asm.count("waits_without_irecv")


def _glop(cx, rank, f, ln):
    if len(f) not in (6, 7):
        raise _err(f"global operation has {len(f)} fields after {_FIELDS}, expected "
                   "GLOP:COMM:ROOT:ROOT_THREAD:SENT:RECVD[:SYNC]", cx.path, ln)
    glop = cx.int_(f[0], "global operation id", ln, 0, 1 << 20)
    comm = cx.int_(f[1], "communicator", ln, -INT_MAX)
    root = cx.int_(f[2], "root", ln, -1)
    sent, recvd = cx.int_(f[4], "bytes sent", ln), cx.int_(f[5], "bytes received", ln)
    cx.globs.append((rank, glop, comm, root, sent, recvd, ln))
    # placeholder in the rank's op order: the root needs every member's record
    cx.asm.ops[rank].append(None)


def _comm(cx, f, ln):
    if len(f) < 3 or f[0].strip() != "1":
        if f and f[0].strip() in ("2", "3"):
            return                                  # file / one-sided window definitions
        raise _err("bad definition; expected d:1:COMM_ID:SIZE:TASK_1:...", cx.path, ln)
    cid = cx.int_(f[1], "communicator id", ln, -INT_MAX)
    size = cx.int_(f[2], "communicator size", ln, 1, cx.ntasks)
    if len(f) - 3 != size:
        raise _err(f"communicator {cid} declares {size} tasks but lists {len(f) - 3}",
                   cx.path, ln)
    members = [cx.task(x, "communicator member", ln) for x in f[3:]]
    if len(set(members)) != size:
        raise _err(f"communicator {cid} lists a task twice", cx.path, ln)
    cx.comms[cid] = members


def _parse(fh, cx, state):
    asm, path = cx.asm, cx.path
    for raw in fh:
        state["n"] += 1
        ln = state["n"]
        s = raw.strip()
        if not s or s.startswith("#"):
            continue
        f = s.split(":")
        head = f[0]
        if head == "d":
            _comm(cx, f[1:], ln)
            continue
        if head == "s":
            continue                                 # thread offsets index
        if len(f) < 3:
            raise _err(f"cannot read record '{excerpt(s, 40)}'", path, ln,
                       "records are OP:TASK:THREAD:... (OP 0,1,2,3,10,20), d:... or s:...")
        op = cx.int_(head, "record type", ln, 0, 1 << 20)
        rank = cx.task(f[1], "task", ln)
        thread = cx.int_(f[2], "thread", ln)
        if thread != 0:
            asm.count("other_thread_records")
            continue
        body = f[3:]
        if op == 1:
            if len(body) != 1:
                raise _err("CPU burst needs one duration in seconds", path, ln)
            sec = check_float(body[0], "CPU burst", source=path, line=ln, lo=0.0)
            asm.compute(rank, sec, line=ln, fid=cx.fid)
        elif op == 2:
            _send(cx, rank, body, ln)
        elif op == 3:
            _recv(cx, rank, body, ln)
        elif op == 10:
            _glop(cx, rank, body, ln)
        elif op in (0, 20):
            asm.count("events" if op == 20 else "noops")
        else:
            raise _err(f"unknown record type {op}", path, ln,
                       "Dimemas records are 0 no-op, 1 CPU burst, 2 send, 3 receive, "
                       "10 global operation, 20 event")


def _root_of(recs, members):
    """Local root of one collective instance: ROOT flags, else a shared task id."""
    vals = [r[3] for r in recs]
    flagged = [i for i, v in enumerate(vals) if v == 1]
    if len(set(vals)) > 1 and len(flagged) == 1 and set(vals) <= {0, 1}:
        return flagged[0]
    v = vals[0] if vals else 0
    if v in members:
        return members.index(v)
    return v if 0 <= v < len(members) else 0


def _collectives(cx):
    """Replace each rank's collective placeholders by its part of the instance (the k-th
    global operation of a rank on a communicator is the k-th instance of it)."""
    asm = cx.asm
    world = list(range(cx.ntasks))
    by_inst, per_rank, count = defaultdict(list), defaultdict(list), defaultdict(int)
    for rec in cx.globs:                       # file order = each rank's own order
        rank, comm = rec[0], rec[2]
        k = count[(rank, comm)]
        count[(rank, comm)] = k + 1
        by_inst[(comm, k)].append(rec)
        per_rank[rank].append((k, rec))
    for rank, recs in per_rank.items():
        saved, asm.ops[rank] = asm.ops[rank], []
        it = iter(recs)
        for op in saved:
            if op is not None:
                asm.ops[rank].append(op)
                continue
            k, (_r, glop, comm, _root, sent, recvd, ln) = next(it)
            members = cx.comms.get(comm, None if cx.comms else world)
            kind = GLOBAL_OPS.get(glop)
            if kind is None:
                asm.count("unsupported_collectives")
                continue
            if asm.unmapped_collective(members, rank, "without a 'd:1' definition"):
                continue
            part = recvd if kind in ("scatter", "scatterv", "reduce_scatter") else None
            nbytes = max(sent, recvd) if kind == "bcast" else (
                part if part is not None else (sent if sent > 0 else recvd))
            asm.collective(rank, kind, ("dim", comm), members, members.index(rank),
                           root=_root_of(by_inst[(comm, k)], members), nbytes=nbytes,
                           recv_nbytes=part, sent_total=sent, recv_total=recvd, line=ln,
                           fid=cx.fid)


@READERS.register()
class DimemasReader:
    """Dimemas text trace (``#DIMEMAS`` header)."""

    name = "dimemas"
    description = "Dimemas trace (.dim): CPU bursts, sends/receives, global operations"
    extensions = (".dim",)

    @staticmethod
    def sniff(path) -> bool:
        return file_head(path, 9) == b"#DIMEMAS:"

    @staticmethod
    def read(path, *, compute_rate=1e9, compute_scale=1.0, collectives=None, **opts):
        """Read a Dimemas trace (bursts in seconds; ``compute_rate`` does not apply)."""
        p = os.fspath(path)
        reject_options(opts, "Dimemas", p)
        if not os.path.isfile(p):
            raise CcmodInputError("Dimemas trace not found", source=p)
        state = {"n": 0}
        with input_guard(p, lambda: state["n"] or None, "malformed Dimemas trace"):
            with open(p, encoding="utf-8", errors="strict") as fh:
                name, ntasks = _header(fh.readline(), p)
                state["n"] = 1
                asm = TraceAssembler(ntasks, "dimemas", compute_scale=compute_scale,
                                     collectives=collectives)
                cx = _Ctx(p, ntasks, asm, asm.file(p))
                _parse(fh, cx, state)
        _collectives(cx)
        pending = 0
        for r in range(ntasks):
            for h in cx.isends[r]:
                if asm.pending(r, h) is not None:
                    asm.complete(r, h, fid=cx.fid)
                    pending += 1
            left = sum(len(q) for q in cx.irecvs[r].values())
            if left:
                asm.count("irecvs_never_waited", left)
        if pending:
            asm.note(f"{pending} immediate send(s) have no recorded completion in Dimemas' "
                     "format: each is completed at the end of its rank")
        if asm.stats.get("other_thread_records"):
            asm.note("only thread 0 of each task is read (other_thread_records skipped)")
        return asm.build(application=name, communicators=len(cx.comms),
                         compute_unit="seconds (Dimemas CPU bursts)")
