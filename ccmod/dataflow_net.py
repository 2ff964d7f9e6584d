"""The discrete dynamics of a data-flow model (MMT's Petri net), shared by both solvers.

A :class:`Marking` is the state of the net between two timed events: tokens in every
actor's input slots (MMT's ``ready_i`` places), which actors wait for or run on their
processor, the data nodes' occupancy, the communications waiting for links (one FCFS
list) and the active transfers.  The timed events are *an actor finishes* and *a stage
of a transfer finishes*; everything else (deliveries on one processor, an actor becoming
ready, a transfer acquiring its links) is immediate and done by :func:`settle`.

The simulator (:mod:`ccmod.dataflow_sim`) applies events as they are due and draws the
order of simultaneous arrivals at a FCFS queue at random; the exact solver
(:mod:`ccmod.analytic.ctmc_dataflow`) enumerates every order with equal probability
(MMT's GSPN resolves such conflicts by random switches), so both describe one model.
Both measure with :func:`rewards` (time averages) and completion counts.

Semantics (documented in docs/dataflow.md):
* an actor runs one instance at a time; it starts when every input slot has a token and
  every data node it writes has room (capacity), consuming one token per slot and
  reserving one place per output;
* FCFS processors run one actor at a time in arrival order; PS processors run all their
  ready actors at ``speed * (1 - background) / n`` each;
* a finished actor writes one item to each output data node (a ``write`` communication);
  an item arriving at a data node starts one ``read`` communication per reader, whose
  delivery puts a token in the reader's slot; a data node's place is freed when all its
  readers have started with that item;
* a sink's completion puts a token in every source's loop slot (closed models).
"""
from __future__ import annotations

from itertools import permutations

__all__ = ["Marking", "initial", "actor_done", "job_done", "settle_ready", "admit",
           "reward_layout", "rewards"]


class Marking:
    """Mutable net state (see module doc); :meth:`key` is its hashable CTMC identity.

    ``xwait`` and ``active`` hold transfer jobs ``(comm, stage, tag)``; tags identify
    messages in the simulator (0 in the CTMC).  ``parr`` / ``xarr`` collect the arrivals
    at FCFS processor queues and at the link queue during one instant.
    """

    __slots__ = ("inbox", "astat", "pq", "prun", "held", "lag", "xwait", "active", "lbusy",
                 "parr", "xarr", "tag", "born", "delivered", "started")

    def copy(self) -> "Marking":
        m = Marking.__new__(Marking)
        m.inbox = list(self.inbox)
        m.astat = list(self.astat)
        m.pq = [list(q) for q in self.pq]
        m.prun = [list(r) for r in self.prun]
        m.held = list(self.held)
        m.lag = [list(x) for x in self.lag]
        m.xwait = list(self.xwait)
        m.active = list(self.active)
        m.lbusy = list(self.lbusy)
        m.parr = [list(q) for q in self.parr]
        m.xarr = list(self.xarr)
        m.tag = self.tag
        m.born = list(self.born)
        m.delivered = list(self.delivered)
        m.started = list(self.started)
        return m

    def key(self) -> tuple:
        return (tuple(self.inbox), tuple(self.astat), tuple(tuple(q) for q in self.pq),
                tuple(tuple(sorted(r)) for r in self.prun), tuple(self.held),
                tuple(tuple(x) for x in self.lag), tuple((c, s) for c, s, _ in self.xwait),
                tuple(sorted((c, s) for c, s, _ in self.active)))


def initial(model, tags: bool = True) -> Marking:
    """The initial marking (loop slots full), settled deterministically."""
    m = Marking.__new__(Marking)
    m.inbox = list(model.slot_init)
    m.astat = [0] * model.nactors
    m.pq = [[] for _ in range(model.nproc)]
    m.prun = [[] for _ in range(model.nproc)]
    m.held = [0] * len(model.data_names)
    m.lag = [[0] * len(r) for r in model.data_reads]
    m.xwait, m.active = [], []
    m.lbusy = [0] * model.nlinks
    m.parr = [[] for _ in range(model.nproc)]
    m.xarr = []
    m.tag = 1 if tags else 0
    m.born, m.delivered, m.started = [], [], []
    return m


def _new_msg(model, m: Marking, c: int) -> None:
    tag = 0
    if m.tag:
        tag = m.tag
        m.tag += 1
        m.born.append((c, tag))
    if model.comms[c].stages:
        _arrive(model, m, (c, 0, tag))
    else:
        _deliver(model, m, c, tag)


def _arrive(model, m: Marking, job) -> None:
    if model.comms[job[0]].stages[job[1]].kind == "exclusive":
        m.xarr.append(job)
    else:
        m.active.append(job)
        m.started.append(("job", job))


def _deliver(model, m: Marking, c: int, tag: int) -> None:
    cm = model.comms[c]
    if tag:
        m.delivered.append((c, tag))
    if cm.kind == "write":
        for rc in model.data_reads[cm.dst]:
            _new_msg(model, m, rc)
    else:
        m.inbox[cm.slot] += 1


def actor_done(model, m: Marking, a: int) -> None:
    """Timed event: actor ``a`` finishes on its processor."""
    m.prun[model.actor_proc[a]].remove(a)
    m.astat[a] = 0
    for c in model.actor_writes[a]:
        _new_msg(model, m, c)
    if model.closed:
        for s in model.loop_slots[a]:
            m.inbox[s] += 1


def job_done(model, m: Marking, job) -> None:
    """Timed event: a stage of a transfer finishes."""
    m.active.remove(job)
    c, s, tag = job
    st = model.comms[c].stages[s]
    if st.kind == "exclusive":
        for l in st.links:
            m.lbusy[l] = 0
    if s + 1 < len(model.comms[c].stages):
        _arrive(model, m, (c, s + 1, tag))
    else:
        _deliver(model, m, c, tag)


def settle_ready(model, m: Marking) -> None:
    """Start every actor that can start (index order); queue it at its processor."""
    changed = True
    while changed:
        changed = False
        for a in range(model.nactors):
            if m.astat[a]:
                continue
            if any(m.inbox[s] == 0 for s in model.actor_slots[a]):
                continue
            if any(model.data_capacity[model.comms[c].dst] is not None and
                   m.held[model.comms[c].dst] >= model.data_capacity[model.comms[c].dst]
                   for c in model.actor_writes[a]):
                continue
            for s in model.actor_slots[a]:
                m.inbox[s] -= 1
            for c in model.actor_writes[a]:
                if model.data_reads[model.comms[c].dst]:   # an unread item occupies nothing
                    m.held[model.comms[c].dst] += 1
            for x, k in model.actor_reads[a]:
                lag = m.lag[x]
                lag[k] += 1
                if min(lag) >= 1:       # every reader has taken this item: free its place
                    for j in range(len(lag)):
                        lag[j] -= 1
                    m.held[x] -= 1
                    changed = True
            m.astat[a] = 1
            p = model.actor_proc[a]
            if model.proc_discipline[p] == "FCFS":
                m.parr[p].append(a)
            else:
                m.prun[p].append(a)
                m.started.append(("actor", a))


def _distinct_perms(seq):
    if len(seq) <= 1:
        return [tuple(seq)]
    return sorted(set(permutations(seq)))


def arrival_orders(m: Marking):
    """Every (processor queue orders, link queue order) of this instant's arrivals.

    Returns a list of ``(probability, orders)``; each distinct order of simultaneous
    arrivals is equally likely.
    """
    choices = [(1.0, [None] * len(m.parr), None)]
    for p, arr in enumerate(m.parr):
        if len(arr) <= 1:
            continue
        perms = _distinct_perms(arr)
        choices = [(pr / len(perms), po[:p] + [q] + po[p + 1:], xo)
                   for pr, po, xo in choices for q in perms]
    if len(m.xarr) > 1:
        perms = _distinct_perms(m.xarr)
        choices = [(pr / len(perms), po, q) for pr, po, _ in choices for q in perms]
    return [(pr, (po, xo)) for pr, po, xo in choices]


def admit(model, m: Marking, orders=None) -> None:
    """Append this instant's arrivals in ``orders`` (default: as they came) and admit.

    FCFS processors start their queue head when idle; waiting transfers acquire all the
    links of their stage at once when all are free, scanning in FCFS order.
    """
    po, xo = orders if orders is not None else (None, None)
    for p, arr in enumerate(m.parr):
        if arr:
            m.pq[p].extend(po[p] if po is not None and po[p] is not None else arr)
            m.parr[p] = []
    if m.xarr:
        m.xwait.extend(xo if xo is not None else m.xarr)
        m.xarr = []
    for p, q in enumerate(m.pq):
        if q and not m.prun[p]:
            a = q.pop(0)
            m.prun[p].append(a)
            m.started.append(("actor", a))
    if m.xwait:
        keep = []
        for job in m.xwait:
            links = model.comms[job[0]].stages[job[1]].links
            if any(m.lbusy[l] for l in links):
                keep.append(job)
                continue
            for l in links:
                m.lbusy[l] = 1
            m.active.append(job)
            m.started.append(("job", job))
        m.xwait = keep


def reward_layout(model) -> dict:
    """Offsets of the time-averaged quantities in :func:`rewards`' vector."""
    P, L, A, C = model.nproc, model.nlinks, model.nactors, len(model.comms)
    off, lay = 0, {}
    for name, n in (("proc_busy", P), ("proc_n", P), ("actor_n", A), ("link_busy", L),
                    ("link_n", L), ("comm_n", C)):
        lay[name] = (off, off + n)
        off += n
    lay["size"] = off
    return lay


def rewards(model, m: Marking, lay: dict) -> list:
    """Instantaneous rewards: processor busy/number present, actors present at their
    processor, link busy/number of transfers waiting or active, messages in flight."""
    out = [0.0] * lay["size"]
    o = lay["proc_busy"][0]
    on = lay["proc_n"][0]
    for p in range(model.nproc):
        if m.prun[p]:
            out[o + p] = 1.0
        out[on + p] = len(m.prun[p]) + len(m.pq[p])
    o = lay["actor_n"][0]
    for a in range(model.nactors):
        out[o + a] = m.astat[a]
    ob, on, oc = lay["link_busy"][0], lay["link_n"][0], lay["comm_n"][0]
    comms = model.comms
    for c, s, _ in m.active:
        out[oc + c] += 1
        for l in comms[c].stages[s].links:
            out[ob + l] = 1.0
            out[on + l] += 1
    for c, s, _ in m.xwait:
        out[oc + c] += 1
        for l in comms[c].stages[s].links:
            out[on + l] += 1
    return out


def summarize(model, avg: list, lay: dict, x_actor: list, x_comm: list) -> dict:
    """The MMT metrics from time averages ``avg`` (see :func:`rewards`) and throughputs.

    Response times follow from Little's law (mean number present / throughput), the same
    way in the simulator and the exact solver.  Keys are identical for both.
    """
    def seg(name):
        a, b = lay[name]
        return avg[a:b]

    def div(n, x):
        return n / x if x > 0 else float("nan")
    busy, pn, an = seg("proc_busy"), seg("proc_n"), seg("actor_n")
    lb, ln, cn = seg("link_busy"), seg("link_n"), seg("comm_n")
    procs = {}
    for p, name in enumerate(model.proc_names):
        x = sum(x_actor[a] for a in range(model.nactors) if model.actor_proc[a] == p)
        procs[name] = {"utilization": busy[p], "throughput": x, "queue_length": pn[p],
                       "response_time": div(pn[p], x)}
    actors = {name: {"throughput": x_actor[a], "response_time": div(an[a], x_actor[a])}
              for a, name in enumerate(model.actor_names)}
    links = {}
    for l, name in enumerate(model.link_names):
        x = sum(x_comm[c] for c, cm in enumerate(model.comms) if l in cm.links)
        links[name] = {"utilization": lb[l], "queue_length": ln[l], "throughput": x}
    comms = {cm.name: {"throughput": x_comm[c], "response_time": div(cn[c], x_comm[c])}
             for c, cm in enumerate(model.comms) if cm.stages}
    xs = [x_actor[a] for a in model.sinks]
    x_app = sum(xs) / len(xs) if xs else float("nan")
    return {"application": {"throughput": x_app,
                            "response_time": div(model.population, x_app)},
            "processors": procs, "actors": actors, "links": links, "communications": comms}
