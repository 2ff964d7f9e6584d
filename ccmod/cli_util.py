"""Helpers shared by the ``ccmod`` command modules: common options, JSON/text output, tables.

Options that several commands declare with the same meaning (the engine options of
``run`` and ``crosscheck``, the ``--json`` flag) are defined once here so their names,
defaults and help stay identical everywhere.
"""
from __future__ import annotations

import json
import sys

import typer

from ccmod.errors import terminal_safe

# -- options shared by several commands (typer reads these as parameter defaults) --------
NETWORK_OPT = typer.Option("star", "--network", "-n",
                           help="NAME[:key=value,...]; see `ccmod networks`.")
SHARING_OPT = typer.Option("ccmod", help="ccmod (article: bandwidth availability) or maxmin.")
SEND_MODE_OPT = typer.Option("rendezvous", help="rendezvous, eager or detached.")


def _compute_rate(value):
    """typer callback: ``--compute-rate`` as a number or SimGrid's ``20kf`` / ``1Gf``."""
    from ccmod.units import parse_compute_rate
    return value if value is None else parse_compute_rate(value)


COMPUTE_RATE_OPT = typer.Option("1e9", callback=_compute_rate,
                                help="flop/s for traces that count flops (SimGrid TI): a "
                                     "number or SimGrid's notation, e.g. 20kf (SMPI's "
                                     "default host speed) or 1Gf.")
COST_OPT = typer.Option(None, help="Quiet-cost model JSON (from `ccmod fit`) or 'physical'.")
MAP_OPT = typer.Option(None, "--map", help="Rank->node map: trace (default: the placement "
                       "recorded in the trace, else one rank per node), identity, block:K, "
                       "cyclic:K or FILE.")
FORMAT_OPT = typer.Option("auto", "--format", help="Trace format (see `ccmod formats`).")
COLLECTIVE_OPT = typer.Option(None, help="Force collective algorithms, e.g. allreduce=ring.")
JSON_OPT = typer.Option(False, "--json", help="Print one JSON object on stdout.")


def jsonable(x):
    """``json.dumps`` fallback for numpy arrays and scalars (see :mod:`ccmod.jsonio`)."""
    from ccmod.jsonio import json_default
    return json_default(x)


def emit(data, json_: bool, lines) -> None:
    """Print ``data`` as one JSON object (``--json``) or else the text ``lines``.

    ``lines`` may also be a callable returning them, so text that is costly (or fails on
    empty inputs) is only built when it is printed.
    """
    if json_:
        typer.echo(json.dumps(data, default=jsonable))
        return
    for line in (lines() if callable(lines) else lines):
        typer.echo(terminal_safe(line))


def console(out=None):
    """A rich console on ``out`` (stdout) that prints text as given (no auto-colouring)."""
    from rich.console import Console
    return Console(file=out or sys.stdout, highlight=False, soft_wrap=True)


def make_table(columns, rows, *, title: str | None = None, justify="left"):
    """A borderless rich table; ``justify`` is one value or one per column.

    Cells are converted with ``str``, so callers pass already formatted values where the
    format matters.
    """
    from rich.table import Table
    t = Table(title=title, show_edge=False)
    columns = [terminal_safe(c) for c in columns]
    just = [justify] * len(columns) if isinstance(justify, str) else list(justify)
    for c, j in zip(columns, just):
        t.add_column(c, justify=j)
    for row in rows:
        # cells may hold names from a trace: never raw control characters on a terminal
        t.add_row(*(terminal_safe(x) for x in row))
    return t


def print_listing(family: str, rows: list[dict], json_: bool, extra=(), out=None,
                  wrap: bool = False) -> None:
    """The one listing shape of every plugin family (``ccmod networks``, ``formats``,
    ``sinks``, ``generate --list``, ``sharing``).

    ``rows`` come from :meth:`ccmod.registry.Registry.listing` (``name``, ``description``,
    ``params``, ``origin``) plus the family's ``extra`` columns. ``--json`` prints the
    rows as a JSON list (``wrap``: as ``{family: rows}``, the historical shape of
    ``ccmod formats --json``); the text is one table, and third-party plugins (and
    ignored ones) are named with their origin under it.
    """
    if json_:
        typer.echo(json.dumps({family: rows} if wrap else rows, default=jsonable))
        return
    cols = ("name",) + tuple(extra) + ("params", "description")
    con = console(out)
    con.print(make_table(cols, ([_cell(r.get(c, "")) for c in cols] for r in rows)))
    for r in rows:
        if r.get("origin", "built-in") != "built-in":
            con.print(f"{r['name']}: from {r['origin']}"
                      + (f" ({r['description']})" if r["description"].startswith("ignored")
                         else ""))


def _cell(v) -> str:
    if isinstance(v, bool):
        return "yes" if v else ""
    return str(v)
