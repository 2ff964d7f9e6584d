"""Knee capacity (the article's Figure 5): packets/s through a link against its contention.

The knee shows on a link whose contention actually varies: :func:`knee_links` ranks the
links by the time they carried two or more messages at once (a link that never did has no
knee to show: its throughput is one message's). Its throughput in packets/s over each
contention interval is ``utilisation × capacity_Bps / packet_size`` (utilisation from
:mod:`ccmod.linkrate`; packet size from the network, else 1500 bytes). The knee curve is
the time-weighted mean throughput at each contention level: it grows with offered load until
the link saturates — the knee. :func:`knee_verdict` says in words whether there is one.

With several background levels (runs of the same trace at background 0, 0.3, ...), every
run is measured on the link chosen in the *first* run, so the curves compare the same link.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ccmod.errors import CcmodInputError
from ccmod.outputs.raster import interval_coverage


@dataclass
class KneeSeries:
    """Throughput of one link in one run (one curve of the knee figure)."""

    level: float                 # background load fraction of the run
    run_dir: object
    link: str
    resource: int
    packet_size: int
    capacity_pps: float          # raw capacity in packets/s (NaN when unknown)
    mean_pps: float              # averaged over the makespan
    peak_pps: float              # highest interval mean
    makespan_s: float
    t_s: np.ndarray              # time-bin centres
    pps: np.ndarray              # mean packets/s per time bin
    active: np.ndarray           # contention levels seen
    active_pps: np.ndarray       # time-weighted mean packets/s per contention level
    active_time_s: np.ndarray    # time spent at each contention level


def knee_dirname(level: float) -> str:
    """Conventional sub-directory of a background-level run: ``background-0.3``."""
    return f"background-{level:g}"


def knee_links(result, top: int = 1) -> list[int]:
    """Links whose contention varies: most time with >= 2 messages at once first.

    Returns an empty list when no link ever carried two messages at once.
    """
    ld = result.link_load
    if ld is None or len(ld) == 0:
        return []
    res = ld["resource"].to_numpy().astype(np.int64)
    dur = (ld["t_end_s"] - ld["t_start_s"]).to_numpy()
    act = ld["active"].to_numpy().astype(np.int64)
    shared = np.bincount(res, weights=dur * (act >= 2))
    # distinct contention levels per resource: unique (resource, level) pairs
    pairs = np.unique(res * (int(act.max()) + 1) + act)
    levels = np.bincount(pairs // (int(act.max()) + 1), minlength=len(shared))
    cand = np.nonzero((shared > 0) & (levels[:len(shared)] >= 2))[0]
    cand = cand[np.lexsort((cand, -shared[cand]))]
    return [int(r) for r in cand[:top]]


def knee_verdict(s: "KneeSeries") -> str:
    """One sentence: is there a knee in this series, and where."""
    ok = np.isfinite(s.active_pps) & (s.active >= 1)
    a, y = s.active[ok], s.active_pps[ok]
    if len(a) < 2:
        return (f"{s.link} never carried two messages at once: there is no knee to show "
                "(its throughput is that of one message).")
    peak_i = int(np.argmax(y))
    if peak_i < len(a) - 1 and y[-1] <= 1.05 * y[peak_i] and y[peak_i] > 1.05 * y[0]:
        return (f"Knee on {s.link}: throughput grows up to contention {int(a[peak_i])} "
                f"({y[peak_i]:,.0f} packets/s) and does not grow beyond it.")
    if y[-1] > 1.05 * y[0]:
        return (f"No knee yet on {s.link}: throughput still grows at the highest contention "
                f"seen ({int(a[-1])} messages, {y[-1]:,.0f} packets/s); the link is not "
                "saturated.")
    return (f"No knee on {s.link}: throughput does not grow with contention (from "
            f"{y[0]:,.0f} packets/s with one message): the link is saturated by one message "
            "already, so sharing only slows each message down.")


def knee_series(data, resource: int | None = None, nbins: int = 200) -> KneeSeries | None:
    """Packets/s of ``resource`` (default: the link whose contention varies most), or None."""
    from ccmod.outputs.sinkdata import resource_names
    if resource is None:
        cand = knee_links(data)
        resource = cand[0] if cand else None
    if resource is None or data.link_load is None or "utilisation" not in data.link_load:
        return None
    ld = data.link_load
    sel = (ld["resource"] == resource).to_numpy()
    t0 = ld["t_start_s"].to_numpy()[sel]
    t1 = ld["t_end_s"].to_numpy()[sel]
    util = ld["utilisation"].to_numpy()[sel].astype(np.float64)
    act = ld["active"].to_numpy()[sel].astype(np.int64)
    cap = np.nan
    if data.links is not None and "capacity_Bps" in data.links.columns:
        row = data.links[data.links["resource"] == resource]
        if len(row):
            cap = float(row["capacity_Bps"].iloc[0])
    ps = data.packet_size
    if not np.isfinite(cap) or not np.isfinite(util).any():
        return None
    pps = np.nan_to_num(util) * cap / ps
    dur = t1 - t0
    makespan = data.makespan_s
    grid = interval_coverage(np.zeros(len(t0), np.int64), np.zeros(len(t0), np.int64), t0, t1,
                             1, 1, nbins, makespan, weight=pps)[0, 0]
    edges = np.linspace(0, makespan, nbins + 1)
    levels = np.unique(act)
    tw = np.array([dur[act == a].sum() for a in levels])
    aw = np.array([(pps * dur)[act == a].sum() for a in levels])
    with np.errstate(invalid="ignore", divide="ignore"):
        apps = np.where(tw > 0, aw / tw, np.nan)
    mean_pps = float((pps * dur).sum() / makespan) if makespan > 0 else 0.0
    if data.links is not None and "bytes" in data.links.columns and makespan > 0:
        row = data.links[data.links["resource"] == resource]
        if len(row):  # exact: total bytes over the makespan (no per-interval clipping)
            mean_pps = float(row["bytes"].iloc[0]) / ps / makespan
    return KneeSeries(level=data.background_level, run_dir=data.meta.get("run_dir"),
                      link=resource_names(data, [resource])[0], resource=int(resource),
                      packet_size=ps, capacity_pps=cap / ps,
                      mean_pps=mean_pps,
                      peak_pps=float(pps.max()) if len(pps) else 0.0, makespan_s=makespan,
                      t_s=(edges[:-1] + edges[1:]) / 2, pps=grid, active=levels,
                      active_pps=apps, active_time_s=tw)


def resolve_knee_runs(run_dir, main, background_levels, knee_runs=None) -> list:
    """``[(level, RunResult)]`` for the requested background levels.

    ``background_levels`` is a sequence of fractions, or a mapping level → run (a run
    directory or a ``RunResult``). A level without an explicit run comes from
    ``knee_runs[level]``, else the conventional ``RUN_DIR/background-<level>/``, else the
    main run itself when its background equals the level.
    """
    from ccmod.outputs.parquet import load_result
    given = {}
    if isinstance(background_levels, dict):
        given = {float(k): v for k, v in background_levels.items()}
        levels = list(given)
    else:
        levels = [float(x) for x in background_levels]
    given.update({float(k): v for k, v in (knee_runs or {}).items()})
    out = []
    for level in levels:
        if not 0 <= level < 1:
            raise CcmodInputError(f"background level {level:g} is not a fraction in [0, 1)",
                                  source="--background-levels")
        run = given.get(level)
        if run is None:
            conv = Path(run_dir) / knee_dirname(level) if run_dir is not None else None
            if conv is not None and conv.is_dir():
                run = conv
            elif abs(main.background_level - level) < 1e-12:
                out.append((level, main))
                continue
        if run is None:
            where = Path(run_dir or "RUN_DIR") / knee_dirname(level)
            raise CcmodInputError(
                f"no run for background level {level:g}", source="--background-levels",
                hint=f"write one with 'ccmod run TRACE --background {level:g} --out {where}'")
        out.append((level, load_result(run) if isinstance(run, (str, Path)) else run))
    return out
