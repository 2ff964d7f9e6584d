"""liballprof / "htor's PMPI Tracer" text traces (the input of LogGOPSim's schedgen).

One file per rank (``...-rank-N.dat`` / ``...-N.txt``), one MPI call per line::

    MPI_Send:<t_start>:<buf>:<count>:<type>:<dest>:<tag>:<comm>:<t_end>

with times in microseconds, datatypes written ``id,extent,x`` (the extent is used as the
element size) and communicators ``handle,rank_in_comm,size``.

Mapping and approximations
--------------------------
* Communicators: a communicator of the world size whose members' ``rank_in_comm`` form a
  permutation is mapped through that permutation (the identity for MPI_COMM_WORLD). Other
  communicators are rebuilt from the ranks that use the same ``(handle, size)`` when these
  cover ``0..size-1`` exactly once; otherwise their messages are counted as unmapped.
* Requests are recorded as addresses. MPI_Wait completes the request at that address;
  MPI_Waitall(count, array) completes the outstanding requests stored in the array (stride
  4 or 8 bytes, whichever matches); when they cannot be found the ``count`` most recent
  outstanding requests are taken (``waitall_guessed``).
* ANY_SOURCE / ANY_TAG receives (``-1``) are resolved against the recorded sends by time
  (see :mod:`workloads.assembler`). The recorded clock differences are not applied.
* Calls not listed in :data:`_LAYOUT` count as MPI time only (``meta["ignored_calls"]``).
"""
from __future__ import annotations

import glob
import os
import re
from collections import defaultdict

from ccmod.errors import CcmodInputError
from ccmod.workloads.assembler import ANY, TraceAssembler
from ccmod.workloads.reader_input import input_guard, numbered_rank_files, reject_options
from ccmod.workloads.base import OP_IRECV, OP_ISEND
from ccmod.workloads.registry import READERS

_HEADERS = ("# collprof", "# htor's PMPI Tracer")
_FILE = re.compile(r"^(.*?)(\d+)\.(dat|txt)$")
# argument names between t_start and t_end (buf/ptr fields are named '_')
_LAYOUT = {
    "MPI_Send": "_ count type dest tag comm", "MPI_Ssend": "_ count type dest tag comm",
    "MPI_Bsend": "_ count type dest tag comm", "MPI_Rsend": "_ count type dest tag comm",
    "MPI_Recv": "_ count type src tag comm _",
    "MPI_Isend": "_ count type dest tag comm req", "MPI_Irecv": "_ count type src tag comm req",
    "MPI_Wait": "req _", "MPI_Waitall": "count reqarr _",
    "MPI_Barrier": "comm", "MPI_Bcast": "_ count type root comm",
    "MPI_Reduce": "_ _ count type _ root comm", "MPI_Allreduce": "_ _ count type _ comm",
    "MPI_Sendrecv": "_ count type dest tag _ rcount rtype src rtag comm _",
}
_COLL = {"MPI_Barrier": "barrier", "MPI_Bcast": "bcast", "MPI_Reduce": "reduce",
         "MPI_Allreduce": "allreduce"}


def _rank_files(path: str) -> list[str]:
    if os.path.isdir(path):
        cands = sorted(p for p in glob.glob(os.path.join(glob.escape(path), "*"))
                       if _FILE.match(os.path.basename(p)) and _is_trace(p))
        if not cands:
            raise CcmodInputError("no liballprof trace files in directory", source=path)
        path = cands[0]
    m = _FILE.match(os.path.basename(path))
    if m is None:
        raise CcmodInputError("cannot tell the rank from the file name (expected ...N.dat)",
                              source=path)
    return numbered_rank_files(path, _FILE, "*." + m.group(3), f"'{m.group(1)}N'")


def _is_trace(p: str) -> bool:
    try:
        with open(p, encoding="utf-8", errors="replace") as f:
            return f.readline().startswith(_HEADERS)
    except OSError:
        return False


def _triple(text, what, path, ln):
    parts = text.split(",")
    if len(parts) != 3:
        raise CcmodInputError(f"{what} '{text}' is not 'a,b,c'", source=path, line=ln)
    return [int(p) for p in parts]


def parse_file(path: str):
    """Return the calls of one rank: (line, name, args dict, t_start_us, t_end_us)."""
    calls, meta = [], {}
    with open(path, encoding="utf-8", errors="strict") as f:
        first = f.readline()
        if not first.startswith(_HEADERS):
            raise CcmodInputError("not a liballprof/PMPI tracer file (bad first line)",
                                  source=path, line=1)
        meta["tracer"] = first[2:].strip()
        for ln, raw in enumerate(f, 2):
            line = raw.strip()
            if not line:
                continue
            if line.startswith("#"):
                m = re.search(r"clockdiff:\s*(-?[\d.]+)", line)
                if m:
                    meta.setdefault("clockdiff", float(m.group(1)))
                continue
            x = line.split(":")
            name = x[0]
            if not name.startswith("MPI_") or len(x) < 3:
                raise CcmodInputError(f"cannot parse line '{line[:60]}'", source=path, line=ln)
            t0 = None if x[1] == "-" else float(x[1])
            t1 = None if x[-1] == "-" else float(x[-1])
            if t0 is None and t1 is None:
                raise CcmodInputError("call without any time", source=path, line=ln)
            t0 = t1 if t0 is None else t0
            t1 = t0 if t1 is None else t1
            args = {}
            lay = _LAYOUT.get(name)
            if lay is not None:
                keys = lay.split()
                vals = x[2:-1]
                if len(vals) != len(keys):
                    raise CcmodInputError(f"{name} has {len(vals)} arguments, expected "
                                          f"{len(keys)}", source=path, line=ln)
                for k, v in zip(keys, vals):
                    if k == "_":
                        continue
                    if k in ("type", "rtype", "comm"):
                        args[k] = _triple(v, k, path, ln)
                    else:
                        args[k] = int(v)
            calls.append((ln, name, args, t0, t1))
    return calls, meta


@READERS.register()
class LiballprofReader:
    """liballprof 'collprof' and 'htor's PMPI Tracer' text traces (one file per rank)."""

    name = "liballprof"
    description = "liballprof / htor's PMPI tracer text traces (LogGOPSim schedgen input)"
    extensions = (".dat",)

    @staticmethod
    def sniff(path) -> bool:
        p = os.fspath(path)
        if os.path.isdir(p):
            try:
                p = _rank_files(p)[0]
            except CcmodInputError:
                return False
        return os.path.isfile(p) and _is_trace(p)

    @staticmethod
    def read(path, *, compute_rate=1e9, compute_scale=1.0, collectives=None, **opts):
        p = os.fspath(path)
        reject_options(opts, "liballprof", p)
        if not os.path.exists(p):
            raise CcmodInputError("liballprof trace not found", source=p)
        files = _rank_files(p)
        per_rank, metas = [], []
        for fn in files:
            with input_guard(fn, what="malformed liballprof trace"):
                calls, meta = parse_file(fn)
            per_rank.append(calls)
            metas.append(meta)
        n = len(files)
        comms = _comm_table(per_rank, n)
        asm = TraceAssembler(n, "liballprof", compute_scale=compute_scale,
                             collectives=collectives)
        for r in range(n):
            with input_guard(files[r], what="inconsistent liballprof call"):
                _convert(asm, r, per_rank[r], comms, asm.file(files[r]))
        return asm.build(tracer=metas[0].get("tracer"), clock_resolution_s=1e-6,
                         clockdiff_us=[m.get("clockdiff") for m in metas],
                         records=sum(len(c) for c in per_rank))


def _comm_table(per_rank, n):
    """(handle, size) -> members in local-rank order, per rank (None when ambiguous)."""
    seen = defaultdict(dict)     # (handle, size) -> {world rank: local rank}
    for r, calls in enumerate(per_rank):
        for c in calls:
            cm = c[2].get("comm")
            if cm is not None:
                seen[(cm[0], cm[2])][r] = cm[1]
    table = {}
    for (h, size), loc in seen.items():
        ranks_by_local = sorted(loc, key=lambda q: loc[q])
        # the count first: a (corrupt) declared size of 1e8 must not build a 1e8-list
        if len(loc) == size and sorted(loc.values()) == list(range(size)):
            table[(h, size)] = ranks_by_local
        elif size == n and all(loc[q] == q for q in loc):
            table[(h, size)] = list(range(n))     # world-sized, identity where seen
        else:
            table[(h, size)] = None
    return table


def _convert(asm, r, calls, comms, fid):
    addr_req: dict[int, object] = {}       # request address -> trace handle
    order: list = []                        # outstanding handles in posting order
    ignored = 0

    def members(a):
        cm = a["comm"]
        return comms.get((cm[0], cm[2]))

    def peer(a, key, recv=False):
        v = a[key]
        if recv and v == -1:
            return ANY
        mem = members(a)
        if mem is None or not 0 <= v < len(mem):
            return None
        return mem[v]

    for k, (ln, name, a, t0, t1) in enumerate(calls):
        ts, te = t0 * 1e-6, t1 * 1e-6
        asm.mpi_enter(r, ts, ln, fid, name)
        kw = {"line": ln, "fid": fid, "t_s": ts}
        if name in ("MPI_Send", "MPI_Ssend", "MPI_Bsend", "MPI_Rsend"):
            asm.send(r, peer(a, "dest"), a["count"] * a["type"][1], a["tag"], **kw)
        elif name == "MPI_Recv":
            asm.recv(r, peer(a, "src", True), a["count"] * a["type"][1],
                     ANY if a["tag"] == -1 else a["tag"], **kw)
        elif name in ("MPI_Isend", "MPI_Irecv"):
            h = (k, a["req"])
            if name == "MPI_Isend":
                asm.post(r, OP_ISEND, peer(a, "dest"), a["count"] * a["type"][1], a["tag"], h,
                         **kw)
            else:
                asm.post(r, OP_IRECV, peer(a, "src", True), a["count"] * a["type"][1],
                         ANY if a["tag"] == -1 else a["tag"], h, **kw)
            addr_req[a["req"]] = h
            order.append(h)
        elif name == "MPI_Wait":
            h = addr_req.pop(a["req"], None)
            if h is None:
                asm.count("unknown_requests")
            else:
                order.remove(h)
                asm.complete(r, h, **kw)
        elif name == "MPI_Waitall":
            hs = _waitall_set(a["count"], a["reqarr"], addr_req, order, asm)
            for h in hs:
                order.remove(h)
                addr_req.pop(h[1], None)
                asm.complete(r, h, **kw)
        elif name == "MPI_Sendrecv":
            hs, hr = (k, "s"), (k, "r")
            asm.post(r, OP_ISEND, peer(a, "dest"), a["count"] * a["type"][1], a["tag"], hs, **kw)
            asm.post(r, OP_IRECV, peer(a, "src", True), a["rcount"] * a["rtype"][1],
                     ANY if a["rtag"] == -1 else a["rtag"], hr, **kw)
            asm.complete(r, hs, **kw)
            asm.complete(r, hr, **kw)
        elif name in _COLL:
            mem = members(a)
            if mem is None or r not in mem:
                asm.count("unmapped_collectives")
            else:
                nb = 0 if name == "MPI_Barrier" else a["count"] * a["type"][1]
                asm.collective(r, _COLL[name], ("comm", a["comm"][0], a["comm"][2]), mem,
                               mem.index(r), root=a.get("root", 0), nbytes=nb, **kw)
        elif name not in _LAYOUT:
            ignored += 1
        asm.mpi_leave(r, te)
    if ignored:
        asm.count("ignored_calls", ignored)


def _waitall_set(count, arr, addr_req, order, asm):
    """Outstanding handles stored in the request array at address ``arr``."""
    if count <= 0:
        return []
    for stride in (4, 8):
        hs = [addr_req[arr + i * stride] for i in range(count) if arr + i * stride in addr_req]
        if len(hs) == count:
            return hs
    asm.count("waitall_guessed")
    asm.note("some MPI_Waitall request arrays could not be matched to posted requests; the "
             "most recent outstanding requests were used (waitall_guessed)")
    return list(order[-count:])
