"""SimGrid TI collective actions: argument layouts, datatypes, decomposition call.

Argument layouts follow SimGrid's SMPI replay (``src/smpi/internals/smpi_replay.cpp``,
current and 2014 versions, read for reference). Data sizes of every communication
action are **counts of elements** of an MPI datatype; the element size is the rank's
default datatype (``MPI_DOUBLE``, 8 bytes, when the rank's ``init`` line has an
argument, else ``MPI_BYTE``) unless the line names a datatype id (table below).
``N`` in the layouts is the number of ranks (SimGrid's ``MPI_COMM_WORLD`` size).

==============  ===================================================================
action          arguments after the action name
==============  ===================================================================
barrier         (none)
bcast           <count> [<root> [<dtype>]]
reduce          <count> <comp_flops> [<root> [<dtype>]]
allreduce       <count> <comp_flops> [<dtype>]
alltoall        <send_count> <recv_count> [<dtype_send> [<dtype_recv>]]   (per peer)
alltoallv       <send_buf> <send_counts x N> <recv_buf> <recv_counts x N> [<dt1> [<dt2>]]
gather          <send_count> <recv_count> [<root> [<dt1> [<dt2>]]]
allgather       <send_count> <recv_count> [<dt1> [<dt2>]]
gatherv         <send_count> <recv_counts x N> [<root> [<dt1> [<dt2>]]]
allgatherv      <send_count> <recv_counts x N> [<dt1> [<dt2>]]
scatter         <send_count> <recv_count> [<root> [<dt1> [<dt2>]]]
scatterv        <send_counts x N> <recv_count> [<root> [<dt1> [<dt2>]]]
reducescatter   <recv_counts x N> <comp_flops> [<dtype>]
==============  ===================================================================

The reduction actions (reduce, allreduce, reducescatter) carry ``comp_flops``: SimGrid
executes them *after* the data movement, so ccmod appends one OP_COMPUTE of
``comp_flops / compute_rate`` seconds after the decomposed collective.
"""
from __future__ import annotations


#: SimGrid datatype id -> size in bytes (ids 0..6 are the 2014 table; the current
#: table extends it, see ``smpi_datatype.cpp``; LP64 sizes).
DTYPE_BYTES = {
    0: 8, 1: 4, 2: 1, 3: 2, 4: 8, 5: 4, 6: 1, 7: 8, 8: 1, 9: 1, 10: 2, 11: 4, 12: 8, 13: 8,
    14: 16, 15: 4, 16: 1, 17: 1, 18: 2, 19: 4, 20: 8, 21: 1, 22: 2, 23: 4, 24: 8, 25: 8,
    26: 16, 27: 32, 28: 8, 29: 8, 30: 8, 31: 16, 32: 16, 33: 8, 34: 8, 35: 8, 36: 16,
    37: 16, 38: 4, 39: 4, 40: 8, 41: 16, 42: 8, 43: 16, 44: 16, 45: 4, 46: 2, 47: 4,
    48: 8, 49: 16, 50: 32, 51: 1, 52: 8, 53: 16, 54: 32, 55: 0, 56: 0, 57: 1, 58: 8, 59: 8,
}

#: canonical collective name -> (kind for workloads.collectives, usage string)
COLL_USAGE = {
    "bcast": "bcast <count> [<root> [<dtype>]]",
    "reduce": "reduce <count> <comp_flops> [<root> [<dtype>]]",
    "allreduce": "allreduce <count> <comp_flops> [<dtype>]",
    "alltoall": "alltoall <send_count> <recv_count> [<dtype> [<dtype>]]",
    "alltoallv": "alltoallv <send_buf> <send_counts x N> <recv_buf> <recv_counts x N> "
                 "[<dtype> [<dtype>]]",
    "gather": "gather <send_count> <recv_count> [<root> [<dtype> [<dtype>]]]",
    "allgather": "allgather <send_count> <recv_count> [<dtype> [<dtype>]]",
    "gatherv": "gatherv <send_count> <recv_counts x N> [<root> [<dtype> [<dtype>]]]",
    "allgatherv": "allgatherv <send_count> <recv_counts x N> [<dtype> [<dtype>]]",
    "scatter": "scatter <send_count> <recv_count> [<root> [<dtype> [<dtype>]]]",
    "scatterv": "scatterv <send_counts x N> <recv_count> [<root> [<dtype> [<dtype>]]]",
    "reducescatter": "reducescatter <recv_counts x N> <comp_flops> [<dtype>]",
}

#: every accepted spelling -> canonical name (old camelCase names of the 2014-era replay)
COLL_ALIASES = {name: name for name in COLL_USAGE}
COLL_ALIASES.update({
    "allReduce": "allreduce", "allToAll": "alltoall", "allToAllV": "alltoallv",
    "allToAllv": "alltoallv", "allGather": "allgather", "allGatherV": "allgatherv",
    "gatherV": "gatherv", "scatterV": "scatterv", "reduceScatter": "reducescatter",
})

#: canonical TI name -> kind name of workloads.collectives.expand
KIND = {"bcast": "bcast", "reduce": "reduce", "allreduce": "allreduce",
        "alltoall": "alltoall", "alltoallv": "alltoallv", "gather": "gather",
        "allgather": "allgather", "gatherv": "gatherv", "allgatherv": "allgatherv",
        "scatter": "scatter", "scatterv": "scatterv", "reducescatter": "reduce_scatter"}

_BIG = float(1 << 53)  # largest count / flops accepted: keeps byte sizes inside int64


class ArgError(Exception):
    """A bad argument on one line: ``what`` and ``hint`` end up in CcmodInputError."""

    def __init__(self, what: str, hint: str | None = None):
        super().__init__(what)
        self.what = what
        self.hint = hint


def count(tok: str, what: str) -> float:
    """Parse a non-negative finite number (``1e6`` allowed)."""
    try:
        v = float(tok)
    except ValueError:
        raise ArgError(f"bad number '{tok}' for {what}") from None
    if not 0.0 <= v < _BIG:
        raise ArgError(f"bad number '{tok}' for {what}", "must be finite and >= 0")
    return v


def integer(tok: str, what: str) -> int:
    """Parse a non-negative integer (``2``, also ``2.0`` or ``2e0``)."""
    try:
        v = int(tok)
    except ValueError:
        f = count(tok, what)
        if f != int(f):
            raise ArgError(f"bad integer '{tok}' for {what}") from None
        return int(f)
    if v < 0:
        raise ArgError(f"negative value '{tok}' for {what}")
    return v


#: ids of the datatypes SMPI "replays" (``Datatype::is_replayable()``: MPI_DOUBLE, INT, CHAR,
#: SHORT, LONG, FLOAT, BYTE): only for these does SMPI's TI tracer write a count of elements;
#: for every other datatype it writes ``count * size`` (bytes) and still the datatype id.
REPLAYABLE_IDS = frozenset(range(7))
_REPLAYABLE_TOKENS = frozenset(str(i) for i in REPLAYABLE_IDS)


def dtype(tok: str) -> int:
    """Bytes per unit of a count written with SimGrid datatype id ``tok``.

    The element size for SMPI's replayable datatypes (ids 0..6); 1 for every other
    known id, because SMPI then wrote the count already in bytes (see
    ``REPLAYABLE_IDS`` and docs/readers.md).
    """
    try:
        i = int(tok)
        size = DTYPE_BYTES[i]
        return size if i in REPLAYABLE_IDS else 1
    except (ValueError, KeyError):
        raise ArgError(f"unknown datatype id '{tok}'",
                       "SimGrid ids: 0=double 1=int 2=char 3=short 4=long 5=float 6=byte "
                       "... 59") from None


def _counts(parts, start, n, what):
    toks = parts[start:start + n]
    if len(toks) < n:
        raise IndexError
    return [count(t, what) for t in toks]


def parse(name: str, parts: list[str], n: int, elem: int,
          in_bytes: list | None = None) -> tuple[dict, float]:
    """Parse collective ``name`` (canonical) from ``parts`` (full split line).

    Returns
    -------
    kwargs : dict
        Keyword arguments for ``workloads.collectives.expand`` (sizes in bytes).
    comp_flops : float
        Flops of the reduction to run after the data movement (0 if none).

    Raises
    ------
    IndexError
        A mandatory argument is missing.
    ArgError
        An argument is not a valid number / datatype.

    ``in_bytes``, when given, collects the datatype ids of this line whose counts SMPI
    wrote in bytes (not replayable).
    """
    def _dt(tok):
        if in_bytes is not None and tok not in _REPLAYABLE_TOKENS:
            in_bytes.append(tok)
        return dtype(tok)

    a = parts
    if name == "bcast":
        size = count(a[2], "count")
        root = integer(a[3], "root") if len(a) > 3 else 0
        d = _dt(a[4]) if len(a) > 4 else elem
        return {"nbytes": _b(size, d), "root": root}, 0.0
    if name == "reduce":
        size = count(a[2], "count")
        comp = count(a[3], "comp_flops")
        root = integer(a[4], "root") if len(a) > 4 else 0
        d = _dt(a[5]) if len(a) > 5 else elem
        return {"nbytes": _b(size, d), "root": root}, comp
    if name == "allreduce":
        size = count(a[2], "count")
        comp = count(a[3], "comp_flops")
        d = _dt(a[4]) if len(a) > 4 else elem
        return {"nbytes": _b(size, d)}, comp
    if name in ("alltoall", "allgather"):
        s, r = count(a[2], "send_count"), count(a[3], "recv_count")
        d1 = _dt(a[4]) if len(a) > 4 else elem
        d2 = _dt(a[5]) if len(a) > 5 else elem
        return {"nbytes": _b(s, d1), "recv_nbytes": _b(r, d2)}, 0.0
    if name in ("gather", "scatter"):
        s, r = count(a[2], "send_count"), count(a[3], "recv_count")
        root = integer(a[4], "root") if len(a) > 4 else 0
        d1 = _dt(a[5]) if len(a) > 5 else elem
        d2 = _dt(a[6]) if len(a) > 6 else elem
        # gather: nbytes = what each rank contributes; scatter: what each rank receives
        nb = _b(s, d1) if name == "gather" else _b(r, d2)
        return {"nbytes": nb, "recv_nbytes": _b(r, d2), "root": root}, 0.0
    if name in ("gatherv", "allgatherv"):
        s = count(a[2], "send_count")
        rc = _counts(a, 3, n, "recv_counts")
        extra = a[3 + n:]
        root = 0
        if name == "gatherv" and extra:
            root = integer(extra[0], "root")
            extra = extra[1:]
        # N trailing numbers are displacements: 2014 traces write them right after the
        # counts, current SimGrid writes '<dtype> <displs x N>'; they do not change sizes
        dts = extra[:-n] if len(extra) >= n else extra
        d1 = _dt(dts[0]) if dts else elem
        d2 = _dt(dts[1]) if len(dts) > 1 else d1 if name == "allgatherv" else elem
        return {"nbytes": _b(s, d1), "recv_counts": [_b(c, d2) for c in rc],
                "root": root}, 0.0
    if name == "scatterv":
        sc = _counts(a, 2, n, "send_counts")
        r = count(a[2 + n], "recv_count")
        k = 3 + n
        root = integer(a[k], "root") if len(a) > k else 0
        d1 = _dt(a[k + 1]) if len(a) > k + 1 else elem
        d2 = _dt(a[k + 2]) if len(a) > k + 2 else elem
        return {"send_counts": [_b(c, d1) for c in sc], "nbytes": _b(r, d2),
                "recv_nbytes": _b(r, d2), "root": root}, 0.0
    if name == "alltoallv":
        count(a[2], "send_buf")
        sc = _counts(a, 3, n, "send_counts")
        count(a[3 + n], "recv_buf")
        rc = _counts(a, 4 + n, n, "recv_counts")
        k = 4 + 2 * n
        d1 = _dt(a[k]) if len(a) > k else elem
        d2 = _dt(a[k + 1]) if len(a) > k + 1 else elem
        return {"send_counts": [_b(c, d1) for c in sc],
                "recv_counts": [_b(c, d2) for c in rc]}, 0.0
    if name == "reducescatter":
        rc = _counts(a, 2, n, "recv_counts")
        comp = count(a[2 + n], "comp_flops")
        d = _dt(a[3 + n]) if len(a) > 3 + n else elem
        return {"recv_counts": [_b(c, d) for c in rc]}, comp
    raise ArgError(f"unknown collective '{name}'")  # pragma: no cover - aliases checked


def _b(cnt: float, elem: int) -> int:
    return int(round(cnt * elem))


_expand = None


def get_expand():
    """Import ``workloads.collectives.expand`` lazily (it is a separate module)."""
    global _expand
    if _expand is None:
        from ccmod.workloads.collectives import expand
        _expand = expand
    return _expand
