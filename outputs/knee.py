"""Knee capacity (the article's Figure 5): packets/s through the most loaded link.

For one run, the *most loaded link* is the resource that carried the most bytes
(links.parquet; ties: higher peak contention). Its throughput in packets/s over each
contention interval of link_load.parquet is ``utilisation × capacity_Bps / packet_size``
(utilisation from the parquet sink, i.e. the uniform-spreading approximation of
:mod:`outputs.linkutil`; packet size from the network, else 1500 bytes). The knee curve is
the time-weighted mean throughput at each contention level (number of messages sharing
the link): throughput grows with offered load until the link saturates — the knee.

With several background levels (runs of the same trace at background 0, 0.3, ...), every
run is measured on the link that was most loaded in the *first* run, so the curves compare
the same link.
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
    run_dir: Path
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


def most_loaded_resource(data) -> int | None:
    links = data.links
    if links is not None and len(links) and {"resource", "bytes"} <= set(links.columns):
        # np.lexsort: last key is primary → bytes, then peak contention, then id
        keys = [links["resource"].to_numpy()]
        if "peak_active" in links.columns:
            keys.append(-links["peak_active"].to_numpy())
        keys.append(-links["bytes"].to_numpy())
        order = np.lexsort(keys)
        return int(links["resource"].to_numpy()[order[0]])
    if data.link_load is not None and len(data.link_load):
        ld = data.link_load
        w = ld["active"] * (ld["t_end_s"] - ld["t_start_s"])
        return int(w.groupby(ld["resource"]).sum().idxmax())
    return None


def knee_series(data, resource: int | None = None, nbins: int = 200) -> KneeSeries | None:
    """Packets/s of ``resource`` (default: most loaded link) in one run, or None."""
    from ccmod.outputs.figures import link_names
    if resource is None:
        resource = most_loaded_resource(data)
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
    return KneeSeries(level=data.background_level, run_dir=data.run_dir,
                      link=link_names(data, [resource])[0], resource=int(resource),
                      packet_size=ps, capacity_pps=cap / ps,
                      mean_pps=mean_pps,
                      peak_pps=float(pps.max()) if len(pps) else 0.0, makespan_s=makespan,
                      t_s=(edges[:-1] + edges[1:]) / 2, pps=grid, active=levels,
                      active_pps=apps, active_time_s=tw)


def rebuild_network(described: dict):
    """Rebuild a network from ``Network.describe()`` (name + params), or None on failure."""
    if not isinstance(described, dict) or not described.get("name"):
        return None
    params = {k: v for k, v in (described.get("params") or {}).items() if v is not None}
    spec = described["name"] + (":" + ",".join(f"{k}={v}" for k, v in params.items())
                                if params else "")
    try:
        from ccmod.netsys.networks import make_network
        return make_network(spec, described.get("nodes"))
    except Exception:  # a network that cannot be rebuilt only costs the utilisation
        return None


def rundata_from_result(result, network=None, node_of_rank=None):
    """A :class:`outputs.rundata.RunData` from an in-memory ``RunResult``.

    The result goes through the parquet sink in a temporary directory (so utilisation and
    link capacities are derived exactly as for a run directory). ``network`` defaults to
    one rebuilt from ``result.network`` (``Network.describe()``); ``node_of_rank`` to the
    ``node`` column of ``result.ranks``. Without a network, utilisation is unknown.
    """
    import tempfile

    from ccmod.outputs.base import RunContext
    from ccmod.outputs.parquet import ParquetSink
    from ccmod.outputs.rundata import load_run

    bg = float((getattr(result, "options", None) or {}).get("background") or 0.0)
    if network is None:
        network = rebuild_network(getattr(result, "network", None))
        if network is not None and bg:
            network.set_background(bg)
    if node_of_rank is None and getattr(result, "ranks", None) is not None \
            and "node" in result.ranks.columns:
        node_of_rank = result.ranks["node"].to_numpy()
    with tempfile.TemporaryDirectory(prefix="ccmod-knee-") as tmp:
        sink = ParquetSink(out_dir=tmp)
        sink.open(RunContext(network=network, workload=None, node_of_rank=node_of_rank))
        sink.close(result)
        data = load_run(tmp)           # read fully into memory before the folder goes
    data.run_dir = Path("<in-memory run>")
    data.summary["background_level"] = bg
    return data


def resolve_knee_runs(run_dir, main_data, background_levels, knee_runs=None,
                      network=None) -> list:
    """``[(level, RunData)]`` for the requested background levels.

    ``background_levels`` is a sequence of fractions, or a mapping level → run (a run
    directory, a ``RunResult`` or a ``RunData``). A level without an explicit run comes
    from ``knee_runs[level]``, else the conventional ``RUN_DIR/background-<level>/``, else
    the main run itself when its background equals the level. ``network`` (a Network)
    is used for ``RunResult`` values (else rebuilt from ``result.network``).
    """
    from ccmod.outputs.rundata import RunData, load_run
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
            conv = Path(run_dir) / knee_dirname(level)
            if conv.is_dir():
                run = conv
            elif abs(main_data.background_level - level) < 1e-12:
                out.append((level, main_data))
                continue
        if run is None:
            raise CcmodInputError(
                f"no run for background level {level:g}", source="--background-levels",
                hint=f"write one with 'ccmod run TRACE --background {level:g} --sink parquet "
                     f"--out {Path(run_dir) / knee_dirname(level)}' (or pass knee_runs)")
        if isinstance(run, RunData):
            out.append((level, run))
        elif isinstance(run, (str, Path)):
            out.append((level, load_run(run)))
        else:
            out.append((level, rundata_from_result(run, network=network)))
    return out


def knee_figure(series: list[KneeSeries]):
    """Two panels: packets/s over time per level, and against contention (the knee)."""
    from ccmod.outputs.figures import _figure, time_unit
    fig = _figure(11, 3.8)
    ax1, ax2 = fig.subplots(1, 2)
    palette = ("#4C72B0", "#C44E52", "#55A868", "#DD8452", "#8172B3", "#937860")
    t_max = max(s.makespan_s for s in series)
    div, unit = time_unit(t_max)
    for i, s in enumerate(series):
        c = palette[i % len(palette)]
        lbl = f"background {s.level:.0%}"
        ax1.plot(s.t_s / div, s.pps, color=c, lw=1, label=lbl)
        ax2.plot(s.active, s.active_pps, "o-", color=c, ms=4, label=lbl)
        if np.isfinite(s.capacity_pps):
            eff = s.capacity_pps * (1 - s.level)
            ax2.axhline(eff, color=c, ls=":", lw=0.8)
    ax2.set_ylim(bottom=0)
    ax2.set_xlim(left=0)
    ax1.set_xlabel(f"time ({unit})")
    ax1.set_ylabel("packets/s")
    ax1.set_title(f"Throughput of the most loaded link ({series[0].link})", fontsize=9)
    ax2.set_xlabel("contention (messages sharing the link)")
    ax2.set_ylabel("mean packets/s")
    ax2.set_title("Knee capacity (dotted: capacity left by the background)", fontsize=9)
    ax1.legend(fontsize=7)
    ax2.legend(fontsize=7)
    return fig
