"""The parquet run directory written as a streamed run goes (``ccmod run --stream --out``).

Same files and columns as :class:`ccmod.outputs.parquet.ParquetSink`, but
``messages.parquet`` and ``rank_states.parquet`` are appended to batch by batch
(:meth:`StreamedRunWriter.messages`, :meth:`StreamedRunWriter.states`) instead of being
built from tables held in memory. Each stays under its hidden temporary name
(:func:`ccmod.atomic.temp_path`) until :meth:`StreamedRunWriter.finish` renames it into
place, so a crashed run leaves no half table under a final name.

Row order: messages in the order they are handed in (a streamed run: the order they
finish, :mod:`ccmod.streaming`); rank states in recording order, followed by the idle gaps. The idle gaps are
computed per batch with each rank's running end carried over (a rank's intervals are
recorded in start order), so they are the in-memory sink's gaps, grouped by batch instead
of by rank. ``link_load.parquet`` is not written under streaming (its intervals are sorted
by resource over the whole run): ``links`` still has every per-resource total.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ccmod.atomic import discard, ensure_dir, release, temp_path


#: rows per row group of a streamed table
GROUP_ROWS = 1 << 16


class _Appender:
    """One Parquet file written in batches under its temporary name; ``table`` names its
    columns' declaration (:data:`ccmod.outputs.tables.TABLES`)."""

    def __init__(self, path: Path, table: str, compression: str, schema=None):
        self.path = path
        self.table = table
        self.tmp = temp_path(path)
        self.compression = compression
        self.schema = schema
        self.writer = None
        self.rows = 0
        self.pending, self.npending = [], 0

    def write(self, table) -> None:
        """Append rows (buffered up to :data:`GROUP_ROWS`: one row group per flush, not
        one per kernel pause)."""
        self.pending.append(table)
        self.npending += table.num_rows
        self.rows += table.num_rows
        if self.npending >= GROUP_ROWS:
            self.flush()

    def flush(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq
        if not self.pending:
            return
        if self.writer is None:
            self.schema = self.schema or self.pending[0].schema
            from ccmod.outputs.tables import dictionary_columns
            few = dictionary_columns(self.table, self.schema.names)
            self.writer = pq.ParquetWriter(str(self.tmp), self.schema,
                                           compression=self.compression, use_dictionary=few)
        table = pa.concat_tables([t if t.schema == self.schema else t.cast(self.schema)
                                  for t in self.pending])
        self.pending, self.npending = [], 0
        self.writer.write_table(table)

    def close(self, empty) -> None:
        """Finish the file (``empty``: the table to write when nothing came) and rename it."""
        if self.writer is None and not self.pending:
            self.write(empty)
        self.flush()
        self.writer.close()
        os.replace(self.tmp, self.path)
        release(self.tmp)

    def abort(self) -> None:
        if self.writer is not None:
            try:
                self.writer.close()
            except Exception:   # the temp file goes anyway
                pass
        discard(self.tmp)


class StreamedRunWriter:
    """Write a run directory while the run goes.

    Parameters
    ----------
    out_dir : path
    nranks : int
    compression : str
        Parquet codec (as the parquet sink).
    """

    def __init__(self, out_dir, nranks: int, compression: str = "zstd"):
        from ccmod.outputs.parquet import ParquetSink
        self.sink = ParquetSink(out_dir, compression)   # validates the codec
        self.dir = ensure_dir(Path(out_dir), "output directory")
        self.nranks = int(nranks)
        self.msgs = _Appender(self.dir / "messages.parquet", "messages", compression)
        self.st = None
        self.gaps = None
        self.n_messages = 0
        self.bytes = 0
        self.end = np.full(max(self.nranks, 1), -np.inf)   # running end of each rank's states
        self.seen = np.zeros(max(self.nranks, 1), bool)

    # -- batches ------------------------------------------------------------------------
    def messages(self, cols: dict) -> None:
        """Append message rows (the ``RunResult.messages`` columns, as arrays)."""
        import pandas as pd
        import pyarrow as pa
        df = pd.DataFrame(cols)
        if "bottleneck_name" in df.columns:
            df["bottleneck_name"] = df["bottleneck_name"].astype(str)
        self.msgs.write(pa.Table.from_pandas(df, preserve_index=False))
        self.n_messages += len(df)
        self.bytes += int(np.asarray(cols["nbytes"], np.int64).sum())

    def _state_files(self):
        from ccmod.outputs.parquet import STATE_SCHEMA
        if self.st is None:
            c = self.sink.compression
            self.st = _Appender(self.dir / "rank_states.parquet", "rank_states", c,
                                STATE_SCHEMA)
            self.gaps = _Appender(self.dir / ".rank_states.gaps.parquet", "rank_states", c,
                                  STATE_SCHEMA)

    def states(self, rank, code, t0, t1) -> None:
        """Append recorded rank-state intervals (in recording order) and their gaps."""
        from ccmod.outputs.intervals import _segmented_running_max_prev
        self._state_files()
        rank = np.asarray(rank, np.int64)
        t0, t1 = np.asarray(t0, np.float64), np.asarray(t1, np.float64)
        self.st.write(_state_table(rank, code, t0, t1))
        if not len(rank):
            return
        o = np.lexsort((t0, rank))
        r, a, b = rank[o], t0[o], t1[o]
        first = np.r_[True, r[1:] != r[:-1]]
        last = np.r_[r[1:] != r[:-1], True]
        # the running end before each row: this batch's earlier rows and the rank's end so
        # far (its intervals are recorded in start order, so that is every earlier row)
        prev = np.maximum(_segmented_running_max_prev(r, b), self.end[r])
        inner = ~first & (a > prev)
        cont = first & self.seen[r] & (a > prev)
        lead = first & ~self.seen[r] & (a > 0)
        gr = np.concatenate([r[inner | cont], r[lead]])
        ga = np.concatenate([prev[inner | cont], np.zeros(int(lead.sum()))])
        gb = np.concatenate([a[inner | cont], a[lead]])
        self.end[r[last]] = np.maximum(prev, b)[last]
        self.seen[r] = True
        self._gap_rows(gr, ga, gb)

    def _gap_rows(self, gr, ga, gb) -> None:
        from ccmod.outputs.base import STATE_IDLE
        keep = gb > ga
        if keep.any():
            self.gaps.write(_state_table(gr[keep], np.full(int(keep.sum()), STATE_IDLE),
                                         ga[keep], gb[keep]))

    # -- the end ------------------------------------------------------------------------
    def finish(self, result) -> None:
        """Close the tables, add the final gaps, write the per-rank/per-link tables and
        run.json (counts from the batches: no table is re-read)."""
        import pyarrow.parquet as pq
        try:
            n_states = 0
            if self.st is not None:
                t_end = max(float(result.makespan_s), float(self.end.max()))
                tail = self.seen & (self.end < t_end)
                missing = ~self.seen & (t_end > 0)
                ranks = np.arange(len(self.end))
                gr = np.concatenate([ranks[tail], ranks[missing]])
                ga = np.concatenate([self.end[tail], np.zeros(int(missing.sum()))])
                self._gap_rows(gr, ga, np.full(len(gr), t_end))
                self.gaps.flush()
                if self.gaps.writer is not None:
                    self.gaps.writer.close()
                    self.gaps.writer = None
                    for batch in pq.ParquetFile(str(self.gaps.tmp)).iter_batches(1 << 16):
                        self.st.write(_table_of(batch))
                self.gaps.abort()
                self.st.close(_state_table(np.zeros(0, np.int64), np.zeros(0, np.int8),
                                           np.zeros(0), np.zeros(0)))
                n_states = self.st.rows
            if not self.msgs.rows:
                self.messages(_empty_messages())
            self.msgs.close(None)
            summary = result.summary()
            summary["messages"] = self.n_messages
            summary["bytes"] = self.bytes
            self.sink.write_rest(result, self.dir, self.n_messages, n_states, 0, summary)
        except BaseException:
            self.abort()
            raise

    def abort(self) -> None:
        """Drop every temporary file (a failed run)."""
        for a in (self.msgs, self.st, self.gaps):
            if a is not None:
                a.abort()


def _state_table(rank, code, t0, t1):
    import pyarrow as pa
    from ccmod.outputs.parquet import _STATE_DICT, STATE_SCHEMA
    st = pa.DictionaryArray.from_arrays(pa.array(np.asarray(code).astype(np.int8), pa.int8()),
                                        _STATE_DICT)
    return pa.Table.from_arrays([pa.array(np.asarray(rank).astype(np.int32)), st,
                                 pa.array(np.asarray(t0, np.float64)),
                                 pa.array(np.asarray(t1, np.float64))], schema=STATE_SCHEMA)


def _table_of(batch):
    import pyarrow as pa
    return pa.Table.from_batches([batch])


def _empty_messages() -> dict:
    """Columns of a messages table without rows (the in-memory table's dtypes)."""
    from ccmod.outputs.tables import empty_columns
    return empty_columns("messages")
