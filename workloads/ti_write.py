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
from ccmod.atomic import atomic_path, atomic_write_text, ensure_dir
from ccmod.workloads.base import (OP_AMREQUEST, OP_BARRIER, OP_COMPUTE, OP_IRECV, OP_ISEND, OP_RECV,
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


def _check_rate(compute_rate: float) -> None:
    if not (np.isfinite(compute_rate) and compute_rate > 0):
        raise CcmodInputError(f"compute_rate={compute_rate} must be > 0",
                              hint="flop/s used to turn seconds into flops")


def _rank_lines(w: Workload, r: int, nb: np.ndarray, compute_rate: float):
    """Yield the TI lines of rank ``r`` (``nb``: sizes from :func:`_recv_sizes`)."""
    op, peer, tag, dur, req = w.op, w.peer, w.tag, w.duration_s, w.req
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


def ti_lines(w: Workload, compute_rate: float = 1e9):
    """Yield the TI lines (without newline) of every rank in order."""
    _check_rate(compute_rate)
    nb = _recv_sizes(w)
    for r in range(w.nranks):
        yield from _rank_lines(w, r, nb, compute_rate)


def _write_lines(fh, lines) -> int:
    """Write ``lines`` (without newlines) to ``fh`` in large chunks; return how many."""
    n = 0
    buf = []
    for line in lines:
        buf.append(line)
        if len(buf) >= 65536:
            fh.write("\n".join(buf) + "\n")
            n += len(buf)
            buf.clear()
    if buf:
        fh.write("\n".join(buf) + "\n")
        n += len(buf)
    return n


def write_ti(w: Workload, path, compute_rate: float = 1e9) -> int:
    """Write ``w`` to ``path`` atomically; return the number of lines written."""
    try:
        with atomic_path(path) as tmp, open(tmp, "w") as fh:
            n = _write_lines(fh, ti_lines(w, compute_rate))
    except OSError as exc:
        raise CcmodInputError(f"cannot write {path}: {exc.strerror or exc}", source=str(path),
                              hint="check the directory exists and is writable") from None
    return n


def write_ti_folder(w: Workload, folder, compute_rate: float = 1e9) -> int:
    """One TI file per rank (``ti_trace<r>.txt``) + ``smpi_replay.txt`` listing them.

    Returns the number of action lines written (description file excluded).
    """
    folder = ensure_dir(folder, "folder")
    names = [f"ti_trace{r}.txt" for r in range(w.nranks)]
    _check_rate(compute_rate)
    nb = _recv_sizes(w)
    n = 0
    for r, name in enumerate(names):
        with atomic_path(folder / name) as tmp, open(tmp, "w") as fh:
            n += _write_lines(fh, _rank_lines(w, r, nb, compute_rate))
    atomic_write_text(folder / "smpi_replay.txt", "\n".join(names) + "\n")
    return n
