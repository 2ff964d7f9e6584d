"""Turn one rank's GOAL dependency graph into ccmod's sequential op array.

LogGOPSim (``LogGOPSim.cpp``) starts an operation as soon as its dependencies allow:
``A requires B`` waits for B to *finish*, ``A irequires B`` only for B to *start*. Ready
operations that appear together are queued by type (sends, then receives, then local
``calc``), a ``calc`` occupies the CPU it names (``cpu N``) for its length, a receive
starts when it is posted, and a send finishes at once when it is eager and at the match
when it is a rendezvous.

ccmod's kernel replays a rank as one sequence of blocking ``compute``, non-blocking
``isend``/``irecv`` and ``wait``s. :func:`linearise` produces that sequence by list
scheduling the graph the way LogGOPSim's event loop walks it:

1. post every send/receive whose dependencies are met (declaration order), repeatedly,
   since posting one satisfies ``irequires`` edges on it;
2. otherwise run the ready ``calc`` operations: the first ready one of each CPU together,
   as one ``compute`` lasting the longest of them (they run concurrently on different
   CPUs in LogGOPSim);
3. otherwise wait for the earliest posted request that a not yet issued operation
   ``requires`` (completion order is only known at replay, so first posted is assumed
   first finished).

A final ``waitall`` completes the requests nobody waited for.
"""
from __future__ import annotations

import heapq

#: kinds of a GOAL operation, as read from text or binary schedules
CALC, SEND, RECV = 0, 1, 2


def linearise(kinds, cpus, deps):
    """Issue order of one rank's GOAL graph.

    Parameters
    ----------
    kinds : sequence of int
        ``CALC``/``SEND``/``RECV`` per operation (index = declaration order).
    cpus : sequence of int
        CPU of each operation (``cpu N`` modifier, 0 by default).
    deps : iterable of (a, start_only, b)
        ``a`` requires (``start_only``: irequires) ``b``; indices into ``kinds``.

    Returns
    -------
    list of tuple
        ``("post", i)`` for a send/receive, ``("calc", [i, ...])`` for calc operations
        run together (one per CPU), ``("wait", i)`` for a wait on send/receive ``i``.

    Raises
    ------
    ValueError
        The graph has a cycle (the message names up to four operations in it).
    """
    n = len(kinds)
    unmet = [0] * n
    on_start = [[] for _ in range(n)]   # ops that irequire i
    on_done = [[] for _ in range(n)]    # ops that require i
    for a, start_only, b in deps:
        unmet[a] += 1
        (on_start if start_only else on_done)[b].append(a)
    comm_ready, calc_ready = [], []
    posted = []                          # heap of (post sequence, op) not waited on yet
    seq = 0
    issued = 0
    out = []

    def release(ops):
        for a in ops:
            unmet[a] -= 1
            if unmet[a] == 0:
                heapq.heappush(calc_ready if kinds[a] == CALC else comm_ready, a)

    for i in range(n):
        if unmet[i] == 0:
            heapq.heappush(calc_ready if kinds[i] == CALC else comm_ready, i)
    while issued < n:
        if comm_ready:
            i = heapq.heappop(comm_ready)
            out.append(("post", i))
            issued += 1
            if on_done[i]:
                heapq.heappush(posted, (seq, i))
            seq += 1
            release(on_start[i])
            continue
        if calc_ready:
            first = {}
            rest = []
            while calc_ready:
                i = heapq.heappop(calc_ready)
                if cpus[i] in first:
                    rest.append(i)
                else:
                    first[cpus[i]] = i
            for i in rest:
                heapq.heappush(calc_ready, i)
            group = sorted(first.values())
            out.append(("calc", group))
            issued += len(group)
            for i in group:
                release(on_start[i])
                release(on_done[i])
            continue
        if posted:
            _, i = heapq.heappop(posted)
            out.append(("wait", i))
            release(on_done[i])
            continue
        stuck = [i for i in range(n) if unmet[i] > 0]
        raise ValueError(stuck[:4])
    return out
