"""Up-front work estimate of the built-in generators (issue 14: bounded work).

A generator asked for ``halo2d:px=1000,py=1000,iterations=100000`` would append records
for hours and run out of memory; :func:`check_budget` estimates the records a call would
build from its parameters alone and refuses the call, with the estimate, above
:data:`MAX_RECORDS` (``CCMOD_MAX_RECORDS`` raises the limit). The estimates are upper
bounds within a small factor (collective algorithms and random choices vary).
"""
from __future__ import annotations

import os

from ccmod.errors import CcmodInputError

#: records a generator may build by default (~1-2 GB of memory while building)
MAX_RECORDS = 20_000_000


def _f(p: dict, *keys) -> float:
    out = 1.0
    for k in keys:
        try:
            out *= max(float(p.get(k, 1) or 0), 0.0)
        except (TypeError, ValueError):
            return 0.0
    return out


#: generator -> records estimate from its (converted, defaulted) parameters
ESTIMATES = {
    "alltoall": lambda p: _f(p, "nranks", "iterations") * (2 * _f(p, "nranks") + 1),
    "uniform": lambda p: _f(p, "nranks", "iterations") * (3 * _f(p, "fanout") + 1),
    "ring": lambda p: _f(p, "nranks", "iterations") * 3,
    "halo2d": lambda p: _f(p, "px", "py", "iterations") * 13,
    "halo3d": lambda p: _f(p, "px", "py", "pz", "iterations") * 19,
    "wavefront": lambda p: _f(p, "px", "py", "kblocks", "angle_blocks", "octants",
                              "iterations") * 5,
    "client_server": lambda p: _f(p, "clients", "requests") * 4 + _f(p, "servers"),
    "workpile": lambda p: _f(p, "nranks", "chunks") * 4,
    "reqreply": lambda p: _f(p, "nranks", "requests") * 4,
    "snakes": lambda p: _f(p, "nranks", "snakes") * (_f(p, "hops") + 1) * 2,
    "hotspot": lambda p: _f(p, "nranks", "per_rank") * (_f(p, "hops") + 1) * 2,
}


def max_records() -> int:
    try:
        return int(float(os.environ.get("CCMOD_MAX_RECORDS", MAX_RECORDS)))
    except ValueError:
        return MAX_RECORDS


def check_budget(kind: str, params: dict, source: str = "generator") -> None:
    """Refuse a generator call whose estimated record count exceeds :func:`max_records`."""
    est = ESTIMATES.get(kind)
    if est is None:
        return
    n = est(params)
    limit = max_records()
    if n > limit:
        raise CcmodInputError(
            f"{kind} is too large: it would build about {n:.3g} records (limit {limit:.3g}): more work "
            "and memory than a run should take", source=source,
            hint="lower the counts (ranks, iterations, ...), or set CCMOD_MAX_RECORDS=N "
                 "if you mean it")
