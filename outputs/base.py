"""Typed sink interface (replaces the article's varargs ``otrace::RecvSignal``).

The engine feeds sinks in batches of numpy columns; every hook is a no-op by default, so
an absent sink costs nothing. A sink that wants the full signal trace (the article's
``otrdeb``) sets ``wants_signals = True``; the engine only generates signals then.

Batches (dicts of equal-length numpy arrays)
--------------------------------------------
messages    : msg_id, src, dst, tag, nbytes, t_post_s, t_start_s, t_end_s, quiet_s,
              slowdown, bottleneck (resource id, -1 if none/intra-node), hops
rank_states : rank, state (int code, see ``STATE_NAMES``), t_start_s, t_end_s
link_load   : resource, t_start_s, t_end_s, active (contention: messages on it),
              background (fraction)
signals     : t_s, signal (str, a name of the ``SIGNALS`` tuple), args (str)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

# the codes are shared with the engine, so they live in the core (re-exported here for sinks)
from ccmod.codes import (SIGNALS, STATE_BARRIER, STATE_COMPUTE, STATE_NAMES,  # noqa: F401
                         STATE_OVERHEAD, STATE_RECV, STATE_SEND, STATE_WAIT)


@dataclass
class RunContext:
    """What a sink may need to know when it opens."""

    network: object            # netsys.base.Network
    workload: object           # workloads.base.Workload
    node_of_rank: object       # int32[nranks]
    options: dict = field(default_factory=dict)
    out_dir: Path | None = None


class Sink:
    """Base class of output sinks: override only the hooks you need."""

    name = "sink"
    description = ""
    wants_signals = False
    wants_link_load = False

    def open(self, ctx: RunContext) -> None:
        pass

    def on_messages(self, batch: dict) -> None:
        pass

    def on_rank_states(self, batch: dict) -> None:
        pass

    def on_link_load(self, batch: dict) -> None:
        pass

    def on_signals(self, batch: dict) -> None:
        pass

    def close(self, result) -> None:
        """Called once with the :class:`ccmod.result.RunResult`."""
