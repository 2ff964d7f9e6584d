"""The ``parquet`` sink: the run directory every report and notebook reads.

Files written into the run directory (each streamed to a hidden temporary name and renamed
into place at :meth:`ParquetSink.close`, so a crashed run never leaves a half file under the
final name):

=====================  =================================================================
messages.parquet       msg_id, src, dst, tag, nbytes, t_post_s, t_start_s, t_end_s, quiet_s,
                       slowdown, bottleneck (resource id, -1 none), bottleneck_name, hops
rank_states.parquet    rank, state (dictionary: compute/send/recv/wait/barrier/idle),
                       t_start_s, t_end_s; idle = gaps between recorded states and the time
                       after a rank finished, up to the makespan
link_load.parquet      resource, name, t_start_s, t_end_s, active (contention), utilisation
                       (fraction of capacity, background excluded, see outputs.linkutil),
                       background (fraction)
ranks.parquet          ``RunResult.ranks``
links.parquet          ``RunResult.links`` + capacity_Bps, utilisation_mean (bytes over
                       capacity × makespan), utilisation_peak (max over link_load intervals)
run.json               ``RunResult.summary()`` + nranks, packet size, row counts, background
=====================  =================================================================
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ccmod.errors import CcmodInputError
from ccmod.atomic import atomic_path, atomic_write_text, release
from ccmod.outputs.base import Sink
from ccmod.outputs.common import (ALL_STATE_NAMES, MESSAGE_COLUMNS, RANK_STATE_COLUMNS, STATE_IDLE,
                            LINK_LOAD_COLUMNS, ChunkBuffer, discard, frame_to_columns,
                            dumps, idle_gaps, resolve_out_dir, resource_names, state_codes,
                            temp_name)
from ccmod.outputs.linkutil import RateProfile, capacity_of, message_resource_intervals
from ccmod.outputs.registry import SINKS

#: packet size used for packets/s when the network does not define one (Ethernet MTU)
DEFAULT_PACKET_SIZE = 1500

MESSAGE_SCHEMA = pa.schema([
    ("msg_id", pa.int64()), ("src", pa.int32()), ("dst", pa.int32()), ("tag", pa.int32()),
    ("nbytes", pa.int64()), ("t_post_s", pa.float64()), ("t_start_s", pa.float64()),
    ("t_end_s", pa.float64()), ("quiet_s", pa.float64()), ("slowdown", pa.float64()),
    ("bottleneck", pa.int32()), ("bottleneck_name", pa.string()), ("hops", pa.int32())])
STATE_TYPE = pa.dictionary(pa.int8(), pa.string())
STATE_SCHEMA = pa.schema([("rank", pa.int32()), ("state", STATE_TYPE),
                          ("t_start_s", pa.float64()), ("t_end_s", pa.float64())])
RAW_LOAD_SCHEMA = pa.schema([("resource", pa.int32()), ("t_start_s", pa.float64()),
                             ("t_end_s", pa.float64()), ("active", pa.int32()),
                             ("background", pa.float64())])
LOAD_SCHEMA = pa.schema([("resource", pa.int32()), ("name", pa.dictionary(pa.int32(),
                                                                            pa.string())),
                         ("t_start_s", pa.float64()), ("t_end_s", pa.float64()),
                         ("active", pa.int32()), ("utilisation", pa.float64()),
                         ("background", pa.float64())])
_STATE_DICT = pa.array(list(ALL_STATE_NAMES), pa.string())


def packet_size_of(network) -> tuple[int, str]:
    """(packet size in bytes, "network" | "default") used for packets/s figures."""
    ps = getattr(network, "packet_size", None) if network is not None else None
    if ps:
        return int(ps), "network"
    return DEFAULT_PACKET_SIZE, "default"


class _Stream:
    """One ParquetWriter on a temporary file, renamed to its final name at finish."""

    def __init__(self, final: Path, schema: pa.Schema, compression: str):
        self.final = final
        self.schema = schema
        self.tmp = temp_name(final)
        try:
            self.writer = pq.ParquetWriter(str(self.tmp), schema, compression=compression)
        except (pa.ArrowException, ValueError, TypeError):
            discard(self.tmp)
            raise CcmodInputError(f"unsupported Parquet compression '{compression}'",
                                  source="--sink",
                                  hint="use snappy, gzip, zstd, brotli, lz4 or none") from None
        self.rows = 0

    def write(self, table: pa.Table) -> None:
        if table.num_rows:
            self.writer.write_table(table)
            self.rows += table.num_rows

    def finish(self, rename: bool = True) -> None:
        self.writer.close()
        if rename:
            os.replace(self.tmp, self.final)
            release(self.tmp)

    def abort(self) -> None:
        try:
            self.writer.close()
        finally:
            discard(self.tmp)


@SINKS.register()
class ParquetSink(Sink):
    """Columnar run directory: messages, rank states, link load, ranks, links, run.json.

    Parameters
    ----------
    out_dir : path, optional
        Directory to write (defaults to the run's ``RunContext.out_dir``).
    compression : str
        Parquet codec (``zstd`` by default; ``snappy``, ``gzip``, ``none``).
    """

    name = "parquet"
    description = "run directory of Parquet tables (messages, rank states, link load) + run.json"
    #: files it writes into the run directory (shown by ``ccmod sinks``)
    files = "messages/rank_states/link_load/ranks/links.parquet, run.json"
    wants_link_load = True

    def __init__(self, out_dir=None, compression: str = "zstd"):
        self.out_dir = out_dir
        self.compression = compression
        self.ctx = None

    # ------------------------------------------------------------------ engine hooks
    def open(self, ctx) -> None:
        self.ctx = ctx
        self.dir = resolve_out_dir(self.name, self.out_dir, ctx)
        self.network = getattr(ctx, "network", None)
        self._msg = _Stream(self.dir / "messages.parquet", MESSAGE_SCHEMA, self.compression)
        self._states = _Stream(self.dir / "rank_states.parquet", STATE_SCHEMA, self.compression)
        self._raw_load = _Stream(self.dir / "link_load.parquet", RAW_LOAD_SCHEMA,
                                 self.compression)
        # what close() needs: message routes for utilisation, state coverage for idle
        self._msg_buf = ChunkBuffer(("src", "dst", "nbytes", "t_start_s", "t_end_s"),
                                    "messages")
        self._state_buf = ChunkBuffer(("rank", "t_start_s", "t_end_s"), "rank_states")
        self._load_res: list[np.ndarray] = []
        self._name_cache: dict[int, str] = {}

    def on_messages(self, batch: dict) -> None:
        cols = ChunkBuffer(MESSAGE_COLUMNS, "messages").add(batch)
        self._msg_buf.add(batch)
        names = batch.get("bottleneck_name")
        if names is None:
            names = self._names(cols["bottleneck"])
        arrays = [pa.array(np.asarray(cols[f.name]).astype(f.type.to_pandas_dtype()))
                  if f.name != "bottleneck_name" else pa.array(np.asarray(names, object),
                                                               pa.string())
                  for f in MESSAGE_SCHEMA]
        self._msg.write(pa.Table.from_arrays(arrays, schema=MESSAGE_SCHEMA))

    def on_rank_states(self, batch: dict) -> None:
        cols = ChunkBuffer(RANK_STATE_COLUMNS, "rank_states").add(batch)
        self._state_buf.add(batch)
        self._write_states(cols["rank"], cols["state"], cols["t_start_s"], cols["t_end_s"])

    def on_link_load(self, batch: dict) -> None:
        cols = ChunkBuffer(LINK_LOAD_COLUMNS, "link_load").add(batch)
        arrays = [pa.array(np.asarray(cols[f.name]).astype(f.type.to_pandas_dtype()))
                  for f in RAW_LOAD_SCHEMA]
        self._raw_load.write(pa.Table.from_arrays(arrays, schema=RAW_LOAD_SCHEMA))
        self._load_res.append(np.unique(np.asarray(cols["resource"], np.int64)))

    def abort(self) -> None:
        """Remove the temporary files (for an engine that failed before :meth:`close`)."""
        for s in (self._msg, self._states, self._raw_load):
            s.abort()

    def close(self, result) -> None:
        try:
            self._close(result)
        except BaseException:
            self.abort()
            raise

    # ------------------------------------------------------------------ internals
    def _names(self, res) -> np.ndarray:
        res = np.asarray(res, np.int64)
        uniq, inv = np.unique(res, return_inverse=True)
        missing = [r for r in uniq.tolist() if r not in self._name_cache]
        if missing:
            for r, n in zip(missing, resource_names(self.network, np.asarray(missing))):
                self._name_cache[r] = n
        lut = np.asarray([self._name_cache[r] for r in uniq.tolist()], dtype=object)
        return lut[inv.reshape(-1)] if len(uniq) else np.zeros(0, object)

    def _write_states(self, rank, state, t0, t1) -> None:
        codes = pa.array(np.asarray(state, np.int8), pa.int8())
        st = pa.DictionaryArray.from_arrays(codes, _STATE_DICT)
        self._states.write(pa.Table.from_arrays(
            [pa.array(np.asarray(rank, np.int32)), st, pa.array(np.asarray(t0, np.float64)),
             pa.array(np.asarray(t1, np.float64))], schema=STATE_SCHEMA))

    def _nranks(self, result) -> int:
        wl = getattr(self.ctx, "workload", None)
        if wl is not None and getattr(wl, "nranks", None) is not None:
            return int(wl.nranks)
        ranks = getattr(result, "ranks", None)
        if ranks is not None and len(ranks):
            return int(len(ranks))
        return int(len(getattr(result, "rank_finish_s", [])))

    def _close(self, result) -> None:
        # engines that only fill the RunResult (no batches) still get a full directory
        if self._msg.rows == 0:
            cols = frame_to_columns(getattr(result, "messages", None), MESSAGE_COLUMNS)
            if cols is not None and len(cols["src"]):
                batch = dict(cols)
                if "bottleneck_name" in result.messages.columns:
                    batch["bottleneck_name"] = result.messages["bottleneck_name"].to_numpy()
                self.on_messages(batch)
        if self._states.rows == 0:
            cols = frame_to_columns(getattr(result, "rank_states", None), RANK_STATE_COLUMNS)
            if cols is not None and len(cols["rank"]):
                cols["state"] = state_codes(cols["state"])
                self.on_rank_states(cols)
        if self._raw_load.rows == 0:
            cols = frame_to_columns(getattr(result, "link_load", None), LINK_LOAD_COLUMNS)
            if cols is not None and len(cols["resource"]):
                self.on_link_load(cols)

        makespan = float(getattr(result, "makespan_s", 0.0) or 0.0)
        nranks = self._nranks(result)
        has_states = self._states.rows > 0
        if has_states:
            # idle = not covered by any recorded state, up to the makespan
            s = self._state_buf.concat({"rank": np.int64, "t_start_s": np.float64,
                                        "t_end_s": np.float64})
            order = np.lexsort((s["t_start_s"], s["rank"]))
            t_end = max(makespan, float(s["t_end_s"].max()))
            gr, ga, gb = idle_gaps(s["rank"][order], s["t_start_s"][order],
                                   s["t_end_s"][order], nranks, t_end)
            self._write_states(gr, np.full(len(gr), STATE_IDLE), ga, gb)
        n_states = self._states.rows
        n_msgs = self._msg.rows
        self._msg.finish()
        self._states.finish()
        self._raw_load.finish(rename=False)
        util_peak = self._write_link_load()

        packet_size, ps_source = packet_size_of(self.network)
        self._write_links(result, makespan, util_peak)
        ranks = getattr(result, "ranks", None)
        if ranks is not None:
            with atomic_path(self.dir / "ranks.parquet") as tmp:
                pq.write_table(pa.Table.from_pandas(ranks, preserve_index=False), str(tmp),
                               compression=self.compression)
        summary = result.summary() if hasattr(result, "summary") else {}
        bg = getattr(self.network, "background", None)
        summary.update({
            "nranks": nranks,
            "packet_size_bytes": packet_size,
            "packet_size_source": ps_source,
            "background_level": float(np.max(bg)) if bg is not None and np.size(bg) else 0.0,
            "rows": {"messages": n_msgs, "rank_states": n_states,
                     "link_load": self._load_rows, "rank_states_recorded": has_states},
            "options": getattr(result, "options", {}) or {},
            "format": "ccmod-run/1",
        })
        atomic_write_text(self.dir / "run.json", dumps(summary, indent=1) + "\n")

    def _write_link_load(self) -> dict:
        """Re-read the raw contention intervals, add names + utilisation, write final file."""
        tmp_raw = self._raw_load.tmp
        final = self.dir / "link_load.parquet"
        util_peak: dict[int, float] = {}
        self._load_rows = 0
        try:
            seen = (np.unique(np.concatenate(self._load_res)) if self._load_res
                    else np.zeros(0, np.int64))
            names = resource_names(self.network, seen)
            name_dict = pa.array(list(names), pa.string())
            prof = None
            if self.network is not None and getattr(self.ctx, "node_of_rank", None) is not None:
                m = self._msg_buf.concat({"src": np.int64, "dst": np.int64})
                _, res, a, b, rate = message_resource_intervals(
                    m["src"], m["dst"], m["nbytes"], m["t_start_s"], m["t_end_s"],
                    self.network, self.ctx.node_of_rank)
                prof = RateProfile(res, a, b, rate)
            peak = np.zeros(len(seen))
            with atomic_path(final) as tmp:
                writer = pq.ParquetWriter(str(tmp), LOAD_SCHEMA, compression=self.compression)
                try:
                    for rb in pq.ParquetFile(str(tmp_raw)).iter_batches(batch_size=1 << 20):
                        res = rb.column("resource").to_numpy().astype(np.int64)
                        t0 = rb.column("t_start_s").to_numpy()
                        t1 = rb.column("t_end_s").to_numpy()
                        if prof is not None:
                            with np.errstate(divide="ignore", invalid="ignore"):
                                util = prof.mean_rate(res, t0, t1) / capacity_of(self.network,
                                                                                 res)
                            # uniform spreading can over-fill short intervals: clip to
                            # what the background leaves to the application
                            bg = rb.column("background").to_numpy()
                            util = np.minimum(util, np.clip(1.0 - bg, 0.0, 1.0))
                        else:
                            util = np.full(len(res), np.nan)
                        pos = np.searchsorted(seen, res)
                        if len(util):
                            u = np.where(np.isfinite(util), util, 0.0)
                            np.maximum.at(peak, pos, u)
                        name = pa.DictionaryArray.from_arrays(
                            pa.array(pos.astype(np.int32), pa.int32()), name_dict)
                        table = pa.Table.from_arrays(
                            [rb.column("resource"), name, rb.column("t_start_s"),
                             rb.column("t_end_s"), rb.column("active"),
                             pa.array(util, pa.float64()), rb.column("background")],
                            schema=LOAD_SCHEMA)
                        writer.write_table(table)
                        self._load_rows += table.num_rows
                finally:
                    writer.close()
            if prof is not None:
                util_peak = dict(zip(seen.tolist(), peak.tolist()))
        finally:
            discard(tmp_raw)
        return util_peak

    def _write_links(self, result, makespan: float, util_peak: dict) -> None:
        links = getattr(result, "links", None)
        if links is None:
            return
        links = links.copy()
        if "resource" in links.columns:
            res = links["resource"].to_numpy().astype(np.int64)
            cap = capacity_of(self.network, res)
            links["capacity_Bps"] = cap
            if "bytes" in links.columns:
                with np.errstate(divide="ignore", invalid="ignore"):
                    links["utilisation_mean"] = (links["bytes"].to_numpy(np.float64)
                                                 / (cap * makespan)) if makespan > 0 else np.nan
            links["utilisation_peak"] = [util_peak.get(int(r), np.nan) for r in res]
        with atomic_path(self.dir / "links.parquet") as tmp:
            pq.write_table(pa.Table.from_pandas(links, preserve_index=False), str(tmp),
                           compression=self.compression)
