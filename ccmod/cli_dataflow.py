"""``ccmod dataflow``: simulate or solve a data-flow (MMT) model; convert it; report it.

Thin wrapper over :mod:`ccmod.dataflow_sim`, :mod:`ccmod.analytic.ctmc_dataflow`,
:mod:`ccmod.workloads.dataflow_trace` and :mod:`ccmod.outputs.dataflow_html`.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Optional

import typer

from ccmod.cli_util import JSON_OPT, emit
from ccmod.errors import CcmodInputError

SOLVERS = ("sim", "ctmc")


def is_dataflow_file(path) -> bool:
    """A data-flow model: ``*.dataflow.json`` or a JSON object with ``actors``."""
    p = Path(path)
    if p.name.endswith(".dataflow.json"):
        return True
    if p.suffix.lower() != ".json" or not p.is_file():
        return False
    try:
        head = p.read_text(errors="replace")[:65536]
    except OSError:
        return False
    return '"actors"' in head and '"processors"' in head


def _f(x) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.5g}"


def result_lines(res: dict) -> list[str]:
    """Text summary of a simulation or CTMC result."""
    ci = res.get("ci95")

    def v(group, name, key):
        x = res[group][name][key] if name else res[group][key]
        if ci:
            h = ci[group][name][key] if name else ci[group][key]
            return f"{_f(x)} ± {_f(h)}"
        return _f(x)
    if res["method"] == "ctmc":
        head = f"exact CTMC: {res['states']} states, {res['transitions']} transitions"
    else:
        head = (f"simulation: {res['replications']} replications x {res['iterations']} "
                f"iterations (warm-up {res['warmup']}), seed {res['seed']}; ± = 95% CI")
    out = [f"data-flow model {res['model']} — {head}",
           f"application     throughput {v('application', None, 'throughput')}   "
           f"response time {v('application', None, 'response_time')}"]
    for group, keys in (("processors", ("utilization", "throughput", "queue_length",
                                        "response_time")),
                        ("links", ("utilization", "queue_length", "throughput")),
                        ("actors", ("response_time", "throughput")),
                        ("communications", ("response_time", "throughput"))):
        if not res[group]:
            continue
        out.append(f"{group}:")
        for name in res[group]:
            out.append(f"  {name:<12} " + "  ".join(f"{k} {v(group, name, k)}" for k in keys))
    return out


def run_dataflow(file: Path, solve: str = "sim", replications: int = 10, seed: int = 0,
                 iterations: int = 2000, warmup: Optional[int] = None,
                 max_states: Optional[int] = None, report: Optional[Path] = None,
                 to_trace: Optional[Path] = None, compute_rate: float = 1e9) -> dict:
    """What ``ccmod dataflow`` does; returns the result dict."""
    from ccmod.workloads import dataflow as df
    model = df.load(file)
    if to_trace is not None:
        from ccmod.workloads import dataflow_trace
        if not (math.isfinite(compute_rate) and compute_rate > 0):
            raise CcmodInputError(f"--compute-rate {compute_rate} must be > 0",
                                  source="--compute-rate")
        n = dataflow_trace.write_ti(model, to_trace, compute_rate)
        return {"model": model.name, "trace": str(to_trace), "ranks": n,
                "format": "ti", "compute_rate": compute_rate}
    if solve not in SOLVERS:
        raise CcmodInputError(f"unknown solver {solve!r}", source="--solve",
                              hint="valid: " + ", ".join(SOLVERS))
    samples = {} if report is not None else None
    if solve == "ctmc":
        from ccmod.analytic import ctmc_dataflow
        kw = {} if max_states is None else {"max_states": max_states}
        res = ctmc_dataflow.solve(model, **kw)
    else:
        from ccmod import dataflow_sim
        res = dataflow_sim.simulate(model, replications=replications, seed=seed,
                                    iterations=iterations, warmup=warmup, samples=samples)
    if report is not None:
        from ccmod.outputs import dataflow_html
        dataflow_html.write(report, res, samples)
        res["report"] = str(report)
    return res


def register(app: typer.Typer) -> None:
    @app.command("link-rules")
    def link_rules_cmd(json_: bool = JSON_OPT):
        """List the link disciplines of data-flow models (registered sharing rules)."""
        from ccmod.cli_util import print_listing
        from ccmod.workloads.dataflow_rules import LINK_RULES
        print_listing("link rules", LINK_RULES.listing(), json_)

    @app.command("dataflow")
    def dataflow_cmd(
        file: Path = typer.Argument(..., help="Data-flow model (JSON, docs/dataflow.md)."),
        solve: str = typer.Option("sim", "--solve", help="sim (simulation) or ctmc (exact "
                                                          "Markov chain, exponential times)."),
        replications: int = typer.Option(10, "--replications", help="Simulation replications."),
        seed: int = typer.Option(0, "--seed", help="Root seed of the replications."),
        iterations: int = typer.Option(2000, "--iterations",
                                       help="Measured iterations per replication."),
        warmup: Optional[int] = typer.Option(None, "--warmup",
                                             help="Discarded iterations (default 10%)."),
        max_states: Optional[int] = typer.Option(None, "--max-states",
                                                 help="CTMC size limit (default 200000)."),
        report: Optional[Path] = typer.Option(None, "--report",
                                              help="Write an HTML report here."),
        to_trace: Optional[Path] = typer.Option(None, "--to-trace",
                                                help="Write one iteration as a TI trace for "
                                                     "`ccmod run` and stop."),
        compute_rate: float = typer.Option(1e9, "--compute-rate",
                                           help="flop/s for --to-trace compute actions."),
        json_: bool = JSON_OPT,
    ):
        """Simulate (or solve exactly) a data-flow graph model (Multigraph Modeling Tool)."""
        res = run_dataflow(file, solve, replications, seed, iterations, warmup, max_states,
                           report, to_trace, compute_rate)
        if "trace" in res:
            emit(res, json_, [f"wrote {res['trace']} ({res['ranks']} ranks, TI); replay it "
                              f"with: ccmod run {res['trace']} --compute-rate {compute_rate:g}"])
            return
        lines = result_lines(res)
        if report is not None:
            lines.append(f"report: {report}")
        emit(res, json_, lines)
