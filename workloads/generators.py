"""Statistical workload generators, registered in ``workloads.registry.GENERATORS``.

Each generator is a function ``(params..., seed=0) -> Workload`` with documented defaults
(see docs/workloads-generators.md); all randomness goes through
``numpy.random.default_rng(seed)``, so the same parameters and seed give bit-identical
arrays. :func:`generate` builds one from a ``KIND[:key=value,...]`` spec.
"""
from __future__ import annotations


import numpy as np

from ccmod.errors import CcmodInputError
from ccmod.registry import parse_spec, signature_params
from ccmod.workloads.base import OP_AMREQUEST, OP_ISEND, OP_SEND, Workload
from ccmod.workloads.registry import GENERATORS

# the built-in generators register themselves where they are defined
# (workloads/gen_regular.py, workloads/gen_queueing.py), loaded on first use of GENERATORS


def parameters(fn) -> dict[str, object]:
    """Return ``{name: default}`` of a generator's parameters (without ``seed``)."""
    params = signature_params(fn, GENERATORS.skip_params)
    if params is None:
        raise TypeError(f"{fn!r} has no signature")
    return {k: p.default for k, p in params.items()}


def make(kind: str, params: dict | None = None, seed: int = 0,
         source: str = "generator") -> Workload:
    """Run generator ``kind`` with parameters given as strings or values.

    Raises
    ------
    CcmodInputError
        Unknown generator (lists the valid ones), unknown parameter (lists the valid ones)
        or a value of the wrong type.
    """
    fn = GENERATORS.get(kind, source=source).factory
    kwargs = GENERATORS.convert(kind, dict(params or {}), source=source)
    for key, val in kwargs.items():
        if isinstance(val, (int, float)) and not isinstance(val, bool) and abs(val) > 1e12:
            raise CcmodInputError(f"{kind}: {key}={val} is too large", source=source,
                                  hint="at most 1e12")
    if not (0 <= int(seed) < 2**63):
        raise CcmodInputError(f"seed {seed} must be a non-negative integer", source="--seed")
    from ccmod.workloads.gen_budget import check_budget
    try:
        defaults = parameters(fn)
    except (TypeError, ValueError):  # a third-party callable without a signature
        defaults = {}
    check_budget(kind, {**defaults, **kwargs}, source=source)
    return fn(**kwargs, seed=int(seed))


def generate(spec: str, seed: int = 0, source: str = "generator") -> Workload:
    """Build a workload from ``KIND[:key=value,...]``, e.g. ``"halo2d:px=8,py=4"``."""
    kind, params = parse_spec(spec, source=source)
    return make(kind, params, seed, source=source)


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
