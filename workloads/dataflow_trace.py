"""Turn one iteration of a data-flow model into a SimGrid TI trace for ``ccmod run``.

Each processor of the model becomes one rank (in file order); each actor becomes a
``compute`` of its mean time (times ``compute_rate`` flops, so ``ccmod run`` with the same
``--compute-rate`` replays the mean) and each cross-processor communication becomes a
blocking ``send`` / ``recv`` pair of ``amount`` bytes (one data unit = one byte) between
the processors of its two ends.  Same-processor communications disappear (they are free
in MMT).  Actors are visited in a topological order of the graph and every rank's actions
follow that one global order, so the blocking pairs match and cannot deadlock.

The trace says *what* is exchanged; the network (links, routes, their types) comes from
``ccmod run --network``, which uses CCMOD's sharing, not the model's link disciplines.
"""
from __future__ import annotations

from ccmod.atomic import atomic_write_text

__all__ = ["ti_lines", "write_ti"]


def _topo(model) -> list:
    A = model.nactors
    succ = [set() for _ in range(A)]
    indeg = [0] * A
    for x, rcs in enumerate(model.data_reads):
        w = model.data_writer[x]
        for rc in rcs:
            r = model.comms[rc].dst
            if r not in succ[w]:
                succ[w].add(r)
                indeg[r] += 1
    ready = sorted(a for a in range(A) if indeg[a] == 0)
    order = []
    while ready:
        a = ready.pop(0)
        order.append(a)
        for b in sorted(succ[a]):
            indeg[b] -= 1
            if indeg[b] == 0:
                ready.append(b)
        ready.sort()
    return order


def ti_lines(model, compute_rate: float = 1e9) -> list[str]:
    """TI lines of one iteration (``<rank> init`` ... ``<rank> finalize`` per rank)."""
    P = model.nproc
    per = [[f"{r} init"] for r in range(P)]

    def comm(c):
        cm = model.comms[c]
        if not cm.stages:
            return
        if cm.kind == "write":
            a, b = model.actor_proc[cm.src], model.data_proc[cm.dst]
        else:
            a, b = model.data_proc[cm.src], model.actor_proc[cm.dst]
        n = int(round(cm.amount))
        per[a].append(f"{a} send {b} 0 {n}")
        per[b].append(f"{b} recv {a} 0 {n}")
    for a in _topo(model):
        for x, k in model.actor_reads[a]:
            comm(model.data_reads[x][k])
        p = model.actor_proc[a]
        per[p].append(f"{p} compute {model.actor_mean[a] / model.proc_speed[p] * compute_rate!r}")
        for c in model.actor_writes[a]:
            comm(c)
    out = [f"# one iteration of data-flow model {model.name!r} ({model.source}); "
           f"ranks = processors {', '.join(model.proc_names)}; sizes in data units (bytes)"]
    for r in range(P):
        out.extend(per[r])
        out.append(f"{r} finalize")
    return out


def write_ti(model, path, compute_rate: float = 1e9) -> int:
    """Write the trace atomically; returns the number of ranks."""
    atomic_write_text(path, "\n".join(ti_lines(model, compute_rate)) + "\n")
    return model.nproc
