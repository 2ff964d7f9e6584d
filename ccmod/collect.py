"""Assemble a :class:`ccmod.result.RunResult` from the engine's raw arrays."""
from __future__ import annotations

import numpy as np

from ccmod.codes import STATE_NAMES


def link_intervals(load_t, load_res, load_count, t_end: float):
    """Piecewise-constant contention per resource from the change log.

    Returns arrays (resource, t_start_s, t_end_s, active) with zero-length intervals dropped
    and the last level of each resource closed at ``t_end``.
    """
    t = np.asarray(load_t, dtype=np.float64)
    r = np.asarray(load_res, dtype=np.int32)
    c = np.asarray(load_count, dtype=np.int32)
    order = np.lexsort((np.arange(len(t)), r))   # stable by time within each resource
    t, r, c = t[order], r[order], c[order]
    nxt_t = np.empty_like(t)
    if len(t):
        nxt_t[:-1] = t[1:]
        nxt_t[-1] = t_end
        last = np.r_[r[1:] != r[:-1], True]
        nxt_t[last] = max(t_end, float(t.max()))
    keep = (nxt_t > t) & (c > 0)
    return r[keep], t[keep], nxt_t[keep], c[keep]


def _whole_quiet(msgs):
    """Quiet time including the CPU overheads the kernel charged to the ranks (as measured)."""
    q = msgs.quiet_s
    os_ = [o for o in (getattr(msgs, "o_send_s", None), getattr(msgs, "o_recv_s", None))
           if o is not None and len(o) == len(q)]
    if os_ and not any(o.any() for o in os_) and not np.signbit(q).any():
        # no overheads: q + 0.0 is q (its own values; -0.0 alone would become 0.0)
        return np.asarray(q)
    for o in os_:
        q = q + o
    return q


def _resource_counts(route_ptr, route_res, nbytes, nres, chunk=1 << 18):
    """Messages and bytes per resource, ``chunk`` messages at a time: the per-hop
    temporaries (each route entry weighing its message's bytes, the ids as intp) stay a
    few MB instead of ~20 bytes per record at the run's peak. The byte sums are sums of
    integers (exact in a double below 2^53), the same in any grouping."""
    rp = np.asarray(route_ptr)
    M = len(rp) - 1
    n_msgs, n_bytes = np.zeros(nres, np.int64), np.zeros(nres)
    for a in range(0, max(M, 0), chunk):
        b = min(a + chunk, M)
        res = route_res[rp[a]:rp[b]]
        n_msgs += np.bincount(res, minlength=nres)
        n_bytes += np.bincount(res, weights=np.repeat(
            np.asarray(nbytes[a:b], np.float64), np.diff(rp[a:b + 1])), minlength=nres)
    return n_msgs, n_bytes


def _msg_ids(M):
    return np.arange(M, dtype=np.int64)


def _t_post(M, t_post_send, t_post_recv):
    return np.minimum(t_post_send, t_post_recv) if M else np.zeros(0)


def _slowdown(t_start, t_end, quiet):
    """Span / quiet where quiet > 0, else 1, computed in place (no per-message temporaries)."""
    slowdown = np.subtract(t_end, t_start)
    pos = quiet > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        np.divide(slowdown, quiet, out=slowdown, where=pos)
    slowdown[~pos] = 1.0
    return slowdown


def _bottleneck_names(names, bott):
    return names[np.where(bott >= 0, bott, -1)]


def _value(a):
    """An array, or a :class:`ccmod.result.Derived` one computed now (and kept)."""
    from ccmod.result import Derived
    return a() if isinstance(a, Derived) else a


def _in_id_order(a, slot_ids):
    """A per-message output the kernel left in slot order (``slot_ids``: slot -> message
    id, :mod:`ccmod.kernel.order`), put in id order in place and returned: no second copy
    of the column outlives the call."""
    a[slot_ids] = a.copy()
    return a


def collect(engine, msgs, network, node_of_rank, makespan_s: float, wall_s: float,
            options: dict):
    """Build the result tables (vectorised)."""
    from ccmod.linkrate import link_utilisation
    from ccmod.result import DEFAULT_PACKET_SIZE, Derived, LazyFrame, Routes, RunResult

    from ccmod.engine import message_column
    w = engine.w
    release = getattr(engine, "release_scratch", None)
    if release is not None:
        release()        # the kernel's scratch state, before the tables below are made
    M = len(msgs.nbytes)
    # per-resource message and byte counts first, from the run's own routes
    nres = network.nresources
    n_msgs, n_bytes = _resource_counts(msgs.route_ptr, msgs.route_res, msgs.nbytes, nres)
    # the run's int64 views of these, narrowed again to compile_messages' dtypes
    src, dst, route_res = (message_column(msgs, c) for c in ("src", "dst", "route_res"))
    t_post_send = np.asarray(engine.t_post_send, float)
    t_post_recv = np.asarray(engine.t_post_recv, float)
    t_start = np.asarray(engine.t_start, float)
    t_end = np.asarray(engine.t_end, float)
    t_last = float(t_end.max()) if M else 0.0       # (in any order)
    quiet = _whole_quiet(msgs)
    bott = engine.bott
    slot_ids = getattr(engine, "slot_ids", None)
    if slot_ids is not None:
        # the kernel's outputs in slot order: each put in id order when first read
        t_post_send, t_post_recv, t_start, t_end, bott = (
            Derived(_in_id_order, a, slot_ids)
            for a in (t_post_send, t_post_recv, t_start, t_end, bott))
    names = resource_names(network)
    # the columns computed from others are made when first read (Derived): a run whose
    # result only summarises never holds them
    messages = LazyFrame({
        "msg_id": Derived(_msg_ids, M), "src": src, "dst": dst,
        "tag": Derived(np.ascontiguousarray, msgs.tag), "nbytes": msgs.nbytes,
        "t_post_s": Derived(_t_post, M, t_post_send, t_post_recv),
        "t_post_send_s": t_post_send, "t_post_recv_s": t_post_recv, "t_start_s": t_start,
        "t_end_s": t_end, "quiet_s": quiet,
        "slowdown": Derived(_slowdown, t_start, t_end, msgs.quiet_s),
        "bottleneck": Derived(np.asarray, bott, np.int64), "bottleneck_name": Derived(_bottleneck_names, names, bott),
        "hops": Derived(np.ascontiguousarray, msgs.hops)})
    makespan = max(makespan_s, t_last)
    ranks = ranks_table(engine, w.nranks, node_of_rank)
    # per-resource summary: messages and bytes (above), contention from the change log
    lt, lres, lcount = engine.load if engine.record else (np.zeros(0), np.zeros(0, np.int32),
                                                           np.zeros(0, np.int32))
    lr, lt0, lt1, lc = link_intervals(lt, lres, lcount, makespan)
    routes = Routes(ptr=np.asarray(msgs.route_ptr, np.int64), res=route_res)
    resources, links, used, cap, bg = link_tables(engine, network, names, n_msgs, n_bytes,
                                                  makespan)
    rank_states = link_load = None
    if engine.record:
        a, b, c, d = engine.states
        rank_states = LazyFrame({"rank": a, "state": b, "t_start_s": c, "t_end_s": d},
                                _states_frame)
        lbg = bg[lr] if len(lr) else bg[:0]
        # utilisation from the routes compiled for the run (never recompiled)
        util = link_utilisation(routes, {"nbytes": msgs.nbytes, "t_start_s": _value(t_start),
                                         "t_end_s": _value(t_end)}, lr, lt0, lt1, cap, lbg)
        link_load = LazyFrame({"resource": lr, "t_start_s": lt0, "t_end_s": lt1,
                                  "active": lc, "background": lbg, "utilisation": util})
        upeak = np.zeros(nres)
        np.maximum.at(upeak, lr.astype(np.int64), np.where(np.isfinite(util), util, 0.0))
        links.columns["utilisation_peak"] = upeak[used]
    signals = None
    if getattr(engine, "signals", None) is not None:
        # integer-coded signals become text here, once (only the debug sink asks for them)
        from ccmod.kernel.record import render_signals
        b = render_signals(engine.signals, msgs.route_ptr, route_res)
        signals = LazyFrame({"t_s": np.asarray(b["t_s"], np.float64),
                                "signal": np.asarray(b["signal"], dtype=object),
                                "args": np.asarray(b["args"], dtype=object)})
    ps = getattr(network, "packet_size", None)
    meta = {"nranks": int(w.nranks),
            "packet_size_bytes": int(ps) if ps else DEFAULT_PACKET_SIZE,
            "packet_size_source": "network" if ps else "default"}
    return RunResult(
        makespan_s=makespan, rank_finish_s=np.asarray(engine.finish_s, float), ranks=ranks,
        messages=messages, links=links, records=w.nrecords, wall_s=wall_s,
        network=network.describe(), sharing=options.get("sharing", "ccmod"),
        send_mode=options.get("send_mode", "rendezvous"), rank_states=rank_states,
        link_load=link_load, options=options, events=engine.events, resources=resources,
        routes=routes, signals=signals, measured=(w.meta or {}).get("measured"), meta=meta)


def resource_names(network):
    """Resource names by id, with "" at index -1 (intra-node messages' bottleneck)."""
    return np.array([network.resource_name(i) for i in range(network.nresources)] + [""],
                    dtype=object)


def ranks_table(engine, nranks: int, node_of_rank):
    """The per-rank table from the engine's arrays."""
    from ccmod.result import LazyFrame
    st = engine.state_s
    return LazyFrame({
        "rank": np.arange(nranks), "node": node_of_rank[: nranks],
        "finish_s": np.asarray(engine.finish_s, float),
        "compute_s": st[:, 0], "send_s": st[:, 1], "recv_s": st[:, 2], "wait_s": st[:, 3],
        "barrier_s": st[:, 4], "overhead_s": st[:, 5],
        "handler_s": np.asarray(engine.handler_s, float)})


def link_tables(engine, network, names, n_msgs, n_bytes, makespan: float):
    """``(resources, links, used, cap, bg)``: the link table and the used resources' table
    from per-resource message and byte counts and the kernel's contention integrals."""
    from ccmod.result import LazyFrame
    nres = network.nresources
    # the kernels integrate contention as they go, so these hold without recording too
    area = np.zeros(nres)
    busy = np.zeros(nres)
    peak = np.zeros(nres, np.int64)
    k = min(nres, len(engine.area))
    area[:k], busy[:k], peak[:k] = engine.area[:k], engine.busy[:k], engine.peak[:k]
    used = np.flatnonzero(n_msgs > 0)
    bg = network.background_flat()
    cap = np.asarray(network.resource_capacity_Bps() if hasattr(network, "resource_capacity_Bps")
                     else network.capacity_Bps, np.float64).reshape(-1)[:nres]
    resources = LazyFrame({"resource": np.arange(nres), "name": names[:nres],
                           "capacity_Bps": cap, "background": bg[:nres]})
    with np.errstate(divide="ignore", invalid="ignore"):
        util_mean = n_bytes[used] / (cap[used] * makespan) if makespan > 0 else \
            np.full(len(used), np.nan)
    links = LazyFrame({
        "resource": used, "name": names[used], "messages": n_msgs[used],
        "bytes": n_bytes[used].astype(np.int64), "peak_active": peak[used],
        "mean_active": area[used] / makespan if makespan > 0 else np.zeros(len(used)),
        "busy_s": busy[used], "background": bg[used], "capacity_Bps": cap[used],
        "utilisation_mean": util_mean, "utilisation_peak": np.full(len(used), np.nan)})
    return resources, links, used, cap, bg


def _states_frame(cols):
    """rank_states as a DataFrame: the state codes become a categorical of their names."""
    import pandas as pd
    return pd.DataFrame({"rank": cols["rank"],
                         "state": pd.Categorical.from_codes(cols["state"],
                                                            categories=list(STATE_NAMES)),
                         "t_start_s": cols["t_start_s"], "t_end_s": cols["t_end_s"]})
