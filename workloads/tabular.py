"""Tabular workload files: ccmod's Parquet layout and CSV (ccmod records or pipit events).

Parquet layout (``format_version`` 1), one row per record, rows sorted by rank with each
rank's records in order:

============  =======  ==================================================================
column        type     meaning (see :class:`workloads.base.Workload`)
============  =======  ==================================================================
rank          int32    rank owning the record
op            int8     op code (0 compute, 1 send, 2 recv, 3 isend, 4 irecv, 5 wait,
                       6 waitall, 7 barrier)
peer          int32    destination / source rank, -1 otherwise
tag           int32    message tag
nbytes        int64    message size, -1 = unknown (recv)
duration_s    float64  compute seconds
req           int64    request id (isend/irecv/wait), -1 otherwise
line          int64    line / record number in the source file (0 = none)
file_id       int32    index into the ``files`` list
============  =======  ==================================================================

Schema metadata keys: ``ccmod.format_version`` ("1"), ``ccmod.nranks``,
``ccmod.files`` (JSON list of source file names), ``ccmod.meta`` (JSON object),
``ccmod.layout`` ("rank-groups").

Streaming layout (``ccmod.layout`` = "rank-groups", what :func:`write_parquet` writes): no
row group holds records of two ranks, and a group holds at most :func:`stream_group_rows`
rows, so ``ccmod run --stream`` reads each rank's records a group at a time
(:mod:`ccmod.workloads.parquet_stream`; the row-group statistics of ``rank`` say whose
records a group holds). Older files with row groups spanning ranks read the same in memory;
``ccmod convert old.parquet new.parquet`` rewrites them for streaming.

The ccmod CSV has the same columns with ``op`` written as its name (``send``, ...),
preceded by two comment lines: ``# ccmod workload csv v1`` and ``# {JSON: nranks, files,
meta}``. The ``csv`` reader also reads pipit-style event CSV (see
:mod:`workloads.tabular_pipit`).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ccmod.errors import CcmodInputError
from ccmod.atomic import atomic_path
from ccmod.guard import excerpt
from ccmod.workloads.base import OP_NAMES, Workload
from ccmod.workloads.registry import READERS
from ccmod.jsonio import json_default

FORMAT_VERSION = "1"
#: (column, numpy dtype) in file order
COLUMNS = (("rank", np.int32), ("op", np.int8), ("peer", np.int32), ("tag", np.int32),
           ("nbytes", np.int64), ("duration_s", np.float64), ("req", np.int64),
           ("line", np.int64), ("file_id", np.int32))
CSV_MAGIC = "# ccmod workload csv v1"
_OPCODE = {n: i for i, n in enumerate(OP_NAMES)}


def _json_meta(meta: dict) -> str:
    return json.dumps(meta, default=json_default, sort_keys=True)


def _rank_col(w: Workload) -> np.ndarray:
    return np.repeat(np.arange(w.nranks, dtype=np.int32), np.diff(w.rank_ptr))


# ------------------------------------------------------------------ Parquet
#: ``ccmod.layout`` of files whose row groups each hold one rank's records
LAYOUT_RANK_GROUPS = "rank-groups"


def stream_group_rows(nranks: int) -> int:
    """Rows per row group of the streaming layout: a streamed run holds one decoded group
    per rank (twice: the records it runs and the matcher's look-ahead), so about 2M rows
    over all ranks, 4096..65536 per group."""
    return int(min(1 << 16, max(1 << 12, (1 << 21) // max(int(nranks), 1))))


def parquet_metadata(nranks: int, files, meta: dict) -> dict:
    """The schema metadata of ccmod's Parquet layout (streaming layout)."""
    return {"ccmod.format_version": FORMAT_VERSION, "ccmod.nranks": str(int(nranks)),
            "ccmod.files": json.dumps(list(files)), "ccmod.meta": _json_meta(meta),
            "ccmod.layout": LAYOUT_RANK_GROUPS}


def write_parquet(workload: Workload, path, row_group_size: int | None = None) -> Path:
    """Write ``workload`` in ccmod's Parquet layout (atomically: temp file + rename).

    Row groups never span two ranks and hold at most ``row_group_size`` rows (default
    :func:`stream_group_rows`): the streaming layout of the module doc.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq
    w = workload
    arrays = {"rank": _rank_col(w)}
    for name, dt in COLUMNS[1:]:
        arrays[name] = np.asarray(getattr(w, name), dtype=dt)
    table = pa.table(arrays)
    table = table.replace_schema_metadata(parquet_metadata(w.nranks, w.files, w.meta))
    rows = int(row_group_size or stream_group_rows(w.nranks))
    rp = np.asarray(w.rank_ptr, np.int64)
    path = Path(path)
    with atomic_path(path) as tmp:
        with pq.ParquetWriter(tmp, table.schema, compression="zstd") as out:
            for r in range(int(w.nranks)):
                for a in range(int(rp[r]), int(rp[r + 1]), rows):
                    part = table.slice(a, min(rows, int(rp[r + 1]) - a))
                    out.write_table(part, row_group_size=part.num_rows)
    return path


def _from_columns(cols: dict, nranks: int | None, files, meta, source: str) -> Workload:
    """Validate record columns and build a Workload (rank_ptr from the rank column)."""
    rank = cols["rank"]
    n = rank.shape[0]
    if n and (rank.min() < 0):
        raise CcmodInputError("negative rank in the rank column", source=source)
    if n and np.any(rank[1:] < rank[:-1]):
        i = int(np.flatnonzero(rank[1:] < rank[:-1])[0]) + 1
        raise CcmodInputError(f"rows are not sorted by rank (row {i + 1})", source=source,
                              hint="each rank's records must be contiguous and in order")
    top = int(rank.max()) + 1 if n else 0
    nranks, files, meta = _check_header(nranks, files, meta, top, n, source)
    if top > nranks:
        raise CcmodInputError(f"rank {top - 1} outside 0..{nranks - 1}", source=source)
    op = cols["op"]
    if n and (op.min() < 0 or op.max() >= len(OP_NAMES)):
        raise CcmodInputError("op code outside 0..7", source=source)
    peer = cols["peer"]
    if n and peer.max() >= nranks:
        i = int(np.flatnonzero(peer >= nranks)[0])
        raise CcmodInputError(f"peer {int(peer[i])} outside 0..{nranks - 1} (row {i + 1})",
                              source=source)
    rank_ptr = np.zeros(nranks + 1, np.int64)
    np.cumsum(np.bincount(rank, minlength=nranks), out=rank_ptr[1:])
    w = Workload(nranks=int(nranks), rank_ptr=rank_ptr,
                 **{k: cols[k] for k, _ in COLUMNS[1:]}, files=list(files), meta=dict(meta))
    w.read_from = source    # errors name this file, not the trace named in the header
    return w


#: ranks a header may declare beyond those that have records (idle ranks)
_IDLE_RANKS = 1024


def _check_header(nranks, files, meta, top: int, nrows: int, source: str):
    """Validate the declared header (Parquet key-value metadata / CSV JSON line) against
    the data: types, and a rank count the records can justify (a 4 KB file declaring 1e8
    ranks must not allocate per-rank arrays for them). The files named in later errors
    name the file the user gave (``Workload.read_from``, see ``Workload.where``)."""
    if nranks is None:
        nranks = top
    if isinstance(nranks, bool) or not isinstance(nranks, (int, np.integer)):
        raise CcmodInputError("ccmod nranks in the header is not an integer", source=source)
    limit = top + max(_IDLE_RANKS, nrows)
    if not top <= nranks <= limit:
        raise CcmodInputError(f"header declares {int(nranks)} ranks but the records use "
                              f"{top}", source=source,
                              hint=f"at most {limit} (ranks without records); is the file "
                                   "corrupt?")
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise CcmodInputError("ccmod files in the header is not a list of names",
                              source=source)
    if not isinstance(meta, dict):
        raise CcmodInputError("ccmod meta in the header is not a JSON object", source=source)
    return int(nranks), files, meta


@READERS.register()
class ParquetReader:
    """ccmod's own Parquet record layout (lossless; fastest to re-read)."""

    name = "parquet"
    description = "ccmod Parquet workload (the engine's own records; write with ccmod convert)"
    extensions = (".parquet", ".pq")

    def sniff(self, path) -> bool:
        path = Path(path)
        if not path.is_file():
            return False
        try:
            with open(path, "rb") as f:
                if f.read(4) != b"PAR1":
                    return False
            import pyarrow.parquet as pq
            schema = pq.read_schema(path)
        except Exception:
            return False
        names = set(schema.names)
        return all(c in names for c, _ in COLUMNS)

    def read(self, path, *, compute_rate=1e9, compute_scale=1.0, collectives=None,
             batch_rows: int = 1 << 16, **unknown):
        """Stream record batches into preallocated arrays (memory ~ the final arrays).

        ``batch_rows`` rows are decoded at a time (pyarrow record batches), whatever the
        file's row-group size: the reader holds the Workload's own arrays plus one batch
        (a 1M-row batch cost ~100 MB more for 1M records than 64k-row batches).
        """
        if unknown:
            raise CcmodInputError(f"unknown option(s) for format 'parquet': "
                                  f"{', '.join(unknown)}", hint="valid: batch_rows")
        import pyarrow as pa
        import pyarrow.parquet as pq
        src = str(path)
        try:
            pf = pq.ParquetFile(path)
            schema = pf.schema_arrow
            missing = [c for c, _ in COLUMNS if c not in schema.names]
            if missing:
                raise CcmodInputError(f"not a ccmod workload: missing column(s) "
                                      f"{', '.join(missing)}", source=src,
                                      hint="columns: " + ", ".join(c for c, _ in COLUMNS))
            md = {k.decode("utf-8", "replace"): v.decode("utf-8", "replace")
                  for k, v in (schema.metadata or {}).items()}
            n = pf.metadata.num_rows
            cols = {c: np.empty(n, dt) for c, dt in COLUMNS}
            pos = 0
            op_is_name = pa.types.is_string(schema.field("op").type) or \
                pa.types.is_large_string(schema.field("op").type) or \
                pa.types.is_dictionary(schema.field("op").type)
            for batch in pf.iter_batches(batch_size=int(batch_rows),
                                         columns=[c for c, _ in COLUMNS]):
                m = batch.num_rows
                for c, dt in COLUMNS:
                    col = batch.column(c)
                    if col.null_count:
                        raise CcmodInputError(f"null values in column '{c}'", source=src)
                    if c == "op" and op_is_name:
                        vals = _op_codes(col.to_pylist(), src)
                    else:
                        vals = _values(pa, col)
                    cols[c][pos:pos + m] = vals
                pos += m
        except CcmodInputError:
            raise
        except (pa.ArrowException, OSError, ValueError, TypeError, OverflowError) as exc:
            raise CcmodInputError(f"cannot read Parquet workload: {excerpt(exc, 120)}",
                                  source=src, hint="is the file truncated or corrupt?") from None
        nranks, files, meta = footer_metadata(md, src)
        w = _from_columns(cols, nranks, files, meta, src)
        if compute_scale != 1.0:
            w.duration_s *= compute_scale      # the reader's own array: no copy
        if "format" in w.meta:
            w.meta.setdefault("source_format", w.meta["format"])
        w.meta["format"] = "parquet"
        w.meta.setdefault("compute_rate", compute_rate)
        return w


def arrow_values(col) -> np.ndarray:
    """A null-free Arrow array or chunked array (a table's column) as numpy values,
    without pandas where the type allows (see :func:`_values`)."""
    import pyarrow as pa
    if isinstance(col, pa.ChunkedArray):
        if col.num_chunks == 1:
            return _values(pa, col.chunk(0))
        if col.num_chunks > 1:
            return np.concatenate([_values(pa, c) for c in col.chunks])
        return col.to_numpy()
    return _values(pa, col)


def _values(pa, col) -> np.ndarray:
    """A null-free Arrow array as numpy values: a view of its data buffer for plain
    integers and floats (pyarrow's ``to_numpy`` imports pandas, ~0.25 s of a run's
    start-up), else ``to_numpy``."""
    t = col.type
    kind = "i" if pa.types.is_signed_integer(t) else "u" if pa.types.is_unsigned_integer(t) \
        else "f" if pa.types.is_floating(t) and t.bit_width > 16 else None
    if kind is None:
        return col.to_numpy(zero_copy_only=False)
    size = t.bit_width // 8
    return np.frombuffer(col.buffers()[1], f"<{kind}{size}", len(col), col.offset * size)


def footer_metadata(md: dict, src: str):
    """(nranks or None, files, meta) from a ccmod Parquet file's decoded schema metadata."""
    version = md.get("ccmod.format_version", FORMAT_VERSION)
    if version != FORMAT_VERSION:
        raise CcmodInputError(f"unsupported ccmod Parquet format version {version}",
                              source=src, hint=f"this ccmod reads version {FORMAT_VERSION}")
    try:
        nranks = int(md["ccmod.nranks"]) if "ccmod.nranks" in md else None
        if nranks is not None and not 0 <= nranks < 2 ** 31:
            raise ValueError
        files = json.loads(md.get("ccmod.files", "[]"))
        meta = json.loads(md.get("ccmod.meta", "{}"))
    except (ValueError, TypeError, OverflowError, RecursionError):
        raise CcmodInputError("corrupt ccmod metadata in the Parquet footer",
                              source=src) from None
    return nranks, files, meta


def _op_codes(names, src) -> np.ndarray:
    try:
        return np.fromiter((_OPCODE[str(s).strip().lower()] for s in names), np.int8,
                           count=len(names))
    except KeyError as exc:
        raise CcmodInputError(f"unknown op name {exc}", source=src,
                              hint="valid: " + ", ".join(OP_NAMES)) from None


# ------------------------------------------------------------------ CSV (ccmod records)
def write_csv(workload: Workload, path) -> Path:
    """Write ``workload`` as ccmod CSV (two comment lines + header + one row per record)."""
    import pandas as pd
    w = workload
    head = {"nranks": int(w.nranks), "files": list(w.files), "meta": w.meta}
    df = pd.DataFrame({"rank": _rank_col(w),
                       "op": np.asarray(OP_NAMES, dtype=object)[w.op]} |
                      {c: np.asarray(getattr(w, c), dt) for c, dt in COLUMNS[2:]})
    path = Path(path)
    with atomic_path(path) as tmp:
        with open(tmp, "w", newline="") as f:
            f.write(CSV_MAGIC + "\n")
            f.write("# " + json.dumps(head, default=json_default, sort_keys=True) + "\n")
            df.to_csv(f, index=False, float_format="%.17g", lineterminator="\n")
    return path


def _line_of_byte(path, offset: int) -> int | None:
    """1-based line number holding byte ``offset`` of ``path`` (None if unknown)."""
    try:
        with open(path, "rb") as f:
            return f.read(max(0, int(offset))).count(b"\n") + 1
    except (OSError, TypeError, ValueError):
        return None


def _read_ccmod_csv(path: Path, compute_scale: float) -> Workload:
    import pandas as pd
    src = str(path)
    with open(path, encoding="utf-8", errors="replace") as f:
        f.readline()
        second = f.readline(1 << 20)
    head = {}
    if second.startswith("# "):
        try:
            head = json.loads(second[2:])
        except ValueError:
            raise CcmodInputError("corrupt JSON header line", source=src, line=2) from None
        if not isinstance(head, dict):
            raise CcmodInputError("the JSON header line is not an object", source=src, line=2)
    try:
        df = pd.read_csv(path, comment="#", skip_blank_lines=True,
                         dtype={"op": str}, keep_default_na=False)
    except UnicodeDecodeError as exc:
        line = _line_of_byte(path, exc.start)
        raise CcmodInputError("not UTF-8 text", source=src, line=line,
                              hint="the CSV must be UTF-8; is the file corrupt?") from None
    except (ValueError, pd.errors.ParserError, OSError) as exc:
        raise CcmodInputError(f"cannot parse CSV: {excerpt(str(exc).splitlines()[0], 120)}",
                              source=src) from None
    missing = [c for c, _ in COLUMNS if c not in df.columns]
    if missing:
        raise CcmodInputError(f"missing column(s) {', '.join(missing)}", source=src,
                              hint="columns: " + ", ".join(c for c, _ in COLUMNS))
    cols = {}
    for c, dt in COLUMNS:
        if c == "op":
            cols[c] = _op_codes(df[c].tolist(), src)
            continue
        try:
            v = pd.to_numeric(df[c], errors="raise")
        except (ValueError, TypeError):
            bad = pd.to_numeric(df[c], errors="coerce").isna().to_numpy().nonzero()[0]
            row = int(bad[0]) if bad.size else 0
            raise CcmodInputError(f"bad value '{df[c].iloc[row]}' in column '{c}'",
                                  source=src, line=row + 4) from None
        arr = v.to_numpy()
        fl = np.asarray(arr, float)
        if not np.all(np.isfinite(fl)):
            row = int(np.flatnonzero(~np.isfinite(fl))[0])
            raise CcmodInputError(f"value '{df[c].iloc[row]}' in column '{c}' is not finite",
                                  source=src, line=row + 4)
        if dt is not np.float64:
            if (fl != np.round(fl)).any():
                raise CcmodInputError(f"non-integer value in column '{c}'", source=src)
            lim = np.iinfo(dt)
            if arr.dtype.kind == "u":
                out = arr > lim.max
            elif arr.dtype.kind == "i":
                out = (arr < lim.min) | (arr > lim.max)
            else:  # floats or Python ints: 2**(bits-1) is exact in float64
                out = (fl < lim.min) | (fl >= float(lim.max) + 1.0)
            if out.any():
                row = int(np.flatnonzero(out)[0])
                raise CcmodInputError(f"value '{df[c].iloc[row]}' in column '{c}' is out of "
                                      f"range for {np.dtype(dt).name}", source=src, line=row + 4)
            # exact ints when pandas kept them (no float rounding of big values)
            with np.errstate(invalid="ignore"):
                cols[c] = (arr.astype(dt) if arr.dtype.kind in "iu" else fl.astype(dt))
            continue
        cols[c] = arr.astype(dt)
    try:
        nranks = int(head["nranks"]) if "nranks" in head else None
    except (TypeError, ValueError, OverflowError):
        raise CcmodInputError("bad nranks in the JSON header", source=src, line=2) from None
    if nranks is not None and not 0 <= nranks < 2 ** 31:
        raise CcmodInputError("bad nranks in the JSON header", source=src, line=2)
    w = _from_columns(cols, nranks, head.get("files", []), head.get("meta", {}), src)
    if compute_scale != 1.0:
        w.duration_s = w.duration_s * compute_scale
    return w


@READERS.register()
class CSVReader:
    """CSV: ccmod's own record CSV, or a pipit-style event CSV (Enter/Leave/Instant)."""

    name = "csv"
    description = ("CSV: ccmod record CSV (ccmod convert) or pipit event CSV "
                   "(Timestamp, Event Type, Name, Thread, Process, Attributes)")
    extensions = (".csv",)

    @staticmethod
    def _kind(path: Path) -> str | None:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                first = f.readline(4096)
        except OSError:
            return None
        if first.startswith(CSV_MAGIC):
            return "ccmod"
        head = [h.strip().lower() for h in first.split(",")]
        if head[:2] == ["rank", "op"] and "duration_s" in head:
            return "ccmod"
        if any(h.startswith("timestamp") for h in head) and "event type" in head \
                and "name" in head and "process" in head:
            return "pipit"
        return None

    def sniff(self, path) -> bool:
        path = Path(path)
        return path.is_file() and self._kind(path) is not None

    def read(self, path, *, compute_rate=1e9, compute_scale=1.0, collectives=None, **unknown):
        path = Path(path)
        kind = self._kind(path)
        if kind is None:
            raise CcmodInputError("not a ccmod or pipit CSV (unrecognised header)",
                                  source=str(path),
                                  hint="ccmod CSV starts with '# ccmod workload csv v1'; pipit "
                                       "CSV with 'Timestamp (ns),Event Type,Name,...'")
        if kind == "pipit":
            from ccmod.workloads.tabular_pipit import read_pipit_csv
            return read_pipit_csv(path, compute_scale=compute_scale, **unknown)
        if unknown:
            raise CcmodInputError(f"unknown option(s) for format 'csv': {', '.join(unknown)}")
        w = _read_ccmod_csv(path, compute_scale)
        if "format" in w.meta:
            w.meta.setdefault("source_format", w.meta["format"])
        w.meta["format"] = "csv"
        w.meta.setdefault("compute_rate", compute_rate)
        return w
