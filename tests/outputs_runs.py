"""Real engine runs for the output tests (sinks, report): no fabricated results.

``tiny3.ti`` on ``star:bandwidth=1e9,latency=0`` (sharing ccmod, rendezvous), derived by
hand: ranks 0 and 2 each send 1000 B to rank 1 at t = 0; both cross node1/down
(resource 3), so each gets half of 1 GB/s and both end at 2 µs (contention 2,
utilisation 1.0; node0/up and node2/up carry one at 0.5 GB/s: utilisation 0.5). Rank 1
computes 2 µs, then sends 500 B (tag 7) to rank 0: 4 → 4.5 µs. Rank 0 then sends 3000 B
to rank 2: 4.5 → 7.5 µs (the makespan). Rank 1 is idle from 4.5 µs to the end.
"""
from __future__ import annotations

from pathlib import Path

from ccmod import api

DATA = Path(__file__).resolve().parent / "data"
ROOT = Path(__file__).resolve().parent.parent
TINY = DATA / "tiny3.ti"
TINY_NET = "star:bandwidth=1e9,latency=0"
US = 1e-6


def tiny_result(**kw):
    """The hand-derived 3-rank run (module doc)."""
    return api.run(str(TINY), network=TINY_NET, **kw)


def stencil_result(**kw):
    """The shipped 16-rank halo exchange (traces/stencil16.ti) on the article's Myrinet."""
    return api.run(str(ROOT / "traces" / "stencil16.ti"), network=kw.pop("network", "myrinet16"),
                   **kw)
