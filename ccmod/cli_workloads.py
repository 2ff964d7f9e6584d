"""``ccmod info``, ``ccmod convert`` and ``ccmod formats``: wrappers over ``workloads``."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from ccmod.cli_util import (COLLECTIVE_OPT, COMPUTE_RATE_OPT, JSON_OPT, console, emit,
                            make_table, print_listing)


def _human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.3g} {unit}"
        n /= 1024.0
    return str(n)  # pragma: no cover


def _size_range(b: dict) -> str:
    """Label of a size-histogram bin: ``0``, ``8`` or ``16-31``."""
    if b["hi"] == 0:
        return "0"
    return f"{b['lo']}" if b["lo"] == b["hi"] else f"{b['lo']}-{b['hi']}"


def print_info(path: str, d: dict, out=None) -> None:
    """Human tables for :func:`workloads.info.info`."""
    con = console(out)
    con.print(f"[bold]{path}[/bold]  format={d['format']}  ranks={d['nranks']:,}  "
              f"records={d['records']:,}  files={d['files']}")
    con.print(f"messages        {d['messages']:,} ({d['total_bytes']:,} bytes, "
              f"{_human_bytes(d['total_bytes'])})")
    con.print(f"compute         {d['compute_s']:.6g} s in total; busiest rank "
              f"{d['compute_s_max_rank']:.6g} s (makespan lower bound "
              f"{d['duration_estimate_s']:.6g} s)")
    if d.get("compute_rate_flops"):
        from ccmod.workloads.units import format_rate
        con.print(f"compute rate    {format_rate(d['compute_rate_flops'])} (the trace counts "
                  "flops; --compute-rate; SMPI recorded them at its smpi/host-speed, "
                  "default 20kf)")
    if d.get("wait_ids") and d["wait_ids"] != "none":
        con.print(f"wait ids        {d['wait_ids']} ('wait <src> <dst> <tag>' names "
                  + ("actor PIDs = rank + 1, SimGrid 3.21-3.26)" if d["wait_ids"] == "pid"
                     else "ranks)"))
    con.print(make_table(("op", "records"), ((k, f"{v:,}") for k, v in d["records_by_op"].items()),
                         title="records by op", justify=("left", "right")))
    if d["size_histogram"]:
        con.print(make_table(("size", "messages", "bytes"),
                             ((_size_range(b), f"{b['messages']:,}", f"{b['bytes']:,}")
                              for b in d["size_histogram"]),
                             title="message sizes (bytes)", justify="right"))
    if d["top_pairs"]:
        con.print(make_table(("src", "dst", "messages", "bytes"),
                             ((q["src"], q["dst"], f"{q['messages']:,}", f"{q['bytes']:,}")
                              for q in d["top_pairs"]),
                             title="top communicating pairs", justify="right"))
    if d.get("action_counts"):
        con.print("actions in the file: " + ", ".join(f"{k} {v:,}" for k, v in
                                                     sorted(d["action_counts"].items())))
    for n in d.get("notes", []):
        con.print(f"note: {n}")


def register(app: typer.Typer) -> None:
    @app.command("info")
    def info_cmd(
        trace: Path = typer.Argument(..., help="Trace file, description file or folder."),
        fmt: str = typer.Option("auto", "--format", "-f", help="Trace format (see `ccmod formats`)."),
        compute_rate: str = COMPUTE_RATE_OPT,
        collective: Optional[str] = COLLECTIVE_OPT,
        top: int = typer.Option(10, help="How many communicating pairs to list."),
        json_: bool = JSON_OPT,
    ):
        """Statistics of a trace: records per op, messages, sizes, top pairs, compute."""
        from ccmod.workloads import read_workload
        from ccmod.workloads.info import info
        w = read_workload(trace, fmt, compute_rate=compute_rate, collectives=collective)
        d = info(w, top=top)
        if json_:
            print(json.dumps({"trace": str(trace)} | d))
        else:
            print_info(str(trace), d)

    @app.command("convert")
    def convert_cmd(
        src: Path = typer.Argument(..., help="Input trace."),
        dst: Path = typer.Argument(..., help="Output file (.ti/.txt, .parquet, .csv) or folder (per-rank TI)."),
        from_: str = typer.Option("auto", "--from", help="Input format (see `ccmod formats`)."),
        to: Optional[str] = typer.Option(None, "--to", help="Output format: ti, parquet or csv (default: from the extension)."),
        compute_rate: str = COMPUTE_RATE_OPT,
        collective: Optional[str] = COLLECTIVE_OPT,
        json_: bool = JSON_OPT,
    ):
        """Convert a trace to SimGrid TI, ccmod Parquet or ccmod CSV."""
        from ccmod.workloads.info import convert
        d = convert(src, dst, from_, to, compute_rate=compute_rate, collectives=collective)
        emit(d, json_, [f"wrote {d['output']} ({d['to']}): {d['nranks']:,} ranks, "
                        f"{d['records']:,} records from {d['input']} ({d['from']})"])

    @app.command("formats")
    def formats_cmd(json_: bool = JSON_OPT):
        """List the trace formats ccmod reads (and which it can write)."""
        from ccmod.workloads import list_formats
        rows = list_formats().to_dict(orient="records")
        print_listing("formats", rows, json_, extra=("writable", "extensions"), wrap=True)
