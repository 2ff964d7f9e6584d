"""Helpers shared by the built-in sinks: batch buffering, state sanitising, idle filling.

Everything here works on numpy arrays (no per-record Python loops) so that a sink fed
with a 1M-message run stays cheap.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ccmod.errors import CcmodInputError
from ccmod.atomic import discard, ensure_dir, temp_path  # noqa: F401  (discard: for the sinks)
from ccmod.outputs.base import STATE_NAMES

#: pseudo state code of the gaps between recorded states ("idle" in the article's
#: space-time diagram): a rank waiting for nothing, or finished before the makespan
STATE_IDLE = len(STATE_NAMES)
#: state names including the idle pseudo state (index = state code)
ALL_STATE_NAMES = STATE_NAMES + ("idle",)

MESSAGE_COLUMNS = ("msg_id", "src", "dst", "tag", "nbytes", "t_post_s", "t_start_s", "t_end_s",
                   "quiet_s", "slowdown", "bottleneck", "hops")
RANK_STATE_COLUMNS = ("rank", "state", "t_start_s", "t_end_s")
LINK_LOAD_COLUMNS = ("resource", "t_start_s", "t_end_s", "active", "background")
SIGNAL_COLUMNS = ("t_s", "signal", "args")


class ChunkBuffer:
    """Collect batches (dicts of equal-length arrays) and concatenate them once.

    Parameters
    ----------
    columns : sequence of str
        Columns to keep; a batch missing one of them is a programming error of the engine
        and fails with a clear message naming the column.
    table : str
        Table name used in that message.
    """

    def __init__(self, columns, table: str):
        self.columns = tuple(columns)
        self.table = table
        self._chunks: list[dict[str, np.ndarray]] = []
        self.rows = 0

    def add(self, batch: dict) -> dict[str, np.ndarray]:
        """Keep the wanted columns of ``batch``; return them as arrays."""
        kept = {}
        n = None
        for c in self.columns:
            if c not in batch:
                raise ValueError(f"{self.table} batch lacks column '{c}' "
                                 f"(has: {', '.join(sorted(batch))})")
            a = np.asarray(batch[c])
            if n is None:
                n = len(a)
            elif len(a) != n:
                raise ValueError(f"{self.table} batch column '{c}' has {len(a)} rows, "
                                 f"expected {n}")
            kept[c] = a
        if n:
            self._chunks.append(kept)
            self.rows += n
        return kept

    def concat(self, dtypes: dict | None = None) -> dict[str, np.ndarray]:
        """All rows so far as one dict of arrays (empty arrays when nothing came)."""
        dtypes = dtypes or {}
        out = {}
        for c in self.columns:
            if self._chunks:
                out[c] = np.concatenate([ch[c] for ch in self._chunks])
            else:
                out[c] = np.zeros(0, dtype=dtypes.get(c, np.float64))
            if c in dtypes and out[c].dtype != np.dtype(dtypes[c]):
                out[c] = out[c].astype(dtypes[c])
        return out

    def __len__(self) -> int:
        return self.rows


def frame_to_columns(df, columns) -> dict[str, np.ndarray] | None:
    """Columns of a pandas DataFrame as numpy arrays (None if absent/missing columns)."""
    if df is None or any(c not in df.columns for c in columns):
        return None
    return {c: df[c].to_numpy() for c in columns}


def state_codes(state) -> np.ndarray:
    """A state column as integer codes (names such as ``"send"`` or ``"idle"`` are mapped)."""
    state = np.asarray(state)
    if state.dtype.kind in "iu":
        return state
    lut = {n: i for i, n in enumerate(ALL_STATE_NAMES)}
    return np.asarray([lut[str(s)] for s in state], np.int64)


def fill_from_result(result, buffers) -> None:
    """Fill the empty buffers from the matching tables of ``result``.

    Engines that only fill the :class:`~ccmod.result.RunResult` (no batches) still get a
    complete output: each ``(attribute, ChunkBuffer)`` pair whose buffer received nothing
    takes the rows of ``result.<attribute>`` (a DataFrame with the buffer's columns).
    """
    for attr, buf in buffers:
        if len(buf):
            continue
        cols = frame_to_columns(getattr(result, attr, None), buf.columns)
        if cols is None or not len(next(iter(cols.values()))):
            continue
        if "state" in cols:
            cols["state"] = state_codes(cols["state"])
        buf.add(cols)


def infer_nranks(ctx, result, *rank_arrays) -> int:
    """Rank count of a run: the workload's, else the largest rank seen in the results."""
    wl = getattr(ctx, "workload", None)
    if wl is not None and getattr(wl, "nranks", None) is not None:
        return int(wl.nranks)
    ranks = getattr(result, "ranks", None)
    n = len(ranks) if ranks is not None else 0
    for arr in rank_arrays:
        if len(arr):
            n = max(n, int(arr.max()) + 1)
    return n


def sanitize_states(rank, state, t0, t1):
    """Sort state intervals per rank and make them sequential (no overlap).

    An interval starting before the previous one of the same rank ended is clipped to
    start at that end; intervals left empty (also zero-length ones) are dropped. Viewers
    (Paraver, Perfetto) need one state at a time per rank, and the engine emits them
    sequential anyway: this only guards against rounding noise.

    Returns
    -------
    rank, state, t0, t1 : arrays sorted by (rank, t0)
    """
    rank = np.asarray(rank, np.int64)
    state = np.asarray(state, np.int64)
    t0 = np.asarray(t0, np.float64)
    t1 = np.asarray(t1, np.float64)
    if len(rank) == 0:
        return rank, state, t0, t1
    order = np.lexsort((t1, t0, rank))
    rank, state, t0, t1 = rank[order], state[order], t0[order], t1[order]
    # running maximum of the end time within each rank (shifted by one)
    prev_end = _segmented_running_max_prev(rank, t1)
    t0 = np.maximum(t0, prev_end)
    keep = t1 > t0
    return rank[keep], state[keep], t0[keep], t1[keep]


def _segmented_running_max_prev(group, values):
    """For ``group``-sorted rows: max of ``values`` over the earlier rows of the same group.

    Exact (returns elements of ``values``): the running maximum is taken on an integer
    key (group offset + value in ns) only to find *which* row holds it.
    """
    n = len(values)
    out = np.full(n, -np.inf)
    if n <= 1:
        return out
    starts = np.r_[True, group[1:] != group[:-1]]
    gid = np.cumsum(starts) - 1
    vmin = float(values.min())
    check_ns_range(values - vmin)
    v_ns = np.rint((values - vmin) * 1e9).astype(np.int64)
    span = int(v_ns.max()) + 1
    if int(gid[-1]) * span < 2 ** 62:
        key = gid * span + v_ns
        run = np.maximum.accumulate(key)
        pos = np.maximum.accumulate(np.where(key == run, np.arange(n), 0))
        out[1:] = values[pos[:-1]]
    else:  # pragma: no cover - astronomically long runs: per-group loop
        bounds = np.r_[np.nonzero(starts)[0], n]
        for a, b in zip(bounds[:-1], bounds[1:]):
            out[a + 1:b] = np.maximum.accumulate(values[a:b])[:-1]
    out[starts] = -np.inf
    return out


def idle_gaps(rank, t0, t1, nranks: int, t_end: float):
    """Gaps (``rank, t0, t1``) of every rank in ``[0, t_end]`` not covered by any state.

    ``rank``/``t0`` must be sorted by (rank, t0); overlapping intervals are fine (a gap
    starts at the running maximum of the end times). Ranks without any state get one gap
    covering the whole run.
    """
    rank = np.asarray(rank, np.int64)
    t0 = np.asarray(t0, np.float64)
    t1 = np.asarray(t1, np.float64)
    n = len(rank)
    parts_r, parts_a, parts_b = [], [], []
    seen = np.zeros(max(nranks, 0), bool)
    if n:
        prev_end = _segmented_running_max_prev(rank, t1)
        first = np.r_[True, rank[1:] != rank[:-1]]
        last = np.r_[rank[1:] != rank[:-1], True]
        # inner gaps: the interval starts after everything before it (same rank) ended
        inner = ~first & (t0 > prev_end)
        parts_r.append(rank[inner]); parts_a.append(prev_end[inner]); parts_b.append(t0[inner])
        lead = first & (t0 > 0)
        parts_r.append(rank[lead]); parts_a.append(np.zeros(int(lead.sum())))
        parts_b.append(t0[lead])
        # the end of a rank's activity: max end over its rows (= running max at its last row)
        rank_end = np.maximum(prev_end, t1)[last]
        tail = rank_end < t_end
        parts_r.append(rank[last][tail]); parts_a.append(rank_end[tail])
        parts_b.append(np.full(int(tail.sum()), float(t_end)))
        valid = rank[(rank >= 0) & (rank < nranks)]
        seen[valid] = True
    missing = np.nonzero(~seen)[0]
    if t_end > 0 and len(missing):
        parts_r.append(missing); parts_a.append(np.zeros(len(missing)))
        parts_b.append(np.full(len(missing), float(t_end)))
    if not parts_r:
        return np.zeros(0, np.int64), np.zeros(0), np.zeros(0)
    gr = np.concatenate(parts_r).astype(np.int64)
    ga = np.concatenate(parts_a).astype(np.float64)
    gb = np.concatenate(parts_b).astype(np.float64)
    keep = gb > ga
    gr, ga, gb = gr[keep], ga[keep], gb[keep]
    order = np.lexsort((ga, gr))
    return gr[order], ga[order], gb[order]


def fill_idle(rank, state, t0, t1, nranks: int, t_end: float):
    """Add ``STATE_IDLE`` intervals for every gap of every rank in ``[0, t_end]``.

    Returns
    -------
    rank, state, t0, t1 : arrays sorted by (rank, t0)
    """
    rank = np.asarray(rank, np.int64)
    gr, ga, gb = idle_gaps(rank, t0, t1, nranks, t_end)
    rank = np.concatenate([rank, gr])
    state = np.concatenate([np.asarray(state, np.int64), np.full(len(gr), STATE_IDLE)])
    t0 = np.concatenate([np.asarray(t0, np.float64), ga])
    t1 = np.concatenate([np.asarray(t1, np.float64), gb])
    order = np.lexsort((t0, rank))
    return rank[order], state[order], t0[order], t1[order]


def resolve_out_dir(sink_name: str, out_dir, ctx) -> Path:
    """The directory a file sink writes into: its own ``out_dir`` or the run's."""
    d = out_dir if out_dir is not None else getattr(ctx, "out_dir", None)
    if d is None:
        raise CcmodInputError(f"sink '{sink_name}' needs an output directory",
                              source="--sink", hint="give --out DIR (or out_dir=...)")
    return ensure_dir(d, "output directory")


def temp_name(final: Path) -> Path:
    """A fresh hidden temporary file next to ``final`` (renamed over it at close)."""
    return temp_path(final)


def json_default(obj):
    """``json.dumps`` fallback for numpy scalars/arrays and paths."""
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    return str(obj)


def jsonable(obj):
    """Recursively replace non-finite floats by None (strict JSON has no NaN/Infinity)."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, (float, np.floating)):
        return float(obj) if np.isfinite(obj) else None
    if isinstance(obj, np.integer):
        return int(obj)
    return obj


def dumps(obj, **kw) -> str:
    """Strict JSON (non-finite floats → null, numpy scalars converted)."""
    return json.dumps(jsonable(obj), default=json_default, allow_nan=False, **kw)


#: the largest time (s) whose nanoseconds fit an int64 (about 292 years)
MAX_NS_SECONDS = 9.2e9


def check_ns_range(t, what: str = "simulated time") -> None:
    """Fail with one line when times cannot be written as int64 nanoseconds."""
    a = np.asarray(t, np.float64)
    if a.size and not (np.all(np.isfinite(a)) and np.abs(a).max() < MAX_NS_SECONDS):
        raise CcmodInputError(f"{what} reaches {np.nanmax(np.abs(a)):.3g} s: too long for "
                              "nanosecond timestamps (limit 9.2e9 s)", source="--sink",
                              hint="check the network parameters (latency, bandwidth) and the "
                                   "compute rate")


def seconds_to_ns(t) -> np.ndarray:
    """Seconds → integer nanoseconds (monotone rounding, so order is preserved)."""
    check_ns_range(t)
    return np.rint(np.asarray(t, np.float64) * 1e9).astype(np.int64)


def resource_names(network, resources) -> np.ndarray:
    """Names of resource ids (``link/up``); ``-`` for -1 and ``rN`` without a network."""
    resources = np.asarray(resources, np.int64)
    uniq, inv = np.unique(resources, return_inverse=True)
    names = []
    for r in uniq.tolist():
        if r < 0:
            names.append("")
        elif network is not None and hasattr(network, "resource_name"):
            try:
                names.append(str(network.resource_name(r)))
            except (IndexError, ValueError, TypeError):
                names.append(f"r{r}")
        else:
            names.append(f"r{r}")
    return np.asarray(names, dtype=object)[inv.reshape(-1)] if len(uniq) else \
        np.zeros(0, dtype=object)
