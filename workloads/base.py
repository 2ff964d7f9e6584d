"""The engine's workload contract: per-rank op arrays in one CSR layout.

Every reader and generator produces a :class:`Workload`. The engine consumes nothing
else. Records of rank ``r`` are ``[rank_ptr[r], rank_ptr[r+1])`` in every array.

Op codes (``op`` column)
------------------------
=============  =====  =====================================================================
name           value  meaning of the other columns
=============  =====  =====================================================================
OP_COMPUTE     0      ``duration_s`` seconds of local work
OP_SEND        1      blocking send of ``nbytes`` to rank ``peer`` with ``tag``
OP_RECV        2      blocking recv from ``peer`` with ``tag``; ``nbytes`` = -1 if unknown
OP_ISEND       3      non-blocking send; ``req`` = request id (unique within the rank)
OP_IRECV       4      non-blocking recv; ``req`` = request id; ``nbytes`` may be -1
OP_WAIT        5      wait for request ``req`` of this rank
OP_WAITALL     6      wait for every outstanding request of this rank
OP_BARRIER     7      barrier over all ranks (a pure synchronisation point)
OP_AMREQUEST   8      active-message request/reply (LoPC): send ``nbytes`` to ``peer``;
                      its processor runs a handler of ``duration_s`` seconds (interrupting
                      its compute) and replies with ``nbytes``; the reply's handler runs
                      ``duration_s`` here; the rank blocks until then
=============  =====  =====================================================================

Matching is per ordered channel ``(src, dst, tag)`` in FIFO order (MPI non-overtaking,
no wildcards). Collectives are decomposed into these ops by ``workloads.collectives``.
A wait on a set of requests is written as consecutive OP_WAITs (same completion time).
"""
from __future__ import annotations

import os

from dataclasses import dataclass, field

import numpy as np

# op codes are shared with the engine, so they live in the core (re-exported here)
from ccmod.codes import (OP_AMREQUEST, OP_BARRIER, OP_COMPUTE, OP_IRECV,  # noqa: F401
                         OP_ISEND, OP_NAMES, OP_RECV, OP_SEND, OP_WAIT, OP_WAITALL, RECV_OPS,
                         SEND_OPS)


@dataclass
class Workload:
    """Per-rank records of a parallel application, as flat arrays (CSR by rank).

    Attributes
    ----------
    nranks : int
    rank_ptr : int64[nranks+1]
    op : int8[n]
    peer : int32[n]        destination (send) or source (recv) rank; -1 otherwise
    tag : int32[n]         message tag (0 when the format has none)
    nbytes : int64[n]      message size; -1 for a recv of unknown size
    duration_s : float64[n] compute duration in seconds (0 for other ops)
    req : int64[n]         request id for isend/irecv/wait; -1 otherwise
    line : int64[n]        line or record number in the source file (for error messages)
    file_id : int32[n]     index into ``files``
    files : list[str]      source file names
    meta : dict            reader-specific facts (format, compute_rate, notes, ...)
    message_times : workloads.msgtimes.MessageTimes or None
                           measured call times of each matched message (timestamped
                           readers only; ``ccmod fit TRACE`` uses them)
    """

    nranks: int
    rank_ptr: np.ndarray
    op: np.ndarray
    peer: np.ndarray
    tag: np.ndarray
    nbytes: np.ndarray
    duration_s: np.ndarray
    req: np.ndarray
    line: np.ndarray
    file_id: np.ndarray
    files: list[str] = field(default_factory=list)
    meta: dict = field(default_factory=dict)
    message_times: object = None

    @property
    def nrecords(self) -> int:
        return int(self.op.shape[0])

    def where(self, i: int) -> tuple[str | None, int | None]:
        """Return (file, line) of record ``i`` for error messages."""
        fid = int(self.file_id[i])
        f = self.files[fid] if 0 <= fid < len(self.files) else None
        read_from = getattr(self, "read_from", None)
        if read_from:
            # a Parquet/CSV copy: name the file the user gave; lines are the original's
            f = f"{read_from} (record of {os.path.basename(f)})" if f else read_from
        ln = int(self.line[i])
        return f, (ln if ln > 0 else None)

    def rank_of(self, i: int) -> int:
        return int(np.searchsorted(self.rank_ptr, i, side="right") - 1)

    def to_frame(self):
        """Return the records as a pandas DataFrame (one row per record)."""
        import pandas as pd
        rank = np.repeat(np.arange(self.nranks, dtype=np.int32), np.diff(self.rank_ptr))
        return pd.DataFrame({
            "rank": rank, "op": np.asarray(OP_NAMES, dtype=object)[self.op],
            "peer": self.peer, "tag": self.tag, "nbytes": self.nbytes,
            "duration_s": self.duration_s, "req": self.req, "line": self.line,
            "file_id": self.file_id,
        })


class WorkloadBuilder:
    """Collect records rank by rank (any order of ranks) and compile to a :class:`Workload`.

    Appending is list-based (cheap); :meth:`build` does one stable sort by rank so the
    per-rank order of appends is preserved.
    """

    def __init__(self, nranks: int | None = None):
        self.nranks = nranks
        self._cols: dict[str, list] = _fresh_cols()
        # closed chunks, in append order: (lists, arrays or None); see add_chunk
        self._chunks: list[tuple[dict, dict | None]] = []
        self.files: list[str] = []
        self._file_index: dict[str, int] = {}
        self.meta: dict = {}

    def file(self, name: str) -> int:
        """Return the file id of ``name`` (registering it)."""
        if name not in self._file_index:
            self._file_index[name] = len(self.files)
            self.files.append(name)
        return self._file_index[name]

    def add(self, rank: int, op: int, peer: int = -1, nbytes: int = 0, duration_s: float = 0.0,
            tag: int = 0, req: int = -1, line: int = 0, file_id: int = 0) -> None:
        c = self._cols
        c["rank"].append(rank); c["op"].append(op); c["peer"].append(peer)
        c["tag"].append(tag); c["nbytes"].append(nbytes); c["duration_s"].append(duration_s)
        c["req"].append(req); c["line"].append(line); c["file_id"].append(file_id)

    def close_lists(self) -> None:
        """Close the records appended so far into a chunk (later appends start anew)."""
        if self._cols["op"]:
            self._chunks.append((self._cols, None))
            self._cols = _fresh_cols()

    def take_lists(self) -> dict[str, list]:
        """Hand over the records appended since :meth:`close_lists` (as column lists)."""
        cols, self._cols = self._cols, _fresh_cols()
        return cols

    def add_chunk(self, lists: dict[str, list], arrays: dict[str, np.ndarray]) -> None:
        """Append records given as column ``lists`` (from :meth:`take_lists`) merged with
        column ``arrays`` by their ``line`` (stable: the lists' records first on a tie).

        Used by the vectorised TI reader: the records of one block of lines, some built
        by the line parser (lists), the others vectorised (arrays), in line order.
        """
        self.close_lists()
        self._chunks.append((lists, arrays))

    # convenience wrappers -------------------------------------------------------------
    def compute(self, rank, duration_s, **kw):
        self.add(rank, OP_COMPUTE, duration_s=float(duration_s), **kw)

    def send(self, rank, dst, nbytes, tag=0, **kw):
        self.add(rank, OP_SEND, peer=dst, nbytes=int(nbytes), tag=tag, **kw)

    def recv(self, rank, src, nbytes=-1, tag=0, **kw):
        self.add(rank, OP_RECV, peer=src, nbytes=int(nbytes), tag=tag, **kw)

    def isend(self, rank, dst, nbytes, req, tag=0, **kw):
        self.add(rank, OP_ISEND, peer=dst, nbytes=int(nbytes), tag=tag, req=req, **kw)

    def irecv(self, rank, src, req, nbytes=-1, tag=0, **kw):
        self.add(rank, OP_IRECV, peer=src, nbytes=int(nbytes), tag=tag, req=req, **kw)

    def wait(self, rank, req, **kw):
        self.add(rank, OP_WAIT, req=req, **kw)

    def waitall(self, rank, **kw):
        self.add(rank, OP_WAITALL, **kw)

    def barrier(self, rank, **kw):
        self.add(rank, OP_BARRIER, **kw)

    def amrequest(self, rank, dst, nbytes, handler_s, **kw):
        self.add(rank, OP_AMREQUEST, peer=dst, nbytes=int(nbytes), duration_s=float(handler_s), **kw)

    def _bad_value(self, name: str, dtype, cols: dict) -> None:
        """Raise a one-line error at the first record whose ``name`` does not fit ``dtype``
        (e.g. a byte count of 2**63 in a trace): file:line instead of OverflowError."""
        from ccmod.errors import CcmodInputError
        from ccmod.guard import excerpt
        info = np.iinfo(dtype) if np.issubdtype(dtype, np.integer) else None
        for i, v in enumerate(cols[name]):
            try:
                ok = (info.min <= int(v) <= info.max) if info else np.isfinite(float(v)) \
                    or name == "duration_s" and float(v) == float("inf")
            except (OverflowError, ValueError, TypeError):
                ok = False
            if not ok:
                fid, line = cols["file_id"][i], cols["line"][i]
                src = self.files[fid] if isinstance(fid, int) and 0 <= fid < len(self.files) \
                    else None
                raise CcmodInputError(f"{name} {excerpt(v)} is out of range",
                                      source=src, line=line or None,
                                      hint="the value does not fit a 64-bit field; is the "
                                           "record corrupt?")

    def build(self) -> Workload:
        chunks = [(lists, arrs, _merge_order(lists, arrs))
                  for lists, arrs in self._chunks + [(self._cols, None)]]

        def raw(name, dtype, keep_int=False):
            # one column of every chunk in append order; chunk arrays are released as used
            # (``keep_int``: integer arrays keep their width, e.g. the scan's int32 ranks)
            parts = []
            for lists, arrs, o in chunks:
                try:
                    a = np.asarray(lists[name], dtype=dtype)
                except (OverflowError, ValueError, TypeError):
                    self._bad_value(name, dtype, lists)
                    raise
                if arrs is not None:
                    b = arrs.pop(name)
                    if not (keep_int and b.dtype.kind == "i"):
                        b = b.astype(dtype, copy=False)
                    a = np.concatenate([a, b]) if len(a) else b
                    if o is not None:
                        a = a[o]
                parts.append(a)
            out = _join(parts)
            # a chunk's constant column may be a broadcast value (read-only): the
            # Workload's columns are arrays of their own
            return out if out.flags.writeable else out.copy()

        # ranks as read (a copy to int64 would be 8 fresh bytes per record: page faults
        # cost ~3 us per 4 KiB here, a tenth of a large file's read)
        rank = raw("rank", np.int64, keep_int=True)
        nranks = self.nranks
        if nranks is None:
            nranks = int(rank.max()) + 1 if rank.size else 0
        # stable sort by rank (identity when already in rank order: no copies then)
        order = None if np.all(rank[1:] >= rank[:-1]) else np.argsort(rank, kind="stable")
        if order is None and rank.size and 0 <= rank[0] and rank[-1] < nranks:
            # in rank order: each rank's first record by bisection (no int64 temporary)
            rank_ptr = np.searchsorted(rank, np.arange(nranks + 1)).astype(np.int64)
        else:
            counts = np.bincount(rank, minlength=nranks) if rank.size else \
                np.zeros(nranks, np.int64)
            rank_ptr = np.zeros(nranks + 1, dtype=np.int64)
            np.cumsum(counts, out=rank_ptr[1:])
        n = rank.size
        del rank

        def col(name, dtype):
            if not n:
                return np.zeros(0, dtype)
            a = raw(name, dtype)
            return a if order is None else a[order]

        return Workload(
            nranks=nranks, rank_ptr=rank_ptr, op=col("op", np.int8), peer=col("peer", np.int32),
            tag=col("tag", np.int32), nbytes=col("nbytes", np.int64),
            duration_s=col("duration_s", np.float64), req=col("req", np.int64),
            line=col("line", np.int64), file_id=col("file_id", np.int32),
            files=list(self.files), meta=dict(self.meta))


def _join(parts: list[np.ndarray]) -> np.ndarray:
    """``np.concatenate(parts)`` (1-D), where runs of parts that are consecutive slices of
    one array are joined as a view of it, without a copy: the TI scan fills one set of
    columns block after block, and copying them was a fifth of a large file's read."""
    runs: list[list] = []                  # [joined view, base it is a view of]
    for a in parts:
        if not len(a):
            continue
        if runs:
            b, base = runs[-1]
            if (a.base is not None and a.base is base and a.dtype == b.dtype
                    and a.flags.c_contiguous and b.flags.c_contiguous
                    and a.ctypes.data == b.ctypes.data + b.nbytes):
                # the view keeps ``base`` (hence both parts' memory) alive
                runs[-1][0] = np.lib.stride_tricks.as_strided(
                    b, shape=(len(b) + len(a),), strides=(b.itemsize,))
                continue
        runs.append([a, a.base])
    if not runs:                           # every part empty (there is at least one)
        return parts[0]
    return runs[0][0] if len(runs) == 1 else np.concatenate([r[0] for r in runs])


def _merge_order(lists: dict, arrs: dict | None):
    """Order merging a chunk's list records with its array records by line (None: as is)."""
    if arrs is None:
        return None
    line = np.concatenate([np.asarray(lists["line"], np.int64), arrs["line"]])
    if np.all(line[1:] >= line[:-1]):
        return None
    return np.argsort(line, kind="stable")


def _fresh_cols() -> dict[str, list]:
    return {k: [] for k in ("rank", "op", "peer", "tag", "nbytes", "duration_s", "req", "line",
                            "file_id")}


def file_head(path, nbytes: int) -> bytes | None:
    """The first ``nbytes`` of a regular file, or None when it is not one or cannot be read.

    For readers' ``sniff``: a folder, a missing file or an unreadable one is simply not
    theirs (the reader that claims nothing reports the error).
    """
    p = os.fspath(path)
    if not os.path.isfile(p):
        return None
    try:
        with open(p, "rb") as f:
            return f.read(nbytes)
    except OSError:
        return None
