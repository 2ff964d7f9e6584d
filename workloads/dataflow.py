"""Data-flow graph workloads (the Multigraph Modeling Tool, Childers et al. 1994).

A data-flow model (JSON, see ``docs/dataflow.md``) describes an application as actor
nodes (tasks with a service-time distribution) that write to and read from data nodes,
the hardware (processors with a FCFS or PS discipline and links of type ethernet,
store_and_forward or virtual_circuit) and the placement (processor of every actor and
data node, link route of every cross-processor communication).

:func:`load` reads and validates a file into a :class:`DataflowModel` whose arrays are
indexed by integers (actors, processors, links, data nodes, communications, input
slots); the simulator (:mod:`ccmod.dataflow_sim`) and the exact Markov-chain solver
(:mod:`ccmod.analytic.ctmc_dataflow`) both work from it.  Every error is one line naming
the file, what is wrong and what to do.

Compiled structure
------------------
* a *communication* carries one data item along an edge: ``write`` (actor -> data),
  ``read`` (data -> actor).  Same-processor communications and those of amount 0 have
  no stages (free);
  otherwise the route's links become *stages*: consecutive virtual_circuit links form one
  ``exclusive`` stage (all links held at once, FCFS), every store_and_forward link is its
  own ``exclusive`` stage (one hop), every ethernet link is a ``shared`` stage (the medium
  is processor-shared by its active transfers).  A stage lasts
  ``sum(latency) + amount / min(rate)`` at full rate.
* an actor's *input slots* (MMT's ``ready_i`` places) are one per read edge plus, when the
  model is closed, one *loop slot* per sink for each source actor, which holds the
  iterations in flight (``closed: N``: N initial tokens; ``once``: one).
"""
from __future__ import annotations

import json
import math
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from ccmod.workloads.dataflow_rules import rule
from ccmod.errors import CcmodInputError

__all__ = ["DataflowModel", "Stage", "Comm", "load", "from_dict", "DISCIPLINES", "LINK_TYPES",
           "LINK_RULE", "DISTRIBUTIONS"]

DISCIPLINES = ("FCFS", "PS")
#: link type (file) -> registered sharing rule (:mod:`ccmod.workloads.dataflow_rules`)
LINK_RULE = {"virtual_circuit": "circuit", "store_and_forward": "store_forward",
             "ethernet": "ethernet"}
LINK_TYPES = tuple(LINK_RULE)
DISTRIBUTIONS = ("exponential", "constant", "erlang:K", "normal")
_TOP_KEYS = {"name", "description", "reference", "notes", "time_unit", "closed", "once",
             "transfer_distribution", "processors", "links", "actors", "data", "edges", "routes"}


@dataclass(frozen=True)
class Stage:
    """One leg of a communication: ``exclusive`` (links held) or ``shared`` (ethernet)."""

    kind: str
    links: tuple
    mean: float          # time at full rate: latency + amount / rate


@dataclass
class Comm:
    name: str            # "A1->D1"
    kind: str            # "write" | "read"
    src: int             # actor (write) or data node (read)
    dst: int             # data node (write) or actor (read)
    amount: float
    stages: list         # [Stage]; empty: same processor, free
    links: tuple = ()    # route (link ids in order)
    slot: int = -1       # read: the reader's input slot


@dataclass
class DataflowModel:
    """A validated data-flow model with integer-indexed structure (see module doc)."""

    name: str
    source: str
    proc_names: list
    proc_discipline: list    # "FCFS" | "PS"
    proc_speed: list
    proc_background: list    # fraction of the processor taken by background work
    link_names: list
    link_endpoints: list     # [tuple of processor ids]
    link_rate: list
    link_type: list          # "virtual_circuit" | "store_and_forward" | "ethernet"
    link_latency: list
    actor_names: list
    actor_proc: list
    actor_mean: list
    actor_dist: list         # (kind, param): ("exponential", None), ("erlang", k), ...
    data_names: list
    data_proc: list
    data_capacity: list      # int or None (unbounded)
    comms: list              # [Comm]
    actor_writes: list       # per actor: [write comm id]
    actor_reads: list        # per actor: [(data id, reader index k)]
    data_writer: list        # per data: writer actor
    data_reads: list         # per data: [read comm id] (k-th reader = k-th entry)
    actor_slots: list        # per actor: [slot id]
    nslots: int
    slot_init: list          # initial tokens per slot
    loop_slots: list         # per actor (sink): [slot ids it refills]
    sources: list
    sinks: list
    closed: bool
    population: int          # iterations in flight (closed) or 1 (once)
    transfer_distribution: str
    time_unit: str = "time unit"
    meta: dict = field(default_factory=dict)

    @property
    def nproc(self) -> int:
        return len(self.proc_names)

    @property
    def nlinks(self) -> int:
        return len(self.link_names)

    @property
    def nactors(self) -> int:
        return len(self.actor_names)

    def link_comms(self) -> list:
        """Comm ids (with stages) by link, in comm order."""
        out = [[] for _ in self.link_names]
        for c, cm in enumerate(self.comms):
            for l in cm.links:
                out[l].append(c)
        return out

    def all_exponential(self) -> tuple[bool, str]:
        """(True, "") if every timed activity is exponential, else (False, which is not)."""
        for a, (kind, _) in enumerate(self.actor_dist):
            if kind != "exponential":
                return False, f"actor {self.actor_names[a]!r} has a {kind} service time"
        if self.transfer_distribution != "exponential" and any(c.stages for c in self.comms):
            return False, f"transfer_distribution is {self.transfer_distribution!r}"
        return True, ""


class _Err:
    def __init__(self, source: str):
        self.source = source

    def __call__(self, what: str, hint: str | None = None) -> CcmodInputError:
        return CcmodInputError(what, source=self.source, hint=hint)


def load(path) -> DataflowModel:
    """Read and validate a data-flow JSON file."""
    p = Path(path)
    err = _Err(str(path))
    try:
        text = p.read_text()
    except FileNotFoundError:
        raise err("no such file", "check the path") from None
    except IsADirectoryError:
        raise err("is a directory", "give a .dataflow.json file") from None
    except UnicodeDecodeError:
        raise err("not a text file", "give a data-flow JSON file (docs/dataflow.md)") from None
    try:
        d = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CcmodInputError(f"not valid JSON: {exc.msg}", source=str(path), line=exc.lineno,
                              hint="fix the JSON syntax") from None
    return from_dict(d, source=str(path), default_name=p.name.split(".")[0])


def _num(err, v, what, *, pos=True, allow_zero=False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise err(f"{what} must be a number, got {v!r}", "write a finite number")
    if pos and (v < 0 or (v == 0 and not allow_zero)):
        raise err(f"{what} must be {'>= 0' if allow_zero else '> 0'}, got {v!r}",
                  "use a positive value")
    return float(v)


def _items(err, d, key, required=True) -> list:
    v = d.get(key, [] if not required else None)
    if v is None:
        raise err(f"missing {key!r}", f"add a {key!r} list (see docs/dataflow.md)")
    if not isinstance(v, list):
        raise err(f"{key!r} must be a list", f"write {key!r}: [ {{...}}, ... ]")
    for i, x in enumerate(v):
        if not isinstance(x, dict):
            raise err(f"{key}[{i}] must be an object", "write {\"name\": ..., ...}")
    return v


def _names(err, items, key) -> dict:
    idx = {}
    for i, x in enumerate(items):
        n = x.get("name")
        if not isinstance(n, str) or not n:
            raise err(f"{key}[{i}] has no 'name'", "give every entry a unique name")
        if n in idx:
            raise err(f"duplicate {key} name {n!r}", "names must be unique")
        idx[n] = i
    return idx


def _ref(err, idx, name, what, where):
    if name not in idx:
        valid = ", ".join(sorted(idx)[:12]) or "(none)"
        raise err(f"{where}: unknown {what} {name!r}", f"valid {what}s: {valid}")
    return idx[name]


def _dist(err, a: dict, where: str):
    s = a.get("distribution", "exponential")
    if not isinstance(s, str):
        raise err(f"{where}: distribution must be a string", f"one of {', '.join(DISTRIBUTIONS)}")
    s = s.strip().lower()
    if s in ("exponential", "exp"):
        return ("exponential", None)
    if s in ("constant", "deterministic"):
        return ("constant", None)
    if s.startswith("erlang"):
        try:
            k = int(s.split(":", 1)[1])
        except (IndexError, ValueError):
            k = 0
        if k < 1:
            raise err(f"{where}: bad distribution {s!r}", "write erlang:K with an integer K >= 1")
        return ("erlang", k)
    if s == "normal":
        var = _num(err, a.get("variance"), f"{where}: variance (normal)", allow_zero=True)
        return ("normal", var)
    raise err(f"{where}: unknown distribution {s!r}", f"valid: {', '.join(DISTRIBUTIONS)}")


def _shortest_route(model_links, nproc, a: int, b: int):
    """Fewest-hop link list from processor a to b (BFS; ties: lower link index first)."""
    adj = [[] for _ in range(nproc)]
    for l, ends in enumerate(model_links):
        for u in ends:
            for v in ends:
                if u != v:
                    adj[u].append((l, v))
    prev = {a: None}
    q = deque([a])
    while q:
        u = q.popleft()
        if u == b:
            break
        for l, v in sorted(adj[u]):
            if v not in prev:
                prev[v] = (u, l)
                q.append(v)
    if b not in prev:
        return None
    path = []
    u = b
    while prev[u] is not None:
        u0, l = prev[u]
        path.append(l)
        u = u0
    return path[::-1]


def _check_route(links_ends, route, a: int, b: int) -> bool:
    """True if the link list is a walk from processor a to processor b."""
    u = a
    for l in route:
        ends = links_ends[l]
        if u not in ends:
            return False
        others = [v for v in ends if v != u]
        if len(ends) == 2:
            u = others[0]
        else:       # a shared medium: continue towards b if it is on it, else any next hop
            nxt = [v for v in others if v == b]
            u = nxt[0] if nxt else None
            if u is None:
                # the next link decides: find an endpoint shared with it
                return _check_bus_walk(links_ends, route, a, b)
    return u == b


def _check_bus_walk(links_ends, route, a, b) -> bool:
    cur = {a}
    for l in route:
        ends = set(links_ends[l])
        if not cur & ends:
            return False
        cur = ends - cur if len(ends) == 2 else ends
    return b in cur


def _stages(route, link_type, link_rate, link_latency, amount):
    """Split a route into stages by the link types' registered rules (ccmod.workloads.dataflow_rules)."""
    stages, run = [], []
    run_rule = [None]

    def flush():
        if run:
            lat = sum(link_latency[l] for l in run)
            stages.append(Stage(run_rule[0].stage_kind, tuple(run),
                                lat + amount / min(link_rate[l] for l in run)))
            run.clear()
    for l in route:
        r = rule(LINK_RULE[link_type[l]])
        if run and (not r.merge or r != run_rule[0]):
            flush()
        run.append(l)
        run_rule[0] = r
        if not r.merge:
            flush()
    flush()
    return stages


def from_dict(d: dict, source: str = "<dataflow>", default_name: str = "dataflow") -> DataflowModel:
    """Validate a parsed data-flow document (see :func:`load`)."""
    err = _Err(source)
    if not isinstance(d, dict):
        raise err("the top level must be a JSON object", "see docs/dataflow.md")
    unknown = sorted(set(d) - _TOP_KEYS)
    if unknown:
        raise err(f"unknown key {unknown[0]!r}", "valid keys: " + ", ".join(sorted(_TOP_KEYS)))
    procs = _items(err, d, "processors")
    links = _items(err, d, "links", required=False)
    actors = _items(err, d, "actors")
    datas = _items(err, d, "data", required=False)
    edges = _items(err, d, "edges", required=False)
    routes = _items(err, d, "routes", required=False)
    if not procs:
        raise err("no processors", "add at least one processor")
    if not actors:
        raise err("no actors", "add at least one actor")
    pidx, lidx = _names(err, procs, "processors"), _names(err, links, "links")
    aidx, didx = _names(err, actors, "actors"), _names(err, datas, "data")
    both = set(aidx) & set(didx)
    if both:
        raise err(f"name {sorted(both)[0]!r} is both an actor and a data node",
                  "actor and data node names must differ")

    disc, speed, bg = [], [], []
    for i, p in enumerate(procs):
        w = f"processor {p['name']!r}"
        ds = str(p.get("discipline", "FCFS")).upper()
        if ds not in DISCIPLINES:
            raise err(f"{w}: unknown discipline {p.get('discipline')!r}", "use FCFS or PS")
        disc.append(ds)
        speed.append(_num(err, p.get("speed", 1.0), f"{w}: speed"))
        b = _num(err, p.get("background", 0.0), f"{w}: background", allow_zero=True)
        if b >= 1:
            raise err(f"{w}: background {b} must be < 1", "a fraction of the processor in [0, 1)")
        bg.append(b)
    l_ends, l_rate, l_type, l_lat = [], [], [], []
    for i, l in enumerate(links):
        w = f"link {l['name']!r}"
        ends = l.get("endpoints")
        if not isinstance(ends, list) or len(ends) < 2:
            raise err(f"{w}: 'endpoints' must list at least 2 processors",
                      "e.g. \"endpoints\": [\"P1\", \"P2\"]")
        e = tuple(_ref(err, pidx, x, "processor", w) for x in ends)
        if len(set(e)) != len(e):
            raise err(f"{w}: repeated endpoint", "list each processor once")
        t = l.get("type", "virtual_circuit")
        if t not in LINK_TYPES:
            raise err(f"{w}: unknown type {t!r}", f"valid types: {', '.join(LINK_TYPES)}")
        if len(e) > 2 and t != "ethernet":
            raise err(f"{w}: {len(e)} endpoints need type ethernet",
                      "a point-to-point link has two endpoints")
        l_ends.append(e)
        l_rate.append(_num(err, l.get("rate"), f"{w}: rate"))
        l_type.append(t)
        l_lat.append(_num(err, l.get("latency", 0.0), f"{w}: latency", allow_zero=True))

    a_proc, a_mean, a_dist = [], [], []
    for a in actors:
        w = f"actor {a['name']!r}"
        a_proc.append(_ref(err, pidx, a.get("processor"), "processor", w))
        a_mean.append(_num(err, a.get("mean"), f"{w}: mean"))
        a_dist.append(_dist(err, a, w))
    d_proc, d_cap = [], []
    for x in datas:
        w = f"data {x['name']!r}"
        d_proc.append(_ref(err, pidx, x.get("processor"), "processor", w))
        cap = x.get("capacity")
        if cap is not None:
            if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
                raise err(f"{w}: capacity must be an integer >= 1 or null", "null: unbounded")
        d_cap.append(cap)

    A, D = len(actors), len(datas)
    writes, reads = [], []          # (actor, data, amount), (data, actor, amount)
    for i, e in enumerate(edges):
        f, t = e.get("from"), e.get("to")
        w = f"edges[{i}] ({f}->{t})"
        amt = _num(err, e.get("amount", 0.0), f"{w}: amount", allow_zero=True)
        if f in aidx and t in didx:
            writes.append((aidx[f], didx[t], amt))
        elif f in didx and t in aidx:
            reads.append((didx[f], aidx[t], amt))
        else:
            raise err(f"{w}: an edge goes from an actor to a data node or from a data node "
                      f"to an actor", "check the names in 'from'/'to'")
    if len({(a, x) for a, x, _ in writes}) != len(writes) or \
            len({(x, a) for x, a, _ in reads}) != len(reads):
        raise err("duplicate edge", "give each actor/data pair one edge per direction")
    d_writer = [-1] * D
    for a, x, _ in writes:
        if d_writer[x] >= 0:
            raise err(f"data {datas[x]['name']!r} has two writers", "use one data node per writer")
        d_writer[x] = a
    for x in range(D):
        if d_writer[x] < 0:
            raise err(f"data {datas[x]['name']!r} is never written",
                      "add an edge from an actor to it or remove it")

    # acyclic check (actors via data nodes)
    succ = [set() for _ in range(A)]
    for x, a, _ in reads:
        succ[d_writer[x]].add(a)
    state = [0] * A

    def visit(u):
        state[u] = 1
        for v in succ[u]:
            if state[v] == 1:
                raise err(f"the graph has a cycle through actor {actors[v]['name']!r}",
                          "data-flow graphs must be acyclic; repeat them with \"closed\": N")
            if state[v] == 0:
                visit(v)
        state[u] = 2
    for u in range(A):
        if state[u] == 0:
            visit(u)

    route_map = {}
    for i, r in enumerate(routes):
        key = (r.get("from"), r.get("to"))
        w = f"routes[{i}] ({key[0]}->{key[1]})"
        lk = r.get("links")
        if not isinstance(lk, list):
            raise err(f"{w}: 'links' must be a list of link names", "e.g. [\"l12\", \"l23\"]")
        route_map[key] = ([_ref(err, lidx, n, "link", w) for n in lk], w)

    comms: list[Comm] = []
    used_routes = set()

    def make(kind, src, dst, amount, name, pa, pb):
        key = tuple(name.split("->"))
        if pa == pb or amount == 0:     # free: same processor, or nothing to move
            if key in route_map:
                used_routes.add(key)
            return Comm(name, kind, src, dst, amount, [])
        if key in route_map:
            route, w = route_map[key]
            used_routes.add(key)
            if not _check_route(l_ends, route, pa, pb):
                raise err(f"{w}: the links do not lead from {procs[pa]['name']} to "
                          f"{procs[pb]['name']}", "list the links of the path in order")
        else:
            route = _shortest_route(l_ends, len(procs), pa, pb)
            if route is None:
                raise err(f"no link path from {procs[pa]['name']} to {procs[pb]['name']} for "
                          f"{name}", "add links or place both ends on one processor")
        if not route:
            return Comm(name, kind, src, dst, amount, [])
        return Comm(name, kind, src, dst, amount, _stages(route, l_type, l_rate, l_lat, amount),
                    tuple(route))

    actor_writes = [[] for _ in range(A)]
    for a, x, amt in writes:
        actor_writes[a].append(len(comms))
        comms.append(make("write", a, x, amt, f"{actors[a]['name']}->{datas[x]['name']}",
                          a_proc[a], d_proc[x]))
    data_reads = [[] for _ in range(D)]
    actor_reads = [[] for _ in range(A)]
    actor_slots = [[] for _ in range(A)]
    nslots = 0
    for x, a, amt in reads:
        c = make("read", x, a, amt, f"{datas[x]['name']}->{actors[a]['name']}", d_proc[x],
                 a_proc[a])
        c.slot = nslots
        actor_slots[a].append(nslots)
        actor_reads[a].append((x, len(data_reads[x])))
        data_reads[x].append(len(comms))
        comms.append(c)
        nslots += 1
    extra = set(route_map) - used_routes
    if extra:
        k = sorted(extra)[0]
        raise err(f"{route_map[k][1]}: no cross-processor communication {k[0]}->{k[1]}",
                  "a route names an edge of the graph whose ends are on different processors")

    has_in = [bool(actor_slots[a]) for a in range(A)]
    feeds = [any(data_reads[x] for aa, x, _ in writes if aa == a) for a in range(A)]
    sources = [a for a in range(A) if not has_in[a]]
    sinks = [a for a in range(A) if not feeds[a]]
    once = bool(d.get("once", False))
    closed_n = d.get("closed", None if once else 1)
    if once and closed_n is not None:
        raise err("both 'once' and 'closed' given", "choose one")
    if not once:
        if isinstance(closed_n, bool) or not isinstance(closed_n, int) or closed_n < 1:
            raise err(f"'closed' must be an integer >= 1 (iterations in flight), got {closed_n!r}",
                      "e.g. \"closed\": 1")
    pop = 1 if once else closed_n
    loop_slots = [[] for _ in range(A)]
    slot_init = [0] * nslots
    for s in sources:
        for k in sinks:
            actor_slots[s].append(nslots)
            loop_slots[k].append(nslots)
            slot_init.append(pop)
            nslots += 1
    td = str(d.get("transfer_distribution", "exponential")).lower()
    if td not in ("exponential", "constant"):
        raise err(f"unknown transfer_distribution {td!r}", "exponential (MMT) or constant")
    name = d.get("name", default_name)
    return DataflowModel(
        name=str(name), source=source, proc_names=list(pidx), proc_discipline=disc,
        proc_speed=speed, proc_background=bg, link_names=list(lidx), link_endpoints=l_ends,
        link_rate=l_rate, link_type=l_type, link_latency=l_lat, actor_names=list(aidx),
        actor_proc=a_proc, actor_mean=a_mean, actor_dist=a_dist, data_names=list(didx),
        data_proc=d_proc, data_capacity=d_cap, comms=comms, actor_writes=actor_writes,
        actor_reads=actor_reads, data_writer=d_writer, data_reads=data_reads,
        actor_slots=actor_slots, nslots=nslots, slot_init=slot_init, loop_slots=loop_slots,
        sources=sources, sinks=sinks, closed=not once, population=pop,
        transfer_distribution=td, time_unit=str(d.get("time_unit", "time unit")),
        meta={k: d[k] for k in ("description", "reference", "notes") if k in d})
