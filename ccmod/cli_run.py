"""``ccmod run`` and ``ccmod networks``: thin wrappers over :func:`ccmod.api.run`."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Optional

import typer

from ccmod.cli_util import (COLLECTIVE_OPT, COMPUTE_RATE_OPT, COST_OPT, FORMAT_OPT, JSON_OPT,
                            MAP_OPT, NETWORK_OPT, SEND_MODE_OPT, SHARING_OPT, console, make_table,
                            print_listing)
from ccmod.errors import CcmodInputError
from ccmod.progress import progress_bar


def _remove_if_empty(folders) -> None:
    """Remove each folder of ``folders`` that exists and is empty (deepest first)."""
    for d in sorted(set(folders), key=lambda p: len(p.parts), reverse=True):
        try:
            d.rmdir()                 # fails, harmlessly, when something is inside
        except OSError:
            pass


def _files_in(folder) -> list:
    """Files already in an output folder (to tell the user about leftovers)."""
    if folder is None or not Path(folder).is_dir():
        return []
    return [p for p in Path(folder).rglob("*") if p.is_file()]


def print_summary(result, out=None) -> None:
    """Human summary: makespan, per-rank split, messages, busiest link."""
    con = console(out)
    s = result.summary()
    net = result.network
    plural = lambda n, w: f"{n} {w}" + ("" if n == 1 else "s")  # noqa: E731
    mode = result.send_mode
    if mode == "rendezvous" and result.options.get("eager_limit_bytes"):
        mode += f" (eager up to {result.options['eager_limit_bytes']} B)"
    con.print(f"[bold]ccmod[/bold] {result.options.get('trace', '')} on {net['name']} "
              f"({plural(net['nodes'], 'node')}, {plural(net['links'], 'link')}), "
              f"sharing={result.sharing}, send-mode={mode}")
    if s.get("nothing_to_predict"):
        con.print(f"[bold]{s['nothing_to_predict']}[/bold]")
    con.print(f"makespan        {result.makespan_s:.9g} s")
    con.print(f"messages        {s['messages']:,} ({s['bytes']:,} bytes)")
    con.print(f"records         {s['records']:,} in {s['wall_s']:.3g} s "
              f"({s['records_per_s']:,.0f} records/s, {s['events']:,} event horizons)")
    m = s.get("measured")
    if m:
        span = (f"; the trace spans {m['trace_span_s']:.6g} s" if "trace_span_s" in m else "")
        ratio = m.get("makespan_ratio")
        rep = (f" ({m['replayed_window_s']:.6g} s from the last MPI_Init end to the last "
               "MPI_Finalize start)" if "replayed_window_s" in m else "")
        con.print(f"measured        {m['window_s']:.6g} s from the first to the last MPI call"
                  f"{rep}{span}; time in MPI per rank: max {m['mpi_s_max']:.6g} s, mean "
                  f"{m['mpi_s_mean']:.6g} s ({m.get('mpi_includes', 'time inside MPI calls')})")
        con.print(f"predicted       {m['predicted_makespan_s']:.6g} s"
                  + (f" ({ratio:.3g}x the {'replayed' if rep else 'measured'} window)"
                     if ratio is not None else "")
                  + f"; communication + wait per rank: max {m['predicted_comm_s_max']:.6g} s,"
                  f" mean {m['predicted_comm_s_mean']:.6g} s")
        con.print(f"not predicted   {m['leaves_out']}")
        if m.get("gap_note"):
            con.print(f"note            {m['gap_note']}")
    for note in s.get("notes", []):
        con.print(f"note            {note}")
    model = result.options.get("background_model")
    if model:
        con.print(f"background      {model['spec']} (mean load {result.options['background']:.3g})")
    bd = getattr(result, "bounds", None)
    if bd:
        con.print(f"bounds          best {bd['best']:.9g} s, avg {bd['avg']:.9g} s, "
                  f"worst {bd['worst']:.9g} s: spread {bd['spread']:.3g} s "
                  f"({100 * bd['spread_rel']:.3g}% of avg)")
        con.print(f"                ({bd['definition']}; loads {bd['levels']['best']:.3g} / "
                  f"{bd['levels']['avg']:.3g} / {bd['levels']['worst']:.3g})")
    b = s["busiest_link"]
    if b:
        con.print(f"busiest link    {b['name']}: peak contention {b['peak_active']}, "
                  f"mean {b['mean_active']:.3g}, {b['bytes']:,} bytes")
    else:
        con.print("busiest link    (no message used the network)")
    import numpy as np
    # the ranks table's columns as arrays: no DataFrame (pandas) for a summary
    c = {k: result.column("ranks", k) for k in ("rank", "finish_s", "compute_s", "send_s",
                                                  "recv_s", "wait_s", "barrier_s")}
    n = len(c["rank"])
    # more than 32 ranks: the 16 latest-finishing (ties: the first), in rank order
    rows = range(n) if n <= 32 else sorted(np.argsort(-c["finish_s"], kind="stable")[:16],
                                           key=lambda i: c["rank"][i])
    con.print(make_table(("rank", "finish (s)", "compute (s)", "communicate (s)", "wait (s)"),
                         ((int(c["rank"][i]), f"{c['finish_s'][i]:.6g}",
                           f"{c['compute_s'][i]:.6g}", f"{c['send_s'][i] + c['recv_s'][i]:.6g}",
                           f"{c['wait_s'][i] + c['barrier_s'][i]:.6g}") for i in rows),
                         title="per rank", justify="right"))
    if n > 32:
        con.print(f"(showing the 16 latest-finishing of {n} ranks)")


def register(app: typer.Typer) -> None:
    @app.command("run")
    def run_cmd(
        trace: Path = typer.Argument(..., help="Trace file (or SimGrid description file)."),
        network: str = NETWORK_OPT,
        sharing: str = SHARING_OPT,
        send_mode: str = SEND_MODE_OPT,
        eager_limit: Optional[int] = typer.Option(None, help="With rendezvous: messages up to this many bytes go eager (default 65536: MPI-like, SMPI's detached-send threshold); 0 = the article's synchronous SCOM for every message."),
        compute_rate: str = COMPUTE_RATE_OPT,
        compute_scale: float = typer.Option(1.0, help="Multiply compute durations (0.5 = 2x faster CPU)."),
        cost: Optional[str] = COST_OPT,
        background: str = typer.Option("0", help="Background load: a constant fraction in [0,1), "
                                       "exp:mean_pps=7000,max_pps=25000,interval=1e-3,seed=1 "
                                       "(the article's Listing Seven) or file:loads.csv."),
        bounds: bool = typer.Option(False, "--bounds", help="Also run best/avg/worst background "
                                    "cases (no load, mean load, 95th-percentile load) and "
                                    "report the spread."),
        map_: Optional[str] = MAP_OPT,
        fmt: str = FORMAT_OPT,
        collective: Optional[str] = COLLECTIVE_OPT,
        mpi: Optional[str] = typer.Option(None, "--mpi", help="Collective algorithms as this MPI library's default rules choose them: openmpi, mpich (default), intelmpi."),
        intra_latency: Optional[float] = typer.Option(None, help="Intra-node message latency (s); default: the cost model's intra section, else 5e-7."),
        intra_bandwidth: Optional[float] = typer.Option(None, help="Intra-node bandwidth (bytes/s); default: the cost model's intra section, else 5e9."),
        json_: bool = JSON_OPT,
        out: Optional[Path] = typer.Option(None, help="Write messages/ranks/links tables (Parquet) here."),
        debug: bool = typer.Option(False, help="With --out: also write the full signal trace."),
        sink: Optional[str] = typer.Option(None, help="Extra sinks, comma-separated (see `ccmod sinks`)."),
        report: Optional[Path] = typer.Option(None, help="Write tables and report.html into this folder."),
        background_levels: Optional[str] = typer.Option(None, help="With --report: knee capacity at these background levels, e.g. 0,0.3."),
        progress: bool = typer.Option(True, help="Progress bar on a terminal."),
        stream: bool = typer.Option(False, "--stream", help="Run a ccmod Parquet trace (streaming layout: ccmod convert writes it) in per-rank windows; with --out the tables are written as the run goes (no link_load table)."),
        window: Optional[int] = typer.Option(None, "--window", help="With --stream: records per rank in the kernel at once (default 4096)."),
    ):
        """Predict the communication of TRACE on a network (CCMOD event-horizon engine)."""
        from ccmod.api import load_workload, run
        from ccmod.options import RunOptions
        if debug and out is None and report is None:
            raise CcmodInputError("--debug needs --out DIR (or --report DIR)", source="--debug")
        if mpi:
            collective = f"mpi={mpi}" + (f",{collective}" if collective else "")
        opts = RunOptions(sharing=sharing, send_mode=send_mode, eager_limit_bytes=eager_limit,
                          compute_rate=compute_rate, compute_scale=compute_scale, cost=cost,
                          background=background, mapping=map_, fmt=fmt, collectives=collective,
                          intra_latency_s=intra_latency, intra_bandwidth_Bps=intra_bandwidth)
        if window is not None and not stream:
            raise CcmodInputError("--window needs --stream", source="--window")
        from ccmod.netsys.networks import check_network
        check_network(network, opts.cost)     # a typo fails before the trace is read
        if stream:
            from ccmod.streaming import check_stream_options
            from ccmod.workloads.parquet_stream import open_stream_source
            check_stream_options(report=report, debug=debug, background=background,
                                 sinks=[s.strip() for s in (sink or "").split(",") if s.strip()])
            w = open_stream_source(trace, fmt, compute_scale)   # the footer only
        else:
            w = load_workload(trace, **opts.load_kwargs())
        if background_levels:
            from ccmod.reporting import parse_levels
            parse_levels(background_levels)      # fail before a long run, not after
        if background_levels and report is None:
            raise CcmodInputError("needs --report DIR (the knee figure is part of the report)",
                                  source="--background-levels")
        # --out gets the tables and the extra sinks; --report gets report.html and its own
        # tables (so `ccmod report DIR` can rebuild it); given together, both are written
        out_dir = out if out is not None else report
        extra = [s.strip() for s in (sink or "").split(",") if s.strip()]
        named = {s.split(":")[0] for s in extra}
        # --out implies the parquet tables and --debug the debug sink (unless given with
        # parameters in --sink, which then wins)
        sinks = [s for s in (["parquet"] if out_dir is not None else []) +
                 (["debug"] if debug else []) if s not in named] + extra
        if sinks and out_dir is None:
            raise CcmodInputError("sinks write files: give --out DIR", source="--sink")
        stale = _files_in(out_dir) + (_files_in(report) if report not in (None, out) else [])
        from ccmod.atomic import ensure_dir
        made = [a for d in {out_dir, report} - {None}
                for a in [Path(d).absolute(), *Path(d).absolute().parents] if not a.exists()]
        for d in {out_dir, report} - {None}:
            ensure_dir(d)             # an unwritable folder fails before the run, not after
        prog, cb = progress_bar(w.nrecords, "evaluating", "records", enabled=progress and not json_,
                                min_total=50_000)
        if stream:
            from ccmod.streaming import run_streamed
            run_ = lambda _w, *a, sinks, **k: run_streamed(trace, *a, window=window, **k)  # noqa: E731
        elif not sinks and out_dir is None:
            # nothing written: the summary needs no rank-state or contention recordings
            # (the quiet loop, no utilisation pass: ~40% of a 1M-record run's process)
            run_ = lambda *a, **k: run(*a, record=False, **k)  # noqa: E731
        else:
            run_ = run
        t_start = time.time()
        from ccmod.kernel import cache_is_cold
        # the first run after an install compiles the kernels inside the engine's time
        cold = cache_is_cold(sharing=opts.sharing)
        from ccmod.cli import end_of_startup
        end_of_startup()              # the imports are done (numba's too): the run collects
        try:
            result = run_(w, network, opts, sinks=sinks, out_dir=out_dir, progress=cb,
                          bounds=bounds)
        except BaseException:
            _remove_if_empty(made)    # a failed run leaves no empty folder of its own behind
            raise
        finally:
            if prog is not None:
                prog.stop()
        report_path = None
        if report is not None:
            from ccmod.reporting import make_report
            if out is not None and Path(out).resolve() != Path(report).resolve():
                from ccmod.outputs.base import RunContext
                from ccmod.outputs.parquet import ParquetSink
                ParquetSink(report).write(result, RunContext(out_dir=report))
            report_path = make_report(result, w, report, network=network,
                                      background_levels=background_levels, options=opts)
        if json_:
            summary = result.summary()
            if report_path is not None:
                summary["report"] = str(report_path)
            print(json.dumps(summary))
        else:
            print_summary(result)
            if cold:
                print("note            the engine time above includes compiling the kernels "
                      "(first run after an install only; later runs reuse numba's cache)")
            if out_dir is not None:
                print(f"tables written to {out_dir}/")
            if report_path is not None:
                print(f"report written to {report_path}")
        left = sorted(f for f in stale if f.exists() and f.stat().st_mtime < t_start)
        if left:
            where = out_dir if out_dir is not None else report
            print(f"ccmod: note: {where} still holds {len(left)} file(s) from an earlier run "
                  f"that this run did not rewrite (e.g. {left[0].name})", file=sys.stderr)

    @app.command("networks")
    def networks_cmd(
        action: Optional[str] = typer.Argument(None, help="'show' to describe one network."),
        spec: Optional[str] = typer.Argument(None, help="With show: NAME[:key=value,...]."),
        nodes: Optional[int] = typer.Option(None, help="With show: nodes to size derived "
                                            "parameters for (default 16)."),
        draw: Optional[Path] = typer.Option(None, help="With show: draw the topology to this "
                                            ".png/.svg/.pdf file."),
        json_: bool = typer.Option(False, "--json", help="JSON list."),
    ):
        """List the network models, or `networks show SPEC`: its link table and a drawing."""
        if action is not None:
            if action != "show" or spec is None:
                raise CcmodInputError(f"unknown networks action '{action}'" if action != "show"
                                      else "networks show needs a network SPEC",
                                      source="ccmod networks",
                                      hint="ccmod networks show fattree:k=4,n=3 --draw t.svg")
            from ccmod.netsys.show import draw_network, show_network
            net, table = show_network(spec, nodes)
            if draw is not None:
                draw_network(net, draw)
            if json_:
                print(json.dumps({"network": net.describe(), "links": table.to_dict("records")}))
                return
            d = net.describe()
            console().print(f"[bold]{spec}[/bold]: {d['nodes']} nodes, {d['links']} links "
                            f"({len(table)} link directions); quiet cost: {d['cost']}")
            console().print(make_table(
                ["resource", "link", "name", "direction", "from", "to", "bandwidth (B/s)",
                 "latency (s)"],
                ((r.resource, r.link, r.name, r.direction, getattr(r, "_4"), r.to,
                  f"{r.bandwidth_Bps:.4g}", f"{r.latency_s:.3g}")
                 for r in table.itertuples(index=False)),
                justify=["right", "right", "left", "left", "left", "left", "right", "right"]))
            if draw is not None:
                print(f"drawing written to {draw}")
            return
        from ccmod.netsys.registry import NETWORKS
        print_listing("networks", NETWORKS.listing(), json_)
        if not json_:
            from ccmod.netsys.nic import COMMON_PARAMS
            print("every network also takes: " + "; ".join(
                f"{k}= ({v})" for k, v in COMMON_PARAMS.items()))

    @app.command("sharing")
    def sharing_cmd(json_: bool = typer.Option(False, "--json", help="JSON list.")):
        """List the sharing rules (use with --sharing NAME[:key=value,...])."""
        from ccmod.sharing import SHARING_RULES
        print_listing("sharing", SHARING_RULES.listing(), json_)
