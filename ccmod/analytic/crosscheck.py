"""Analytic models vs the engine on the same trace and network (``ccmod crosscheck``).

:func:`profile` derives the analytic inputs from a workload and a network; :func:`crosscheck`
runs the engine and both analytic models and returns a :class:`CrossCheck` report.

Closed link model (MVA).  Every rank that sends is one customer of its own class
(population 1).  A *cycle* is one message send: the rank computes W_r = compute_r / sends_r,
pays the size-independent latency of its messages (a delay), and the message's transfer
time (quiet time minus latency, from the network's cost model) is a demand on link
stations (processor sharing, like the engine's bandwidth sharing).  ``link_demand``:

* ``"bottleneck"`` (default): the whole transfer on the route's most loaded link
  (trace bytes / capacity); a cut-through message is limited by one link, and the
  zero-contention cycle equals the engine's quiet time;
* ``"spread"``: transfer / hops on every link of the route;
* ``"full"``: the transfer on every link (store-and-forward; over-counts multi-hop routes).

Per-link utilisation always uses the utilisation law U_l = sum_r X_r bytes_rl / capacity_l.

LoPC (Appendix A).  When the trace has a request/reply structure (a handler is a
blocking recv immediately followed by compute and a send back to the same peer, as the
``reqreply``/``workpile``/``client_server`` generators write), the handler durations give
So and Co2, the requests give W_c and the visit matrix V, the mean quiet time of the
messages gives Sl, and :func:`ccmod.analytic.lopc.general` predicts each thread's cycle.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ccmod.analytic import lopc, mva
from ccmod.errors import CcmodInputError
from ccmod.workloads.base import (OP_BARRIER, OP_COMPUTE, OP_ISEND, OP_RECV, OP_SEND,
                            OP_WAIT, OP_WAITALL)

LINK_DEMANDS = ("bottleneck", "spread", "full")
#: classes up to which the link model is solved by exact multi-class MVA (2^P vectors)
EXACT_CLASSES = 12


@dataclass
class TraceProfile:
    """Analytic inputs derived from a trace and a network (see :func:`profile`)."""

    nranks: int
    sends: np.ndarray            # messages sent per rank
    compute_s: np.ndarray        # total compute per rank
    W_s: np.ndarray              # compute per send (nan without sends)
    Z_s: np.ndarray              # per-cycle delay: W + latency (+ intra-node quiet time)
    resources: np.ndarray        # used resource ids (links x direction)
    resource_names: list
    capacity_Bps: np.ndarray     # per used resource
    demand_s: np.ndarray         # (ranks, resources) per-cycle link demand
    bytes_per_cycle: np.ndarray  # (ranks, resources)
    V: np.ndarray                # (ranks, ranks) destination fractions of the sends
    Sl_s: float                  # mean quiet time of a message
    hops_max: int
    intra_fraction: float
    lopc_inputs: dict | None
    notes: list = field(default_factory=list)   # assumptions the trace violates


def _rank_index(w) -> np.ndarray:
    return np.repeat(np.arange(w.nranks, dtype=np.int64), np.diff(w.rank_ptr))


def _classify(w, rank, msgs):
    """Split the messages into requests and replies.

    A reply is a send that immediately follows (optionally after one compute, the handler)
    a blocking recv from the same peer *of a request*; everything else is a request.  The
    rule is applied in causal order, so a ping-pong alternates request/reply instead of
    calling every ping a reply.  Returns (is_reply[M], handler_rec[M] (-1: none)).
    """
    op, peer, n = w.op, w.peer, w.nrecords
    M = len(msgs.nbytes)
    in_msg = np.full(M, -1, np.int64)        # message received by the handler's recv
    h_rec = np.full(M, -1, np.int64)
    for shift in (1, 2):
        i = np.flatnonzero(op == OP_RECV)
        j = i + shift
        ok = j < n
        i, j = i[ok], j[ok]
        ok = (rank[i] == rank[j]) & np.isin(op[j], (OP_SEND, OP_ISEND)) & (peer[i] == peer[j])
        if shift == 2:
            ok &= op[i + 1] == OP_COMPUTE
        i, j = i[ok], j[ok]
        out = msgs.rec_msg[j]
        in_msg[out] = msgs.rec_msg[i]
        if shift == 2:
            h_rec[out] = i + 1
    cand = in_msg >= 0
    # 0 = request, 1 = reply, -1 = unresolved (depends on the kind of in_msg)
    kind = np.where(cand, -1, 0)
    for _ in range(32):                 # short chains (request -> reply): vectorised layers
        todo = np.flatnonzero(kind < 0)
        if todo.size == 0:
            break
        src_kind = kind[in_msg[todo]]
        done = src_kind >= 0
        if not done.any():
            break
        kind[todo[done]] = np.where(src_kind[done] == 0, 1, 0)
    for m in np.flatnonzero(kind < 0):  # long chains (ping-pong): walk each chain once
        if kind[m] >= 0:
            continue
        chain, x = [], int(m)
        while kind[x] < 0 and len(chain) <= M:
            chain.append(x)
            x = int(in_msg[x])
        k = int(kind[x]) if kind[x] >= 0 else 1   # a causal cycle cannot happen; be safe
        for y in reversed(chain):
            k = 1 if k == 0 else 0
            kind[y] = k
    is_reply = kind == 1
    return is_reply, np.where(is_reply, h_rec, -1)


def profile(workload, network, node_of_rank=None, sharing: str = "ccmod",
            link_demand: str = "bottleneck", So_s: float | None = None) -> TraceProfile:
    """Derive the MVA and LoPC inputs of a workload on a network (no engine run).

    Parameters
    ----------
    workload : workloads.base.Workload
    network : netsys.base.Network
    node_of_rank : array_like, optional
        Node of every rank (default: rank i on node i).
    link_demand : {"bottleneck", "spread", "full"}
        How a message's transfer time is charged to the links of its route.
    So_s : float, optional
        Override the LoPC handler time (else the mean of the handler computes found).
    """
    from ccmod.options import INTRA_BANDWIDTH_BPS, INTRA_LATENCY_S
    from ccmod.compile import compile_messages

    if link_demand not in LINK_DEMANDS:
        raise CcmodInputError(f"unknown link demand rule {link_demand!r}",
                              hint="valid: " + ", ".join(LINK_DEMANDS))
    w = workload
    P = w.nranks
    nor = np.arange(P) if node_of_rank is None else np.asarray(node_of_rank, np.int64)
    msgs = compile_messages(w, network, nor, sharing, INTRA_LATENCY_S, INTRA_BANDWIDTH_BPS)
    M = len(msgs.nbytes)
    if M == 0:
        raise CcmodInputError("the trace sends no messages: nothing to cross-check")
    rank = _rank_index(w)
    comp = np.bincount(rank, weights=np.where(w.op == OP_COMPUTE, w.duration_s, 0.0),
                       minlength=P)
    sends = np.bincount(msgs.src, minlength=P).astype(float)
    has = sends > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        W = np.where(has, comp / np.where(has, sends, 1.0), np.nan)
    transfer = np.maximum(msgs.quiet_s - msgs.latency_s, 0.0)
    delay = np.where(msgs.intra, msgs.quiet_s, msgs.latency_s)
    # link demands per message resource
    res_all = msgs.route_res.astype(np.int64)
    msg_of = np.repeat(np.arange(M), np.diff(msgs.route_ptr))
    cap_all = network.resource_capacity_Bps()
    used, res_col = np.unique(res_all, return_inverse=True)
    L = len(used)
    load = np.bincount(res_col, weights=msgs.nbytes[msg_of].astype(float), minlength=L) / \
        cap_all[used]
    hops = np.diff(msgs.route_ptr)
    if link_demand == "bottleneck":
        # per message: the route entry with the largest trace-wide load (first on ties)
        key = load[res_col]
        order = np.lexsort((-key, msg_of))
        first = np.r_[True, msg_of[order][1:] != msg_of[order][:-1]] if len(order) else \
            np.zeros(0, bool)
        pick = order[first]
        dem_w = np.zeros(len(res_all))
        dem_w[pick] = transfer[msg_of[pick]]
    elif link_demand == "spread":
        dem_w = transfer[msg_of] / hops[msg_of]
    else:
        dem_w = transfer[msg_of]
    src_of = msgs.src[msg_of].astype(np.int64)
    D = np.zeros((P, L))
    B = np.zeros((P, L))
    np.add.at(D, (src_of, res_col), dem_w)
    np.add.at(B, (src_of, res_col), msgs.nbytes[msg_of].astype(float))
    denom = np.where(has, sends, 1.0)[:, None]
    D /= denom
    B /= denom
    Zlat = np.bincount(msgs.src, weights=delay, minlength=P) / denom[:, 0]
    Z = np.where(has, np.nan_to_num(W) + Zlat, np.nan)
    V = np.zeros((P, P))
    np.add.at(V, (msgs.src.astype(np.int64), msgs.dst.astype(np.int64)), 1.0)
    V /= denom
    prof = TraceProfile(
        nranks=P, sends=sends, compute_s=comp, W_s=W, Z_s=Z, resources=used,
        resource_names=[network.resource_name(int(r)) for r in used],
        capacity_Bps=cap_all[used], demand_s=D, bytes_per_cycle=B, V=V,
        Sl_s=float(np.mean(msgs.quiet_s)), hops_max=int(hops.max()) if M else 0,
        intra_fraction=float(np.mean(msgs.intra)), lopc_inputs=None)
    prof.lopc_inputs = _lopc_inputs(w, rank, msgs, comp, So_s)
    prof.notes = _violations(w, prof, msgs, link_demand)
    return prof


def _lopc_inputs(w, rank, msgs, comp, So_s):
    """LoPC parameters of a request/reply trace, or None when the structure is absent."""
    P = w.nranks
    is_reply, h_rec = _classify(w, rank, msgs)
    req = ~is_reply
    n_req = int(req.sum())
    n_rep = int(is_reply.sum())
    if n_rep == 0 or n_req == 0 or n_rep < 0.9 * n_req:
        return None
    hrec = h_rec[h_rec >= 0]
    hdur = np.concatenate([w.duration_s[hrec], np.zeros(n_rep - len(hrec))])
    # reply handlers: a compute right after the wait(s) of a request (or the blocking recv
    # of a reply) that is followed by another compute -- the thread's own work.  This is how
    # the reqreply/workpile generators write them; a lone compute there is the thread's work
    # (or that ends the rank's records).
    c = np.flatnonzero(w.op == OP_COMPUTE)
    c = c[c > 0]
    prev = c - 1
    nxt = np.minimum(c + 1, w.nrecords - 1)
    last = (c + 1 == w.nrecords) | (rank[nxt] != rank[c])
    rep_recv = np.zeros(w.nrecords, bool)
    rep_recv[msgs.recv_rec[is_reply]] = True
    after_reply = np.isin(w.op[prev], (OP_WAIT, OP_WAITALL)) | (rep_recv[prev]
                                                                 & (w.op[prev] == OP_RECV))
    rh = c[(rank[prev] == rank[c]) & after_reply & (last | (w.op[nxt] == OP_COMPUTE))]
    rh_dur = w.duration_s[rh]
    all_h = np.concatenate([hdur, rh_dur])
    if So_s is None:
        So = float(np.mean(all_h)) if all_h.size else 0.0
    else:
        So = float(So_s)
    mean_h = float(np.mean(all_h)) if all_h.size else 0.0
    # handlers that round to zero time (absurd compute rates) have no variability to speak of
    Co2 = float(np.var(all_h) / mean_h ** 2) if all_h.size > 1 and mean_h ** 2 > 0 else \
        (0.0 if all_h.size > 1 else 1.0)
    if not np.isfinite(Co2):
        Co2 = 0.0
    Co2 = 0.0 if Co2 < 1e-12 else Co2         # constant handlers: float noise of np.var
    requests = np.bincount(msgs.src[req], minlength=P).astype(float)
    h_comp = np.bincount(rank[hrec], weights=w.duration_s[hrec], minlength=P)
    rh_comp = np.bincount(rank[rh], weights=rh_dur, minlength=P)
    has = requests > 0
    Wl = np.where(has, np.maximum(comp - h_comp - rh_comp, 0.0) / np.where(has, requests, 1), 0.0)
    V = np.zeros((P, P))
    np.add.at(V, (msgs.src[req].astype(np.int64), msgs.dst[req].astype(np.int64)), 1.0)
    V /= np.where(has, requests, 1.0)[:, None]
    return {"So_s": So, "Co2": Co2, "W_s": Wl, "V": V, "requests": requests,
            "Sl_s": float(np.mean(msgs.quiet_s)), "handlers": int(all_h.size),
            "request_fraction": n_req / len(req)}


def _cv(x) -> float:
    x = np.asarray(x, float)
    x = x[np.isfinite(x)]
    if x.size < 2 or np.mean(x) == 0:
        return 0.0
    return float(np.std(x) / np.mean(x))


def _violations(w, prof, msgs, link_demand) -> list[str]:
    notes = []
    nb = int(np.sum(w.op == OP_BARRIER))
    if nb:
        notes.append(f"{nb} barrier records: global synchronisation is not part of the closed "
                     f"models (each rank cycles independently)")
    silent = int(np.sum(prof.sends == 0))
    if silent:
        notes.append(f"{silent} rank(s) never send: they are not customers of the link model")
    s = prof.sends[prof.sends > 0]
    if s.size and np.median(s) < 20:
        notes.append(f"only {int(np.median(s))} messages per rank (median): start-up and drain "
                     f"transients dominate, the models assume steady state")
    cv_w = _cv(prof.W_s)
    if cv_w > 0.25:
        notes.append(f"ranks are heterogeneous (CV of compute per message {cv_w:.2f}); the "
                     f"homogeneous LoPC rule of thumb does not apply")
    comp = w.duration_s[(w.op == OP_COMPUTE) & (w.duration_s > 0)]
    cv_c = _cv(comp)
    if comp.size > 1 and cv_c < 0.3:
        notes.append(f"compute bursts are nearly constant (CV {cv_c:.2f}); MVA/LoPC assume "
                     f"exponential times and are pessimistic for regular codes")
    outstanding = _max_outstanding(w)
    if outstanding > 1:
        notes.append(f"up to {outstanding} non-blocking sends outstanding per rank; the models "
                     f"assume one blocking message at a time")
    if prof.hops_max > 1:
        notes.append(f"routes have up to {prof.hops_max} hops: link demands charged as "
                     f"'{link_demand}' (simultaneous link possession is not product-form)")
    if prof.intra_fraction > 0:
        notes.append(f"{100 * prof.intra_fraction:.0f}% of messages stay inside a node (no link "
                     f"demand)")
    Vs = prof.V[prof.sends > 0]
    if Vs.size and Vs.shape[0] > 2:
        frac = Vs[Vs > 0]
        if frac.size and frac.max() > 4.0 / max(prof.nranks - 1, 1):
            notes.append("destinations are not uniform (some peer gets > 4x its fair share); "
                         "the homogeneous all-to-all LoPC model does not apply")
    if prof.lopc_inputs is None:
        notes.append("no request/reply structure (recv -> compute -> reply to the same peer): "
                     "LoPC skipped")
    return notes


def _max_outstanding(w) -> int:
    """Largest number of isends a rank posts before its next wait/waitall."""
    op = w.op
    best = 0
    for r in range(w.nranks):
        seg = op[w.rank_ptr[r]:w.rank_ptr[r + 1]]
        isend = seg == OP_ISEND
        if not isend.any():
            continue
        waits = np.isin(seg, (OP_WAIT, OP_WAITALL, OP_SEND, OP_RECV))
        grp = np.cumsum(waits)
        counts = np.bincount(grp[isend])
        best = max(best, int(counts.max()))
    return best


# --------------------------------------------------------------------------- predictions
def mva_prediction(prof: TraceProfile, method: str | None = None) -> dict:
    """Solve the closed link model; per-rank cycle and finish times, per-link utilisation."""
    act = np.flatnonzero(prof.sends > 0)
    D = prof.demand_s[act]
    keep = np.flatnonzero(D.sum(axis=0) > 0)
    Z = prof.Z_s[act]
    if method is None:
        method = "exact" if len(act) <= EXACT_CLASSES else "schweitzer"
    P = prof.nranks
    cycle = np.full(P, np.nan)
    X = np.zeros(P)
    if keep.size:
        res = mva.solve(D[:, keep], (1,) * len(act), think_time=Z, method=method)
        cycle[act] = res.cycle_time
        X[act] = res.throughput
    else:                               # intra-node only: no link station
        cycle[act] = Z
        X[act] = 1.0 / Z
    util = (X[:, None] * prof.bytes_per_cycle).sum(axis=0) / prof.capacity_Bps
    finish = np.where(prof.sends > 0, prof.sends * cycle, 0.0)
    return {"method": method, "cycle_s": cycle, "finish_s": finish,
            "makespan_s": float(np.nanmax(finish)), "link_utilization": util,
            "quiet_cycle_s": np.where(prof.sends > 0, prof.Z_s + prof.demand_s.sum(axis=1),
                                      np.nan)}


def lopc_prediction(prof: TraceProfile) -> dict | None:
    """Appendix-A LoPC prediction of each requesting thread's cycle and finish time."""
    li = prof.lopc_inputs
    if li is None:
        return None
    g = lopc.general(li["W_s"], li["V"], li["So_s"], li["Sl_s"], Co2=li["Co2"])
    finish = np.where(li["requests"] > 0, li["requests"] * np.where(np.isfinite(g.R), g.R, 0),
                      0.0)
    return {"So_s": li["So_s"], "Co2": li["Co2"], "Sl_s": li["Sl_s"], "cycle_s": g.R,
            "finish_s": finish, "makespan_s": float(finish.max()),
            "contention_s": g.contention}


# --------------------------------------------------------------------------- report
def _pct(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        return 100.0 * (np.asarray(a, float) - b) / b


def _records(df: pd.DataFrame) -> list[dict]:
    """Rows as dicts with NaN/inf as None (strict JSON)."""
    obj = df.astype(object).where(np.isfinite(df.select_dtypes("number")).reindex(
        columns=df.columns, fill_value=True), None)
    return obj.to_dict(orient="records")


@dataclass
class CrossCheck:
    """Analytic vs engine for one trace on one network."""

    trace: str
    network: dict
    profile: TraceProfile
    engine_makespan_s: float
    mva: dict
    lopc: dict | None
    ranks: pd.DataFrame
    links: pd.DataFrame
    notes: list

    def to_dict(self) -> dict:
        def clean(x):
            if isinstance(x, np.ndarray):
                return [None if not np.isfinite(v) else float(v) for v in x.ravel()]
            if isinstance(x, (np.floating, float)):
                return float(x) if np.isfinite(x) else None
            return x
        out = {"trace": self.trace, "network": self.network,
               "engine": {"makespan_s": self.engine_makespan_s},
               "mva": {k: clean(v) for k, v in self.mva.items()},
               "lopc": None if self.lopc is None else {k: clean(v) for k, v in self.lopc.items()},
               "ranks": _records(self.ranks), "links": _records(self.links),
               "assumptions_violated": list(self.notes)}
        out["mva"]["makespan_diff_pct"] = clean(float(_pct(self.mva["makespan_s"],
                                                           self.engine_makespan_s)))
        if self.lopc is not None:
            out["lopc"]["makespan_diff_pct"] = clean(float(_pct(self.lopc["makespan_s"],
                                                                self.engine_makespan_s)))
        return out

    def lines(self, top_links: int = 8) -> list[str]:
        e = self.engine_makespan_s
        p = self.profile
        out = [f"crosscheck {self.trace} on {self.network.get('name')} "
               f"({p.nranks} ranks, {int(p.sends.sum())} messages, {len(p.resources)} "
               f"link directions used)",
               f"{'':24s}{'engine':>14s}{'MVA links':>14s}{'diff':>9s}"
               + (f"{'LoPC':>14s}{'diff':>9s}" if self.lopc else "")]
        row = f"{'makespan (s)':24s}{e:14.6g}{self.mva['makespan_s']:14.6g}" \
              f"{float(_pct(self.mva['makespan_s'], e)):+8.1f}%"
        if self.lopc:
            row += f"{self.lopc['makespan_s']:14.6g}{float(_pct(self.lopc['makespan_s'], e)):+8.1f}%"
        out.append(row)
        r = self.ranks[self.ranks["sends"] > 0]
        out.append(f"{'cycle per message (s)':24s}{r['engine_cycle_s'].mean():14.6g}"
                   f"{r['mva_cycle_s'].mean():14.6g}"
                   f"{float(_pct(r['mva_cycle_s'].mean(), r['engine_cycle_s'].mean())):+8.1f}%")
        if self.lopc:
            q = self.ranks[np.isfinite(self.ranks["lopc_cycle_s"])]
            lc, le = q["lopc_cycle_s"].mean(), q["engine_req_cycle_s"].mean()
            out.append(f"{'cycle per request (s)':24s}{le:14.6g}{'':14s}{'':9s}{lc:14.6g}"
                       f"{float(_pct(lc, le)):+8.1f}%")
        out.append(f"{'per-rank finish |diff|':24s}{'':14s}"
                   f"{np.nanmean(np.abs(r['mva_diff_pct'])):13.1f}%  mean, "
                   f"{np.nanmax(np.abs(r['mva_diff_pct'])):.1f}% max")
        out.append(f"quiet (contention-free) MVA cycle {np.nanmean(self.mva['quiet_cycle_s']):.6g} s"
                   f"; link model solved by {self.mva['method']} MVA")
        if self.lopc:
            out.append(f"LoPC inputs: So={self.lopc['So_s']:.4g} s, Co2={self.lopc['Co2']:.3g}, "
                       f"Sl={self.lopc['Sl_s']:.4g} s (mean quiet time)")
        if len(self.links):
            out.append("busiest links (engine bytes):  utilisation engine / MVA")
            for row in self.links.head(top_links).itertuples():
                out.append(f"  {row.name:28s}{row.engine_util:10.4f}{row.mva_util:10.4f}"
                           f"{row.diff_pct:+9.1f}%")
        if self.notes:
            out.append("assumptions the trace violates:")
            out += [f"  - {n}" for n in self.notes]
        else:
            out.append("assumptions: none violated that ccmod can detect")
        return out


def crosscheck(trace, network="star", options=None, *, So_s: float | None = None,
               link_demand: str = "bottleneck", **option_values) -> CrossCheck:
    """Run the engine and the analytic models on the same trace and network.

    ``options`` (a :class:`~ccmod.options.RunOptions`) and ``option_values`` are those of
    :func:`ccmod.api.run` (the analytic models assume no background load), plus ``So_s``
    (LoPC handler time override) and ``link_demand`` (see the module docstring).
    """
    from ccmod import api
    from ccmod.netsys.mapping import rank_to_node
    from ccmod.options import RunOptions

    opts = RunOptions.make(options, **option_values)
    w = api.load_workload(trace, **opts.load_kwargs())
    nor = rank_to_node(opts.mapping, w.nranks)
    if isinstance(nor, tuple):
        nor = nor[0]
    nor = np.asarray(nor, np.int64)
    net = api.load_network(network, int(nor.max()) + 1 if nor.size else 1, cost=opts.cost)
    prof = profile(w, net, nor, sharing=opts.sharing, link_demand=link_demand, So_s=So_s)
    res = api.run(w, net, opts.replace(cost=None), record=False)
    m = mva_prediction(prof)
    lp = lopc_prediction(prof)
    eng_finish = res.ranks["finish_s"].to_numpy(float)
    sends = prof.sends
    with np.errstate(divide="ignore", invalid="ignore"):
        ranks = pd.DataFrame({
            "rank": np.arange(prof.nranks), "sends": sends.astype(int), "W_s": prof.W_s,
            "engine_finish_s": eng_finish, "mva_finish_s": m["finish_s"],
            "mva_diff_pct": np.where(sends > 0, _pct(m["finish_s"], eng_finish), np.nan),
            "engine_cycle_s": np.where(sends > 0, eng_finish / sends, np.nan),
            "mva_cycle_s": m["cycle_s"]})
        if lp is not None:
            req = prof.lopc_inputs["requests"]
            ranks["requests"] = req.astype(int)
            ranks["engine_req_cycle_s"] = np.where(req > 0, eng_finish / req, np.nan)
            ranks["lopc_cycle_s"] = lp["cycle_s"]
            ranks["lopc_finish_s"] = lp["finish_s"]
            ranks["lopc_diff_pct"] = np.where(req > 0, _pct(lp["finish_s"], eng_finish), np.nan)
    cap = net.resource_capacity_Bps()
    eng_links = res.links.set_index("resource")
    mk = res.makespan_s
    rows = []
    for j, rid in enumerate(prof.resources):
        b = float(eng_links.loc[rid, "bytes"]) if rid in eng_links.index else 0.0
        eu = b / (cap[rid] * mk) if mk > 0 else 0.0
        mu = float(m["link_utilization"][j])
        rows.append({"resource": int(rid), "name": prof.resource_names[j], "bytes": b,
                     "engine_util": eu, "mva_util": mu,
                     "diff_pct": float(_pct(mu, eu)) if eu > 0 else np.nan})
    cols = ["resource", "name", "bytes", "engine_util", "mva_util", "diff_pct"]
    links = pd.DataFrame(rows, columns=cols).sort_values(
        ["bytes", "resource"], ascending=[False, True], kind="mergesort").reset_index(drop=True)
    notes = list(prof.notes)
    st = res.ranks
    waiting = float((st["recv_s"] + st["wait_s"] + st["barrier_s"]).sum())
    total = float(st["finish_s"].sum())
    if total > 0 and waiting / total > 0.2:
        notes.append(f"ranks spend {100 * waiting / total:.0f}% of their time in receives/waits "
                     f"(waiting for peers is synchronisation the closed models do not see)")
    if lp is not None:
        notes.append("the engine runs handlers in trace order and does not let them pre-empt "
                     "compute; LoPC assumes interrupting handlers")
    return CrossCheck(trace=str(trace) if not hasattr(trace, "nranks") else "<workload>",
                      network=net.describe(), profile=prof, engine_makespan_s=float(mk),
                      mva=m, lopc=lp, ranks=ranks, links=links, notes=notes)
