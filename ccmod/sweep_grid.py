"""Resumable grid sweeps: any run option, any network parameter, seeds, local or dask.

:func:`run_grid` is what ``ccmod sweep`` runs. Compared with :func:`ccmod.sweep.sweep` it
adds:

* network-parameter axes: ``{"network.bandwidth": [1e9, 1e10]}`` sets ``bandwidth=`` in
  every network spec of the sweep (a parameter the network does not declare is an error);
* ``seeds=N``: each point whose background is stochastic (``exp:...``) runs N times, with
  the background's ``seed`` set to 1..N (column ``seed``; empty for other points);
* a resumable output: with ``output="results.parquet"`` (or ``.csv``) the rows already in
  the file are not run again (a row is identified by its parameter columns), and finished
  rows are written to the file as they come (the whole file rewritten atomically at most
  every ``flush_s`` seconds, and on an interrupt), so an interrupted sweep resumes where
  it stopped;
* one code path for every executor: points go through :func:`_iter_rows`, which runs
  :func:`ccmod.sweep.evaluate_point` in-process, in a local process pool, or on dask
  (a ``LocalCluster`` unless a ``scheduler`` address is given); the workload is sent to each
  worker once (process-pool initializer / ``client.scatter(broadcast=True)``).

The table has the same columns as :func:`ccmod.sweep.sweep` (one per axis, then
:data:`ccmod.sweep.RESULT_COLUMNS`), in grid order (the last axis varies fastest).
"""
from __future__ import annotations

import itertools
import json
import math
import os
import time
from pathlib import Path

import pandas as pd

from ccmod.errors import CcmodInputError
from ccmod.sweep import (LOAD_OPTIONS, _check_number, _dask_client, _freeze, _init_worker,
                         _pool_task, _table, _validate, evaluate_point, grid_axes, label,
                         output_kind, write_table)

#: CLI spellings accepted as grid keys
ALIASES = {"send-mode": "send_mode", "eager-limit": "eager_limit_bytes", "eager_limit":
           "eager_limit_bytes", "map": "mapping", "compute-scale": "compute_scale",
           "compute-rate": "compute_rate", "format": "fmt", "collective": "collectives",
           "intra-latency": "intra_latency_s", "intra-bandwidth": "intra_bandwidth_Bps"}
NET_PREFIX = "network."


def _number_or_text(text: str):
    t = text.strip()
    try:
        v = float(t)
    except ValueError:
        return t
    if v.is_integer() and not any(c in t.lower() for c in ".e") and abs(v) < 2 ** 53:
        return int(v)
    return v


def parse_grid_items(items) -> dict:
    """``["network.bandwidth=1e9,1e10", "background=0;exp:seed=1,interval=1e-3"]`` → dict.

    Values are comma-separated, or ``;``-separated when a value itself holds commas (model
    specs such as ``exp:...`` or ``loggp:...``). Numbers become int/float.
    """
    grid: dict = {}
    for item in items or []:
        key, eq, rest = str(item).partition("=")
        key = key.strip()
        if not eq or not key or not rest.strip():
            raise CcmodInputError(f"'{item}' is not KEY=v1,v2,...", source="--grid",
                                  hint="e.g. --grid network.bandwidth=1e9,1e10")
        key = ALIASES.get(key, key)
        sep = ";" if ";" in rest else ","
        vals = [_number_or_text(v) for v in rest.split(sep) if v.strip()]
        if key in grid:
            raise CcmodInputError(f"grid key '{key}' given twice", source="--grid")
        grid[key] = vals
    return grid


def merge_network_spec(spec: str, params: dict) -> str:
    """``"fattree:k=4"`` + ``{"bandwidth": 1e9}`` → ``"fattree:k=4,bandwidth=1000000000.0"``."""
    from ccmod.netsys.networks import SRC
    from ccmod.registry import parse_spec
    name, raw = parse_spec(spec, source=SRC)
    raw.update({k: (repr(v) if isinstance(v, float) else str(v)) for k, v in params.items()})
    return name + (":" + ",".join(f"{k}={v}" for k, v in raw.items()) if raw else "")


def _with_seed(background, seed: int):
    """The background spec with ``seed`` set, or None when it is not stochastic."""
    from ccmod.netsys.background import make_background
    bg = make_background(background)
    if bg.constant or not hasattr(bg, "seed"):
        return None
    bg.seed = int(seed)
    return bg.spec()


def plan(grid: dict | None = None, *, networks=None, seeds: int | None = None,
         fixed: dict | None = None):
    """Expand the grid: ``(axes, points)``.

    ``axes`` is ``[(column, values)]`` in grid order; ``points`` a list of ``(labels,
    kwargs)``: the row's parameter cells and the keywords of :func:`ccmod.api.run`.
    """
    grid = dict(grid or {})
    fixed = dict(fixed or {})
    net_axes = [(k, grid.pop(k)) for k in list(grid) if k.startswith(NET_PREFIX)]
    if "seed" in grid:
        raise CcmodInputError("use seeds=N (--seeds N) for the background seed",
                              source="--grid")
    axes = grid_axes(grid, networks=networks, fixed=fixed)   # validates option names
    costs: dict = {}
    run_axes = [(n, _validate(n, list(v), costs)) for n, v in axes]
    run_fixed = {n: _validate(n, [v], costs)[0] for n, v in fixed.items()}
    # the network axis first, then its parameters, then the other options
    names = [n for n, _ in axes]
    pos = names.index("network") + 1 if "network" in names else 0
    if net_axes and "network" not in names and "network" not in fixed:
        raise CcmodInputError("network parameters need a network", source="--grid")
    all_axes = axes[:pos] + [(k, list(v)) for k, v in net_axes] + axes[pos:]
    run_all = run_axes[:pos] + [(k, list(v)) for k, v in net_axes] + run_axes[pos:]
    stochastic_seeds = list(range(1, int(seeds) + 1)) if seeds else None
    if seeds is not None:
        _check_number("seeds", seeds, lo=1, integer=True)
    points = []
    checked: set = set()
    # an axis mixing numbers and text (background=0;exp:...) is stored as text, so the
    # column has one type in Parquet and resumed rows match their points
    mixed = {n for n, vals in all_axes
             if len({isinstance(label(v), str) for v in vals}) > 1}

    def cell(n, v):
        v = label(v)
        if n in mixed and not isinstance(v, str):
            return "none" if v is None else f"{v:g}"
        return v
    for shown, combo in zip(itertools.product(*(v for _, v in all_axes)),
                            itertools.product(*(v for _, v in run_all))):
        labels = {n: cell(n, v) for (n, _), v in zip(all_axes, shown)}
        kw = dict(run_fixed)
        netp = {}
        for (n, _), v in zip(run_all, combo):
            if n.startswith(NET_PREFIX):
                netp[n[len(NET_PREFIX):]] = v
            else:
                kw[n] = v
        if netp:
            base = kw.get("network", "star")
            if not isinstance(base, str):
                raise CcmodInputError("network parameters need network specs, not objects",
                                      source="--grid")
            kw["network"] = merge_network_spec(base, netp)
            if kw["network"] not in checked:
                _validate("network", [kw["network"]], costs)
                checked.add(kw["network"])
        if stochastic_seeds:
            specs = [_with_seed(kw.get("background", 0.0), s) for s in stochastic_seeds]
            if specs[0] is not None:
                for s, spec in zip(stochastic_seeds, specs):
                    points.append(({**labels, "seed": s}, {**kw, "background": spec}))
                continue
            labels = {**labels, "seed": None}
        points.append((labels, kw))
    if stochastic_seeds:
        all_axes = all_axes + [("seed", stochastic_seeds)]
    return all_axes, points


def _key(labels: dict, names) -> str:
    def norm(v):
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return None
        if isinstance(v, float) and v.is_integer():
            return int(v)
        return v
    return json.dumps([norm(labels.get(n)) for n in names], default=str)


def _read_existing(output, names) -> dict:
    """Rows already in ``output`` keyed by their parameter cells ({} when no file)."""
    path = Path(output)
    if not path.exists():
        return {}
    try:
        df = pd.read_parquet(path) if output_kind(path) == "parquet" else pd.read_csv(path)
    except Exception as exc:  # noqa: BLE001 - any unreadable file is the user's to fix
        raise CcmodInputError(f"cannot resume from this file: {exc}".replace("\n", " "),
                              source=os.fspath(path),
                              hint="delete it or write to another -o file") from None
    params = [c for c in df.columns if c not in _result_columns()]
    if sorted(params) != sorted(names):
        raise CcmodInputError(f"the file holds a sweep over {', '.join(params) or 'nothing'}, "
                              f"not over {', '.join(names)}", source=os.fspath(path),
                              hint="delete it or write to another -o file")
    out = {}
    for row in df.to_dict(orient="records"):
        clean = {k: (None if (v is pd.NA or (isinstance(v, float) and math.isnan(v)))
                     else (v.item() if hasattr(v, "item") else v)) for k, v in row.items()}
        out[_key(clean, names)] = {k: clean[k] for k in _result_columns() if k in clean}
    return out


def _result_columns():
    from ccmod.sweep import RESULT_COLUMNS
    return RESULT_COLUMNS


# -- one code path for every executor ----------------------------------------------------------

def _iter_rows(workloads, tasks, executor: str, jobs: int, scheduler):
    """Yield ``(task index, row)`` as points finish, whatever runs them."""
    if executor == "dask":
        yield from _iter_dask(workloads, tasks, scheduler, jobs)
    elif jobs > 1 and len(tasks) > 1:
        yield from _iter_pool(workloads, tasks, jobs)
    else:
        for i, (wkey, kw) in enumerate(tasks):
            yield i, evaluate_point(workloads[wkey], kw)


def _iter_pool(workloads, tasks, jobs):
    from concurrent.futures import ProcessPoolExecutor, as_completed
    ex = ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), initializer=_init_worker,
                             initargs=(workloads,))
    try:
        futs = [ex.submit(_pool_task, i, wkey, kw) for i, (wkey, kw) in enumerate(tasks)]
        for fut in as_completed(futs):
            yield fut.result()
    finally:
        ex.shutdown(wait=False, cancel_futures=True)


def _iter_dask(workloads, tasks, scheduler, jobs):
    if scheduler is None:
        client, cluster = _local_cluster(jobs)
    else:
        client, cluster = _dask_client(str(scheduler))
    try:
        from dask.distributed import as_completed
        try:     # one copy of each workload on every worker, not one per task
            scattered = client.scatter(list(workloads), broadcast=True, hash=False)
        except TimeoutError:
            raise CcmodInputError("no dask worker is connected to the scheduler",
                                  source="--scheduler") from None
        futs = [client.submit(evaluate_point, scattered[wkey], kw, pure=False)
                for wkey, kw in tasks]
        index = {f.key: i for i, f in enumerate(futs)}
        for fut in as_completed(futs):
            yield index[fut.key], fut.result()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _local_cluster(jobs: int):
    """A dask LocalCluster of worker processes (one thread each: the engine holds the GIL)."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise CcmodInputError("dask.distributed is not installed", source="--executor",
                              hint="pip install 'ccmod[dist]'") from None
    n = jobs if jobs > 1 else (os.cpu_count() or 1)
    try:
        cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                               dashboard_address=None)
    except (OSError, TimeoutError, ValueError) as exc:
        raise CcmodInputError(f"cannot start a dask LocalCluster: {exc}".replace("\n", " "),
                              source="--executor") from None
    return Client(cluster), cluster


# -- the resumable sweep ---------------------------------------------------------------------------

def run_grid(trace, grid: dict | None = None, *, networks=None, seeds: int | None = None,
             output=None, executor: str = "local", jobs: int = 1, scheduler=None,
             progress=None, flush_s: float = 2.0, **fixed) -> pd.DataFrame:
    """Run ``trace`` at every point of the grid; resume from / append to ``output``.

    Parameters
    ----------
    trace : str or path
        Trace file (read once per distinct value of the read options).
    grid : dict
        ``{option: [values]}`` for any keyword of :func:`ccmod.api.run` and
        ``{"network.PARAM": [values]}`` for any parameter of the swept networks.
    networks : list of str, optional
        Network specs (the first axis; default ``["star"]``).
    seeds : int, optional
        Runs per stochastic-background point, seeds 1..N.
    output : path, optional
        ``.parquet`` or ``.csv``; rows already there are skipped; finished rows are appended
        (atomic rewrites) as the sweep runs.
    executor : {"local", "dask"}
        ``local``: in-process (``jobs=1``) or a process pool of ``jobs``; ``dask``: a
        LocalCluster of ``jobs`` processes (0/1: one per CPU), or the cluster at
        ``scheduler`` (``"local"``: an in-process cluster, for tests).
    progress : callable, optional
        ``progress(done, total)`` over the points run by this call.
    **fixed
        Options passed unchanged to every run.

    Returns
    -------
    pandas.DataFrame
        Every point of the grid in grid order; ``attrs["computed"]`` counts the points run
        by this call and ``attrs["resumed"]`` those taken from ``output``.
    """
    from ccmod.api import load_workload
    if executor not in ("local", "dask"):
        raise CcmodInputError(f"unknown executor '{executor}'", source="--executor",
                              hint="valid: local, dask")
    _check_number("jobs", jobs, lo=0, integer=True)
    jobs = int(jobs) or (os.cpu_count() or 1)
    if scheduler is not None:
        executor = "dask"
    if output is not None:
        output_kind(output)
    axes, points = plan(grid, networks=networks, seeds=seeds, fixed=fixed)
    names = [n for n, _ in axes]
    keys = [_key(lab, names) for lab, _ in points]
    done_rows = _read_existing(output, names) if output is not None else {}
    resumed = sum(1 for k in keys if k in done_rows)
    todo = [i for i, k in enumerate(keys) if k not in done_rows]
    wkeys: dict = {}
    workloads: list = []
    tasks = []
    for i in todo:
        kw = dict(points[i][1])
        load_kw = {n: kw.pop(n) for n in LOAD_OPTIONS if n in kw}
        fk = _freeze({k: label(v) if not isinstance(v, (int, float, str)) else v
                      for k, v in load_kw.items()})
        if fk not in wkeys:
            wkeys[fk] = len(workloads)
            workloads.append(load_workload(trace, load_kw.get("fmt", "auto"),
                                           load_kw.get("compute_rate", 1e9),
                                           load_kw.get("compute_scale", 1.0),
                                           load_kw.get("collectives")))
        tasks.append((wkeys[fk], kw))
    if not workloads:
        load_workload(trace, fixed.get("fmt", "auto"), fixed.get("compute_rate", 1e9),
                      fixed.get("compute_scale", 1.0), fixed.get("collectives"))
    rows: dict = {k: r for k, r in done_rows.items()}
    last = time.monotonic()

    def table():
        present = [i for i, k in enumerate(keys) if k in rows]
        df = _table_rows(axes, [points[i][0] for i in present], [rows[keys[i]] for i in present],
                         trace, fixed)
        return df

    finished = 0
    try:
        for j, row in _iter_rows(workloads, tasks, executor, jobs, scheduler):
            rows[keys[todo[j]]] = row
            finished += 1
            if output is not None and time.monotonic() - last >= flush_s:
                write_table(table(), output)
                last = time.monotonic()
            if progress is not None:
                progress(finished, len(tasks))
    finally:
        if output is not None and finished:
            write_table(table(), output)     # also on an interrupt: keep what is done
    df = table()
    df.attrs["computed"] = finished
    df.attrs["resumed"] = resumed
    return df


def _table_rows(axes, labels, rows, trace, fixed) -> pd.DataFrame:
    """Like :func:`ccmod.sweep._table` for an arbitrary subset of points."""
    names = [n for n, _ in axes]
    if not labels:
        df = _table([(n, []) for n in names], [], trace, fixed)
        return df
    fake_axes = [("__point", list(range(len(labels))))]
    df = _table(fake_axes, rows, trace, fixed).drop(columns="__point")
    cols = {}
    for n in names:
        vals = [lab.get(n) for lab in labels]
        given = [v for v in vals if v is not None]
        if None in vals and given and all(isinstance(v, int) and not isinstance(v, bool)
                                          for v in given):
            cols[n] = pd.array(vals, dtype="Int64")     # e.g. seed: empty for constant loads
        else:
            cols[n] = vals
    params = pd.DataFrame(cols)
    return pd.concat([params, df], axis=1)
