"""Turn decoded DUMPI calls (binary or dumpi2ascii text) into workload ops.

Input per rank: a list of ``(record_no, name, fields, wall_in, wall_out, cpu_in, cpu_out)``
with ``name`` the MPI function without ``MPI_`` and ``fields`` named as in sst-dumpi's
argument structs (``count``, ``datatype``, ``dest``, ``comm``, ``request``, ...).

Communicators: DUMPI stores per-process handles (2 = MPI_COMM_WORLD, 3 = MPI_COMM_SELF).
A communicator created by the k-th creation call (dup/create/split/cart_create/cart_sub/
graph_create) on a parent communicator is the same object on every member (MPI requires
the members to call them in the same order); its members are rebuilt from all members'
arguments (split colours and keys, groups built with Comm_group/Group_incl/..., Cartesian
dimensions). Cartesian communicators are assumed not reordered (what MPICH and Open MPI do
by default).
"""
from __future__ import annotations

from math import prod

from ccmod.workloads.assembler import ANY, TraceAssembler
from ccmod.workloads.base import OP_IRECV, OP_ISEND

COMM_NULL, COMM_WORLD, COMM_SELF = 1, 2, 3
REQUEST_NULL = 1
DUMPI_ANY = -1
#: sizes of DUMPI's predefined datatypes (ids 0..27) on an LP64 platform, for text dumps
#: without a size table
DEFAULT_TYPE_SIZES = [0, 0, 1, 1, 1, 1, 4, 2, 2, 4, 4, 8, 8, 4, 8, 16, 8, 8, 8, 1, 0, 0, 8, 12,
                      12, 6, 8, 20]
_COLL = {"Barrier": "barrier", "Bcast": "bcast", "Reduce": "reduce", "Allreduce": "allreduce",
         "Gather": "gather", "Gatherv": "gatherv", "Scatter": "scatter", "Scatterv": "scatterv",
         "Allgather": "allgather", "Allgatherv": "allgatherv", "Alltoall": "alltoall",
         "Alltoallv": "alltoallv", "Reduce_scatter": "reduce_scatter"}
_SENDS = {"Send", "Bsend", "Ssend", "Rsend"}
_ISENDS = {"Isend", "Ibsend", "Issend", "Irsend"}
_PERSIST = {"Send_init": OP_ISEND, "Bsend_init": OP_ISEND, "Ssend_init": OP_ISEND,
            "Rsend_init": OP_ISEND, "Recv_init": OP_IRECV}
_CREATE = {"Comm_dup", "Comm_create", "Comm_split", "Cart_create", "Cart_sub", "Graph_create"}


class Comm:
    """A communicator shared by its members; ``ident`` is the same on every rank."""

    __slots__ = ("kind", "parent", "ident", "data", "memo")

    def __init__(self, kind, parent, ident):
        self.kind, self.parent, self.ident = kind, parent, ident
        self.data: dict = {}      # world rank -> that member's creation arguments
        self.memo: dict = {}


class Resolver:
    """Per-rank handle tables (communicators, groups, datatypes) and member resolution."""

    def __init__(self, nranks: int, type_sizes: list[list[int]]):
        self.n = nranks
        self.world = Comm("world", None, ("world",))
        self.comms: dict[tuple, Comm] = {}
        self.base_sizes = type_sizes
        self.unknown_types = 0

    # -- pass A: annotate every record with the objects its handles denote ---------------
    def annotate(self, rank: int, calls) -> None:
        ch = {COMM_WORLD: self.world, COMM_SELF: Comm("self", None, ("self", rank))}
        gh: dict[int, tuple] = {}
        th = {i: s for i, s in enumerate(self.base_sizes[rank])}
        ncreate: dict[tuple, int] = {}
        for rec in calls:
            name, f = rec[1], rec[2]
            for key in ("comm", "oldcomm"):
                if key in f:
                    f["_" + key] = ch.get(f[key])
            for key in ("datatype", "sendtype", "recvtype"):
                if key in f:
                    sz = th.get(f[key])
                    if sz is None:
                        self.unknown_types += 1
                        sz = 1
                    f["_sz_" + key] = sz
            if name in _CREATE:
                parent = f.get("_oldcomm")
                newh = f.get("newcomm")
                if parent is None:
                    new = Comm("unknown", None, ("unknown", rank, rec[0]))
                else:
                    k = ncreate.get(parent.ident, 0)
                    ncreate[parent.ident] = k + 1
                    kind = {"Comm_dup": "dup", "Comm_create": "create", "Comm_split": "split",
                            "Cart_create": "cart", "Cart_sub": "cartsub",
                            "Graph_create": "graph"}[name]
                    ident = (kind, parent.ident, k)
                    new = self.comms.get(ident)
                    if new is None:
                        new = self.comms[ident] = Comm(kind, parent, ident)
                    new.data[rank] = {"Comm_create": lambda: gh.get(f.get("group")),
                                      "Comm_split": lambda: (f.get("color", -1), f.get("key", 0)),
                                      "Cart_create": lambda: list(f.get("dims", [])),
                                      "Cart_sub": lambda: list(f.get("remain_dims", [])),
                                      "Graph_create": lambda: f.get("nodes", 0),
                                      "Comm_dup": lambda: None}[name]()
                if newh is not None and newh != COMM_NULL:
                    ch[newh] = new
            elif name in ("Intercomm_create", "Intercomm_merge", "Comm_accept", "Comm_connect",
                          "Comm_get_parent", "Comm_join"):
                h = f.get("newcomm", f.get("handle", f.get("comm")))
                if h is not None and h != COMM_NULL:
                    ch[h] = Comm("unknown", None, ("unknown", rank, rec[0]))
            elif name == "Comm_free":
                ch.pop(f.get("handle", f.get("comm")), None)
            elif name == "Comm_group":
                gh[f.get("group")] = ("comm", f.get("_comm"))
            elif name in ("Group_incl", "Group_excl"):
                gh[f.get("newgroup")] = (name[6:], gh.get(f.get("group")), list(f.get("ranks", [])))
            elif name in ("Group_range_incl", "Group_range_excl"):
                gh[f.get("newgroup")] = (name[6:], gh.get(f.get("group")), f.get("ranges", []))
            elif name in ("Group_union", "Group_intersection", "Group_difference"):
                gh[f.get("newgroup")] = (name[6:], gh.get(f.get("group1")), gh.get(f.get("group2")))
            elif name.startswith("Type_") and "newtype" in f:
                th[f["newtype"]] = self._type_size(name, f, th)

    def _type_size(self, name, f, th):
        old = th.get(f.get("oldtype"), None)
        cnt = max(int(f.get("count", 0) or 0), 0)
        lengths = f.get("lengths", f.get("blocklengths", []))
        if name in ("Type_dup", "Type_create_resized"):
            return old
        if name == "Type_contiguous":
            return None if old is None else cnt * old
        if name in ("Type_vector", "Type_hvector", "Type_create_hvector",
                    "Type_create_indexed_block"):
            return None if old is None else cnt * int(f.get("blocklength", 0)) * old
        if name in ("Type_indexed", "Type_hindexed", "Type_create_hindexed"):
            return None if old is None else sum(lengths) * old
        if name in ("Type_struct", "Type_create_struct"):
            sizes = [th.get(t) for t in f.get("oldtypes", [])]
            if any(s is None for s in sizes) or len(sizes) != len(lengths):
                return None
            return sum(n * s for n, s in zip(lengths, sizes))
        if name == "Type_create_subarray":
            return None if old is None else prod(f.get("subsizes", [])) * old
        return None

    # -- pass B: members of a communicator as seen by ``rank`` ---------------------------
    def members(self, comm: Comm | None, rank: int):
        if comm is None:
            return None
        if comm.kind == "world":
            return list(range(self.n))
        if comm.kind == "self":
            return [comm.ident[1]]
        if rank in comm.memo:
            return comm.memo[rank]
        out = self._members(comm, rank)
        comm.memo[rank] = out
        return out

    def _members(self, comm, rank):
        pm = self.members(comm.parent, rank)
        if pm is None or rank not in comm.data:
            return None
        mine = comm.data[rank]
        if comm.kind == "dup":
            return pm
        if comm.kind == "create":
            g = self._group(mine, rank)
            return g if g is not None and rank in g else None
        if comm.kind == "split":
            if any(q not in comm.data for q in pm) or mine[0] < 0:
                return None
            same = [q for q in pm if comm.data[q][0] == mine[0]]
            return sorted(same, key=lambda q: (comm.data[q][1], pm.index(q)))
        if comm.kind == "cart":
            size = prod(mine) if mine else 0
            out = pm[:size]
            return out if rank in out else None
        if comm.kind == "graph":
            out = pm[:int(mine)]
            return out if rank in out else None
        if comm.kind == "cartsub":
            dims = comm.parent.data.get(rank) if comm.parent.kind == "cart" else None
            if not dims or len(dims) != len(mine) or len(pm) != prod(dims):
                return None

            def coords(i):
                c = []
                for d in reversed(dims):
                    c.append(i % d)
                    i //= d
                return c[::-1]
            me = coords(pm.index(rank))
            keep = [j for j, r in enumerate(mine) if not r]
            return [q for i, q in enumerate(pm)
                    if all(coords(i)[j] == me[j] for j in keep)]
        return None

    def _group(self, g, rank):
        if g is None:
            return None
        op = g[0]
        if op == "comm":
            return self.members(g[1], rank)
        base = self._group(g[1], rank)
        if base is None:
            return None
        if op == "incl":
            return [base[i] for i in g[2]] if all(0 <= i < len(base) for i in g[2]) else None
        if op == "excl":
            drop = set(g[2])
            return [q for i, q in enumerate(base) if i not in drop]
        if op in ("range_incl", "range_excl"):
            idx = []
            for tri in g[2]:
                if len(tri) != 3 or tri[2] == 0:
                    return None
                a, b, s = tri
                idx.extend(range(a, b + (1 if s > 0 else -1), s))
            if op == "range_incl":
                return [base[i] for i in idx] if all(0 <= i < len(base) for i in idx) else None
            drop = set(idx)
            return [q for i, q in enumerate(base) if i not in drop]
        other = self._group(g[2], rank)
        if other is None:
            return None
        if op == "union":
            return base + [q for q in other if q not in base]
        if op == "intersection":
            return [q for q in base if q in other]
        return [q for q in base if q not in other]   # difference


def convert(asm: TraceAssembler, res: Resolver, rank: int, calls, fid: int,
            where: dict | None = None) -> None:
    """Append rank ``rank``'s calls (already annotated) to the assembler.

    ``where["rec"]`` is kept at the record being converted (for error messages).
    """
    where = {} if where is None else where
    persistent: dict[int, tuple] = {}
    nsr = 0

    def peer(f, key, comm_key="_comm", recv=False):
        v = int(f.get(key, -3))
        if recv and v == DUMPI_ANY:
            return ANY
        if v < 0:
            return "null"       # MPI_PROC_NULL (or another negative marker): no message
        mem = res.members(f.get(comm_key), rank)
        if mem is None or v >= len(mem):
            return None
        return mem[v]

    def tagv(f, key="tag", recv=False):
        v = int(f.get(key, 0))
        return ANY if recv and v == DUMPI_ANY else v

    def nb(f, cnt="count", typ="datatype"):
        return max(int(f.get(cnt, 0) or 0), 0) * f.get("_sz_" + typ, 1)

    for rec in calls:
        no, name, f, win, wout, cin, cout = rec
        where["rec"] = no
        t_in = win if win is not None else (cin if cin is not None else 0.0)
        t_out = wout if wout is not None else (cout if cout is not None else t_in)
        asm.mpi_enter(rank, t_in, no, fid, name)
        kw = {"line": no, "fid": fid, "t_s": t_in}
        if name in _SENDS or name in _ISENDS:
            p = peer(f, "dest")
            if p == "null":
                asm.count("proc_null_skipped")
            elif name in _SENDS:
                asm.send(rank, p, nb(f), tagv(f), **kw)
            else:
                asm.post(rank, OP_ISEND, p, nb(f), tagv(f), f.get("request"), **kw)
        elif name in ("Recv", "Irecv"):
            p = peer(f, "source", recv=True)
            if p == "null":
                asm.count("proc_null_skipped")
            elif name == "Recv":
                asm.recv(rank, p, nb(f), tagv(f, recv=True), **kw)
            else:
                asm.post(rank, OP_IRECV, p, nb(f), tagv(f, recv=True), f.get("request"), **kw)
        elif name in ("Sendrecv", "Sendrecv_replace"):
            rep = name == "Sendrecv_replace"
            d, s = peer(f, "dest"), peer(f, "source", recv=True)
            hs, hr = ("sr", nsr, 0), ("sr", nsr, 1)
            nsr += 1
            if d != "null":
                asm.post(rank, OP_ISEND, d, nb(f) if rep else nb(f, "sendcount", "sendtype"),
                         tagv(f, "sendtag"), hs, **kw)
            if s != "null":
                asm.post(rank, OP_IRECV, s, nb(f) if rep else nb(f, "recvcount", "recvtype"),
                         tagv(f, "recvtag", recv=True), hr, **kw)
            for h, p in ((hs, d), (hr, s)):
                if p != "null":
                    asm.complete(rank, h, **kw)
        elif name in ("Wait", "Waitall", "Waitany", "Waitsome", "Test", "Testall", "Testany",
                      "Testsome", "Request_get_status"):
            for h in _completed(name, f):
                if h != REQUEST_NULL:
                    asm.complete(rank, h, **kw)
        elif name in _PERSIST:
            op = _PERSIST[name]
            if op == OP_ISEND:
                persistent[f.get("request")] = (op, peer(f, "dest"), nb(f), tagv(f))
            else:
                persistent[f.get("request")] = (op, peer(f, "source", recv=True), nb(f),
                                                tagv(f, recv=True))
        elif name in ("Start", "Startall"):
            hs = [f.get("request")] if name == "Start" else list(f.get("requests", []))
            for h in hs:
                tpl = persistent.get(h)
                if tpl is None:
                    asm.count("unknown_requests")
                elif tpl[1] == "null":
                    asm.count("proc_null_skipped")
                else:
                    asm.post(rank, tpl[0], tpl[1], tpl[2], tpl[3], h, **kw)
        elif name == "Request_free":
            h = f.get("request")
            if h in persistent and h not in asm.active[rank]:
                persistent.pop(h)
            else:
                asm.active[rank].pop(h, None)   # completes on its own; nothing to wait for
        elif name == "Cancel":
            asm.drop_request(rank, f.get("request"))
        elif name in _COLL:
            _collective(asm, res, rank, name, f, kw)
        elif name in ("Scan", "Exscan", "Alltoallw"):
            asm.count("unsupported_collectives")
            asm.note(f"MPI_{name} has no point-to-point decomposition and was skipped")
        asm.mpi_leave(rank, t_out)


def _completed(name, f):
    """Request handles completed by a wait/test record."""
    if name in ("Wait", "Request_get_status"):
        return [f.get("request")] if name == "Wait" or f.get("flag") else []
    if name == "Test":
        return [f.get("request")] if f.get("flag") else []
    reqs = list(f.get("requests") or [])
    if name == "Waitall" or (name == "Testall" and f.get("flag")):
        return reqs
    if name in ("Waitany", "Testany"):
        i = f.get("index", -1)
        ok = name == "Waitany" or f.get("flag")
        return [reqs[i]] if ok and i is not None and 0 <= i < len(reqs) else []
    if name in ("Waitsome", "Testsome"):
        return [reqs[i] for i in (f.get("indices") or []) if 0 <= i < len(reqs)]
    return []


def _collective(asm, res, rank, name, f, kw):
    kind = _COLL[name]
    comm = f.get("_comm")
    mem = res.members(comm, rank)
    if asm.unmapped_collective(mem, rank, "whose members could not be rebuilt"):
        return
    p = len(mem)
    sz = lambda t: f.get("_sz_" + t, 1)   # noqa: E731
    c = lambda k: max(int(f.get(k, 0) or 0), 0)   # noqa: E731
    a = dict(root=int(f.get("root", 0) or 0))
    if kind in ("bcast", "reduce", "allreduce"):
        a["nbytes"] = c("count") * sz("datatype")
    elif kind in ("gather", "allgather", "alltoall"):
        a["nbytes"] = c("sendcount") * sz("sendtype")
    elif kind == "gatherv":
        a["nbytes"] = c("sendcount") * sz("sendtype")
        if f.get("recvcounts"):
            a["recv_counts"] = [max(v, 0) * sz("recvtype") for v in f["recvcounts"]]
    elif kind == "scatter":
        a["nbytes"] = c("recvcount") * sz("recvtype")
    elif kind == "scatterv":
        a["nbytes"] = a["recv_nbytes"] = c("recvcount") * sz("recvtype")
        if f.get("sendcounts"):
            a["send_counts"] = [max(v, 0) * sz("sendtype") for v in f["sendcounts"]]
    elif kind == "allgatherv":
        a["nbytes"] = c("sendcount") * sz("sendtype")
        if f.get("recvcounts"):
            a["recv_counts"] = [max(v, 0) * sz("recvtype") for v in f["recvcounts"]]
    elif kind == "alltoallv":
        a["send_counts"] = [max(v, 0) * sz("sendtype") for v in f.get("sendcounts") or []]
        a["recv_counts"] = [max(v, 0) * sz("recvtype") for v in f.get("recvcounts") or []]
        if len(a["send_counts"]) != p or len(a["recv_counts"]) != p:
            asm.count("unmapped_collectives")
            return
    elif kind == "reduce_scatter":
        a["recv_counts"] = [max(v, 0) * sz("datatype") for v in f.get("recvcounts") or []]
        if len(a["recv_counts"]) != p:
            asm.count("unmapped_collectives")
            return
        a["nbytes"] = a["recv_counts"][mem.index(rank)]
    for key in ("recv_counts", "send_counts"):
        if key in a and len(a[key]) != p:
            a.pop(key)
    asm.collective(rank, kind, comm.ident, mem, mem.index(rank), **a, **kw)
