"""Queueing-style workloads: client-server, work-pile and request/reply (LoPC), Snakes and
hot-spot (J-Machine thesis).

Traces are static, so the order in which a server handles requests has to be decided at
generation time. Every generator here orders the events of all ranks by one global key
(the nominal time an event would happen with a contention-free network, plus a level that
breaks ties so that an event always comes after the event it depends on) and emits each
rank's ops in key order. Since every blocking op waits only for an op with a smaller key,
the generated program cannot deadlock, even under rendezvous semantics.

Approximations (documented in docs/workloads-generators.md): a request is served in the
order of its nominal issue time (queueing and network delays ignored when ordering);
a handler that arrives while the node is computing runs after that compute op (handlers do
not pre-empt work); handler/service times are drawn at generation time.
"""
from __future__ import annotations

import heapq
from collections import deque

import numpy as np

from ccmod.errors import CcmodInputError

from ccmod.workloads.base import Workload, WorkloadBuilder
from ccmod.workloads.gen_common import Reqs, check_nonneg, check_ranks, draw, finish, need, pick_other
from ccmod.workloads.registry import GENERATORS

TAG_REQUEST, TAG_REPLY = 1, 2


def _hot_weights(g, nranks, imbalance, hot_rank):
    need(np.isfinite(imbalance) and imbalance > 0, g, f"imbalance={imbalance} must be > 0")
    need(0 <= hot_rank < nranks, g, f"hot_rank={hot_rank} outside 0..{nranks - 1}")
    if imbalance == 1.0:
        return None
    w = np.ones(nranks)
    w[hot_rank] = imbalance
    return w


def _request_reply(b: WorkloadBuilder, nranks: int, cycles: dict, work_first: bool) -> None:
    """Emit closed request/reply cycles and the matching server handlers.

    Parameters
    ----------
    cycles : dict
        client rank -> list of transactions ``(work_s, server, service_s, request_bytes,
        reply_bytes, reply_handler_s)`` in program order.
    work_first : bool
        True: compute ``work_s`` then request (client-server think time, LoPC all-to-all);
        False: request then compute (work-pile: fetch a chunk, then work on it).
    """
    own = {r: [] for r in range(nranks)}       # rank -> [(key, event)] in program order
    handlers = {r: [] for r in range(nranks)}  # rank -> [(key, event)]
    for c, txns in cycles.items():
        t, prev = 0.0, (0.0, 0)
        for j, (work, srv, service, qb, pb, rh) in enumerate(txns):
            if work_first:
                own[c].append((prev, ("compute", work)))
                t += work
            issue = max((t, 0), prev)
            own[c].append((issue, ("issue", srv, qb, pb, j)))
            handle = (issue[0], issue[1] + 1)
            handlers[srv].append((handle, ("handle", c, qb, service, pb)))
            done = max((issue[0] + service, 0), (handle[0], handle[1] + 1))
            own[c].append((done, ("complete", j, rh)))
            prev, t = done, done[0] + rh
            if not work_first:
                own[c].append((prev, ("compute", work)))
                t += work
    req = Reqs(nranks)
    for r in range(nranks):
        hs = sorted(handlers[r], key=lambda e: e[0])  # stable: ties keep client order
        merged, i = [], 0
        for key, ev in own[r]:
            while i < len(hs) and hs[i][0] < key:
                merged.append(hs[i][1])
                i += 1
            merged.append(ev)
        merged.extend(ev for _, ev in hs[i:])
        open_ = {}
        for ev in merged:
            kind = ev[0]
            if kind == "compute":
                if ev[1] > 0:
                    b.compute(r, ev[1])
            elif kind == "issue":
                _, srv, qb, pb, j = ev
                q1, q2 = req(r), req(r)
                b.isend(r, srv, qb, q1, tag=TAG_REQUEST)
                b.irecv(r, srv, q2, pb, tag=TAG_REPLY)
                open_[j] = (q1, q2)
            elif kind == "complete":
                q1, q2 = open_.pop(ev[1])
                b.wait(r, q2)
                b.wait(r, q1)
                if ev[2] > 0:
                    b.compute(r, ev[2])  # reply handler on the requester
            else:
                _, c, qb, service, pb = ev
                b.recv(r, c, qb, tag=TAG_REQUEST)
                if service > 0:
                    b.compute(r, service)
                b.send(r, c, pb, tag=TAG_REPLY)


@GENERATORS.register(
    "client_server",
    "closed client-server: exponential think and service times, Ps servers, Pc clients")
def client_server(servers: int = 1, clients: int = 7, requests: int = 20, think_s: float = 1e-4,
                  service_s: float = 2e-5, request_bytes: int = 64, reply_bytes: int = 1024,
                  think_dist: str = "exponential", service_dist: str = "exponential",
                  assign: str = "random", seed: int = 0) -> Workload:
    """Closed client-server system: ranks 0..servers-1 serve, the next ``clients`` ranks ask.

    Each client repeats ``requests`` times: think (mean ``think_s``, exponential inter-arrival
    by default), send a request of ``request_bytes`` to a server (uniformly random, or
    ``assign=static``: client i always uses server i % servers), wait for the reply of
    ``reply_bytes``. A server handles requests in order of nominal arrival, each taking
    a service time of mean ``service_s``.
    """
    g = "client_server"
    need(servers >= 1 and clients >= 1, g, f"servers={servers}, clients={clients} must be >= 1")
    need(assign in ("random", "static"), g, f"unknown assign '{assign}'", "valid: random, static")
    check_nonneg(g, requests=requests, think_s=think_s, service_s=service_s,
                 request_bytes=request_bytes, reply_bytes=reply_bytes)
    rng = np.random.default_rng(seed)
    n = servers + clients
    think = draw(rng, think_dist, think_s, (clients, requests), g, "think_dist")
    service = draw(rng, service_dist, service_s, (clients, requests), g, "service_dist")
    if assign == "random":
        srv = rng.integers(0, servers, size=(clients, requests))
    else:
        srv = np.repeat((np.arange(clients) % servers)[:, None], requests, axis=1)
    cycles = {servers + i: [(think[i, j], int(srv[i, j]), service[i, j], request_bytes,
                             reply_bytes, 0.0) for j in range(requests)]
              for i in range(clients)}
    b = WorkloadBuilder(n)
    _request_reply(b, n, cycles, work_first=True)
    return finish(b, g, dict(servers=servers, clients=clients, requests=requests,
                             think_s=think_s, service_s=service_s, request_bytes=request_bytes,
                             reply_bytes=reply_bytes, think_dist=think_dist,
                             service_dist=service_dist, assign=assign), seed,
                  roles={"servers": list(range(servers))})


@GENERATORS.register(
    "workpile",
    "LoPC work-pile: clients fetch chunks from random servers, work W")
def workpile(nranks: int = 32, servers: int = 4, chunks: int = 20, work_s: float = 1e-4,
             handler_s: float = 1e-5, request_bytes: int = 16, reply_bytes: int = 256,
             work_dist: str = "exponential", handler_dist: str = "exponential",
             seed: int = 0) -> Workload:
    """LoPC work-pile (Frank et al. 1997, ch. 6): Ps servers hand out chunks to Pc clients.

    Ranks 0..servers-1 are servers, the others clients. Each client ``chunks`` times asks a
    uniformly random server for a chunk (``request_bytes``), the server's handler runs
    for So (mean ``handler_s``) and replies with ``reply_bytes``; the client's reply
    handler also takes So; then the client works W (mean ``work_s``) on the chunk. One
    cycle costs at least W + 2 So + 2 network latencies, as in the LoPC bound.
    """
    g = "workpile"
    check_ranks(g, nranks, 2)
    need(1 <= servers < nranks, g, f"servers={servers} must be in 1..nranks-1")
    check_nonneg(g, chunks=chunks, work_s=work_s, handler_s=handler_s,
                 request_bytes=request_bytes, reply_bytes=reply_bytes)
    rng = np.random.default_rng(seed)
    clients = nranks - servers
    work = draw(rng, work_dist, work_s, (clients, chunks), g, "work_dist")
    so = draw(rng, handler_dist, handler_s, (clients, chunks, 2), g, "handler_dist")
    srv = rng.integers(0, servers, size=(clients, chunks))
    cycles = {servers + i: [(work[i, j], int(srv[i, j]), so[i, j, 0], request_bytes,
                             reply_bytes, so[i, j, 1]) for j in range(chunks)]
              for i in range(clients)}
    b = WorkloadBuilder(nranks)
    _request_reply(b, nranks, cycles, work_first=False)
    return finish(b, g, dict(nranks=nranks, servers=servers, chunks=chunks, work_s=work_s,
                             handler_s=handler_s, request_bytes=request_bytes,
                             reply_bytes=reply_bytes, work_dist=work_dist,
                             handler_dist=handler_dist), seed,
                  roles={"servers": list(range(servers))})


@GENERATORS.register(
    "reqreply",
    "LoPC all-to-all request/reply: work W, request to a random node, handler So, reply")
def reqreply(nranks: int = 32, requests: int = 20, work_s: float = 1e-4, handler_s: float = 1e-5,
             request_bytes: int = 16, reply_bytes: int = 16, work_dist: str = "exponential",
             handler_dist: str = "exponential", imbalance: float = 1.0, hot_rank: int = 0,
             model: str = "static", seed: int = 0) -> Workload:
    """LoPC homogeneous all-to-all request/reply (Frank et al. 1997, ch. 5).

    ``model="static"`` writes the servers' side as ordinary recv/compute/send records in a
    fixed order (any MPI replayer can run it); ``model="am"`` writes one active-message
    request per cycle (``OP_AMREQUEST``), whose handlers the engine runs on arrival,
    interrupting compute, as LoPC assumes (then request and reply handlers of one cycle
    take the same drawn time, and request and reply have ``request_bytes``).

    Every rank's thread ``requests`` times computes W (mean ``work_s``), sends a request to
    a uniformly random other rank and waits for the reply; the target's request handler
    runs So (mean ``handler_s``) and replies; the reply handler on the requester also
    runs So. ``imbalance`` B > 1 makes ``hot_rank`` B times as likely a target as any
    other rank (J-Machine hot spot, REQREP).
    """
    g = "reqreply"
    check_ranks(g, nranks, 2)
    check_nonneg(g, requests=requests, work_s=work_s, handler_s=handler_s,
                 request_bytes=request_bytes, reply_bytes=reply_bytes)
    weights = _hot_weights(g, nranks, imbalance, hot_rank)
    rng = np.random.default_rng(seed)
    work = draw(rng, work_dist, work_s, (nranks, requests), g, "work_dist")
    so = draw(rng, handler_dist, handler_s, (nranks, requests, 2), g, "handler_dist")
    src = np.repeat(np.arange(nranks)[:, None], requests, axis=1)
    dst = pick_other(rng, src, nranks, weights)
    cycles = {r: [(work[r, j], int(dst[r, j]), so[r, j, 0], request_bytes, reply_bytes,
                   so[r, j, 1]) for j in range(requests)] for r in range(nranks)}
    b = WorkloadBuilder(nranks)
    if model == "am":
        for r in range(nranks):
            for j in range(requests):
                b.compute(r, work[r, j])
                b.amrequest(r, int(dst[r, j]), request_bytes, so[r, j, 0])
    elif model == "static":
        _request_reply(b, nranks, cycles, work_first=True)
    else:
        raise CcmodInputError(f"reqreply: model must be 'static' or 'am', not '{model}'",
                              source="generate")
    return finish(b, g, dict(nranks=nranks, requests=requests, work_s=work_s,
                             handler_s=handler_s, request_bytes=request_bytes,
                             reply_bytes=reply_bytes, work_dist=work_dist,
                             handler_dist=handler_dist, imbalance=imbalance,
                             hot_rank=hot_rank, model=model), seed)


@GENERATORS.register(
    "snakes",
    "J-Machine Snakes: closed random task migration, N*m snakes of L hops")
def snakes(nranks: int = 64, snakes: int = 5, hops: int = 20, nbytes: int = 12,
           handler_s: float = 6.5e-6, handler_dist: str = "deterministic", latency_s: float = 0.0,
           imbalance: float = 1.0, hot_rank: int = 0, barrier: bool = True,
           seed: int = 0) -> Workload:
    """J-Machine "Snakes" (Section 4.1): a closed random message-passing workload.

    ``snakes`` (m) tasks start on every rank; a task runs its handler (h = ``handler_s``)
    on its processor, picks a uniformly random other processor and moves there as one
    message of ``nbytes`` (payload p); after ``hops`` (L) moves it runs a last handler and
    exits, so N*m*L messages in total. Processors serve their queue in FIFO order; the
    order is computed by a small discrete-event simulation with a contention-free network
    of latency ``latency_s``. Moves are isends (the J-Machine buffers messages in hardware
    queues) waited for at the end; ``barrier`` brackets the end as in the thesis.
    ``imbalance`` B > 1 makes ``hot_rank`` a hot spot. Tag = snake id. Defaults follow the
    thesis' measurements (m = 5, p = 3 words of 4 bytes, h = 65 cycles at 10 MHz) with
    fewer ranks and hops (it used 512 processors and L = 1000).
    """
    g = "snakes"
    check_ranks(g, nranks, 2)
    check_nonneg(g, snakes=snakes, hops=hops, nbytes=nbytes, handler_s=handler_s,
                 latency_s=latency_s)
    weights = _hot_weights(g, nranks, imbalance, hot_rank)
    rng = np.random.default_rng(seed)
    ns = nranks * snakes
    home = np.repeat(np.arange(nranks), snakes)
    path = np.empty((ns, hops + 1), dtype=np.int64)
    path[:, 0] = home
    for k in range(hops):
        path[:, k + 1] = pick_other(rng, path[:, k], nranks, weights)
    h = draw(rng, handler_dist, handler_s, (ns, hops + 1), g, "handler_dist")

    # discrete-event simulation of FIFO processor queues (events ordered by time, counter)
    queue = [deque() for _ in range(nranks)]
    busy = [False] * nranks
    heap, cnt = [], 0
    for s in range(ns):
        queue[home[s]].append((s, 0))
    program = [[] for _ in range(nranks)]  # rank -> [(snake, hop)] in service order

    def start(p, t):
        nonlocal cnt
        s, k = queue[p].popleft()
        busy[p] = True
        program[p].append((s, k))
        heapq.heappush(heap, (t + h[s, k], cnt, "done", p, s, k))
        cnt += 1

    for p in range(nranks):
        if queue[p]:
            start(p, 0.0)
    while heap:
        t, _, what, p, s, k = heapq.heappop(heap)
        if what == "done":
            busy[p] = False
            if k < hops:
                heapq.heappush(heap, (t + latency_s, cnt, "arrive", int(path[s, k + 1]), s, k + 1))
                cnt += 1
        else:
            queue[p].append((s, k))
        if not busy[p] and queue[p]:
            start(p, t)

    b = WorkloadBuilder(nranks)
    req = Reqs(nranks)
    for p in range(nranks):
        sends = []
        for s, k in program[p]:
            if k > 0:
                b.recv(p, int(path[s, k - 1]), nbytes, tag=s)
            if h[s, k] > 0:
                b.compute(p, h[s, k])
            if k < hops:
                q = req(p)
                b.isend(p, int(path[s, k + 1]), nbytes, q, tag=s)
                sends.append(q)
        for q in sends:
            b.wait(p, q)
        if barrier:
            b.barrier(p)
    return finish(b, g, dict(nranks=nranks, snakes=snakes, hops=hops, nbytes=nbytes,
                             handler_s=handler_s, handler_dist=handler_dist,
                             latency_s=latency_s, imbalance=imbalance, hot_rank=hot_rank,
                             barrier=barrier), seed)


@GENERATORS.register(
    "hotspot",
    "J-Machine hot spot: Snakes or request/reply with one rank B times as popular")
def hotspot(nranks: int = 64, pattern: str = "snakes", imbalance: float = 1.35, hot_rank: int = 0,
            per_rank: int = 5, hops: int = 20, nbytes: int = 12, handler_s: float = 6.5e-6,
            work_s: float = 1e-4, seed: int = 0) -> Workload:
    """J-Machine hot-spot workload (Section 6.3, B = 1.35): ``hot_rank`` is ``imbalance``
    times as likely a destination as any other rank.

    ``pattern=snakes`` (REF): Snakes with ``per_rank`` snakes per rank of ``hops`` moves.
    ``pattern=reqreply`` (REQREP): request/reply with ``per_rank`` requests per rank,
    think time ``work_s``, deterministic handlers ``handler_s`` and ``nbytes`` messages.
    """
    g = "hotspot"
    need(pattern in ("snakes", "reqreply"), g, f"unknown pattern '{pattern}'",
         "valid: snakes, reqreply")
    if pattern == "snakes":
        w = snakes(nranks=nranks, snakes=per_rank, hops=hops, nbytes=nbytes, handler_s=handler_s,
                   imbalance=imbalance, hot_rank=hot_rank, seed=seed)
    else:
        w = reqreply(nranks=nranks, requests=per_rank, work_s=work_s, handler_s=handler_s,
                     request_bytes=nbytes, reply_bytes=nbytes, handler_dist="deterministic",
                     imbalance=imbalance, hot_rank=hot_rank, seed=seed)
    w.meta.update(generator=g, pattern=pattern,
                  params=dict(nranks=nranks, pattern=pattern, imbalance=imbalance,
                              hot_rank=hot_rank, per_rank=per_rank, hops=hops, nbytes=nbytes,
                              handler_s=handler_s, work_s=work_s))
    return w
