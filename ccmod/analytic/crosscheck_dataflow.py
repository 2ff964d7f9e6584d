"""Simulation vs exact CTMC on a data-flow model (``ccmod crosscheck FILE.dataflow.json``).

Runs :func:`ccmod.dataflow_sim.simulate` and :func:`ccmod.analytic.ctmc_dataflow.solve`
on the same model and lays every metric side by side with the simulation's 95 %
confidence half-width, whether the exact value lies inside it, and the published value
when the model file carries a ``reference`` block (the fork-join example has Table 1).
"""
from __future__ import annotations

import math

from ccmod.analytic import ctmc_dataflow
from ccmod import dataflow_sim

__all__ = ["crosscheck", "rows"]

_GROUPS = (("application", ("throughput", "response_time")),
           ("processors", ("utilization", "throughput", "queue_length", "response_time")),
           ("links", ("utilization", "queue_length", "throughput")),
           ("actors", ("response_time", "throughput")),
           ("communications", ("response_time", "throughput")))


def rows(sim: dict, exact: dict, reference: dict | None = None) -> list[dict]:
    """One row per metric: group, name, metric, sim, ci95, exact, inside, paper."""
    out = []
    ref = reference or {}
    for g, metrics in _GROUPS:
        if g == "application":
            names = [None]
        else:
            names = list(sim.get(g, {}))
        for n in names:
            for k in metrics:
                def get(d):
                    d = d.get(g, {}) if d else {}
                    if n is not None:
                        d = d.get(n, {})
                    return d.get(k)
                s, h, e = get(sim), get(sim.get("ci95", {})), get(exact)
                inside = (s is not None and e is not None and h is not None
                          and not math.isnan(h) and abs(s - e) <= h)
                out.append({"group": g, "name": n or "iterations", "metric": k, "sim": s,
                            "ci95": h, "exact": e, "inside_ci": bool(inside),
                            "paper": get(ref)})
    return out


def crosscheck(model, replications: int = 10, seed: int = 0, iterations: int = 2000,
               max_states: int | None = None) -> dict:
    """Both solutions and their comparison (see module doc)."""
    kw = {} if max_states is None else {"max_states": max_states}
    exact = ctmc_dataflow.solve(model, **kw)
    sim = dataflow_sim.simulate(model, replications=replications, seed=seed,
                                iterations=iterations)
    ref = model.meta.get("reference")
    rs = rows(sim, exact, ref)
    util = [r for r in rs if r["metric"] == "utilization"]
    return {"model": model.name, "simulation": sim, "exact": exact, "rows": rs,
            "utilization_inside_ci": all(r["inside_ci"] for r in util),
            "inside_ci_fraction": sum(r["inside_ci"] for r in rs) / max(len(rs), 1)}


def lines(rep: dict) -> list[str]:
    def f(x):
        return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.4g}"
    sim = rep["simulation"]
    has_ref = any(r["paper"] is not None for r in rep["rows"])
    out = [f"data-flow model {rep['model']}: simulation ({sim['replications']} replications x "
           f"{sim['iterations']} iterations, seed {sim['seed']}) vs exact CTMC "
           f"({rep['exact']['states']} states)",
           f"{'group':<15}{'name':<12}{'metric':<15}{'simulation':>22}{'exact':>11}  in CI"
           + ("     paper" if has_ref else "")]
    for r in rep["rows"]:
        s = f"{f(r['sim'])} ± {f(r['ci95'])}"
        line = (f"{r['group']:<15}{str(r['name']):<12}{r['metric']:<15}{s:>22}"
                f"{f(r['exact']):>11}  {'yes' if r['inside_ci'] else 'NO ':<5}")
        if has_ref:
            line += f" {f(r['paper']):>9}"
        out.append(line)
    out.append(f"utilisations inside the simulation's 95% CI: "
               f"{'all' if rep['utilization_inside_ci'] else 'NOT all'}; metrics inside: "
               f"{100 * rep['inside_ci_fraction']:.0f}% (95% expected)")
    return out
