"""Per-rank record source over a ccmod Parquet trace, for streamed runs (issue 10).

A streamed run (``ccmod run --stream``) never holds the trace: the kernel asks for each
rank's next records (:mod:`ccmod.kernel.window`) and the matcher looks ahead in a sender's
records. :class:`ParquetRecordSource` answers both from the file's *streaming layout*
(:mod:`ccmod.workloads.tabular`: row groups that each hold one rank's records, in rank
order): per rank and per reader (``"load"``, ``"scan"``) it keeps the one decoded row group
it is reading, so memory is ``nranks`` x 2 groups (:func:`stream_group_rows`: ~2M rows in
all), not the trace. Which rank a group holds, and how many records each rank has, come
from the footer (row-group statistics of ``rank`` and row counts): opening the source reads
no records.

Records are validated as their group is decoded (op codes, peers, nulls); the line and
file of a record (for an error message) are read on demand (:meth:`where`).
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ccmod.errors import CcmodInputError
from ccmod.workloads.tabular import arrow_values

#: columns a reader decodes: ``load`` the kernel's records, ``scan`` the matcher's look-ahead
READER_COLUMNS = {"load": ("op", "peer", "tag", "nbytes", "duration_s", "req"),
                  "scan": ("op", "peer", "tag", "nbytes")}
_DTYPE = {"duration_s": np.float64}


def not_streamable(path, why: str, hint: str) -> CcmodInputError:
    """The one-line error for an input ``--stream`` cannot read."""
    return CcmodInputError(f"cannot stream this trace: {why}", source=str(path), hint=hint)


class ParquetRecordSource:
    """Each rank's records of a ccmod Parquet trace, read group by group.

    Parameters
    ----------
    path : path
        A ccmod Parquet trace in the streaming layout (``ccmod convert`` writes it).
    compute_scale : float
        Multiplies ``duration_s`` (as the in-memory reader does).

    Attributes
    ----------
    nranks, nrecords : int
    rank_ptr : int64[nranks + 1]
        Global record index range of each rank (the in-memory Workload's numbering).
    files : list of str
    meta : dict
    """

    def __init__(self, path, compute_scale: float = 1.0):
        import pyarrow as pa
        import pyarrow.parquet as pq
        from ccmod.workloads.tabular import COLUMNS, _check_header, footer_metadata
        self.path = src = str(path)
        hint = f"rewrite it for streaming: ccmod convert {path} streamed.parquet"
        if not Path(path).is_file():
            raise CcmodInputError("no such file", source=src)
        try:
            pf = pq.ParquetFile(path)
            schema = pf.schema_arrow
            fmd = pf.metadata
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise not_streamable(path, f"not a Parquet file ({str(exc)[:80]})",
                                 "--stream reads ccmod Parquet traces: convert with "
                                 f"ccmod convert {path} trace.parquet") from None
        missing = [c for c, _ in COLUMNS if c not in schema.names]
        if missing:
            raise not_streamable(path, f"not a ccmod workload (no column "
                                 f"{', '.join(missing)})", "convert it with ccmod convert")
        if not pa.types.is_integer(schema.field("op").type):
            raise not_streamable(path, "op names, not op codes", hint)
        md = {k.decode("utf-8", "replace"): v.decode("utf-8", "replace")
              for k, v in (schema.metadata or {}).items()}
        nranks, files, meta = footer_metadata(md, src)
        ng = fmd.num_row_groups
        rank_col = schema.names.index("rank")
        g_rank = np.zeros(ng, np.int64)
        g_rows = np.zeros(ng, np.int64)
        for i in range(ng):
            rg = fmd.row_group(i)
            g_rows[i] = rg.num_rows
            st = rg.column(rank_col).statistics
            if g_rows[i] == 0:
                g_rank[i] = g_rank[i - 1] if i else 0
                continue
            if st is None or not st.has_min_max:
                raise not_streamable(path, "its row groups carry no rank statistics", hint)
            if st.min != st.max:
                raise not_streamable(path, f"row group {i} holds ranks {st.min}..{st.max} "
                                     "(each rank's records must be in groups of their own)",
                                     hint)
            g_rank[i] = int(st.min)
        if ng and (g_rank.min() < 0 or np.any(np.diff(g_rank) < 0)):
            raise not_streamable(path, "row groups are not in rank order", hint)
        top = int(g_rank.max()) + 1 if ng else 0
        nranks, files, meta = _check_header(nranks, files, meta, top, int(g_rows.sum()), src)
        self.pf, self.nranks, self.files, self.meta = pf, int(nranks), files, dict(meta)
        self.group_rank = g_rank
        self.group_start = np.concatenate([[0], np.cumsum(g_rows)]).astype(np.int64)
        counts = np.bincount(g_rank, weights=g_rows, minlength=self.nranks).astype(np.int64)
        self.rank_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self.nrecords = int(self.rank_ptr[-1])
        self.compute_scale = float(compute_scale)
        self.read_from = src
        self.meta.setdefault("source_format", self.meta.get("format", "parquet"))
        self.meta["format"] = "parquet"
        # per reader: rank -> (group index, its decoded columns)
        self._cur = {k: [None] * self.nranks for k in READER_COLUMNS}
        self.groups_read = 0
        self.rank_pairs = None     # set by survey()
        from ccmod.workloads.tabular import stream_group_rows
        self._batch_rows = stream_group_rows(self.nranks)

    # -- reading ----------------------------------------------------------------------
    def _group(self, i: int, cols, j: int | None = None) -> dict:
        """Decode row groups ``[i, j)`` (default: group i alone) of one rank, columns
        ``cols`` (validated; compact dtypes)."""
        import pyarrow as pa
        j = i + 1 if j is None else j
        try:
            t = self.pf.read_row_groups(list(range(i, j)), columns=list(cols),
                                        use_threads=False)
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise CcmodInputError(f"cannot read row group {i}: {str(exc)[:100]}",
                                  source=self.path, hint="is the file truncated or corrupt?")
        out = {}
        for c in cols:
            col = t.column(c)
            if col.null_count:
                raise CcmodInputError(f"null values in column '{c}'", source=self.path)
            out[c] = arrow_values(col)
        self.groups_read += j - i
        g0 = int(self.group_start[i])
        op = out["op"]
        bad = np.flatnonzero((op < 0) | (op > 8))
        if bad.size:
            f, ln = self.where(g0 + int(bad[0]))
            raise CcmodInputError(f"unknown op code {int(op[bad[0]])}", source=f, line=ln)
        bad = np.flatnonzero(out["peer"] >= self.nranks)
        if bad.size:
            f, ln = self.where(g0 + int(bad[0]))
            raise CcmodInputError(f"peer {int(out['peer'][bad[0]])} outside "
                                  f"0..{self.nranks - 1}", source=f, line=ln)
        return out

    def _batch(self, r: int, g: int, reader: str):
        """The decoded batch ``(g_lo, g_hi, columns)`` of rank r holding record g.

        A batch is the group holding g and the rank's following groups while their rows
        stay within one full-size group (:func:`stream_group_rows`): a file written with
        small groups is not read one small group per call, and memory stays one group's
        worth per rank and reader. The other reader's batch is taken when it holds g
        (every reader decodes the ``load`` columns): the matcher's look-ahead and the
        kernel's windows read a rank's records in the same order, so each group is
        decoded about once.
        """
        for other in (reader, "scan" if reader == "load" else "load"):
            b = self._cur[other][r]
            if b is not None and b[0] <= g < b[1]:
                self._cur[reader][r] = b
                return b
        gs = self.group_start
        i = int(np.searchsorted(gs, g, side="right")) - 1
        j = self._batch_end(i)
        data = self._group(i, READER_COLUMNS["load"], j)
        for c, dt in (("duration_s", np.float64),):
            data[c] = data[c].astype(dt) * self.compute_scale if self.compute_scale != 1.0 \
                else data[c].astype(dt)
        for c in ("op", "peer", "tag", "nbytes", "req"):
            data[c] = data[c].astype(np.int64)
        b = (int(gs[i]), int(gs[j]), data)
        self._cur[reader][r] = b
        return b

    def _batch_end(self, i: int) -> int:
        """The end (exclusive) of the batch starting at group i: the groups of i's rank
        that follow it while their rows stay within one full-size group."""
        gs, gr, ng = self.group_start, self.group_rank, len(self.group_rank)
        j = i + 1
        while j < ng and gr[j] == gr[i] and gs[j + 1] - gs[i] <= self._batch_rows:
            j += 1
        return j

    def read(self, r: int, g0: int, g1: int, reader: str = "load") -> dict:
        """Columns of rank r's records ``[g0, g1)`` (global indices, int64 / float64).

        Each reader keeps the batch of groups it is in (:meth:`_batch`), so reading a
        rank's records in order decodes each of its groups once.
        """
        cols = READER_COLUMNS[reader]
        g, g1 = int(g0), int(g1)
        if g >= g1:
            return {c: np.zeros(0, _DTYPE.get(c, np.int64)) for c in cols}
        lo, hi, data = self._batch(r, g, reader)
        if g1 <= hi:
            out = {c: data[c][g - lo:g1 - lo] for c in cols}
        else:
            parts = {c: [] for c in cols}
            while g < g1:
                lo, hi, data = self._batch(r, g, reader)
                b = min(g1, hi)
                for c in cols:
                    parts[c].append(data[c][g - lo:b - lo])
                g = b
            out = {c: np.concatenate(parts[c]) for c in cols}
        if g1 >= hi:
            self._cur[reader][r] = None      # the rank is past this batch: let it go
        return out

    def op_counts(self, ops) -> np.ndarray:
        """Per rank, how many records have an op in ``ops`` (reads the op column once,
        group by group)."""
        ops = np.asarray(list(ops), np.int64)
        out = np.zeros(self.nranks, np.int64)
        for i in range(len(self.group_rank)):
            op = arrow_values(self.pf.read_row_group(i, columns=["op"]).column("op"))
            out[self.group_rank[i]] += int(np.isin(op, ops).sum())
        return out

    def survey(self):
        """One pass over the ``op``, ``peer`` and ``duration_s`` columns, batch by batch:
        what a streamed run needs before its first window (sizes: per rank or per op, and
        the distinct rank pairs that exchange messages). Sets and returns ``self``.

        Attributes set: ``sends`` and ``am_requests`` per rank (message numbering),
        ``op_counts_total`` per op code and ``compute_total_s`` (the summary's notes),
        ``rank_pairs`` (sorted ``src * nranks + dst`` of every message, replies too).
        A second call returns at once.
        """
        from ccmod.codes import OP_AMREQUEST, OP_COMPUTE, OP_ISEND, OP_NAMES, OP_SEND
        if self.rank_pairs is not None:
            return self             # surveyed already (the --bounds reruns)
        n = self.nranks
        self.sends = np.zeros(n, np.int64)
        self.am_requests = np.zeros(n, np.int64)
        self.op_counts_total = np.zeros(len(OP_NAMES), np.int64)
        from ccmod.workloads.units import ExactSum
        comp = ExactSum()
        # distinct pairs: a dense bitmap over rank pairs when small, else sorted chunks
        dense = np.zeros(n * n if n * n <= (1 << 22) else 0, np.bool_)
        chunks = []
        for r, t in self.batches(("op", "peer", "duration_s")):
            op = t["op"].astype(np.int64)
            peer = t["peer"].astype(np.int64)
            self.op_counts_total += np.bincount(op, minlength=len(OP_NAMES))[:len(OP_NAMES)]
            snd = (op == OP_SEND) | (op == OP_ISEND)
            am = op == OP_AMREQUEST
            self.sends[r] += int(snd.sum())
            self.am_requests[r] += int(am.sum())
            d = t["duration_s"][op == OP_COMPUTE].astype(np.float64)
            if self.compute_scale != 1.0:
                d = d * self.compute_scale
            comp.add(d)
            p = peer[snd | am]
            p = p[(p >= 0) & (p < n)]            # bad peers are reported when loaded
            pa = peer[am]
            pa = pa[(pa >= 0) & (pa < n)]
            keys = np.concatenate([r * n + p, pa * n + r])
            if len(dense):
                dense[keys] = True
            elif len(keys):
                chunks.append(np.unique(keys))
                if len(chunks) > 64:
                    chunks = [np.unique(np.concatenate(chunks))]
        if len(dense):
            pairs = np.flatnonzero(dense).astype(np.int64)
        else:
            pairs = np.unique(np.concatenate(chunks)) if chunks else np.zeros(0, np.int64)
        self.compute_total_s = comp.value()
        self.rank_pairs = pairs
        return self

    def batches(self, cols):
        """``(rank, columns)`` of every batch of groups (:meth:`_batch_end`), in file
        order, columns ``cols`` as stored (validated): one pass over the trace, a batch
        in memory at a time."""
        gs, ng = self.group_start, len(self.group_rank)
        i = 0
        while i < ng:
            j = self._batch_end(i)
            if gs[j] > gs[i]:
                yield int(self.group_rank[i]), self._group(i, cols, j)
            i = j

    # -- what errors need ---------------------------------------------------------------
    def rank_of(self, g: int) -> int:
        return int(np.searchsorted(self.rank_ptr, g, side="right") - 1)

    def where(self, g: int):
        """(file, line) of record g, as :meth:`Workload.where` says it."""
        i = int(np.searchsorted(self.group_start, g, side="right")) - 1
        t = self.pf.read_row_group(i, columns=["line", "file_id"])
        k = g - int(self.group_start[i])
        ln, fid = int(t.column("line")[k].as_py()), int(t.column("file_id")[k].as_py())
        f = self.files[fid] if 0 <= fid < len(self.files) else None
        f = f"{self.read_from} (record of {os.path.basename(f)})" if f else self.read_from
        return f, (ln if ln > 0 else None)

    def record(self, g: int, name: str):
        """One column value of record g (for error messages)."""
        i = int(np.searchsorted(self.group_start, g, side="right")) - 1
        t = self.pf.read_row_group(i, columns=[name])
        return t.column(name)[g - int(self.group_start[i])].as_py()


def open_stream_source(path, fmt: str = "auto", compute_scale: float = 1.0):
    """The record source of ``path`` for ``--stream``, or the one-line error saying what to
    do (other formats: convert to Parquet first)."""
    p = Path(path)
    if fmt not in ("auto", "parquet"):
        raise not_streamable(path, f"--stream reads ccmod Parquet traces, not '{fmt}'",
                             f"convert first: ccmod convert {path} trace.parquet")
    if p.is_file():
        with open(p, "rb") as f:
            magic = f.read(4)
        if magic != b"PAR1":
            raise not_streamable(path, "--stream reads ccmod Parquet traces only",
                                 f"convert first: ccmod convert {path} trace.parquet")
    return ParquetRecordSource(path, compute_scale=compute_scale)
