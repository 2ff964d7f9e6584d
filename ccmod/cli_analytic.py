"""``ccmod lopc``, ``ccmod mva``, ``ccmod overflow`` and ``ccmod crosscheck``.

Thin wrappers over :mod:`ccmod.analytic`: parse the options, call the model, print a short
text summary or (``--json``) one JSON object.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Optional

import typer

from ccmod.cli_util import (COMPUTE_RATE_OPT, COST_OPT, FORMAT_OPT, JSON_OPT, MAP_OPT,
                            NETWORK_OPT, SEND_MODE_OPT, emit)
from ccmod.errors import CcmodInputError


def _floats(text: str, option: str) -> list[float]:
    try:
        vals = [float(x) for x in text.replace(" ", "").split(",") if x != ""]
    except ValueError:
        raise CcmodInputError(f"expected comma-separated numbers, got {text!r}",
                              source=option) from None
    if not vals:
        raise CcmodInputError("no numbers given", source=option)
    return vals


def _matrix(text: str, option: str) -> list[list[float]] | list[float]:
    """``a,b,c`` (one row) or ``a,b;c,d`` (rows separated by ``;``)."""
    rows = [r for r in text.split(";") if r.strip()]
    if len(rows) <= 1:
        return _floats(text.replace(";", ""), option)
    mat = [_floats(r, option) for r in rows]
    if len({len(r) for r in mat}) != 1:
        raise CcmodInputError("every class row must have the same number of stations",
                              source=option)
    return mat


def _g(x) -> str:
    return f"{x:.6g}"


def register(app: typer.Typer) -> None:
    lopc_app = typer.Typer(help="LoPC contention model (Frank 1997): all-to-all and "
                                "client-server request/reply.", no_args_is_help=True)
    app.add_typer(lopc_app, name="lopc")

    @lopc_app.command("all-to-all")
    def lopc_all_to_all(
        W: float = typer.Option(..., "--W", help="Work between blocking requests."),
        So: float = typer.Option(..., "--So", help="Handler occupancy (interrupt included)."),
        Sl: float = typer.Option(..., "--Sl", help="Network latency."),
        P: int = typer.Option(..., "--P", help="Processors (>= 2)."),
        Co2: float = typer.Option(1.0, "--Co2", help="Handler time squared coeff. of variation "
                                                      "(0 constant, 1 exponential)."),
        protocol_processor: bool = typer.Option(False, "--protocol-processor",
                                                help="Handlers do not interrupt computation."),
        n: Optional[float] = typer.Option(None, "--n", help="Requests per node: also print n R."),
        json_: bool = JSON_OPT,
    ):
        """Cycle time and contention of homogeneous all-to-all request/reply (eqs. 4.1, 5.1-5.12)."""
        from ccmod.analytic import lopc
        r = lopc.all_to_all(W, So, Sl, P, Co2=Co2, protocol_processor=protocol_processor)
        lo, hi = lopc.bounds(W, So, Sl)
        d = r.to_dict()
        d["bounds_Co2_0"] = [lo, hi]
        if n is not None:
            d["runtime"] = r.runtime(n)
        lines = [f"LoPC all-to-all: W={_g(W)} So={_g(So)} Sl={_g(Sl)} P={P} Co2={_g(Co2)}"
                 + (" (protocol processor)" if protocol_processor else ""),
                 f"cycle time R      {_g(r.R)}  (contention-free {_g(r.contention_free)})",
                 f"contention C      {_g(r.contention)}  = {_g(r.contention / So if So else 0)}"
                 f" handler times",
                 f"  Rw={_g(r.Rw)} Rq={_g(r.Rq)} Ry={_g(r.Ry)}",
                 f"  Qq={_g(r.Qq)} Qy={_g(r.Qy)} Uq={_g(r.Uq)} Uy={_g(r.Uy)}",
                 f"throughput X      {_g(r.X)} requests per time unit",
                 f"bounds (5.12)     {_g(lo)} < R* < {_g(hi)}  (for Co2 = 0)"]
        if n is not None:
            lines.append(f"run time n R      {_g(r.runtime(n))}")
        emit(d, json_, lines)

    @lopc_app.command("client-server")
    def lopc_client_server(
        P: int = typer.Option(..., "--P", help="Processors (clients + servers)."),
        W: float = typer.Option(..., "--W", help="Client work per chunk."),
        So: float = typer.Option(..., "--So", help="Handler occupancy."),
        Sl: float = typer.Option(..., "--Sl", help="Network latency."),
        Ps: Optional[float] = typer.Option(None, "--Ps", help="Servers (default: the optimum)."),
        Co2: float = typer.Option(1.0, "--Co2", help="Handler time squared coeff. of variation."),
        json_: bool = JSON_OPT,
    ):
        """Work-pile throughput for Ps servers and the optimal server count (eqs. 6.1-6.8)."""
        from ccmod.analytic import lopc
        opt = lopc.optimal_servers(P, W, So, Sl, Co2)
        best = lopc.best_servers(P, W, So, Sl, Co2)
        ps = best if Ps is None else Ps
        r = lopc.client_server(P, ps, W, So, Sl, Co2)
        d = r.to_dict()
        d["optimal_servers"] = opt
        d["best_servers"] = best
        lines = [f"LoPC client-server: P={P} Ps={_g(ps)} W={_g(W)} So={_g(So)} Sl={_g(Sl)} "
                 f"Co2={_g(Co2)}",
                 f"throughput X      {_g(r.X)} chunks per time unit "
                 f"(bounds: servers {_g(r.X_server_bound)}, clients {_g(r.X_client_bound)})",
                 f"client cycle R    {_g(r.R)}",
                 f"server Rs={_g(r.Rs)} Qs={_g(r.Qs)} Us={_g(r.Us)}",
                 f"optimal servers   {_g(opt)} (eq. 6.8); best integer {best}"]
        emit(d, json_, lines)

    @app.command("mva")
    def mva_cmd(
        demands: str = typer.Option(..., "--demands",
                                    help="Service demand per station, e.g. 0.1,0.2; classes "
                                         "separated by ';' (0.1,0.2;0.3,0.1)."),
        population: str = typer.Option(..., "--population", help="Customers (per class: 5,3)."),
        think: Optional[str] = typer.Option(None, "--think", help="Think time (per class)."),
        servers: Optional[str] = typer.Option(None, "--servers", help="Servers per station."),
        method: str = typer.Option("exact", "--method", help="exact, schweitzer or bard."),
        json_: bool = JSON_OPT,
    ):
        """Mean value analysis of a closed queueing network."""
        from ccmod.analytic import mva
        D = _matrix(demands, "--demands")
        pops = _floats(population, "--population")
        pop = pops[0] if len(pops) == 1 and not isinstance(D[0], list) else pops
        if isinstance(pop, list):
            pop = tuple(pop)
        z = 0.0 if think is None else _floats(think, "--think")
        if isinstance(z, list) and len(z) == 1 and not isinstance(D[0], list):
            z = z[0]
        m = None if servers is None else _floats(servers, "--servers")
        r = mva.solve(D, pop, think_time=z, servers=m, method=method)
        d = r.to_dict()
        lines = [f"MVA ({method}): population {list(r.population)}, think time "
                 f"{[_g(x) for x in r.think_time]}",
                 f"throughput        {_fmt(r.throughput)}",
                 f"cycle time        {_fmt(r.cycle_time)}",
                 f"residence time    {_fmt(r.residence_time)}",
                 f"queue length      {_fmt(r.queue_length)}",
                 f"utilization       {_fmt(r.utilization)}"]
        emit(d, json_, lines)

    @app.command("overflow")
    def overflow_cmd(
        N: int = typer.Option(..., "--N", help="Processors (servers)."),
        K: int = typer.Option(..., "--K", help="Messages in the machine (customers)."),
        Q: int = typer.Option(..., "--Q", help="Queue capacity in messages."),
        B: Optional[float] = typer.Option(None, "--B", help="Bottleneck slowness (imbalanced)."),
        json_: bool = JSON_OPT,
    ):
        """Queue-overflow residency and rate of a closed message-driven machine (J-Machine ch. 3)."""
        from ccmod.analytic import overflow as ov
        d = {"N": N, "K": K, "Q": Q,
             "p_no_overflow": ov.p_no_overflow(N, K, Q),
             "overflow_rate": ov.overflow_rate(N, K, Q),
             "overflow_rate_first_term": ov.overflow_rate(N, K, Q, first_term_only=True),
             "imbalance_threshold": ov.imbalance_threshold(N, K) if K > 0 else math.inf}
        if K > 0:
            d["leighton_p_no_overflow"] = ov.leighton_p_no_overflow(N, K / N, Q)
        lines = [f"balanced: N={N} K={K} (m={_g(K / N)}) Q={Q}",
                 f"P(no queue > Q)          {_g(d['p_no_overflow'])}  (eq. 3.19)",
                 f"overflow rate / mu       {_g(d['overflow_rate'])}  (eq. 3.50; first term "
                 f"{_g(d['overflow_rate_first_term'])})",
                 f"imbalance threshold B <  {_g(d['imbalance_threshold'])}  (eq. 3.65)"]
        if B is not None:
            d["B"] = B
            d["bottleneck_residency"] = ov.bottleneck_residency(N, K, Q, B)
            d["bottleneck_mean_queue"] = ov.bottleneck_mean_queue(N, K, B)
            d["bottleneck_overflow_rate"] = ov.bottleneck_overflow_rate(N, K, Q, B)
            lines += [f"bottleneck B={_g(B)}: P(k1 >= Q) {_g(d['bottleneck_residency'])}, "
                      f"E[k1] {_g(d['bottleneck_mean_queue'])}, overflow rate / mu "
                      f"{_g(d['bottleneck_overflow_rate'])}"]
        emit(d, json_, lines)

    @app.command("crosscheck")
    def crosscheck_cmd(
        trace: Path = typer.Argument(..., help="Trace file (any format ccmod reads)."),
        network: str = NETWORK_OPT,
        sharing: str = typer.Option("ccmod", help="ccmod or maxmin (engine side)."),
        send_mode: str = SEND_MODE_OPT,
        compute_rate: str = COMPUTE_RATE_OPT,
        cost: Optional[str] = COST_OPT,
        map_: Optional[str] = MAP_OPT,
        fmt: str = FORMAT_OPT,
        So: Optional[float] = typer.Option(None, "--So",
                                           help="LoPC handler time (s; default: the mean "
                                                "compute of the trace's request handlers)."),
        replications: int = typer.Option(10, "--replications",
                                         help="Data-flow models: simulation replications."),
        seed: int = typer.Option(0, "--seed", help="Data-flow models: root seed."),
        iterations: int = typer.Option(2000, "--iterations",
                                       help="Data-flow models: iterations per replication."),
        json_: bool = JSON_OPT,
    ):
        """Analytic (MVA, LoPC) vs engine on the same trace and network; on a data-flow
        model (*.dataflow.json): simulation vs exact CTMC."""
        from ccmod.cli_dataflow import is_dataflow_file
        if is_dataflow_file(trace):
            from ccmod.analytic import crosscheck_dataflow as ccd
            from ccmod.workloads import dataflow as df
            rep = ccd.crosscheck(df.load(trace), replications=replications, seed=seed,
                                 iterations=iterations)
            emit(rep, json_, lambda: ccd.lines(rep))
            return
        from ccmod.netsys.networks import check_network
        from ccmod.workloads import check_trace_path
        check_trace_path(trace)       # a wrong path or network fails before pandas is imported
        check_network(network, cost)
        from ccmod.analytic import crosscheck as cc
        from ccmod.options import RunOptions
        opts = RunOptions(sharing=sharing, send_mode=send_mode, compute_rate=compute_rate,
                          cost=cost, mapping=map_, fmt=fmt)
        rep = cc.crosscheck(trace, network, opts, So_s=So)
        emit(rep.to_dict(), json_, rep.lines)


def _fmt(x) -> str:
    import numpy as np
    a = np.asarray(x, dtype=float)
    if a.ndim == 0:
        return _g(float(a))
    if a.ndim == 1:
        return "[" + ", ".join(_g(float(t)) for t in a) + "]"
    return "[" + "; ".join(", ".join(_g(float(t)) for t in row) for row in a) + "]"
