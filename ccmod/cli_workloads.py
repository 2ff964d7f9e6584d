"""``ccmod info``, ``ccmod convert`` and ``ccmod formats``: wrappers over ``workloads``."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer


def _human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.3g} {unit}"
        n /= 1024.0
    return str(n)  # pragma: no cover


def print_info(path: str, d: dict, out=None) -> None:
    """Human tables for :func:`workloads.info.info`."""
    from rich.console import Console
    from rich.table import Table
    con = Console(file=out or sys.stdout, highlight=False, soft_wrap=True)
    con.print(f"[bold]{path}[/bold]  format={d['format']}  ranks={d['nranks']:,}  "
              f"records={d['records']:,}  files={d['files']}")
    con.print(f"messages        {d['messages']:,} ({d['total_bytes']:,} bytes, "
              f"{_human_bytes(d['total_bytes'])})")
    con.print(f"compute         {d['compute_s']:.6g} s in total; busiest rank "
              f"{d['compute_s_max_rank']:.6g} s (makespan lower bound "
              f"{d['duration_estimate_s']:.6g} s)")
    t = Table(title="records by op", show_edge=False)
    t.add_column("op")
    t.add_column("records", justify="right")
    for k, v in d["records_by_op"].items():
        t.add_row(k, f"{v:,}")
    con.print(t)
    if d["size_histogram"]:
        h = Table(title="message sizes (bytes)", show_edge=False)
        for c in ("size", "messages", "bytes"):
            h.add_column(c, justify="right")
        for b in d["size_histogram"]:
            size = "0" if b["hi"] == 0 else (f"{b['lo']}" if b["lo"] == b["hi"]
                                            else f"{b['lo']}-{b['hi']}")
            h.add_row(size, f"{b['messages']:,}", f"{b['bytes']:,}")
        con.print(h)
    if d["top_pairs"]:
        p = Table(title="top communicating pairs", show_edge=False)
        for c in ("src", "dst", "messages", "bytes"):
            p.add_column(c, justify="right")
        for q in d["top_pairs"]:
            p.add_row(str(q["src"]), str(q["dst"]), f"{q['messages']:,}", f"{q['bytes']:,}")
        con.print(p)
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
        compute_rate: float = typer.Option(1e9, help="flop/s for traces that count flops."),
        collective: Optional[str] = typer.Option(None, help="Force collective algorithms, e.g. allreduce=ring."),
        top: int = typer.Option(10, help="How many communicating pairs to list."),
        json_: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
    ):
        """Statistics of a trace: records per op, messages, sizes, top pairs, compute."""
        from workloads import read_workload
        from workloads.info import info
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
        compute_rate: float = typer.Option(1e9, help="flop/s: TI flops <-> seconds."),
        collective: Optional[str] = typer.Option(None, help="Force collective algorithms, e.g. allreduce=ring."),
        json_: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
    ):
        """Convert a trace to SimGrid TI, ccmod Parquet or ccmod CSV."""
        from workloads.info import convert
        d = convert(src, dst, from_, to, compute_rate=compute_rate, collectives=collective)
        if json_:
            print(json.dumps(d))
        else:
            print(f"wrote {d['output']} ({d['to']}): {d['nranks']:,} ranks, "
                  f"{d['records']:,} records from {d['input']} ({d['from']})")

    @app.command("formats")
    def formats_cmd(json_: bool = typer.Option(False, "--json", help="Print one JSON object on stdout.")):
        """List the trace formats ccmod reads (and which it can write)."""
        from workloads import list_formats
        df = list_formats()
        if json_:
            print(json.dumps({"formats": df.to_dict(orient="records")}))
            return
        from rich.console import Console
        from rich.table import Table
        t = Table(show_edge=False)
        for c in ("format", "writable", "extensions", "description"):
            t.add_column(c)
        for r in df.itertuples():
            t.add_row(r.format, "yes" if r.writable else "", r.extensions, r.description)
        Console(highlight=False).print(t)
