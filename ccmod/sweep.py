"""Parameter sweeps: one trace evaluated over the cartesian product of run options.

"What if this trace ran on those networks, with that sharing rule, under this
background load?" :func:`sweep` reads the trace once, runs :func:`ccmod.api.run` at every
point of the grid (in-process, in a local process pool or on a dask.distributed cluster)
and returns one table row per point, in grid order whatever the parallelism.

>>> from ccmod.sweep import sweep
>>> df = sweep("traces/ring16.ti", {"sharing": ["ccmod", "maxmin"]},
...            networks=["star", "fattree2:spines=2"])       # doctest: +SKIP
>>> df[["network", "sharing", "makespan_s", "busiest_link"]]  # doctest: +SKIP
"""
from __future__ import annotations

import itertools
import json
import math
import os
import time

import numpy as np
import pandas as pd

from ccmod.errors import CcmodError, CcmodInputError

#: result columns, after the parameter columns (see docs/sweep.md)
RESULT_COLUMNS = ("nodes", "makespan_s", "messages", "bytes", "busiest_link",
                  "peak_contention", "mean_slowdown", "comm_s", "wait_s", "knee_pps",
                  "bound_best_s", "bound_avg_s", "bound_worst_s", "wall_s", "error")
_INT_COLUMNS = ("nodes", "messages", "bytes", "peak_contention")
_FLOAT_COLUMNS = ("makespan_s", "mean_slowdown", "comm_s", "wait_s", "knee_pps",
                  "bound_best_s", "bound_avg_s", "bound_worst_s", "wall_s")
from ccmod.options import LOAD_OPTIONS, OPTION_FLAGS, RunOptions, check_option  # noqa: E402

#: CLI option named in the errors about a parameter
_OPTION = {"network": "--network", **OPTION_FLAGS}
_NONE = ("none", "default")


def run_options() -> tuple[str, ...]:
    """Names of the run options a sweep can vary or fix: ``network``, every
    :class:`~ccmod.options.RunOptions` field and ``bounds``."""
    import dataclasses
    return ("network",) + tuple(f.name for f in dataclasses.fields(RunOptions)) + ("bounds",)


def _values(name: str, values) -> list:
    """One axis's values as a list (a single string or scalar is a one-value axis)."""
    if isinstance(values, (str, bytes, os.PathLike)) or not hasattr(values, "__iter__"):
        values = [values]
    values = list(values)
    if not values:
        raise CcmodInputError(f"no values given for '{name}'", source=_OPTION.get(name, name))
    return values


def grid_axes(grid: dict | None = None, *, networks=None, fixed: dict | None = None
              ) -> list[tuple[str, list]]:
    """The sweep's axes ``[(name, values), ...]`` in grid order.

    The network axis comes from ``networks`` (first axis), from ``grid["network"]`` (at
    its place in the dict) or, when neither and no fixed ``network`` is given, is
    ``["star"]``. Unknown option names fail listing the valid ones.
    """
    grid = dict(grid or {})
    fixed = dict(fixed or {})
    valid = run_options()
    for name in itertools.chain(grid, fixed):
        if name not in valid:
            raise CcmodInputError(f"'{name}' is not an option of ccmod.api.run that a sweep "
                                  f"can set", source="sweep", hint="valid: " + ", ".join(valid))
    both = set(grid) & set(fixed)
    if both:
        raise CcmodInputError(f"'{sorted(both)[0]}' is given both as a grid axis and as a "
                              f"fixed option", source="sweep")
    given = [networks is not None, "network" in grid, "network" in fixed]
    if sum(given) > 1:
        raise CcmodInputError("give the networks once: networks=, grid['network'] or "
                              "network=", source="sweep")
    axes = [(k, _values(k, v)) for k, v in grid.items()]
    if networks is not None:
        axes.insert(0, ("network", _values("network", networks)))
    elif not given[1] and not given[2]:
        axes.insert(0, ("network", ["star"]))
    return axes


def grid_points(grid: dict | None = None, *, networks=None) -> list[dict]:
    """The cartesian product of the axes as a list of ``{option: value}`` in grid order.

    The last axis varies fastest (as :func:`itertools.product`); see :func:`grid_axes`.
    """
    axes = grid_axes(grid, networks=networks)
    names = [a for a, _ in axes]
    return [dict(zip(names, combo)) for combo in itertools.product(*(v for _, v in axes))]


def label(value):
    """The table cell for a parameter value: scalars as they are, objects by name."""
    if value is None or isinstance(value, (str, bool, int, float, np.integer, np.floating)):
        return value.item() if isinstance(value, np.generic) else value
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in value.items())
    name = getattr(value, "name", None)
    return str(name) if isinstance(name, str) else type(value).__name__


# -- up-front validation: obviously bad values fail before anything runs ------------------

def _check_number(name, v, lo=None, lo_open=False, hi=None, integer=False):
    src = _OPTION.get(name, name)
    try:
        x = float(v)
        ok = math.isfinite(x) and not isinstance(v, bool)
    except (TypeError, ValueError):
        ok = False
    if ok and integer:
        ok = float(x).is_integer()
    if ok and lo is not None:
        ok = x > lo if lo_open else x >= lo
    if ok and hi is not None:
        ok = x < hi
    if not ok:
        want = "an integer" if integer else "a number"
        if lo is not None:
            want += f" {'>' if lo_open else '>='} {lo:g}"
        if hi is not None:
            want += f" and < {hi:g}"
        raise CcmodInputError(f"{name} must be {want}, got {v!r}", source=src)


def _check_network(spec) -> None:
    from ccmod.netsys.base import Network
    from ccmod.netsys.networks import SRC
    from ccmod.netsys.registry import NETWORKS
    if isinstance(spec, Network):
        return
    if not isinstance(spec, str):
        raise CcmodInputError(f"a network is a NAME[:key=value,...] string, got {spec!r}",
                              source=SRC)
    from ccmod.netsys.nic import parse_common, split_common
    from ccmod.registry import parse_spec
    name, raw = parse_spec(spec, source=SRC)
    raw, common = split_common(raw)
    parse_common(common)
    NETWORKS.get(name, source=SRC)
    NETWORKS.convert(name, raw, source=SRC)


def _resolve_cost(value, cache: dict):
    """``None``/``"none"`` → None; a path or ``"physical"`` → a loaded CostModel.

    Loading here validates the file before anything runs and lets remote workers (which
    may not see the file) receive the model itself.
    """
    from ccmod.netsys.networks import load_cost
    if value is None or (isinstance(value, str) and value.strip().lower() in _NONE):
        return None
    key = os.fspath(value) if isinstance(value, (str, os.PathLike)) else id(value)
    if key not in cache:
        cache[key] = load_cost(value)
    return cache[key]


def _validate(name: str, values: list, costs: dict) -> list:
    """Check one option's values (:func:`ccmod.options.check_option`); return the values
    to pass to ``run`` (cost files loaded once, collective strings parsed)."""
    out = []
    for v in values:
        if name == "background" and isinstance(v, str) and ":" in v:
            from ccmod.netsys.background import make_background
            make_background(v)          # a model spec: exp:..., file:...
        if name == "network":
            _check_network(v)
        elif name == "bounds":
            if not isinstance(v, (bool, np.bool_)):
                raise CcmodInputError(f"bounds is true or false, got {v!r}", source="--bounds")
            v = bool(v)
        else:
            v = check_option(name, v)
        if name == "cost":
            v = _resolve_cost(v, costs)
        if name == "collectives" and isinstance(v, str):
            from ccmod.workloads.collectives import parse_collective_option
            v = parse_collective_option(v)
        out.append(v)
    return out


def _freeze(v) -> str:
    return json.dumps(v, sort_keys=True, default=str)


# -- evaluating one point ------------------------------------------------------------------

def _metrics(r) -> dict:
    """The row's result columns from one RunResult."""
    msgs, ranks = r.messages, r.ranks
    slow = msgs["slowdown"].to_numpy(float) if len(msgs) else np.zeros(0)
    slow = slow[np.isfinite(slow)]
    b = r.busiest_link()
    bd = getattr(r, "bounds", None) or {}
    return {"nodes": int(r.network.get("nodes", 0)), "makespan_s": float(r.makespan_s),
            "knee_pps": _knee_pps(r),
            "bound_best_s": bd.get("best", math.nan), "bound_avg_s": bd.get("avg", math.nan),
            "bound_worst_s": bd.get("worst", math.nan),
            "messages": int(len(msgs)),
            "bytes": int(msgs["nbytes"].sum()) if len(msgs) else 0,
            "busiest_link": None if b is None else str(b["name"]),
            "peak_contention": None if b is None else int(b["peak_active"]),
            "mean_slowdown": float(slow.mean()) if slow.size else math.nan,
            "comm_s": float((ranks["send_s"] + ranks["recv_s"]).sum()),
            "wait_s": float((ranks["wait_s"] + ranks["barrier_s"]).sum()),
            "error": None}


def _knee_pps(r) -> float:
    """Mean packets/s through the most loaded link (most bytes) over the makespan: the
    article's knee capacity measure, one number per point (packet size from the network,
    else 1500 bytes)."""
    links = r.links
    if links is None or not len(links) or not r.makespan_s > 0:
        return math.nan
    from ccmod.netsys.registry import NETWORKS
    name = r.network.get("name", "")
    cls = NETWORKS.get(name).factory if name in NETWORKS else None
    packet = getattr(cls, "packet_size", None) or 1500
    return float(links["bytes"].max()) / packet / float(r.makespan_s)


def evaluate_point(workload, kwargs: dict) -> dict:
    """Run one point; a :class:`CcmodError` becomes the row's ``error`` (others propagate)."""
    from ccmod.api import run
    t0 = time.perf_counter()
    try:
        row = _metrics(run(workload, record=False, **kwargs))
    except CcmodError as exc:
        row = {"error": str(exc).replace("\n", " ")}
    row["wall_s"] = time.perf_counter() - t0
    return row


_WORKER_WORKLOADS: list = []


def _init_worker(workloads) -> None:
    """Process-pool initializer: keep the workloads (pickled once per worker)."""
    global _WORKER_WORKLOADS
    _WORKER_WORKLOADS = workloads


def _pool_task(index: int, wkey: int, kwargs: dict):
    return index, evaluate_point(_WORKER_WORKLOADS[wkey], kwargs)


# -- executors -----------------------------------------------------------------------------

def _run_serial(workloads, tasks, progress):
    rows = []
    for i, (wkey, kw) in enumerate(tasks):
        rows.append(evaluate_point(workloads[wkey], kw))
        if progress is not None:
            progress(i + 1, len(tasks))
    return rows


def _run_pool(workloads, tasks, jobs, progress):
    from concurrent.futures import ProcessPoolExecutor, as_completed
    rows: list = [None] * len(tasks)
    ex = ProcessPoolExecutor(max_workers=jobs, initializer=_init_worker, initargs=(workloads,))
    try:
        futs = [ex.submit(_pool_task, i, wkey, kw) for i, (wkey, kw) in enumerate(tasks)]
        for done, fut in enumerate(as_completed(futs), 1):
            i, row = fut.result()  # re-raises a non-ccmod error of the point
            rows[i] = row
            if progress is not None:
                progress(done, len(tasks))
    except BaseException:
        ex.shutdown(wait=False, cancel_futures=True)
        raise
    ex.shutdown(wait=True)
    return rows


def _dask_client(scheduler: str):
    """A dask.distributed Client for ``scheduler`` (``"local"``: an in-process cluster)."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise CcmodInputError("dask.distributed is not installed", source="--scheduler",
                              hint="pip install 'ccmod[dist]'") from None
    cluster = None
    try:
        if scheduler == "local":
            cluster = LocalCluster(processes=False, n_workers=1, threads_per_worker=2,
                                   dashboard_address=None)
            return Client(cluster), cluster
        return Client(scheduler), None
    except (OSError, TimeoutError, ValueError) as exc:
        if cluster is not None:
            cluster.close()
        msg = str(exc).replace("\n", " ") or type(exc).__name__
        raise CcmodInputError(f"cannot connect to the dask scheduler: {msg}",
                              source="--scheduler",
                              hint="start one with `dask scheduler` and give its tcp://HOST:8786"
                              ) from None


def _run_dask(workloads, tasks, scheduler, progress):
    client, cluster = _dask_client(scheduler)
    try:
        from dask.distributed import as_completed
        # one copy of each workload on every worker instead of one per task
        try:
            scattered = client.scatter(list(workloads), broadcast=True, hash=False)
        except TimeoutError:
            raise CcmodInputError("no dask worker is connected to the scheduler",
                                  source="--scheduler",
                                  hint=f"start some with `dask worker {scheduler}`") from None
        futs = [client.submit(evaluate_point, scattered[wkey], kw, pure=False)
                for wkey, kw in tasks]
        index = {f.key: i for i, f in enumerate(futs)}
        rows: list = [None] * len(tasks)
        for done, fut in enumerate(as_completed(futs), 1):
            rows[index[fut.key]] = fut.result()
            if progress is not None:
                progress(done, len(tasks))
        return rows
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


# -- the sweep -----------------------------------------------------------------------------

def sweep(trace, grid: dict | None = None, *, networks=None, jobs: int = 1,
          scheduler: str | None = None, progress=None, **fixed) -> pd.DataFrame:
    """Evaluate ``trace`` at every point of a grid of run options.

    Parameters
    ----------
    trace : str, path or workloads.base.Workload
        Read once (per distinct value of the read options ``fmt``, ``compute_rate``,
        ``compute_scale``, ``collectives``, which apply when the trace is read; they can
        only be set when ``trace`` is a file).
    grid : dict of str to list, optional
        ``{option: [values...]}`` for any keyword of :func:`ccmod.api.run` (``sharing``,
        ``send_mode``, ``background``, ``cost``, ``mapping``, ``eager_limit_bytes``,
        ``compute_scale``, ...). A single value counts as a one-value axis. ``cost`` and
        ``mapping`` take ``None`` or ``"none"`` for the default.
    networks : list of str or netsys.base.Network, optional
        Network specs, the first axis (default ``["star"]``).
    jobs : int
        1: in-process; > 1: a local process pool of that many workers; 0: one per CPU.
    scheduler : str, optional
        ``"tcp://HOST:PORT"`` of a dask.distributed scheduler (or ``"local"`` for an
        in-process LocalCluster); overrides ``jobs``.
    progress : callable, optional
        ``progress(done, total)`` after each point.
    **fixed
        Options passed unchanged to every run (e.g. ``eager_limit_bytes=65536``).

    Returns
    -------
    pandas.DataFrame
        One row per point in grid order (the last axis varies fastest): one column per
        axis (the value, or the name of an object) then :data:`RESULT_COLUMNS`. A point
        that fails with a :class:`ccmod.errors.CcmodError` (deadlock, network too small,
        ...) has its one-line message in ``error`` and missing results; any other exception
        propagates. ``attrs`` holds ``trace`` and the ``fixed`` options.

    Raises
    ------
    CcmodInputError
        Unknown option, an obviously bad value (unknown sharing rule, send mode or network,
        bad network parameter, background outside [0, 1), unreadable cost model or
        mapping, ...), an unreadable trace, or a dask scheduler that cannot be reached.
    """
    from ccmod.api import load_workload
    from ccmod.workloads.base import Workload

    _check_number("jobs", jobs, lo=0, integer=True)
    jobs = int(jobs) or (os.cpu_count() or 1)
    axes = grid_axes(grid, networks=networks, fixed=fixed)
    costs: dict = {}
    run_axes = [(n, _validate(n, vals, costs)) for n, vals in axes]
    run_fixed = {n: _validate(n, [v], costs)[0] for n, v in fixed.items()}
    names = [n for n, _ in axes]
    load_names = [n for n in names if n in LOAD_OPTIONS] + [n for n in run_fixed
                                                            if n in LOAD_OPTIONS]
    if isinstance(trace, Workload) and load_names:
        raise CcmodInputError(f"'{load_names[0]}' applies when a trace is read: pass the trace "
                              f"file, not a Workload", source=_OPTION.get(load_names[0]))
    # the points, and one workload per distinct combination of read options
    keys: dict[str, int] = {}
    workloads: list = []
    tasks = []
    for combo in itertools.product(*(v for _, v in run_axes)):
        kw = {**run_fixed, **dict(zip(names, combo))}
        load_kw = {n: kw.pop(n) for n in LOAD_OPTIONS if n in kw}
        k = _freeze(load_kw)
        if k not in keys:
            keys[k] = len(workloads)
            workloads.append(load_workload(trace, **RunOptions(**load_kw).load_kwargs()))
        tasks.append((keys[k], kw))
    if "mapping" in names or "mapping" in run_fixed:
        # a bad block:K or map file is an input error, not a failing point
        from ccmod.netsys.mapping import rank_to_node
        maps = dict(run_axes).get("mapping", [run_fixed.get("mapping")])
        for m in maps:
            for w in workloads:
                rank_to_node(m, w.nranks)

    if scheduler is not None:
        rows = _run_dask(workloads, tasks, str(scheduler), progress)
    elif jobs > 1 and len(tasks) > 1:
        rows = _run_pool(workloads, tasks, min(jobs, len(tasks)), progress)
    else:
        rows = _run_serial(workloads, tasks, progress)
    return _table(axes, rows, trace, fixed)


def _table(axes, rows, trace, fixed) -> pd.DataFrame:
    names = [n for n, _ in axes]
    combos = list(itertools.product(*(v for _, v in axes)))
    data: dict = {n: [label(c[j]) for c in combos] for j, n in enumerate(names)}
    for col in RESULT_COLUMNS:
        vals = [r.get(col) for r in rows]
        if col in _INT_COLUMNS:
            data[col] = pd.array(vals, dtype="Int64")
        elif col in _FLOAT_COLUMNS:
            data[col] = np.array([math.nan if v is None else v for v in vals], dtype=float)
        else:
            # pandas' nullable string: the same dtype whether or not any point failed
            data[col] = pd.array(vals, dtype="string")
    df = pd.DataFrame(data, columns=names + [c for c in RESULT_COLUMNS if c not in names])
    df.attrs["trace"] = os.fspath(trace) if isinstance(trace, (str, os.PathLike)) else "<workload>"
    df.attrs["fixed"] = {k: label(v) for k, v in fixed.items()}
    return df


def best_index(df: pd.DataFrame):
    """Index of the successful row with the smallest makespan (first in grid order), or None."""
    ok = df[df["error"].isna()] if "error" in df else df
    ok = ok[np.isfinite(ok["makespan_s"].to_numpy(float))]
    if not len(ok):
        return None
    return ok["makespan_s"].idxmin()


def records(df: pd.DataFrame) -> list[dict]:
    """The table as JSON-ready dicts (NaN and NA become None, numpy scalars Python ones)."""
    out = []
    for row in df.to_dict(orient="records"):
        clean = {}
        for k, v in row.items():
            if v is pd.NA or (isinstance(v, float) and math.isnan(v)):
                v = None
            elif isinstance(v, np.generic):
                v = v.item()
            clean[str(k)] = v
        out.append(clean)
    return out


def write_table(df: pd.DataFrame, path) -> None:
    """Write the sweep table atomically: ``.parquet`` or ``.csv`` by extension."""
    from pathlib import Path

    from ccmod.atomic import atomic_path
    path = Path(path)
    kind = output_kind(path)
    try:
        with atomic_path(path) as tmp:
            if kind == "parquet":
                out = df.copy()
                out.attrs = {}  # pandas would try to JSON-encode them into the schema
                out.to_parquet(tmp, index=False)
            else:
                df.to_csv(tmp, index=False)
    except OSError as exc:
        raise CcmodInputError(f"cannot write the sweep table: {exc.strerror or exc}",
                              source=str(path)) from None


def output_kind(path) -> str:
    """``"parquet"`` or ``"csv"`` from the file's extension (anything else is an error)."""
    suffix = os.path.splitext(os.fspath(path))[1].lower()
    if suffix in (".parquet", ".pq"):
        return "parquet"
    if suffix == ".csv":
        return "csv"
    raise CcmodInputError(f"cannot tell the table format from '{suffix or os.fspath(path)}'",
                          source=os.fspath(path), hint="use a .parquet or .csv file name")
