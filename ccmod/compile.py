"""Compile a workload and a network into the engine's message arrays (done once per run).

Matching is static: MPI's non-overtaking rule with no wildcards means the n-th send on
channel (src, dst, tag) matches the n-th receive on it, whatever the timing. So every
send/recv pair is found here, vectorised, and the engine only tracks when each side is
posted. Routes are compiled once per distinct (src node, dst node) pair.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import numpy as np

from ccmod.errors import CcmodInputError
from ccmod.workloads.base import (OP_AMREQUEST, OP_IRECV, OP_ISEND, OP_NAMES, OP_RECV, OP_SEND,
                            Workload)


@dataclass
class Messages:
    """One row per matched message, numbered in the order of their send records."""

    send_rec: np.ndarray    # int64[M] record index of the send/isend
    recv_rec: np.ndarray    # int64[M] record index of the recv/irecv
    src: np.ndarray         # int32[M] ranks
    dst: np.ndarray
    tag: np.ndarray
    nbytes: np.ndarray      # int64[M]
    rec_msg: np.ndarray     # int32[n records] message id of a send/recv record, else -1
    route_ptr: np.ndarray   # int32[M+1] CSR of resources per message (int64 past 2^31 - 1)
    route_res: np.ndarray   # int32[nnz]
    quiet_s: np.ndarray     # float64[M] quiet-network time (CCMOD's Tquiet)
    latency_s: np.ndarray   # float64[M] size-independent part (max-min latency phase)
    flow_cap_Bps: np.ndarray  # float64[M] per-flow rate cap for max-min (inf = none)
    intra: np.ndarray       # bool[M] delivered without any resource (same node, no copy resource)
    hops: np.ndarray        # int32[M]
    kind: np.ndarray        # int8[M] 0 point-to-point, 1 active-message request, 2 its reply
    handler_s: np.ndarray   # float64[M] handler time run on arrival (active messages)
    notes: list             # things the user should know about this compilation
    # LogGP-like per-message costs (contract names; 0 = the article's model, unchanged)
    same_node: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))  # bool[M]
    o_send_s: np.ndarray = field(default_factory=lambda: np.zeros(0))  # float64[M] sender CPU
    o_recv_s: np.ndarray = field(default_factory=lambda: np.zeros(0))  # float64[M] receiver CPU
    gap_s: np.ndarray = field(default_factory=lambda: np.zeros(0))     # float64[nnodes] NIC gap

    def __getattr__(self, name):
        # rec_msg left numbered in slots by a run in slot order (ccmod.kernel.order; few
        # read it after the run): renumbered to message ids when first read
        pending = self.__dict__.get("_rec_slots")
        if name != "rec_msg" or pending is None:
            raise AttributeError(name)
        from ccmod.kernel.order import renumber_back
        rec_msg, okey = pending
        renumber_back(rec_msg, okey)
        del self.__dict__["_rec_slots"]
        self.rec_msg = rec_msg
        return rec_msg


def untouched_zeros(n, dtype=np.float64):
    """``np.zeros(n, dtype)`` in pages of its own, never written: an anonymous mapping,
    which the system fills with zeros when a page is first touched, and reading maps its
    shared zero page (not this process's memory). ``np.zeros`` below the C heap's mmap
    threshold (up to 32 MB) may be served from freed heap memory, which ``calloc`` clears
    by writing it: resident, for arrays that the run only reads (or never reads)."""
    import mmap
    dt = np.dtype(dtype)
    if n * dt.itemsize < 1 << 20:
        return np.zeros(n, dt)
    a = np.frombuffer(mmap.mmap(-1, n * dt.itemsize), dt)
    _UNTOUCHED[id(a)] = a
    return a


#: the arrays :func:`untouched_zeros` made (by id, while they live)
_UNTOUCHED = weakref.WeakValueDictionary()


def is_untouched_zeros(a) -> bool:
    """Whether ``a`` is an array :func:`untouched_zeros` made: all zeros, known without
    reading it (reading maps a page at a time: ~7 ms per 500k floats in page faults)."""
    return _UNTOUCHED.get(id(a)) is a


def _rank_of_records(w: Workload) -> np.ndarray:
    # int32: ranks are < 2^31 (the readers check), half the memory of int64 per record
    return np.repeat(np.arange(w.nranks, dtype=np.int32), np.diff(w.rank_ptr))


def _err(w: Workload, i: int, what: str, hint: str | None = None) -> CcmodInputError:
    f, ln = w.where(int(i))
    if ln is None:
        what = f"record {int(i)} (rank {w.rank_of(int(i))}): {what}"
    return CcmodInputError(what, source=f, line=ln, hint=hint)


def match_messages(w: Workload, sends: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Return (send_rec, recv_rec) of matched pairs, ordered by send record index.

    ``sends``, if given, receives the columns of the send records gathered on the way
    (``rank`` of every record; ``src``, ``peer``, ``tag``, ``nbytes`` of the sends, in
    ``send_rec`` order): :func:`compile_messages` does not gather them again.

    Raises
    ------
    CcmodInputError
        Peer outside the ranks, unmatched send or recv, or a recv size that differs
        from its send.
    """
    rank = _rank_of_records(w)
    op = w.op
    s_idx = np.flatnonzero((op == OP_SEND) | (op == OP_ISEND))
    r_idx = np.flatnonzero((op == OP_RECV) | (op == OP_IRECV))
    peers = []
    for idx in (s_idx, r_idx):
        p = w.peer[idx]
        bad = idx[(p < 0) | (p >= w.nranks)]
        if bad.size:
            i = int(bad[0])
            raise _err(w, i, f"{OP_NAMES[op[i]]} names rank {int(w.peer[i])}, but the trace "
                             f"has ranks 0..{w.nranks - 1}", "fix the peer rank")
        peers.append(p)
    got = {}
    paired = _pair_by_channel(w, rank, s_idx, r_idx, peers=peers, got=got)
    if paired is None:   # some channel has more sends than receives or the reverse
        paired = _pair_or_explain(w, rank, s_idx, r_idx)
    send_rec, recv_rec = paired
    # either way the sends come in record order: send_rec is s_idx
    sb = w.nbytes[send_rec]
    if sends is not None:
        sends.update(rank=rank, src=got.get("src"), peer=peers[0], tag=got.get("tag"),
                     nbytes=sb)
    return _check_sizes(w, send_rec, recv_rec, sb)


def _pair_by_channel(w: Workload, rank, s_idx, r_idx, peers=None, got=None):
    """(send_rec, recv_rec) ordered by send record, or None when the channels do not balance.

    Both sides sorted by channel (src, dst, tag) keep record order inside a channel
    (stable sort); when every channel has as many sends as receives the two sorted
    sequences name the same channels at every position, and the n-th send of a channel
    sits beside its n-th receive. One-dimensional keys: cheap in time and memory.
    ``peers``: ``w.peer`` at ``s_idx`` and ``r_idx`` if gathered already; ``got`` (a
    dict) receives the sends' ``src`` (ranks) and ``tag``.
    """
    if len(s_idx) != len(r_idx):
        return None
    n = np.int64(max(w.nranks, 1))
    s_peer, r_peer = peers if peers is not None else (w.peer[s_idx], w.peer[r_idx])
    src, r_rank = rank[s_idx], rank[r_idx]
    s_tag, r_tag = w.tag[s_idx], w.tag[r_idx]
    if got is not None:
        got.update(src=src, tag=s_tag)
    from ccmod.kernel.pairing import pair_dense
    recv_of = pair_dense(int(n), src, s_peer, s_tag, r_peer, r_rank, r_tag)
    if recv_of is not None:
        # counted per channel (compiled, no sort): the pairs the sorts below give
        return (s_idx, r_idx[recv_of]) if recv_of is not False else None
    if n * n < (1 << 31):
        # one int64 key per message, (pair, tag) in lexicographic order: one stable sort;
        # each side's keys sorted in place of its own (at most three message-long int64
        # arrays besides the orders at once: this is a run's set-up peak when it sorts)
        s_key = _channel_key(src, s_peer, s_tag, n)
        so = stable_argsort(s_key)
        s_key = s_key[so]
        r_key = _channel_key(r_peer, r_rank, r_tag, n)
        ro = stable_argsort(r_key)
        r_key = r_key[ro]
        same = np.array_equal(s_key, r_key)
        del s_key, r_key
    else:
        s_pair = src * n + s_peer
        r_pair = r_peer.astype(np.int64) * n + r_rank
        so = np.lexsort((s_tag, s_pair))
        ro = np.lexsort((r_tag, r_pair))
        same = np.array_equal(s_pair[so], r_pair[ro]) and np.array_equal(s_tag[so], r_tag[ro])
    if not same:
        return None
    # the n-th send of the sorted order pairs with the n-th receive; s_idx is in record
    # order already, so a scatter (not another sort) puts the receives in send order
    recv_rec = np.empty_like(r_idx)
    recv_rec[so] = r_idx[ro]
    return s_idx, recv_rec


def _channel_key(src, dst, tag, n):
    """``((src * n + dst) << 32) + (tag + 2^31)`` as int64 (exact: the pair < 2^31), in
    place: one message-long temporary, not four."""
    k = np.asarray(src).astype(np.int64)
    k *= n
    k += dst
    k <<= 32
    k += tag
    k += 1 << 31
    return k


def stable_argsort(key):
    """``np.argsort(key, kind="stable")`` of non-negative int64 keys, as a least-significant
    digit first radix sort over 16-bit digits (numpy's stable sort of 16-bit integers is
    a counting sort: O(n) per digit, against O(n log n) for int64); digits that are the
    same in every key are skipped (a trace's tags are often all 0, its rank pairs small).
    """
    key = np.asarray(key, np.int64)
    if not len(key):
        return np.zeros(0, np.intp)
    # the bits that differ between keys: set in some (or) and clear in some (not and)
    varying = int(np.bitwise_or.reduce(key)) & ~int(np.bitwise_and.reduce(key))
    order = None
    for shift in (0, 16, 32, 48):
        if not (varying >> shift) & 0xFFFF:
            continue
        digit = (key >> shift).astype(np.uint16)     # the low 16 bits of key >> shift
        if order is None:
            order = np.argsort(digit, kind="stable")
        else:
            order = order[np.argsort(digit[order], kind="stable")]
    return np.arange(len(key)) if order is None else order


def _pair_or_explain(w: Workload, rank, s_idx, r_idx):
    """Pair sends and receives per channel; name the first unmatched one (an error)."""
    s_key = np.stack([rank[s_idx], w.peer[s_idx].astype(np.int64), w.tag[s_idx].astype(np.int64)], 1)
    r_key = np.stack([w.peer[r_idx].astype(np.int64), rank[r_idx], w.tag[r_idx].astype(np.int64)], 1)
    allk = np.concatenate([s_key, r_key]) if len(s_idx) + len(r_idx) else np.zeros((0, 3), np.int64)
    _, inv = np.unique(allk, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    s_kid, r_kid = inv[: len(s_idx)], inv[len(s_idx):]
    nkeys = int(inv.max()) + 1 if inv.size else 0
    s_cnt = np.bincount(s_kid, minlength=nkeys)
    r_cnt = np.bincount(r_kid, minlength=nkeys)
    # within a channel, record order is program order (all on one rank)
    s_ord = np.lexsort((s_idx, s_kid))
    r_ord = np.lexsort((r_idx, r_kid))
    s_occ = np.empty(len(s_idx), np.int64)
    r_occ = np.empty(len(r_idx), np.int64)
    s_start = np.concatenate([[0], np.cumsum(s_cnt)[:-1]]) if nkeys else np.zeros(0, np.int64)
    r_start = np.concatenate([[0], np.cumsum(r_cnt)[:-1]]) if nkeys else np.zeros(0, np.int64)
    s_occ[s_ord] = np.arange(len(s_idx)) - s_start[s_kid[s_ord]]
    r_occ[r_ord] = np.arange(len(r_idx)) - r_start[r_kid[r_ord]]
    s_extra = s_occ >= r_cnt[s_kid]
    r_extra = r_occ >= s_cnt[r_kid]
    if s_extra.any() or r_extra.any():
        cand = []
        if s_extra.any():
            cand.append((int(s_idx[s_extra].min()), "send"))
        if r_extra.any():
            cand.append((int(r_idx[r_extra].min()), "recv"))
        i, kind = min(cand)
        r = int(rank[i])
        peer, tag = int(w.peer[i]), int(w.tag[i])
        if kind == "send":
            what = (f"unmatched send: rank {r} sends to rank {peer} (tag {tag}) but rank {peer} "
                    f"posts no matching recv")
        else:
            what = (f"unmatched recv: rank {r} receives from rank {peer} (tag {tag}) but rank "
                    f"{peer} posts no matching send")
        raise _err(w, i, what, "every send needs a recv on the same (src, dst, tag) channel")
    # pair them: sort both sides by (channel, occurrence)
    so = np.lexsort((s_occ, s_kid))
    ro = np.lexsort((r_occ, r_kid))
    send_rec, recv_rec = s_idx[so], r_idx[ro]
    order = np.argsort(send_rec, kind="stable")
    return send_rec[order], recv_rec[order]


def _check_sizes(w: Workload, send_rec, recv_rec, sb=None):
    """MPI's size rules on matched pairs; returns them. ``sb``: the sends' sizes, if
    gathered already."""
    rb = w.nbytes[recv_rec]
    sb = w.nbytes[send_rec] if sb is None else sb
    # an MPI receive count is the buffer's capacity: a larger receive is legal (the message
    # has the send's size); a smaller one is MPI's truncation error (MPI_ERR_TRUNCATE)
    bad = np.flatnonzero((rb >= 0) & (rb < sb))
    if bad.size:
        k = int(bad[0])
        raise _err(w, int(recv_rec[k]), f"message truncated: recv buffer of {int(rb[k])} bytes "
                                        f"matches a send of {int(sb[k])} bytes",
                   "MPI reports MPI_ERR_TRUNCATE: a receive must be at least as large as its "
                   "send (a larger receive is fine)")
    neg = np.flatnonzero(sb < 0)
    if neg.size:
        raise _err(w, int(send_rec[neg[0]]), "send has a negative size")
    return send_rec, recv_rec


def compile_messages(w: Workload, network, node_of_rank: np.ndarray, sharing: str,
                     intra_latency_s: float, intra_bandwidth_Bps: float,
                     charge_overheads: bool = False, release: bool = False) -> Messages:
    """Match messages, then attach routes and quiet costs (vectorised).

    With ``charge_overheads`` (an engine that charges ``o_send_s`` / ``o_recv_s`` to the
    ranks), the cost model's overheads are taken out of the quiet time (a ping-pong
    measures ``o_send + latency + o_recv``); otherwise they are left in it and the arrays
    are zero, so a run never counts them twice. With ``release`` (``w`` is the run's own
    view, :func:`ccmod.api.run_view`) ``w``'s ``peer``, ``tag`` and ``nbytes`` are let go
    once the messages have their own copies: not held under the costs' arrays (the
    peak of a run's preparation, 17 bytes per record).
    """
    sends = {}
    send_rec, recv_rec = match_messages(w, sends)
    rank = sends["rank"]
    M0 = len(send_rec)
    # active messages (LoPC request/reply): a request and its reply per record, appended
    am = np.flatnonzero(w.op == OP_AMREQUEST)
    bad = am[(w.peer[am] < 0) | (w.peer[am] >= w.nranks) | (w.peer[am] == rank[am])]
    if bad.size:
        raise _err(w, int(bad[0]), f"active-message request to rank {int(w.peer[bad[0]])}, but "
                                   f"the trace has ranks 0..{w.nranks - 1} (and not itself)")
    A = len(am)
    # the sends' columns as matching gathered them (send_rec order)
    gather = lambda name, col: col[send_rec] if sends.get(name) is None else sends[name]  # noqa
    src = gather("src", rank).astype(np.int32, copy=False)
    dst = gather("peer", w.peer).astype(np.int32, copy=False)
    nbytes = gather("nbytes", w.nbytes).astype(np.int64, copy=False)
    tag = gather("tag", w.tag).astype(np.int32, copy=False)
    del sends
    # zeros nothing writes: their pages stay untouched (the engine fills them as scalars)
    kind = np.zeros(M0, np.int8)
    handler_s = untouched_zeros(M0)
    if A:
        inter = lambda a, b: np.stack([a, b], 1).reshape(-1)  # noqa: E731 - request, reply
        src = np.concatenate([src, inter(rank[am], w.peer[am])]).astype(np.int32)
        dst = np.concatenate([dst, inter(w.peer[am], rank[am])]).astype(np.int32)
        nbytes = np.concatenate([nbytes, np.repeat(w.nbytes[am], 2)]).astype(np.int64)
        tag = np.concatenate([tag, np.zeros(2 * A, np.int32)]).astype(np.int32)
        kind = np.concatenate([kind, np.tile(np.array([1, 2], np.int8), A)])
        handler_s = np.concatenate([handler_s, np.repeat(w.duration_s[am], 2)])
        send_rec = np.concatenate([send_rec, np.repeat(am, 2)])
        recv_rec = np.concatenate([recv_rec, np.repeat(am, 2)])
    del rank
    if release:
        w.peer = w.tag = w.nbytes = None
    M = M0 + 2 * A
    if M > np.iinfo(np.int32).max:
        raise CcmodInputError(f"{M} messages: one run holds at most 2^31 - 1 (the kernel's "
                              "message ids are int32)", hint="split the trace")
    rec_msg = np.full(w.nrecords, -1, np.int32)   # int32: 4 bytes per record less
    rec_msg[send_rec[:M0]] = np.arange(M0)
    rec_msg[recv_rec[:M0]] = np.arange(M0)
    rec_msg[am] = M0 + 2 * np.arange(A)
    from ccmod.kernel.state import release_free_heap
    release_free_heap(64 * w.nrecords)   # the matching's: not resident under the costs'
    c = message_costs(network, node_of_rank, src, dst, nbytes, sharing, intra_latency_s,
                      intra_bandwidth_Bps, charge_overheads)
    notes = CostNotes(sharing, network.cost)
    notes.add(c)
    if c["bad"] >= 0:
        raise _err(w, int(send_rec[c["bad"]]), "the cost model gives no finite time for this "
                                               "message")
    quiet, latency, cap, intra, same = c["quiet"], c["latency"], c["cap"], c["intra"], c["same"]
    route_ptr, route_res, hops = c["route_ptr"], c["route_res"], c["hops"]
    o_send, o_recv = c["o_send"], c["o_recv"]
    gap = np.full(int(network.nnodes), float(getattr(network.cost, "gap_s", 0.0)))
    notes = notes.notes()
    return Messages(send_rec=send_rec, recv_rec=recv_rec, src=src, dst=dst, tag=held_once(tag),
                    nbytes=nbytes, rec_msg=rec_msg, route_ptr=route_ptr, route_res=route_res,
                    quiet_s=quiet, latency_s=latency, flow_cap_Bps=cap, intra=intra,
                    hops=hops.astype(np.int32, copy=False), kind=kind, handler_s=handler_s, notes=notes,
                    same_node=same, o_send_s=o_send, o_recv_s=o_recv, gap_s=gap)


def held_once(a, min_size=1 << 16):
    """``a``, or when its values are all the same (bit for bit) a read-only view that
    repeats one copy of it (stride 0), as :func:`per_message` gives: a star's latency,
    no rate cap, no intra-node message, a single tag, every route's hops are one value
    each, held once instead of once per message until the engine holds them as scalars
    (8 bytes per message each, at the set-up's peak)."""
    if not (isinstance(a, np.ndarray) and a.ndim == 1 and a.size >= min_size and
            a.dtype.itemsize in (1, 4, 8) and a.strides[0]):
        return a
    bits = a.view({1: np.int8, 4: np.int32, 8: np.int64}[a.dtype.itemsize]) \
        if a.flags.c_contiguous else a
    if (bits[:64] != bits[0]).any() or not (bits == bits[0]).all():
        return a
    return np.broadcast_to(a[:1].copy(), a.shape)


def per_message(column, pinv):
    """``column[pinv]``: a route table's column for every message. When the column holds
    one value (bit for bit: a star's routes all have the same latency, bandwidth and hops)
    a read-only view that repeats it (stride 0): the same values to every operation,
    without a gather or the memory of one."""
    column = np.asarray(column)
    if len(column) and column.ndim == 1 and column.dtype.itemsize in (4, 8):
        bits = column.view(np.int32 if column.dtype.itemsize == 4 else np.int64)
        if (bits == bits[0]).all():
            return np.broadcast_to(column[:1], (len(pinv),))
    return column[pinv]


def _ptr_dtype(entries):
    """The dtype of route offsets up to ``entries``: int32 as the kernel holds them (4 B per
    message less at the set-up's peak), int64 past 2^31 - 1 (refused: state.check_ids)."""
    return np.int32 if entries <= np.iinfo(np.int32).max else np.int64


def message_costs(network, node_of_rank, src, dst, nbytes, sharing: str,
                  intra_latency_s: float, intra_bandwidth_Bps: float,
                  charge_overheads: bool = False, compile_routes=None) -> dict:
    """Routes and quiet costs of messages ``src -> dst`` of ``nbytes`` (vectorised, each
    message on its own: a batch of messages gets the values the whole trace would).

    ``compile_routes(pairs)`` gives the route table of distinct (src node, dst node) pairs
    (default ``network.compile_routes``; a streamed run caches it). Returns the arrays
    (``route_ptr``, ``route_res``, ``hops``, ``quiet``, ``latency``, ``cap``, ``intra``,
    ``same``, ``o_send``, ``o_recv``), what :class:`CostNotes` counts, and ``bad``: the
    first message the cost model gives no finite time (-1: none).
    """
    M = len(nbytes)
    if compile_routes is None:
        compile_routes = network.compile_routes
    sn = np.asarray(node_of_rank[src], np.int64)
    dn = np.asarray(node_of_rank[dst], np.int64)
    same = sn == dn
    if M:
        # distinct (src node, dst node) rows in lexicographic order, via a 1-D key
        k = np.int64(max(int(sn.max()), int(dn.max())) + 1)
        key = sn * k + dn
        if k * k <= max(4 * M, 1 << 16):
            # a table over every node pair: no sort (np.unique's keys, in the same order)
            seen = np.zeros(k * k, np.bool_)
            seen[key] = True
            keys = np.flatnonzero(seen)
            lut = np.empty(k * k, np.int64)
            lut[keys] = np.arange(len(keys))
            pinv = lut[key]
            del seen, lut
        else:
            keys, pinv = np.unique(key, return_inverse=True)
        del key
        pairs = np.stack([keys // k, keys % k], 1)
    else:
        pairs, pinv = np.zeros((0, 2), np.int64), np.zeros(0, np.int64)
    pinv = np.asarray(pinv).reshape(-1)
    table = compile_routes(pairs)
    hops = per_message(table.hops, pinv) if M else np.zeros(0, np.int32)
    h = int(table.hops[0]) if len(table.hops) else 0
    if M and h > 0 and np.all(table.hops == h) and \
            len(table.resources) == h * len(table.hops):
        # every route has h hops (e.g. a star): a row gather, no CSR arithmetic
        route_ptr = np.arange(0, h * (M + 1), h, dtype=_ptr_dtype(h * M))
        rows = np.ascontiguousarray(table.resources, np.int32).reshape(-1, h)
        # each row as one opaque item: a 1-D take, ~10x faster than a 2-D row gather
        route_res = rows.view(np.dtype((np.void, 4 * h))).reshape(-1)[pinv].view(np.int32)
    else:
        route_ptr = np.zeros(M + 1, _ptr_dtype(int(np.sum(hops, dtype=np.int64))))
        np.cumsum(hops, out=route_ptr[1:])
        # gather each message's resources from its pair's row (vectorised CSR gather)
        starts = table.indptr[pinv] if M else np.zeros(0, np.int64)
        offs = np.arange(route_ptr[-1]) - np.repeat(route_ptr[:-1], hops)
        route_res = table.resources[np.repeat(starts, hops) + offs].astype(np.int32)
    nodes = getattr(network, "node_resources", None)
    rank_res = nodes.rank_copy_resource(dst) if nodes is not None and M else None
    inj_res = nodes.rank_inject_resource(src) if nodes is not None and M else None
    hops_cost = hops    # the per-rank resources below add no per-hop latency
    if rank_res is not None or inj_res is not None:
        # intra=shared: a message inside a node also uses its receiving rank's copy
        # resource (one core copies at the one-pair rate); a network message, when one
        # pair streams slower than the NIC, its sending rank's injection resource;
        # either is appended to its route
        add_copy = (sn == dn) & (hops > 0) if rank_res is not None else np.zeros(M, bool)
        add_inj = (sn != dn) & (hops > 0) if inj_res is not None else np.zeros(M, bool)
        add = add_copy | add_inj
        hops2 = hops + add
        ptr2 = np.zeros(M + 1, _ptr_dtype(int(np.sum(hops2, dtype=np.int64))))
        np.cumsum(hops2, out=ptr2[1:])
        res2 = np.empty(ptr2[-1], np.int32)
        offs = np.arange(route_ptr[-1]) - np.repeat(route_ptr[:-1], hops)
        res2[np.repeat(ptr2[:-1], hops) + offs] = route_res
        if rank_res is not None:
            res2[ptr2[1:][add_copy] - 1] = rank_res[add_copy]
        if inj_res is not None:
            res2[ptr2[1:][add_inj] - 1] = inj_res[add_inj]
        hops, route_ptr, route_res = hops2.astype(hops.dtype), ptr2, res2
    lat = per_message(table.latency_s, pinv) if M else np.zeros(0)
    bw = per_message(table.bandwidth_Bps, pinv) if M else np.zeros(0)
    cost = network.cost
    quiet = np.asarray(cost.quiet_s(nbytes, lat, bw, hops_cost), float) if M else np.zeros(0)
    latency = np.asarray(cost.latency_s(nbytes, lat, bw, hops_cost), float) if M else np.zeros(0)
    latency = np.minimum(latency, quiet)
    # max-min: bytes flow over link capacities; a fitted model's own bandwidth caps the flow
    if hasattr(cost, "bandwidth_Bps") and M:
        cap = np.asarray(cost.bandwidth_Bps(nbytes), float)
    else:
        cap = np.full(M, np.inf)
    has_cap = hasattr(cost, "bandwidth_Bps") and M
    net_m = ~same & (hops > 0) if has_cap or sharing == "maxmin" else None
    # a note exactly when a (finite) quiet-cost bandwidth exceeds the route's bottleneck
    # capacity, under every sharing rule (the physical cost has no bandwidth of its own:
    # its caps are all infinite, no message is "fast")
    fast_stats = (0, 0.0, 0.0)
    if has_cap:
        fast = net_m & np.isfinite(cap) & (cap > bw * (1 + 1e-9))
        if fast.any():
            fast_stats = (int(fast.sum()), float(cap[fast].max()), float(bw[fast].min()))
        del fast
    if sharing == "maxmin" and M:
        # max-min moves the bytes over the links, so a lone message takes
        # latency + bytes / min(model bandwidth, route capacity): that is its quiet time
        # (in place: one message-long temporary, not four; the same values)
        q = np.minimum(cap, bw)
        np.divide(nbytes, q, out=q)
        q += latency
        np.copyto(q, quiet, where=~net_m)
        quiet = q
        del q
    if table.flow_cap_Bps is not None and M:
        # a non-shared hop (FATPIPE) limits each flow on its own: it is not a resource
        cap = np.minimum(cap, table.flow_cap_Bps[pinv])
    if same.any():
        intra_q = intra_latency_s + nbytes / intra_bandwidth_Bps
        quiet = np.where(same, intra_q, quiet)
        # with a shared copy resource (network intra=shared) the bytes flow over it after
        # the latency, as on a link; without one the whole intra-node time is a fixed delay
        intra = same & (hops == 0)
        latency = np.where(intra, intra_q, np.where(same, float(intra_latency_s), latency))
        cap = np.where(same & ~intra, float(intra_bandwidth_Bps), cap)
    else:
        intra = np.zeros(M, np.bool_)     # the same values as above, without the passes
    # (not asked for when not charged: the arrays would be dropped for zeros below)
    o_send, o_recv = (np.asarray(a, float) for a in cost.overheads_s(nbytes, same)) \
        if M and charge_overheads else (np.zeros(0), np.zeros(0))
    # without overheads (and no negative latency) nothing leaves the quiet time: the
    # general case would subtract +0.0 and scale by 0.0, the same values, in six passes
    if charge_overheads and M and (o_send.any() or o_recv.any() or not np.all(latency >= 0)):
        # inside a node the overhead is part of the intra-node latency (cost model's
        # intra.o_send_s: one pair's per-message time when messages follow each other)
        o_tot = np.minimum(o_send + o_recv, latency)
        scale = np.where(o_send + o_recv > 0, o_tot / np.maximum(o_send + o_recv, 1e-300), 0.0)
        o_send, o_recv = o_send * scale, o_recv * scale
        quiet = quiet - o_tot
        latency = latency - o_tot
    else:
        o_send, o_recv = untouched_zeros(M), untouched_zeros(M)
    hi = getattr(cost, "fitted_max_bytes", None)
    # sizes beyond a fitted model's range (only a fitted model has one: CostNotes)
    far = (nbytes[~same] if same.any() else nbytes) if hi is not None else nbytes[:0]
    ok = quiet >= 0                  # and finite: NaN fails both tests
    ok &= quiet < np.inf
    bad = np.flatnonzero(~ok) if not ok.all() else ()
    del ok
    return dict(route_ptr=route_ptr, route_res=route_res,
                hops=held_once(hops.astype(np.int32, copy=False)), quiet=quiet,
                latency=held_once(latency), cap=held_once(cap), intra=held_once(intra),
                same=held_once(same),
                o_send=o_send, o_recv=o_recv, fast=fast_stats,
                over=(int((far > hi).sum()) if hi is not None and len(far) else 0,
                      int(np.max(far)) if len(far) else 0),
                bad=int(bad[0]) if len(bad) else -1)


class CostNotes:
    """The notes :func:`message_costs` leads to, counted over one or many batches."""

    def __init__(self, sharing: str, cost):
        self.sharing, self.cost = sharing, cost
        self.fast_n, self.fast_cap, self.fast_bw = 0, 0.0, np.inf
        self.over_n, self.far_max = 0, 0

    def add(self, c: dict) -> None:
        n, cap, bw = c["fast"]
        if n:
            self.fast_n += n
            self.fast_cap = max(self.fast_cap, cap)
            self.fast_bw = min(self.fast_bw, bw)
        self.over_n += c["over"][0]
        self.far_max = max(self.far_max, c["over"][1])

    def notes(self) -> list[str]:
        out = []
        if self.fast_n:
            how = ("with --sharing maxmin the links limit them" if self.sharing == "maxmin"
                   else f"with --sharing {self.sharing} the cost model alone sets their "
                   "quiet time, faster than the links could carry")
            out.append(
                f"the cost model's bandwidth (up to {self.fast_cap:.4g} B/s) exceeds the "
                f"route's bottleneck link capacity ({self.fast_bw:.4g} B/s) on "
                f"{self.fast_n} message(s): {how}; give the network a matching bandwidth=")
        hi = getattr(self.cost, "fitted_max_bytes", None)
        if hi is not None and self.over_n:
            out.append(f"{self.over_n} message(s) up to {self.far_max} bytes are beyond the "
                       f"cost model's fitted range (<= {int(hi)} bytes): their time is "
                       "extrapolated from the last segment; fit with larger sizes (e.g. add "
                       "osu_bw / IMB Uniband data)")
        return out


def range_notes(cost, nbytes) -> list[str]:
    """A note when messages are bigger than the largest size the cost model was fitted on."""
    hi = getattr(cost, "fitted_max_bytes", None)
    if hi is None or not len(nbytes):
        return []
    over = np.asarray(nbytes) > hi
    if not over.any():
        return []
    return [f"{int(over.sum())} message(s) up to {int(np.max(nbytes))} bytes are beyond the "
            f"cost model's fitted range (<= {int(hi)} bytes): their time is extrapolated from "
            f"the last segment; fit with larger sizes (e.g. add osu_bw / IMB Uniband data)"]
