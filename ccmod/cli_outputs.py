"""``ccmod report`` and ``ccmod sinks``: wrappers over :mod:`outputs`."""
from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer

from ccmod.cli_util import JSON_OPT, print_listing
from ccmod.errors import CcmodInputError
from ccmod.reporting import parse_levels


def parse_knee_runs(items: list[str] | None) -> dict[float, Path]:
    """``["0.3=DIR", ...]`` → ``{0.3: Path(DIR)}``."""
    out: dict[float, Path] = {}
    for it in items or []:
        level, eq, path = it.partition("=")
        if not eq or not path.strip():
            raise CcmodInputError(f"'{it}' is not LEVEL=RUN_DIR", source="--knee-run",
                                  hint="e.g. --knee-run 0.3=runs/bg30")
        lv = parse_levels(level)
        if not lv:
            raise CcmodInputError(f"'{it}' has no level", source="--knee-run")
        out[lv[0]] = Path(path.strip())
    return out


def register(app: typer.Typer) -> None:
    @app.command("report")
    def report_cmd(
        run_dir: Path = typer.Argument(..., help="Run directory (ccmod run --out DIR)."),
        output: Path = typer.Option(None, "-o", "--output",
                                    help="HTML file to write (default RUN_DIR/report.html)."),
        background_levels: Optional[str] = typer.Option(
            None, help="Knee capacity at these background levels, e.g. 0,0.3 (their runs "
                       "are RUN_DIR/background-<level>/ or given with --knee-run)."),
        knee_run: Optional[List[str]] = typer.Option(
            None, help="LEVEL=RUN_DIR: the run at one background level (repeatable)."),
        max_lines: int = typer.Option(2000, min=0, help="Message lines in the aggregated "
                                                        "space-time view."),
        static: Optional[str] = typer.Option(
            None, help="Also draw the figures for papers into this folder (PNG and SVG, "
                       "matplotlib), e.g. --static figures/."),
        title: Optional[str] = typer.Option(None, help="Report title."),
        json_: bool = JSON_OPT,
    ):
        """Write one self-contained interactive HTML report of a run directory."""
        from ccmod.outputs.run_dir import read_run_summary
        out = output if output is not None else Path(run_dir) / "report.html"
        levels = parse_levels(background_levels)
        knee = parse_knee_runs(knee_run)
        read_run_summary(run_dir)       # a wrong folder fails before pandas is imported
        from ccmod.outputs.parquet import load_result
        from ccmod.outputs.report import build_report, write_static
        if knee and not levels:
            levels = sorted(knee)
        result = load_result(run_dir)
        result.meta["run_dir"] = str(run_dir)
        figures = []
        if static:
            figures = [str(p) for p in write_static(result, static, background_levels=levels,
                                                    knee_runs=knee, run_dir=run_dir)]
        path = build_report(result, out, background_levels=levels, knee_runs=knee,
                            max_lines=max_lines, title=title, run_dir=run_dir)
        if json_:
            print(json.dumps({"report": str(path), "bytes": path.stat().st_size,
                              "figures": figures}))
        else:
            print(f"report written to {path}")
            if figures:
                print(f"{len(figures)} figures written to {static}/")

    @app.command("sinks")
    def sinks_cmd(json_: bool = typer.Option(False, "--json", help="JSON list.")):
        """List the output sinks (use with ccmod run --sink NAME[:key=value,...])."""
        from ccmod.outputs.sinks import list_sinks
        rows = [{k: v for k, v in r.items() if k != "parameters"} for r in list_sinks()]
        print_listing("sinks", rows, json_, extra=("files",))
