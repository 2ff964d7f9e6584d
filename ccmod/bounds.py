"""Background load in a run: time-varying steps for the engine, and best/avg/worst bounds.

The article advises always reporting bounds for models with nondeterministic elements such
as the background load ("an average case, a worst-case scenario, and a best-case
scenario"). :func:`bounds_makespans` runs the engine three more times on the already
compiled messages (one per distinct level, see :func:`bounds_makespans`), with the
background held constant per link direction at:

* ``best``: no background load;
* ``avg``: the model's mean load (for ``exp`` the closed form, for a file the
  time-weighted mean of each link direction's series, for a constant the constant);
* ``worst``: the 95th percentile load of each link direction (for a constant, the constant).
"""
from __future__ import annotations

import math

import numpy as np

from ccmod.netsys.background import BOUNDS, BOUNDS_DOC, Background

#: how many times a run may grow its background horizon before giving up
_MAX_HORIZON_TRIES = 8


def horizon_estimate_s(workload, msgs, bg: Background, net) -> float:
    """A first guess of the makespan, so background steps are drawn up to it.

    Per rank: compute time + the quiet time of every message it sends or receives, slowed
    by the 95th-percentile background; times 2 for contention. If the run goes past it,
    :func:`run_engine` draws further and runs again (the draws do not change).
    """
    n = workload.nranks
    rank = np.repeat(np.arange(n), np.diff(workload.rank_ptr))
    comp = np.bincount(rank, weights=np.asarray(workload.duration_s, float), minlength=n)
    q = np.asarray(msgs.quiet_s, float)
    comm = np.bincount(np.asarray(msgs.src, np.int64), weights=q, minlength=n) + \
        np.bincount(np.asarray(msgs.dst, np.int64), weights=q, minlength=n)
    worst = float(np.max(bg.level(net, BOUNDS["worst"]))) if net.nresources else 0.0
    per_rank = comp + comm / max(1.0 - worst, 1e-3)
    base = float(per_rank.max()) if len(per_rank) else 0.0
    step = getattr(bg, "interval", 0.0)
    return 2.0 * base + 4.0 * step + 1e-9


def run_engine(make_engine, workload, msgs, net, bg: Background):
    """Run the engine under ``bg``; return ``(engine, makespan_s)``.

    ``make_engine(background_flat, bg_steps)`` builds an Engine. A constant model uses the
    per-resource background array (as always); other models pass their step arrays, drawn
    up to a horizon that grows (x4) until the run ends inside it.
    """
    if bg.constant:
        eng = make_engine(bg.level(net, "mean"), None)
        return eng, eng.run()
    used = np.unique(np.asarray(msgs.route_res, np.int64))
    horizon = horizon_estimate_s(workload, msgs, bg, net)
    for _ in range(_MAX_HORIZON_TRIES):
        steps = bg.steps(net, used, horizon)
        eng = make_engine(np.zeros(net.nresources), steps)
        makespan = eng.run()
        if makespan <= steps.horizon_s or not math.isfinite(steps.horizon_s):
            return eng, makespan
        horizon = 4.0 * max(makespan, horizon)
    return eng, makespan   # pragma: no cover - only with absurd horizons


def level_key(level) -> bytes:
    """A constant background level (float64[R]) as a key: equal levels, equal keys."""
    return np.ascontiguousarray(level, np.float64).tobytes()


def bounds_makespans(make_engine, net, bg: Background, known: dict | None = None) -> dict:
    """``{"best": s, "avg": s, "worst": s, "levels": {...}, "definition": str}``.

    ``levels`` gives the largest constant load used for each case (the same on every link
    direction for ``exp`` and constants).

    One run per distinct level: a run is deterministic, so a level's makespan is the same
    whichever run computed it. ``known`` maps :func:`level_key` of a level to a makespan
    already computed at it (the main run's, under a constant background: its avg and
    worst are the main run's level); equal levels share a run (a constant background's
    avg and worst; with no background, best too).
    """
    out: dict = {}
    levels: dict = {}
    runs = dict(known or {})
    for name, which in BOUNDS.items():
        lv = bg.level(net, which)
        key = level_key(lv)
        if key not in runs:
            runs[key] = float(make_engine(lv, None).run())
        out[name] = runs[key]
        levels[name] = float(np.max(lv)) if len(lv) else 0.0
    out["spread"] = out["worst"] - out["best"]
    out["spread_rel"] = out["spread"] / out["avg"] if out["avg"] > 0 else 0.0
    out["levels"] = levels
    out["definition"] = BOUNDS_DOC
    return out
