"""The ``parquet`` sink and its reader: a run directory holding one :class:`RunResult`.

Files written into the run directory (each written to a hidden temporary name and renamed
into place, so a crashed run never leaves a half file under the final name):

=====================  =================================================================
messages.parquet       the ``RunResult.messages`` columns (msg_id, src, dst, tag, nbytes,
                       t_post_s, t_post_send_s, t_post_recv_s, t_start_s, t_end_s,
                       quiet_s, slowdown, bottleneck, bottleneck_name, hops)
rank_states.parquet    rank, state (dictionary: compute/send/recv/wait/barrier/idle),
                       t_start_s, t_end_s; idle = gaps between recorded states and the time
                       after a rank finished, up to the makespan (for other readers; the
                       loader drops them again: idle is derived)
link_load.parquet      resource, name, t_start_s, t_end_s, active (contention),
                       utilisation (fraction of capacity, see :mod:`ccmod.linkrate`),
                       background
ranks.parquet          one row per rank (``RunResult.ranks``)
links.parquet          one row per used resource (``RunResult.links``)
resources.parquet      the link table: every resource id with name, capacity, background
run.json               ``RunResult.summary()`` plus nranks, packet size, options,
                       measured values and row counts
=====================  =================================================================

:func:`load_result` reads a directory back into the same :class:`ccmod.result.RunResult`
(routes are not stored: what needs them, link utilisation, is stored already).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ccmod.atomic import atomic_path, atomic_write_text
from ccmod.errors import CcmodInputError
from ccmod.jsonio import dumps
from ccmod.outputs.base import ALL_STATE_NAMES, STATE_IDLE, STATE_NAMES, Sink
from ccmod.outputs.intervals import idle_gaps, state_codes
from ccmod.outputs.registry import SINKS
from ccmod.outputs.run_dir import HINT, read_run_summary
from ccmod.outputs.tables import columns, dictionary_columns

_STATE_DICT = pa.array(list(ALL_STATE_NAMES), pa.string())
STATE_SCHEMA = pa.schema([("rank", pa.int32()), ("state", pa.dictionary(pa.int8(), pa.string())),
                          ("t_start_s", pa.float64()), ("t_end_s", pa.float64())])
_CODECS = ("snappy", "gzip", "zstd", "brotli", "lz4", "none")


def _table(df: pd.DataFrame, path: Path, compression: str) -> None:
    """Write ``df`` as ``path`` (its stem names the table in :data:`ccmod.outputs.tables.TABLES`)."""
    with atomic_path(path) as tmp:
        table = pa.Table.from_pandas(df, preserve_index=False)
        pq.write_table(table, str(tmp), compression=compression,
                       use_dictionary=dictionary_columns(path.stem, table.column_names))


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
    files = "messages/rank_states/link_load/ranks/links/resources.parquet, run.json"

    def __init__(self, out_dir=None, compression: str = "zstd"):
        super().__init__(out_dir)
        if compression not in _CODECS:
            raise CcmodInputError(f"unsupported Parquet compression '{compression}'",
                                  source="--sink", hint="use " + ", ".join(_CODECS))
        self.compression = compression

    def write(self, result, ctx=None) -> None:
        d = self.directory(ctx)
        c = self.compression
        m = result.messages
        if "bottleneck_name" in m.columns:
            m = m.assign(bottleneck_name=m["bottleneck_name"].astype(str))
        _table(m, d / "messages.parquet", c)
        n_states = 0
        if result.rank_states is not None:
            n_states = self._write_states(result, d / "rank_states.parquet")
        n_load = 0
        if result.link_load is not None:
            ld = result.link_load
            names = _resource_names(result)
            name = pd.Categorical.from_codes(ld["resource"].to_numpy().astype(np.int64),
                                             categories=names) if len(names) else \
                pd.Categorical([] * len(ld))
            ld = ld.reindex(columns=[c for c in columns("link_load") if c != "name"])
            ld.insert(1, "name", name)
            _table(ld, d / "link_load.parquet", c)
            n_load = len(ld)
        self.write_rest(result, d, int(len(result.messages)), n_states, n_load)

    def write_rest(self, result, d: Path, n_messages: int, n_states: int, n_load: int,
                   summary: dict | None = None) -> None:
        """The per-rank and per-link tables and run.json (also the streamed writer's end,
        :mod:`ccmod.outputs.parquet_stream`, which wrote messages and states itself)."""
        c = self.compression
        _table(result.ranks, d / "ranks.parquet", c)
        _table(result.links, d / "links.parquet", c)
        if result.resources is not None:
            _table(result.resources, d / "resources.parquet", c)
        summary = dict(result.summary() if summary is None else summary)
        summary.update({
            "nranks": result.nranks,
            "packet_size_bytes": result.packet_size,
            "packet_size_source": result.meta.get("packet_size_source", "default"),
            "background_level": result.background_level,
            "rows": {"messages": int(n_messages), "rank_states": n_states,
                     "link_load": n_load, "rank_states_recorded": n_states > 0},
            "options": result.options or {},
            "measured": result.measured,
            "format": "ccmod-run/2",
        })
        atomic_write_text(d / "run.json", dumps(summary, indent=1) + "\n")

    def _write_states(self, result, path: Path) -> int:
        s = result.rank_states
        rank = s["rank"].to_numpy().astype(np.int64)
        code = state_codes(s["state"])
        t0 = s["t_start_s"].to_numpy()
        t1 = s["t_end_s"].to_numpy()
        order = np.lexsort((t0, rank))
        t_end = max(float(result.makespan_s), float(t1.max()) if len(t1) else 0.0)
        gr, ga, gb = idle_gaps(rank[order], t0[order], t1[order], result.nranks, t_end)
        rank = np.concatenate([rank, gr])
        code = np.concatenate([code, np.full(len(gr), STATE_IDLE)])
        t0, t1 = np.concatenate([t0, ga]), np.concatenate([t1, gb])
        st = pa.DictionaryArray.from_arrays(pa.array(code.astype(np.int8), pa.int8()),
                                            _STATE_DICT)
        table = pa.Table.from_arrays([pa.array(rank.astype(np.int32)), st, pa.array(t0),
                                      pa.array(t1)], schema=STATE_SCHEMA)
        with atomic_path(path) as tmp:
            pq.write_table(table, str(tmp), compression=self.compression,
                           use_dictionary=dictionary_columns("rank_states",
                                                             table.column_names))
        return len(rank)


def _resource_names(result) -> list[str]:
    """Names indexed by resource id (``rN`` where the link table has none)."""
    n = 0
    for df in (result.resources, result.link_load):
        if df is not None and len(df):
            n = max(n, int(df["resource"].max()) + 1)
    names = [f"r{i}" for i in range(n)]
    if result.resources is not None:
        for r, nm in zip(result.resources["resource"].tolist(),
                         result.resources["name"].astype(str).tolist()):
            names[int(r)] = nm
    # Categorical needs unique categories: suffix duplicates with their id
    seen: dict[str, int] = {}
    for i, nm in enumerate(names):
        if nm in seen:
            names[i] = f"{nm}#{i}"
        seen[names[i]] = i
    return names


# ============================================================================ reading
def _read(path: Path) -> pd.DataFrame | None:
    if not path.exists():
        return None
    try:
        return pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises its own ArrowInvalid on corrupt files
        raise CcmodInputError(f"cannot read Parquet table: {exc}", source=str(path),
                              hint="re-run with --out DIR to rewrite it") from None


def _need(df, cols, path: Path) -> None:
    missing = sorted(set(cols) - set(df.columns))
    if missing:
        raise CcmodInputError(f"table lacks column(s) {', '.join(missing)}", source=str(path),
                              hint="re-run with --out DIR to rewrite the run directory")


def load_result(run_dir):
    """Load a run directory written by the parquet sink into a :class:`RunResult`.

    Raises
    ------
    CcmodInputError
        When the directory is missing, is not a ccmod run directory, or a table is bad.
    """
    from ccmod.result import RunResult
    summary = read_run_summary(run_dir)
    d = Path(run_dir)
    msgs = _read(d / "messages.parquet")
    if msgs is None:
        raise CcmodInputError("messages.parquet is missing", source=str(d), hint=HINT)
    _need(msgs, ("src", "dst", "nbytes", "t_start_s", "t_end_s"), d / "messages.parquet")
    states = _read(d / "rank_states.parquet")
    if states is not None:
        _need(states, ("rank", "state", "t_start_s", "t_end_s"), d / "rank_states.parquet")
        st = states["state"].astype(str)
        if not st.isin(ALL_STATE_NAMES).all():
            bad = st[~st.isin(ALL_STATE_NAMES)].iloc[0]
            raise CcmodInputError(f"unknown rank state '{bad}'", source=str(
                d / "rank_states.parquet"), hint="valid: " + ", ".join(ALL_STATE_NAMES))
        keep = (st != "idle").to_numpy()        # idle is derived, not recorded
        states = pd.DataFrame({
            "rank": states["rank"].to_numpy()[keep].astype(np.int32),
            "state": pd.Categorical(st[keep], categories=list(STATE_NAMES)),
            "t_start_s": states["t_start_s"].to_numpy()[keep],
            "t_end_s": states["t_end_s"].to_numpy()[keep]})
    load = _read(d / "link_load.parquet")
    if load is not None:
        _need(load, ("resource", "t_start_s", "t_end_s", "active"), d / "link_load.parquet")
        load = load.drop(columns=[c for c in ("name",) if c in load.columns])
    ranks = _read(d / "ranks.parquet")
    nranks = int(summary.get("nranks") or (len(ranks) if ranks is not None else 0))
    if ranks is None:
        ranks = pd.DataFrame({"rank": np.arange(nranks)})
    links = _read(d / "links.parquet")
    if links is None:
        links = pd.DataFrame({"resource": np.zeros(0, np.int64), "name": [],
                              "peak_active": [], "bytes": []})
    finish = ranks["finish_s"].to_numpy() if "finish_s" in ranks.columns else np.zeros(nranks)
    options = dict(summary.get("options") or {})
    options.setdefault("background", summary.get("background_level", 0.0))
    return RunResult(
        makespan_s=float(summary.get("makespan_s") or 0.0), rank_finish_s=finish,
        ranks=ranks, messages=msgs, links=links, records=int(summary.get("records") or 0),
        wall_s=float(summary.get("wall_s") or 0.0), network=summary.get("network") or {},
        sharing=str(summary.get("sharing", "?")), send_mode=str(summary.get("send_mode", "?")),
        rank_states=states, link_load=load, options=options,
        events=int(summary.get("events") or 0), resources=_read(d / "resources.parquet"),
        routes=None, signals=None, measured=summary.get("measured"),
        meta={"nranks": nranks,
              "packet_size_bytes": int(summary.get("packet_size_bytes") or 1500),
              "packet_size_source": summary.get("packet_size_source", "default"),
              "run_dir": str(d)})
