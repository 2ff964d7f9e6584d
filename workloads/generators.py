"""Statistical workload generators, registered in ``workloads.registry.GENERATORS``.

Each generator is a function ``(params..., seed=0) -> Workload`` with documented defaults
(see docs/workloads-generators.md); all randomness goes through
``numpy.random.default_rng(seed)``, so the same parameters and seed give bit-identical
arrays. :func:`generate` builds one from a ``KIND[:key=value,...]`` spec.
"""
from __future__ import annotations

import inspect

import numpy as np

from ccmod.errors import CcmodInputError
from ccmod.registry import parse_spec
from ccmod.workloads.base import OP_AMREQUEST, OP_ISEND, OP_SEND, Workload
from ccmod.workloads.gen_queueing import client_server, hotspot, reqreply, snakes, workpile
from ccmod.workloads.gen_regular import alltoall, halo2d, halo3d, ring, uniform, wavefront
from ccmod.workloads.registry import GENERATORS

_BUILTIN = (
    ("alltoall", alltoall, "repeated MPI_Alltoall of nbytes per block (collective decomposition)"),
    ("uniform", uniform, "uniform random traffic: each rank sends to random other ranks in rounds"),
    ("client_server", client_server,
     "closed client-server: exponential think and service times, Ps servers, Pc clients"),
    ("workpile", workpile, "LoPC work-pile: clients fetch chunks from random servers, work W"),
    ("reqreply", reqreply, "LoPC all-to-all request/reply: work W, request to a random node, "
                           "handler So, reply"),
    ("wavefront", wavefront, "Sweep3D-like pipelined wavefront: px x py ranks, 8 octants, "
                             "k-blocks"),
    ("halo2d", halo2d, "2D nearest-neighbour halo exchange on a px x py grid"),
    ("halo3d", halo3d, "3D nearest-neighbour halo exchange on a px x py x pz grid"),
    ("snakes", snakes, "J-Machine Snakes: closed random task migration, N*m snakes of L hops"),
    ("hotspot", hotspot, "J-Machine hot spot: Snakes or request/reply with one rank B times "
                         "as popular"),
    ("ring", ring, "ring: every rank shifts nbytes to its right neighbour (or a token circulates)"),
)
for _name, _fn, _desc in _BUILTIN:
    GENERATORS.add(_name, _fn, _desc)

_TRUE = {"1", "true", "yes", "on", "y", "t"}
_FALSE = {"0", "false", "no", "off", "n", "f"}


def parameters(fn) -> dict[str, object]:
    """Return ``{name: default}`` of a generator's parameters (without ``seed``)."""
    out = {}
    for p in inspect.signature(fn).parameters.values():
        if p.name == "seed" or p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
            continue
        out[p.name] = p.default
    return out


def convert(name: str, key: str, raw, default, source: str = "generator"):
    """Convert ``raw`` (string or value) to the type of ``default``; errors name the key."""
    if not isinstance(raw, str):
        return raw
    text = raw.strip()
    try:
        if isinstance(default, bool):
            low = text.lower()
            if low in _TRUE:
                return True
            if low in _FALSE:
                return False
            raise ValueError
        if isinstance(default, int):
            v = float(text.replace("_", ""))
            if v != int(v):
                raise ValueError
            return int(v)
        if isinstance(default, float):
            return float(text)
    except (ValueError, OverflowError):
        kind = type(default).__name__
        raise CcmodInputError(f"{name}: parameter {key}='{raw}' is not a valid {kind}",
                              source=source, hint=f"e.g. {key}={default}") from None
    return text


def make(kind: str, params: dict | None = None, seed: int = 0,
         source: str = "generator") -> Workload:
    """Run generator ``kind`` with parameters given as strings or values.

    Raises
    ------
    CcmodInputError
        Unknown generator (lists the valid ones), unknown parameter (lists the valid ones)
        or a value of the wrong type.
    """
    entry = GENERATORS.get(kind, source=source)
    fn = entry.factory
    try:
        valid = parameters(fn)
    except (TypeError, ValueError):  # a third-party callable without a signature
        valid = None
    kwargs = {}
    for key, raw in (params or {}).items():
        if valid is not None and key not in valid:
            raise CcmodInputError(f"{kind}: unknown parameter '{key}'", source=source,
                                  hint="valid: " + ", ".join(valid))
        kwargs[key] = convert(kind, key, raw, valid[key], source) if valid is not None else raw
    for key, val in kwargs.items():
        if isinstance(val, (int, float)) and not isinstance(val, bool) and abs(val) > 1e12:
            raise CcmodInputError(f"{kind}: {key}={val} is too large", source=source,
                                  hint="at most 1e12")
    if not (0 <= int(seed) < 2**63):
        raise CcmodInputError(f"seed {seed} must be a non-negative integer", source="--seed")
    if valid is not None:
        from ccmod.workloads.gen_budget import check_budget
        check_budget(kind, {**valid, **kwargs}, source=source)
    return fn(**kwargs, seed=int(seed))


def generate(spec: str, seed: int = 0, source: str = "generator") -> Workload:
    """Build a workload from ``KIND[:key=value,...]``, e.g. ``"halo2d:px=8,py=4"``."""
    kind, params = parse_spec(spec, source=source)
    return make(kind, params, seed, source=source)


def describe(kind: str) -> str:
    """One line per parameter ``name=default`` of generator ``kind`` (for help texts)."""
    try:
        params = parameters(GENERATORS.get(kind).factory)
    except (TypeError, ValueError):  # a third-party callable without a signature
        return ""
    return ", ".join(f"{k}={v}" for k, v in params.items())


def summary(w: Workload) -> dict:
    """Counts of a workload: ranks, records, messages and bytes sent.

    An active-message request (``OP_AMREQUEST``) counts as two messages (request, reply).
    """
    sends = np.isin(w.op, (OP_SEND, OP_ISEND))
    am = w.op == OP_AMREQUEST
    return {"ranks": int(w.nranks), "records": int(w.nrecords),
            "messages": int(sends.sum() + 2 * am.sum()),
            "bytes": int(w.nbytes[sends].sum() + 2 * w.nbytes[am].sum())}


def generate_file(spec: str, params: dict | None = None, seed: int = 0, output=None,
                  compute_rate: float = 1e9, source: str = "generator") -> dict:
    """Generate ``spec`` (``KIND[:k=v,...]``, plus ``params``), optionally write it as a
    SimGrid TI trace to ``output``; return ``{kind, ranks, records, messages, bytes, output}``.
    """
    kind, p = parse_spec(spec, source=source)
    for k, v in (params or {}).items():
        if k in p:
            raise CcmodInputError(f"parameter '{k}' given twice", source=source)
        p[k] = v
    w = make(kind, p, seed, source=source)
    out = {"kind": kind, **summary(w), "output": None if output is None else str(output)}
    if output is not None:
        from ccmod.workloads.ti_write import write_ti
        write_ti(w, output, compute_rate=compute_rate)
    return out
