"""``ccmod generate``: write a statistical workload as a SimGrid time-independent trace."""
from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer

from ccmod.cli_util import print_listing
from ccmod.errors import CcmodInputError


def register(app: typer.Typer) -> None:
    @app.command("generate")
    def generate_cmd(
        kind: Optional[str] = typer.Argument(
            None, help="Generator, optionally with parameters: KIND[:key=value,...]."),
        param: Optional[List[str]] = typer.Option(
            None, "--param", "-p", help="Generator parameter key=value (repeatable)."),
        output: Optional[Path] = typer.Option(
            None, "--output", "-o", help="Write the trace here (SimGrid TI text)."),
        seed: int = typer.Option(0, help="Random seed (same seed -> identical trace)."),
        compute_rate: float = typer.Option(1e9, help="flop/s to turn compute seconds into flops."),
        list_: bool = typer.Option(False, "--list", help="List generators and their parameters."),
        json_: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
    ) -> None:
        """Generate a synthetic workload (all-to-all, halo, wavefront, work-pile, Snakes, ...)."""
        from ccmod.workloads.generators import GENERATORS, generate_file
        if kind is None and not list_:
            raise CcmodInputError("missing generator KIND",
                                  hint="e.g. ccmod generate halo2d:px=8,py=8 -o halo.txt; "
                                       "see ccmod generate --list")
        if list_:
            print_listing("generators", GENERATORS.listing(), json_)
            return
        params = {}
        for item in param or []:
            key, eq, value = item.partition("=")
            if not eq or not key.strip():
                raise CcmodInputError(f"'{item}' is not key=value", source="--param")
            if key.strip() in params:
                raise CcmodInputError(f"parameter '{key.strip()}' given twice", source="--param")
            params[key.strip()] = value.strip()
        res = generate_file(kind, params, seed=seed, output=output, compute_rate=compute_rate)
        if json_:
            typer.echo(json.dumps(res))
        else:
            where = f" -> {res['output']}" if res["output"] else " (no --output: nothing written)"
            typer.echo(f"{res['kind']}: {res['ranks']} ranks, {res['records']:,} records, "
                       f"{res['messages']:,} messages, {res['bytes']:,} bytes{where}")

