"""``ccmod sweep``: one trace over a grid of networks and run options (wraps :func:`ccmod.sweep.sweep`)."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import List, Optional

import typer

from ccmod.cli_util import COMPUTE_RATE_OPT, FORMAT_OPT, JSON_OPT, console, jsonable, make_table
from ccmod.errors import CcmodInputError
from ccmod.progress import progress_bar


def split_list(text: str | None, option: str, kind=str) -> list:
    """``"a,b,c"`` → ``[a, b, c]`` converted with ``kind``; a bad item names the option."""
    items = [t.strip() for t in str(text or "").split(",") if t.strip()]
    if not items:
        raise CcmodInputError("no values given", source=option, hint="a comma-separated list")
    out = []
    for t in items:
        try:
            v = kind(t)
        except ValueError:
            raise CcmodInputError(f"'{t}' is not a valid {kind.__name__}", source=option) from None
        out.append(v)
    return out


def _int(text: str) -> int:
    v = float(text.replace("_", ""))
    if not v.is_integer():
        raise ValueError
    return int(v)


_int.__name__ = "integer"


def _bg_value(text: str):
    """A background list item: a number, or a model spec (exp:..., file:...)."""
    try:
        return float(text)
    except ValueError:
        if ":" in text:
            return text
        raise


_bg_value.__name__ = "background (number or model spec)"


def _fmt(v, spec=".6g") -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return format(v, spec) if isinstance(v, (int, float)) else str(v)


def print_table(df, out=None) -> None:
    """The sweep as a rich table in grid order, the best makespan marked with ``*``."""
    from ccmod.sweep import RESULT_COLUMNS, best_index, records
    con = console(out)
    params = [c for c in df.columns if c not in RESULT_COLUMNS]
    rows = records(df)
    shown = [c for c in params
             if c == "network" or len({json.dumps(r[c], default=str) for r in rows}) > 1]
    fixed = [f"{c}={_fmt(rows[0][c])}" for c in params if c not in shown and rows]
    fixed += [f"{k}={_fmt(v)}" for k, v in df.attrs.get("fixed", {}).items()
              if k not in ("compute_rate", "fmt") or v not in (1e9, "auto")]
    con.print(f"[bold]ccmod sweep[/bold] {df.attrs.get('trace', '')}: {len(df)} points"
              + (f"; {', '.join(fixed)}" if fixed else ""))
    best = best_index(df)
    best_s = None if best is None else float(df.loc[best, "makespan_s"])
    n_msgs = {r["messages"] for r in rows if r["error"] is None}
    show_msgs = len(n_msgs) > 1
    table_rows = []
    for i, r in enumerate(rows):
        failed = r["error"] is not None
        ratio = (r["makespan_s"] / best_s if best_s and not failed else None)
        table_rows.append(
            ["*" if i == best else "", i, *(_fmt(r[c]) for c in shown),
             "error" if failed else _fmt(r["makespan_s"]), _fmt(ratio, ".4f"),
             *([_fmt(r["messages"], ",")] if show_msgs else []),
             _fmt(r["busiest_link"]), _fmt(r["peak_contention"]),
             _fmt(r["mean_slowdown"], ".4g"), _fmt(r["comm_s"], ".4g"),
             _fmt(r["wait_s"], ".4g"), _fmt(r["wall_s"], ".2g")])
    cols = ["", "#", *shown, "makespan (s)", "vs best", *(["messages"] if show_msgs else []),
            "busiest link", "peak", "mean slowdown", "comm (s)", "wait (s)", "wall (s)"]
    numeric = [False, True] + [False] * len(shown) + [True, True] + [True] * show_msgs \
        + [False] + [True] * 5
    table = make_table(cols, table_rows, justify=["right" if n else "left" for n in numeric])
    for j, (c, num) in enumerate(zip(table.columns, numeric)):
        if num:  # numbers never wrap; headers may
            c.no_wrap = False
            c.min_width = max([len(str(row[j])) for row in table_rows] + [1])
        else:  # long network specs and link names wrap instead of being cut to "…"
            c.overflow = "fold"
    if not con.is_terminal:
        # piped or redirected: print the whole table, as wide as it needs to be
        from rich.measure import Measurement
        width = Measurement.get(con, con.options.update_width(100_000), table).maximum
        con.width = max(con.width, width)
    if len(n_msgs) == 1:
        con.print(f"{next(iter(n_msgs)):,} messages in every successful point")
    con.print(table)
    if best is not None:
        con.print(f"* best makespan: #{best} ({best_s:.9g} s)")
    failed = [(i, r["error"]) for i, r in enumerate(rows) if r["error"] is not None]
    if failed:
        con.print(f"{len(failed)} point(s) failed:")
        for i, msg in failed:
            con.print(f"  #{i}: {msg}")


def register(app: typer.Typer) -> None:
    @app.command("sweep")
    def sweep_cmd(
        trace: Path = typer.Argument(..., help="Trace file (read once for the whole sweep)."),
        network: Optional[List[str]] = typer.Option(
            None, "--network", "-n", help="NAME[:key=value,...]; repeat for several networks "
                                          "(default star)."),
        sharing: str = typer.Option("ccmod", help="Comma list of sharing rules: ccmod, maxmin, ccmod:latency=unshared,capacity=ratio."),
        send_mode: str = typer.Option("rendezvous", help="Comma list: rendezvous, eager, detached."),
        eager_limit: Optional[str] = typer.Option(None, help="Comma list of eager limits (bytes)."),
        background: str = typer.Option("0", help="Comma list of background loads in [0,1) or "
                                       "model specs (exp:..., file:...); use ';' between "
                                       "values when a spec has commas."),
        cost: str = typer.Option("none", help="Comma list of quiet-cost models: none (network "
                                              "default), physical or a JSON file from `ccmod fit`."),
        map_: Optional[str] = typer.Option(None, "--map", help="Comma list of rank->node maps: "
                                                               "none, block:K, cyclic:K or FILE."),
        compute_scale: Optional[str] = typer.Option(None, help="Comma list of compute multipliers "
                                                              "(0.5 = 2x faster CPU)."),
        compute_rate: str = COMPUTE_RATE_OPT,
        fmt: str = FORMAT_OPT,
        collective: Optional[List[str]] = typer.Option(
            None, help="Collective algorithms, e.g. allreduce=ring; repeat to sweep them."),
        jobs: int = typer.Option(1, "--jobs", "-j", help="Local worker processes (0 = one per CPU)."),
        scheduler: Optional[str] = typer.Option(
            None, help="dask.distributed scheduler tcp://HOST:PORT (or 'local'); overrides --jobs."),
        json_: bool = JSON_OPT,
        output: Optional[Path] = typer.Option(None, "--output", "-o",
                                              help="Write the table: .parquet or .csv."),
        progress: bool = typer.Option(True, help="Progress bar on a terminal."),
        grid_items: Optional[List[str]] = typer.Option(
            None, "--grid", help="KEY=v1,v2,...: sweep any run option or network parameter "
                                 "(network.bandwidth=1e9,1e10); ';' separates values that "
                                 "hold commas. Repeatable."),
        seeds: Optional[int] = typer.Option(None, help="Runs per stochastic-background point "
                                                       "(background seed 1..N)."),
        executor: str = typer.Option("local", help="local (in-process or --jobs processes) "
                                                   "or dask (LocalCluster unless --scheduler)."),
        bounds: bool = typer.Option(False, "--bounds", help="Also run best/avg/worst "
                                    "background cases per point (bound_*_s columns)."),
    ):
        """Run TRACE over every combination of networks and options; one row per point.

        With -o FILE the sweep is resumable: rows already in FILE are not run again and
        finished rows are written as they come.
        """
        from ccmod.workloads import check_trace_path
        check_trace_path(trace)       # a wrong path fails before pandas is imported
        from ccmod.sweep import output_kind, records
        from ccmod.sweep_grid import parse_grid_items, run_grid
        if output is not None:
            # a bad extension or folder fails before the runs, not after them
            output_kind(output)
            from ccmod.atomic import ensure_dir
            ensure_dir(output.parent if str(output.parent) else Path("."), "output folder")
        from ccmod.sharing import split_rules
        # a rule's own options use commas too (ccmod:latency=unshared,capacity=ratio)
        grid: dict = {"sharing": split_rules(sharing) or split_list(sharing, "--sharing"),
                      "send_mode": split_list(send_mode, "--send-mode")}
        if eager_limit is not None:
            grid["eager_limit_bytes"] = split_list(eager_limit, "--eager-limit", _int)
        grid["background"] = ([t.strip() for t in background.split(";") if t.strip()]
                              if ";" in background else
                              split_list(background, "--background", _bg_value))
        grid["cost"] = ([t.strip() for t in cost.split(";") if t.strip()] if ";" in cost
                        else split_list(cost, "--cost"))
        if map_ is not None:
            grid["mapping"] = split_list(map_, "--map")
        if compute_scale is not None:
            grid["compute_scale"] = split_list(compute_scale, "--compute-scale", float)
        fixed: dict = {"compute_rate": compute_rate, "fmt": fmt}
        if collective and len(collective) > 1:
            grid["collectives"] = list(collective)
        elif collective:
            fixed["collectives"] = collective[0]
        extra = parse_grid_items(grid_items)
        for k, v in extra.items():
            grid[k] = v            # --grid wins over the option of the same name
        if bounds:
            fixed["bounds"] = True
        networks = list(network) if network else ["star"]
        if "network" in grid:
            networks = None
        holder: dict = {}

        def cb(done, total):
            if "bar" not in holder:
                holder["bar"] = progress_bar(total, "sweeping", "points", enabled=progress,
                                             min_total=5)
            prog_, upd = holder["bar"]
            if upd is not None:
                upd(done, total)
        try:
            df = run_grid(trace, grid, networks=networks, seeds=seeds, output=output,
                          executor=executor, jobs=jobs, scheduler=scheduler, progress=cb,
                          **fixed)
        finally:
            if holder.get("bar", (None,))[0] is not None:
                holder["bar"][0].stop()
        df.attrs["trace"] = str(trace)
        if json_:
            print(json.dumps(records(df), default=jsonable))
        else:
            print_table(df)
            if df.attrs.get("resumed"):
                print(f"{df.attrs['resumed']} point(s) were already in {output}; "
                      f"{df.attrs.get('computed', 0)} run now")
            if output is not None:
                print(f"table written to {output}")

    @app.command("sweep-report")
    def sweep_report_cmd(
        results: Path = typer.Argument(..., help="Sweep table (.parquet or .csv) from "
                                                 "`ccmod sweep -o`."),
        output: Path = typer.Option(Path("sweep-report.html"), "--output", "-o",
                                    help="HTML file to write."),
    ):
        """Makespan vs each swept parameter (best/avg/worst bands) and knee capacity vs
        background load, in one self-contained HTML page."""
        from ccmod.sweep_report import sweep_report
        path = sweep_report(results, output)
        print(f"report written to {path}")
