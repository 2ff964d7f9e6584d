"""Synthetic runs for tests and the report benchmark (no engine needed).

:func:`synthetic_run` fabricates, with a seeded generator, a self-consistent run on a
star network: iterations in which every rank computes, sends one message to a partner,
receives one, and waits at a barrier. The numbers are *not* predictions of anything: they
only exercise the sinks and the report at any size (the benchmark uses 1M messages).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ccmod.netsys.base import Network
from ccmod.outputs.base import STATE_BARRIER, STATE_COMPUTE, STATE_RECV, STATE_SEND, RunContext


class StarNetwork(Network):
    """Minimal network: node i ↔ one switch (link i), for tests and benchmarks.

    Resource ``2 i`` is node i → switch ("up"), ``2 i + 1`` switch → node i ("down"),
    so a message src → dst uses resources ``[2 src, 2 dst + 1]``.
    """

    name = "synthetic-star"
    description = "synthetic star network (tests and benchmarks)"
    packet_size = 2048

    def __init__(self, nnodes: int, bandwidth_Bps: float = 1e9, latency_s: float = 1e-6,
                 names: list[str] | None = None):
        super().__init__(nodes=nnodes, bandwidth_Bps=bandwidth_Bps)
        self.nnodes = nnodes
        self.link_names = list(names) if names else [f"node{i}-sw" for i in range(nnodes)]
        self.capacity_Bps = np.full((nnodes, 2), float(bandwidth_Bps))
        self.latency_s = np.full((nnodes, 2), float(latency_s))

    def route(self, src: int, dst: int):
        return [(src, 0), (dst, 1)]


@dataclass
class SyntheticRun:
    ctx: RunContext
    messages: dict
    rank_states: dict
    link_load: dict
    result: object
    signals: dict | None = None

    def feed(self, sinks, chunk: int = 100_000) -> None:
        """Drive ``sinks`` like the engine: open, batches in chunks, close."""
        for s in sinks:
            s.open(self.ctx)
        if self.signals is not None:
            n = len(self.signals["t_s"])
            for lo in range(0, n, chunk):
                part = {k: v[lo:lo + chunk] for k, v in self.signals.items()}
                for s in sinks:
                    if getattr(s, "wants_signals", False):
                        s.on_signals(part)
        for table, hook in ((self.messages, "on_messages"), (self.rank_states, "on_rank_states"),
                            (self.link_load, "on_link_load")):
            n = len(next(iter(table.values())))
            for lo in range(0, n, chunk):
                part = {k: v[lo:lo + chunk] for k, v in table.items()}
                for s in sinks:
                    if hook != "on_link_load" or getattr(s, "wants_link_load", False):
                        getattr(s, hook)(part)
        for s in sinks:
            s.close(self.result)


def contention_intervals(res, t0, t1, background: float = 0.0) -> dict:
    """Piecewise-constant active-message counts per resource from occupancy intervals."""
    res = np.asarray(res, np.int64)
    r = np.concatenate([res, res])
    t = np.concatenate([t0, t1])
    d = np.concatenate([np.ones(len(res), np.int64), -np.ones(len(res), np.int64)])
    order = np.lexsort((d, t, r))  # ends before starts at equal times
    r, t, d = r[order], t[order], d[order]
    act = np.cumsum(d)
    # intervals between consecutive events of the same resource with a positive count
    same = r[1:] == r[:-1]
    a, b, k = t[:-1], t[1:], act[:-1]
    keep = same & (b > a) & (k > 0)
    return {"resource": r[:-1][keep].astype(np.int32), "t_start_s": a[keep], "t_end_s": b[keep],
            "active": k[keep].astype(np.int32),
            "background": np.full(int(keep.sum()), float(background))}


def synthetic_run(nranks: int = 8, iterations: int = 4, seed: int = 0,
                  bandwidth_Bps: float = 1e9, names: list[str] | None = None,
                  background: float = 0.0) -> SyntheticRun:
    """A seeded synthetic run with ``nranks * iterations`` messages (see module doc)."""
    from ccmod.result import RunResult

    rng = np.random.default_rng(seed)
    R, K = nranks, iterations
    net = StarNetwork(R, bandwidth_Bps, names=names)
    if background:
        net.set_background(background)
    avail = bandwidth_Bps * (1 - background)
    compute = rng.uniform(1e-4, 5e-4, size=(K, R))
    offs = rng.integers(1, max(R, 2), size=K) % max(R, 1)
    nbytes = rng.choice([1024, 8192, 65536, 262144], size=(K, R))
    src = np.tile(np.arange(R), (K, 1))
    dst = (src + offs[:, None]) % R
    # every 4th iteration is an incast: groups of 4 ranks send to their first rank (which
    # sends to the second), so some links see contention above 1
    if R >= 4:
        inc = np.arange(K) % 4 == 3
        lead = (src[inc] // 4) * 4
        dst[inc] = np.where(src[inc] == lead, np.minimum(lead + 1, R - 1), lead)
    quiet = nbytes / avail + 2e-6
    slow = 1.0 + rng.exponential(0.5, size=(K, R))
    dur = quiet * slow
    send_end_rel = compute + dur
    # recv completes when the incoming message ends
    # (a rank receiving nothing in an iteration has no recv state: its send end stands in)
    recv_end_rel = send_end_rel.copy()
    np.maximum.at(recv_end_rel, (np.repeat(np.arange(K), R), dst.ravel()), send_end_rel.ravel())
    iter_len = np.maximum(send_end_rel, recv_end_rel).max(axis=1) + 1e-5
    t_iter = np.r_[0.0, np.cumsum(iter_len)[:-1]]
    post = t_iter[:, None] + compute
    t_end = post + dur
    msg = {
        "msg_id": np.arange(K * R, dtype=np.int64),
        "src": src.ravel().astype(np.int32), "dst": dst.ravel().astype(np.int32),
        "tag": np.zeros(K * R, np.int32), "nbytes": nbytes.ravel().astype(np.int64),
        "t_post_s": post.ravel(), "t_start_s": post.ravel(), "t_end_s": t_end.ravel(),
        "quiet_s": quiet.ravel(), "slowdown": slow.ravel(),
        "bottleneck": (2 * src.ravel()).astype(np.int32), "hops": np.full(K * R, 2, np.int32),
    }
    self_msg = msg["src"] == msg["dst"]
    msg["bottleneck"][self_msg] = -1  # self-messages: intra-node
    msg["hops"][self_msg] = 0
    # states per (iteration, rank): compute, send, recv (if later), barrier to the next one
    ti = t_iter[:, None] + np.zeros((K, R))
    c_end = ti + compute
    s_end = ti + send_end_rel
    r_end = np.maximum(ti + recv_end_rel, s_end)
    nxt = (t_iter + iter_len)[:, None] + np.zeros((K, R))
    ranks = np.tile(np.arange(R), (K, 1))
    parts = [(ranks, STATE_COMPUTE, ti, c_end), (ranks, STATE_SEND, c_end, s_end),
             (ranks, STATE_RECV, s_end, r_end), (ranks, STATE_BARRIER, r_end, nxt)]
    rk = np.concatenate([p[0].ravel() for p in parts])
    st = np.concatenate([np.full(K * R, p[1]) for p in parts])
    a = np.concatenate([p[2].ravel() for p in parts])
    b = np.concatenate([p[3].ravel() for p in parts])
    keep = b > a
    order = np.lexsort((a[keep], rk[keep]))
    states = {"rank": rk[keep][order].astype(np.int32), "state": st[keep][order].astype(np.int8),
              "t_start_s": a[keep][order], "t_end_s": b[keep][order]}
    # link occupancy: each inter-node message holds src-up and dst-down for its transfer
    inter = msg["src"] != msg["dst"]
    occ_res = np.concatenate([2 * msg["src"][inter], 2 * msg["dst"][inter] + 1])
    occ_a = np.concatenate([msg["t_start_s"][inter]] * 2)
    occ_b = np.concatenate([msg["t_end_s"][inter]] * 2)
    load = contention_intervals(occ_res, occ_a, occ_b, background)
    makespan = float(t_iter[-1] + iter_len[-1]) if K else 0.0

    secs = {n: np.bincount(states["rank"], weights=(states["t_end_s"] - states["t_start_s"])
                           * (states["state"] == code), minlength=R)
            for n, code in (("compute_s", STATE_COMPUTE), ("send_s", STATE_SEND),
                            ("recv_s", STATE_RECV), ("barrier_s", STATE_BARRIER))}
    ranks_df = pd.DataFrame({"rank": np.arange(R), "node": np.arange(R),
                             "finish_s": np.full(R, makespan), "compute_s": secs["compute_s"],
                             "send_s": secs["send_s"], "recv_s": secs["recv_s"],
                             "wait_s": np.zeros(R), "barrier_s": secs["barrier_s"]})
    nres = 2 * R
    ld = load["t_end_s"] - load["t_start_s"]
    peak = np.zeros(nres)
    np.maximum.at(peak, load["resource"], load["active"])
    occ_bytes = np.concatenate([msg["nbytes"][inter]] * 2)
    used = np.nonzero(np.bincount(occ_res, minlength=nres))[0]
    links_df = pd.DataFrame({
        "resource": used, "name": [net.resource_name(r) for r in used],
        "messages": np.bincount(occ_res, minlength=nres)[used],
        "bytes": np.bincount(occ_res, weights=occ_bytes, minlength=nres)[used].astype(np.int64),
        "peak_active": peak[used].astype(np.int64),
        "mean_active": (np.bincount(load["resource"], weights=load["active"] * ld,
                                    minlength=nres)[used] / makespan) if makespan else 0.0,
        "busy_s": np.bincount(load["resource"], weights=ld, minlength=nres)[used],
        "background": np.full(len(used), background)})
    msg_df = pd.DataFrame(msg)
    msg_df["bottleneck_name"] = [net.resource_name(r) if r >= 0 else "" for r in
                                 msg["bottleneck"]] if K * R <= 10_000 else ""
    result = RunResult(makespan_s=makespan, rank_finish_s=np.full(R, makespan), ranks=ranks_df,
                       messages=msg_df, links=links_df, records=int(len(states["rank"]) + K * R),
                       wall_s=0.0, network=net.describe(), sharing="fair", send_mode="synthetic",
                       options={"background": background, "synthetic_seed": seed},
                       rank_states=_states_frame(states), link_load=pd.DataFrame(load))
    ctx = RunContext(network=net, workload=_Wl(R), node_of_rank=np.arange(R, dtype=np.int32))
    return SyntheticRun(ctx, msg, states, load, result)


def _states_frame(states: dict) -> pd.DataFrame:
    """Rank states as the engine's RunResult holds them (categorical state names)."""
    from ccmod.outputs.base import STATE_NAMES
    df = pd.DataFrame(states)
    df["state"] = pd.Categorical.from_codes(states["state"], categories=list(STATE_NAMES))
    return df


@dataclass
class _Wl:
    nranks: int


def tiny_run(link_names: list[str] | None = None) -> SyntheticRun:
    """A hand-made run: 3 ranks (one per node of a 1 GB/s star), 4 messages.

    ======  =========  ======  =====================  ==================================
    msg     src → dst  bytes   transfer (µs)          resources (2·src up, 2·dst+1 down)
    ======  =========  ======  =====================  ==================================
    0       0 → 1      1000    [0, 2]                 0, 3
    1       2 → 1      1000    [1, 3]                 4, 3
    2       1 → 0      500     [4, 5]                 2, 1
    3       0 → 2      3000    [5, 8]                 0, 5
    ======  =========  ======  =====================  ==================================

    States: rank 0 send [0,2] compute [2,5] send [5,8]; rank 1 recv [0,2] recv [2,3]
    compute [3,4] send [4,5]; rank 2 compute [0,1] send [1,3] wait [5,8]. Makespan 8 µs.
    The link load is the exact contention of those transfers; five signals are included.
    """
    from ccmod.result import RunResult

    us = 1e-6
    net = StarNetwork(3, 1e9, latency_s=0.0, names=link_names)
    msg = {
        "msg_id": np.arange(4, dtype=np.int64),
        "src": np.array([0, 2, 1, 0], np.int32), "dst": np.array([1, 1, 0, 2], np.int32),
        "tag": np.array([0, 0, 7, 0], np.int32),
        "nbytes": np.array([1000, 1000, 500, 3000], np.int64),
        "t_post_s": np.array([0, 1, 4, 5]) * us, "t_start_s": np.array([0, 1, 4, 5]) * us,
        "t_end_s": np.array([2, 3, 5, 8]) * us,
        "quiet_s": np.array([1, 1, 0.5, 3]) * us, "slowdown": np.array([2.0, 2.0, 2.0, 1.0]),
        "bottleneck": np.array([0, 3, 2, 0], np.int32), "hops": np.full(4, 2, np.int32)}
    C, S, R, W = STATE_COMPUTE, STATE_SEND, STATE_RECV, 3
    rows = [(0, S, 0, 2), (0, C, 2, 5), (0, S, 5, 8),
            (1, R, 0, 2), (1, R, 2, 3), (1, C, 3, 4), (1, S, 4, 5),
            (2, C, 0, 1), (2, S, 1, 3), (2, W, 5, 8)]
    states = {"rank": np.array([r[0] for r in rows], np.int32),
              "state": np.array([r[1] for r in rows], np.int8),
              "t_start_s": np.array([r[2] for r in rows]) * us,
              "t_end_s": np.array([r[3] for r in rows]) * us}
    occ = [(0, 0, 2), (3, 0, 2), (4, 1, 3), (3, 1, 3), (2, 4, 5), (1, 4, 5), (0, 5, 8),
           (5, 5, 8)]
    load = contention_intervals(np.array([o[0] for o in occ]), np.array([o[1] for o in occ]) * us,
                                np.array([o[2] for o in occ]) * us)
    signals = {"t_s": np.array([0, 0, 2, 2, 8]) * us,
               "signal": np.array(["GO_INIT", "MSGSTART", "EVENTHORIZON", "MSGEND", "GO_END"],
                                  dtype=object),
               "args": np.array(["3 4", "0 0 1 1000", "2e-06", "0", ""], dtype=object)}
    res = np.array([0, 1, 2, 3, 4, 5])
    links_df = pd.DataFrame({
        "resource": res, "name": [net.resource_name(r) for r in res],
        "messages": [2, 1, 1, 2, 1, 1], "bytes": [4000, 500, 500, 2000, 1000, 3000],
        "peak_active": [1, 1, 1, 2, 1, 1],
        "mean_active": np.array([5, 1, 1, 4, 2, 3]) / 8.0,
        "busy_s": np.array([5, 1, 1, 3, 2, 3]) * us, "background": np.zeros(6)})
    secs = np.zeros((3, 5))
    for r, st, a, b in rows:
        secs[r, st] += (b - a) * us
    ranks_df = pd.DataFrame({"rank": [0, 1, 2], "node": [0, 1, 2],
                             "finish_s": np.array([8, 5, 8]) * us,
                             "compute_s": secs[:, 0], "send_s": secs[:, 1], "recv_s": secs[:, 2],
                             "wait_s": secs[:, 3], "barrier_s": secs[:, 4]})
    msg_df = pd.DataFrame(msg)
    msg_df["bottleneck_name"] = [net.resource_name(r) for r in msg["bottleneck"]]
    result = RunResult(makespan_s=8 * us, rank_finish_s=np.array([8, 5, 8]) * us,
                       ranks=ranks_df, messages=msg_df, links=links_df, records=14, wall_s=0.001,
                       network=net.describe(), sharing="ccmod", send_mode="rendezvous",
                       options={"background": 0.0}, rank_states=_states_frame(states),
                       link_load=pd.DataFrame(load))
    ctx = RunContext(network=net, workload=_Wl(3), node_of_rank=np.arange(3, dtype=np.int32))
    return SyntheticRun(ctx, msg, states, load, result, signals)
