"""The sink interface: one method, ``write(result, ctx)`` (a Ciw-style one-method base).

A sink receives the finished :class:`ccmod.result.RunResult` (messages, rank states, link
load with utilisation, the link table, routes, signals) and writes what it writes; it never
sees the engine. A sink that wants the full signal trace (the article's ``otrdeb``) sets
``wants_signals = True``: the engine only generates signals then (they cost time).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ccmod.errors import CcmodInputError

# the codes are shared with the engine, so they live in the core (re-exported here for sinks)
from ccmod.codes import (SIGNALS, STATE_BARRIER, STATE_COMPUTE, STATE_NAMES,  # noqa: F401
                         STATE_OVERHEAD, STATE_RECV, STATE_SEND, STATE_WAIT)

#: pseudo state code of the gaps between recorded states ("idle" in the article's
#: space-time diagram): a rank waiting for nothing, or finished before the makespan
STATE_IDLE = len(STATE_NAMES)
#: state names including the idle pseudo state (index = state code)
ALL_STATE_NAMES = STATE_NAMES + ("idle",)


@dataclass
class RunContext:
    """Where a sink writes, and the run's options (everything else is in the result)."""

    out_dir: Path | None = None
    options: dict = field(default_factory=dict)
    network: object = None      # netsys.base.Network, when the caller has it (optional)
    workload: object = None     # workloads.base.Workload (optional)


class Sink:
    """Base class of output sinks: implement :meth:`write`.

    File sinks take ``out_dir`` (else they write into ``ctx.out_dir``) and their
    parameters as keyword arguments with defaults (``--sink NAME:key=value``).
    """

    name = "sink"
    description = ""
    wants_signals = False

    def __init__(self, out_dir=None):
        self.out_dir = out_dir

    def write(self, result, ctx: RunContext | None = None) -> None:
        """Write the outputs of ``result`` (a :class:`ccmod.result.RunResult`)."""
        raise NotImplementedError

    def directory(self, ctx: RunContext | None) -> Path:
        """The directory this sink writes into (created), or a one-line input error."""
        from ccmod.atomic import ensure_dir
        d = self.out_dir if self.out_dir is not None else getattr(ctx, "out_dir", None)
        if d is None:
            raise CcmodInputError(f"sink '{self.name}' needs an output directory",
                                  source="--sink", hint="give --out DIR (or out_dir=...)")
        return ensure_dir(Path(d), "output directory")
