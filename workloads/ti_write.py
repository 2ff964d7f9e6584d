"""Write a :class:`~workloads.base.Workload` as a SimGrid time-independent (TI) trace.

One file holds every rank, grouped by rank, one action per line::

    <rank> init
    <rank> compute <flops>
    <rank> send <dst> <tag> <bytes>       <rank> isend <dst> <tag> <bytes>
    <rank> recv <src> <tag> <bytes>       <rank> irecv <src> <tag> <bytes>
    <rank> wait <src> <dst> <tag>         (the request's own src/dst/tag)
    <rank> waitall
    <rank> barrier
    <rank> finalize

Sizes are bytes (``init`` without argument: MPI_BYTE). Compute durations become flops at
``compute_rate`` flop/s. A receive of unknown size (-1) is written with the size of the
send it matches (per-channel FIFO), or 0 if it matches none. When a rank has several
outstanding requests with the same (src, dst, tag), a ``wait`` line completes the oldest
one, so waits are written in creation order for such duplicates by the generators.
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np

from ccmod.errors import CcmodInputError
from ccmod.io import atomic_path
from workloads.base import (OP_AMREQUEST, OP_BARRIER, OP_COMPUTE, OP_IRECV, OP_ISEND, OP_RECV,
                            OP_SEND, OP_WAIT, OP_WAITALL, Workload)


def _recv_sizes(w: Workload) -> np.ndarray:
    """Sizes to write for receives: known sizes, or the matching send's size."""
    nb = w.nbytes.copy()
    unknown = np.isin(w.op, (OP_RECV, OP_IRECV)) & (nb < 0)
    if not unknown.any():
        return nb
    rank = np.repeat(np.arange(w.nranks), np.diff(w.rank_ptr))
    sends = defaultdict(list)
    for i in np.flatnonzero(np.isin(w.op, (OP_SEND, OP_ISEND))):
        sends[(int(rank[i]), int(w.peer[i]), int(w.tag[i]))].append(int(w.nbytes[i]))
    pos = defaultdict(int)
    for i in np.flatnonzero(np.isin(w.op, (OP_RECV, OP_IRECV))):
        ch = (int(w.peer[i]), int(rank[i]), int(w.tag[i]))
        k = pos[ch]
        pos[ch] += 1
        if nb[i] < 0:
            lst = sends.get(ch, ())
            nb[i] = lst[k] if k < len(lst) else 0
    return nb


def ti_lines(w: Workload, compute_rate: float = 1e9):
    """Yield the TI lines (without newline) of every rank in order."""
    if not (np.isfinite(compute_rate) and compute_rate > 0):
        raise CcmodInputError(f"compute_rate={compute_rate} must be > 0",
                              hint="flop/s used to turn seconds into flops")
    nb = _recv_sizes(w)
    op, peer, tag, dur, req = w.op, w.peer, w.tag, w.duration_s, w.req
    for r in range(w.nranks):
        yield f"{r} init"
        reqkey: dict[int, str] = {}
        for i in range(int(w.rank_ptr[r]), int(w.rank_ptr[r + 1])):
            o = op[i]
            if o == OP_COMPUTE:
                yield f"{r} compute {float(dur[i]) * compute_rate!r}"
            elif o == OP_SEND:
                yield f"{r} send {peer[i]} {tag[i]} {nb[i]}"
            elif o == OP_RECV:
                yield f"{r} recv {peer[i]} {tag[i]} {nb[i]}"
            elif o == OP_ISEND:
                reqkey[int(req[i])] = f"{r} {peer[i]} {tag[i]}"
                yield f"{r} isend {peer[i]} {tag[i]} {nb[i]}"
            elif o == OP_IRECV:
                reqkey[int(req[i])] = f"{peer[i]} {r} {tag[i]}"
                yield f"{r} irecv {peer[i]} {tag[i]} {nb[i]}"
            elif o == OP_WAIT:
                key = reqkey.pop(int(req[i]), None)
                if key is None:
                    f, ln = w.where(i)
                    raise CcmodInputError(f"rank {r}: wait on request {int(req[i])} that no "
                                          "isend/irecv created", source=f, line=ln)
                yield f"{r} wait {key}"
            elif o == OP_WAITALL:
                reqkey.clear()
                yield f"{r} waitall"
            elif o == OP_BARRIER:
                yield f"{r} barrier"
            elif o == OP_AMREQUEST:
                yield f"{r} amrequest {peer[i]} {w.nbytes[i]} {float(dur[i]) * compute_rate!r}"
        if reqkey:  # TI replays need every request completed before finalize
            yield f"{r} waitall"
        yield f"{r} finalize"


def write_ti(w: Workload, path, compute_rate: float = 1e9) -> int:
    """Write ``w`` to ``path`` atomically; return the number of lines written."""
    n = 0
    try:
        with atomic_path(path) as tmp, open(tmp, "w") as fh:
            buf = []
            for line in ti_lines(w, compute_rate):
                buf.append(line)
                if len(buf) >= 65536:
                    fh.write("\n".join(buf) + "\n")
                    n += len(buf)
                    buf.clear()
            if buf:
                fh.write("\n".join(buf) + "\n")
                n += len(buf)
    except OSError as exc:
        raise CcmodInputError(f"cannot write {path}: {exc.strerror or exc}", source=str(path),
                              hint="check the directory exists and is writable") from None
    return n
