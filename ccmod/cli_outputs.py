"""``ccmod report`` and ``ccmod sinks``: wrappers over :mod:`outputs`."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import List, Optional

import typer

from ccmod.errors import CcmodInputError


def parse_levels(text: str | None) -> list[float] | None:
    """``"0,0.3"`` → ``[0.0, 0.3]`` (fractions in [0, 1))."""
    if not text:
        return None
    out = []
    for tok in text.split(","):
        tok = tok.strip()
        if not tok:
            continue
        try:
            v = float(tok)
        except ValueError:
            raise CcmodInputError(f"background level '{tok}' is not a number",
                                  source="--background-levels", hint="e.g. 0,0.3") from None
        if not 0.0 <= v < 1.0:
            raise CcmodInputError(f"background level {tok} is not a fraction in [0, 1)",
                                  source="--background-levels")
        out.append(v)
    return out or None


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
        run_dir: Path = typer.Argument(..., help="Run directory written by the parquet sink "
                                                 "(ccmod run --out DIR)."),
        output: Path = typer.Option(None, "-o", "--output",
                                    help="HTML file to write (default RUN_DIR/report.html)."),
        background_levels: Optional[str] = typer.Option(
            None, help="Knee capacity at these background levels, e.g. 0,0.3 (their runs "
                       "are RUN_DIR/background-<level>/ or given with --knee-run)."),
        knee_run: Optional[List[str]] = typer.Option(
            None, help="LEVEL=RUN_DIR: the run at one background level (repeatable)."),
        max_lines: int = typer.Option(2000, min=0,
                                      help="Most message lines in the space-time diagram."),
        title: Optional[str] = typer.Option(None, help="Report title."),
        json_: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
    ):
        """Write one self-contained HTML report of a run directory."""
        from outputs.report import build_report
        out = output if output is not None else Path(run_dir) / "report.html"
        levels = parse_levels(background_levels)
        knee = parse_knee_runs(knee_run)
        if knee and not levels:
            levels = sorted(knee)
        path = build_report(run_dir, out, background_levels=levels, knee_runs=knee,
                            max_lines=max_lines, title=title)
        if json_:
            print(json.dumps({"report": str(path), "bytes": path.stat().st_size}))
        else:
            print(f"report written to {path}")

    @app.command("sinks")
    def sinks_cmd(json_: bool = typer.Option(False, "--json", help="JSON list.")):
        """List the output sinks (use with ccmod run --sink NAME[:key=value,...])."""
        from outputs.sinks import list_sinks
        rows = list_sinks()
        if json_:
            print(json.dumps(rows))
            return
        from rich.console import Console
        from rich.table import Table
        t = Table(show_edge=False)
        for c in ("name", "description", "files", "parameters"):
            t.add_column(c)
        for r in rows:
            t.add_row(r["name"], r["description"], r["files"], r["parameters"])
        Console(file=sys.stdout, highlight=False, soft_wrap=True).print(t)
