"""Message slots: a streamed run's per-message arrays sized by what is in flight.

Under streaming (:mod:`ccmod.kernel.window`) the kernel's message index ``m`` is a *slot*,
not the message id: a message gets a slot when the first of its records (send or receive
side; an active-message request gets two adjacent slots, request and reply) is loaded
into a window, and gives it back once nothing can read it any more. The kernel counts the
slot's readers (``MsgSt.refs``: its send and receive records until posted, each wait on
it until passed, the transfer until it ends) and lists the slots whose count fell to 0 in
``MsgSt.ret`` (an active-message pair when the reply's handler ended). Between two calls
of the kernel (:meth:`Slots.drain`, before any window is loaded) their outputs go to the
*message sink* and the slots to the free lists.

``okey[m]`` is the slot's message id, the order every tie between messages is broken by
(equal keys in the group and flow heaps, the sorted candidate and done lists), so a
streamed run is bit for bit the whole program's, whatever slot a message lands in.

Sizes grow, never per message: the slot arrays double when the free lists run dry, and a
resource's heap segments (:func:`ccmod.kernel.heaps.resource_segments`) grow when the
route entries of the live slots crossing it could exceed them (``cross``). Each growth
lays the whole state out again (:meth:`ccmod.engine.Engine._layout`) and copies it over
(:func:`_transfer`): slot, entry and pair indices keep their meaning.

The message sink is any callable ``sink(msg_id, t_post_send_s, t_post_recv_s, t_start_s,
t_end_s, bottleneck)`` taking arrays (one row per retired message, in no particular
order); :class:`MessageTimes` (the default) fills whole-trace arrays for the collector, a
streaming writer appends them to its output instead.
"""
from __future__ import annotations

import numpy as np
from numba import njit

import ccmod.kernel.compiled  # noqa: F401  (numba's BLAS check without scipy.linalg)
from ccmod.codes import OP_AMREQUEST, OP_IRECV, OP_ISEND
from ccmod.kernel.codes import K_NRET
from ccmod.kernel.ohash import find, mix36, rehash, remove, resized, table_size

INF = np.inf
#: slots a streamed run starts with (doubled when they run out)
INITIAL_SLOTS = 64
#: heap entries per resource a streamed run starts with (grown as routes need)
INITIAL_SEGMENT = 4
#: the fields of :class:`ccmod.kernel.state.MsgIn` a slot takes from its message
INPUTS = (("src", "src"), ("dst", "dst"), ("nbytes", "nbytes"), ("quiet", "quiet_s"),
          ("latency", "latency_s"), ("o_send", "o_send_s"), ("o_recv", "o_recv_s"),
          ("kind", "kind"), ("handler_s", "handler_s"), ("flow_cap", "flow_cap_Bps"))


@njit(cache=True, _nrt=False)
def _home(m, mask):
    """Home bucket of message id ``m`` (ids are near-consecutive per rank: spread them)."""
    return mix36(m) & mask


@njit(cache=True, _nrt=False)
def _find(hkey, m):
    """Bucket of message id ``m`` in the id table ``hkey`` (:mod:`ccmod.kernel.ohash`),
    or the empty bucket where it would go."""
    return find(hkey, m, _home)


@njit(cache=True, _nrt=False)
def _remove(hkey, hval, i):
    """Empty bucket i of the id table (backward shift)."""
    remove(hkey, hval, i, _home)


@njit(cache=True, _nrt=False)
def _rehash(okey, oval, hkey, hval):
    """Insert the old id table's entries into the new (larger, empty) one."""
    rehash(okey, oval, hkey, hval, _home)


@njit(cache=True, _nrt=False)
def _count_new(hkey, ids):
    """How many of ``ids`` are not in the id table."""
    k = 0
    for m in ids:
        if hkey[_find(hkey, m)] < 0:
            k += 1
    return k


@njit(cache=True, _nrt=False)
def _assign(op, ids, i0, out, hkey, hval, free1, free2, top, refs, new_s, new_id, new_i,
            new_k, k):
    """Slots of the records' message ids ``ids[i0:]`` into ``out`` (-1: no message).

    A message seen for the first time takes a slot (``free1``, else half of a pair of
    ``free2``) with 3 references (send record, receive record, transfer); its second side
    finds it in the id table (``hkey``/``hval``: message id -> slot of the messages seen
    on one side only; at most one entry per slot and twice as many buckets as slots, so
    at most half full); an isend/irecv adds one (its wait). An active-message request
    takes a pair (request, reply). New slots and their ids go to ``new_s`` / ``new_id``
    from ``k``, the record that made each to ``new_i`` and its kind (0 point-to-point, 1
    request, 2 reply) to ``new_k``. Returns ``(i, k)``: i = len(ids) when done, else the
    record that needs more slots (grow, call again from i).

    Plain arrays and no reference counting (``_nrt=False``): with a typed Dict for the
    ids this was ~0.18 s per 1M records, most of it the dict's calls.
    """
    for i in range(i0, len(ids)):
        m = ids[i]
        o = op[i]
        out[i] = -1
        if m < 0:
            continue
        if o == OP_AMREQUEST:
            if top[1] == 0:
                return i, k
            top[1] -= 1
            s = free2[top[1]]
            refs[s] = 0
            refs[s + 1] = 0
            new_s[k] = s
            new_id[k] = m
            new_i[k] = i
            new_k[k] = 1
            new_s[k + 1] = s + 1
            new_id[k + 1] = m + 1
            new_i[k + 1] = i
            new_k[k + 1] = 2
            k += 2
        else:
            b = _find(hkey, m)
            if hkey[b] >= 0:
                s = hval[b]
                _remove(hkey, hval, b)
            else:
                if top[0] == 0:
                    if top[1] == 0:
                        return i, k
                    top[1] -= 1
                    s = free2[top[1]]
                    free1[0] = s + 1
                    top[0] = 1
                else:
                    top[0] -= 1
                    s = free1[top[0]]
                hkey[b] = m
                hval[b] = s
                refs[s] = 3
                new_s[k] = s
                new_id[k] = m
                new_i[k] = i
                new_k[k] = 0
                k += 1
            if o == OP_ISEND or o == OP_IRECV:
                refs[s] += 1
        out[i] = s
    return len(ids), k


@njit(cache=True, _nrt=False)
def _open(ns, ni, hops, starts, rr, H, nbytes, route_res, route_end, okey, tpost_s, tpost_r,
          t_start, t_end, send_w, recv_w, am_w, bott, live, cross, res_messages, res_bytes):
    """New slots ``ns`` (message ids ``ni``): their routes at the fixed stride H (message
    j's hop h is ``rr[starts[j] + h]``), times and waiters cleared, live; their route
    entries counted per resource (``cross``: live slots; messages and bytes: all). One
    pass, in place of ~20 vectorised calls per window (~0.5 ms each at 2,000 slots)."""
    for j in range(ns.shape[0]):
        s = ns[j]
        b = s * H
        h = hops[j]
        nb = float(nbytes[s])
        for x in range(h):
            e = rr[starts[j] + x]
            route_res[b + x] = e
            cross[e] += 1
            res_messages[e] += 1
            res_bytes[e] += nb        # whole bytes: exact sums in any order (< 2^53)
        route_end[s] = b + h
        okey[s] = ni[j]
        tpost_s[s] = INF
        tpost_r[s] = INF
        t_start[s] = INF
        t_end[s] = INF
        send_w[s] = -1
        recv_w[s] = -1
        am_w[s] = -1
        bott[s] = -1
        live[s] = True


@njit(cache=True, _nrt=False)
def _close(ret, kind, route_ptr, route_end, route_res, cross, live, free1, free2, top):
    """Free the retired slots ``ret``: to the free lists (an active-message pair by its
    request's slot), their route entries uncounted from ``cross``, not live."""
    for s in ret:
        if kind[s] == 0:
            free1[top[0]] = s
            top[0] += 1
        elif kind[s] == 1:
            free2[top[1]] = s
            top[1] += 1
        for e in range(route_ptr[s], route_end[s]):
            cross[route_res[e]] -= 1
        live[s] = False


class MessageTimes:
    """The default message sink: whole-trace arrays indexed by message id."""

    def __init__(self, nmsg: int):
        self.t_post_send = np.full(nmsg, INF)
        self.t_post_recv = np.full(nmsg, INF)
        self.t_start = np.full(nmsg, INF)
        self.t_end = np.full(nmsg, INF)
        self.bott = np.full(nmsg, -1, np.int64)

    def __call__(self, msg_id, t_post_send_s, t_post_recv_s, t_start_s, t_end_s, bottleneck):
        self.t_post_send[msg_id] = t_post_send_s
        self.t_post_recv[msg_id] = t_post_recv_s
        self.t_start[msg_id] = t_start_s
        self.t_end[msg_id] = t_end_s
        self.bott[msg_id] = bottleneck


class MessageInputs:
    """A slot's inputs read by message id from whole-trace :class:`ccmod.compile.Messages`
    (a Workload run in windows). A streamed run computes them per batch instead
    (:class:`ccmod.stream_inputs.BatchInputs`, the same interface)."""

    def __init__(self, msgs, eager, unshared):
        self.nmsg = len(msgs.nbytes)
        self.rp = np.asarray(msgs.route_ptr, np.int64)
        self.rr = np.asarray(msgs.route_res, np.int64)
        self.H = max(int(np.diff(self.rp).max()) if len(self.rp) > 1 else 1, 1)
        self.cols = [(a, np.asarray(getattr(msgs, b))) for a, b in INPUTS
                     if getattr(msgs, b, None) is not None and len(getattr(msgs, b))]
        self.cols += [("unshared", unshared), ("eager", eager)]
        self.tag = np.asarray(msgs.tag)

    def inputs(self, ids, rec, kind, cols, r):
        """``(fields, tag, hops, starts, res)`` of messages ``ids``: MsgIn fields, and
        route entry h of message j is ``res[starts[j] + h]``."""
        fields = {a: col[ids] for a, col in self.cols}
        return fields, self.tag[ids], self.rp[ids + 1] - self.rp[ids], self.rp[ids], self.rr


class Slots:
    """Slot allocation, growth and retirement for an :class:`ccmod.engine.Engine` fed by
    windows; lays the engine's state out for its first slots.

    Parameters
    ----------
    engine : ccmod.engine.Engine
        Its ``_layout(S, seg_cap, pair_cap)`` lays the state out; views are read back
        from it (``Mv``, ``G``, ``K``).
    provider : MessageInputs or ccmod.stream_inputs.BatchInputs
        The messages' inputs and routes (``nmsg``, ``H`` the longest route,
        ``inputs(...)``), asked for each batch of new slots.
    slots : int, optional
        Initial number of slots (doubled when they run out; default
        :data:`INITIAL_SLOTS`).
    sink : callable, optional
        Where retired messages' outputs go (default :class:`MessageTimes`); a sink with a
        ``rows(cols)`` method gets whole rows instead (:meth:`_out`).

    Attributes
    ----------
    res_messages, res_bytes : ndarray[R]
        Messages and bytes over each resource (route entries of every slot given so far).
    """

    def __init__(self, engine, provider, slots: int | None = None, sink=None):
        self.eng = engine
        self.provider = provider
        self.nmsg = int(provider.nmsg)
        self.H = max(int(provider.H), 1)
        self.sink = MessageTimes(self.nmsg) if sink is None else sink
        self.R = int(engine._net[0])
        self.cross = np.zeros(self.R, np.int64)      # route entries of live slots, per resource
        self.res_messages = np.zeros(self.R, np.int64)
        self.res_bytes = np.zeros(self.R, np.float64)
        self.seg_cap = np.full(self.R, INITIAL_SEGMENT, np.int64)
        self.hkey = np.full(0, -1, np.int64)     # message id -> slot table (_assign)
        self.hval = np.zeros(0, np.int64)
        slots = INITIAL_SLOTS if slots is None else int(slots)
        S = max(2, slots + slots % 2)
        self.S = 0
        self.free1 = np.zeros(0, np.int64)
        self.free2 = np.zeros(0, np.int64)
        self.top = np.zeros(2, np.int64)
        self.live = np.zeros(0, np.bool_)
        self.tag = np.zeros(0, np.int64)
        self.nlive = 0
        self.deferred = False                        # segment growth left to settle()
        self._more_slots(S)
        engine.slots = self
        engine._layout(self.S, self.seg_cap, self._pair_cap())
        self.peak = 0                                # most slots live at once

    # -- layout -------------------------------------------------------------------------
    def _pair_cap(self):
        return np.minimum(self.seg_cap * max(self.H - 1, 0), self.R)

    def msg_fields(self, S):
        """The :class:`~ccmod.kernel.state.MsgIn` fields of ``S`` empty slots (routes at a
        fixed stride ``H``), and the ``(route_ptr, route_res)`` the rules are laid out with."""
        H = self.H
        rp = np.arange(S + 1, dtype=np.int64) * H
        rr = np.zeros(S * H, np.int64)
        f = {a: ("f" if a in ("quiet", "latency", "o_send", "o_recv", "handler_s") else
                 "j" if a in ("src", "dst", "kind") else "i", S, 0) for a, _ in INPUTS}
        f.update(unshared=("j", S, 0), eager=("j", S, 0), flow_cap=("f", S, INF),
                 fconst=("v", 0))
        f.update(nmsg=("v", self.nmsg), route_ptr=("j", S + 1, rp), route_res=("j", S * H, 0),
                 route_end=("j", S, rp[:-1]), okey=("i", S, -1))
        return f, rp, rr

    def _more_slots(self, S_new):
        """Free lists for slots ``[S, S_new)`` (as pairs; a single slot splits one)."""
        old = self.S
        f1 = np.zeros(S_new, np.int64)
        f1[:old] = self.free1[:old]
        f2 = np.zeros(S_new // 2, np.int64)
        n2 = int(self.top[1])
        f2[:n2] = self.free2[:n2]
        new_pairs = np.arange(S_new - 2, old - 1, -2, dtype=np.int64)   # lowest on top
        f2[n2:n2 + len(new_pairs)] = new_pairs
        self.top[1] = n2 + len(new_pairs)
        self.free1, self.free2 = f1, f2
        live = np.zeros(S_new, np.bool_)
        live[:old] = self.live
        tag = np.zeros(S_new, np.int64)
        tag[:old] = self.tag
        self.live, self.tag = live, tag
        self.S = S_new
        # the id table: a power of two at least twice the slots (at most half full)
        self.hkey, self.hval = resized(self.hkey, self.hval, table_size(S_new), _rehash)

    def _grow(self, S_new=None):
        """Lay the engine's state out again (more slots and/or larger segments)."""
        eng = self.eng
        if S_new is not None:
            # the resources' segments grow with the slots, in proportion to what crosses
            # them now (a segment entry is 8 bytes, a slot ~500): the windows that fill
            # the new slots then seldom need a lay-out of their own for a segment
            live = max(self.nlive, 1)
            self.seg_cap = np.maximum(self.seg_cap, -(-2 * self.cross * S_new // live))
            self._more_slots(S_new)
        old = (eng._arena, eng.I, eng.F)
        eng._layout(self.S, self.seg_cap, self._pair_cap())
        _transfer(old, (eng._arena, eng.I, eng.F))

    # -- the feed's side ----------------------------------------------------------------
    def assign(self, r, g0, g1, ids, cols):
        """Slots of rank r's records ``[g0, g1)`` with message ids ``ids`` (the window
        being loaded, columns ``cols``); new slots get their message's inputs and route."""
        op = np.asarray(cols["op"], np.int64)
        ids = np.asarray(ids, np.int64)
        out = np.full(len(ids), -1, np.int64)
        new = [np.zeros(2 * len(ids), np.int64) for _ in range(4)]
        i, k = 0, 0
        while True:
            i, k = _assign(op, ids, i, out, self.hkey, self.hval, self.free1, self.free2, self.top,
                           self.eng.G.refs, *new, k)
            if i == len(ids):
                break
            self._grow(2 * self.S)
        if k:
            ns, ni, rec, kind = (a[:k] for a in new)
            self._fill(ns, ni, self.provider.inputs(ni, rec, kind, cols, r))
        return out

    def _fill(self, ns, ni, given):
        eng = self.eng
        Mv, G = eng.Mv, eng.G
        fields, tag, hops, starts, rr = given
        for name, col in fields.items():
            getattr(Mv, name)[ns] = col
        self.tag[ns] = tag
        _open(ns, ni, np.asarray(hops, np.int64), np.asarray(starts, np.int64), rr, self.H,
              Mv.nbytes, Mv.route_res, Mv.route_end, Mv.okey, G.t_post_send, G.t_post_recv,
              G.t_start, G.t_end, G.send_waiter, G.recv_waiter, G.am_waiter, G.bott,
              self.live, self.cross, self.res_messages, self.res_bytes)
        self.nlive += len(ns)
        self.peak = max(self.peak, self.nlive)
        if not self.deferred:
            self._fit_segments()

    def _fit_segments(self):
        over = self.cross > self.seg_cap
        if over.any():
            # every resource past a quarter of its segment grows with the ones that
            # overflow, to four times what it holds: one lay-out for many resources, not
            # one per resource (entries are 8 bytes: the lay-outs cost, not the room)
            grow = 4 * self.cross > self.seg_cap
            self.seg_cap[grow] = np.maximum(4 * self.cross[grow], 2 * self.seg_cap[grow])
            self._grow()

    def reserve(self, batches):
        """Before the first windows are assigned (``WindowFeed.start``): grow once to the
        slots their ``(op, ids)`` ``batches`` will take, and leave the heap segments'
        growth to :meth:`settle` (nothing is in the heaps before the kernel runs).

        Loading the ranks one by one doubled the slots, and grew the segments, ~20 times
        on a 64-rank trace (each a lay-out of the whole state, ~0.3 s CPU per run)."""
        self.deferred = True
        ids = [np.asarray(i, np.int64) for _, i in batches]
        am = sum(int(np.count_nonzero((op == OP_AMREQUEST) & (i >= 0)))
                 for (op, _), i in zip(batches, ids))
        m = np.concatenate([i[(i >= 0) & (op != OP_AMREQUEST)]
                            for (op, _), i in zip(batches, ids)]) if ids else ids
        # each distinct id not in the table takes a single slot: a free one, else half a
        # pair; each request a pair: exactly the pairs these need, no more (the slots
        # double only if later windows need more)
        m = np.sort(m)               # (np.unique's hash path: ~40x slower here)
        m = m[np.concatenate([[True], m[1:] != m[:-1]])] if len(m) else m
        singles = max(_count_new(self.hkey, m) - int(self.top[0]), 0)
        pairs = am + (singles + 1) // 2 - int(self.top[1])
        if pairs > 0:
            self._grow(self.S + 2 * pairs)

    def settle(self):
        """After the first windows: grow the heap segments :meth:`reserve` deferred."""
        self.deferred = False
        self._fit_segments()

    def drain(self):
        """Hand the retired slots' outputs to the sink and free the slots."""
        eng = self.eng
        ks = eng.K.ks
        n = int(ks[K_NRET])
        if n == 0:
            return
        ret = eng.G.ret[:n].copy()
        ks[K_NRET] = 0
        self._out(ret)
        Mv = eng.Mv
        _close(ret, Mv.kind, Mv.route_ptr, Mv.route_end, Mv.route_res, self.cross, self.live,
               self.free1, self.free2, self.top)
        self.nlive -= len(ret)

    def _out(self, slots):
        G, Mv = self.eng.G, self.eng.Mv
        if not hasattr(self.sink, "rows"):
            self.sink(Mv.okey[slots], G.t_post_send[slots], G.t_post_recv[slots],
                      G.t_start[slots], G.t_end[slots], G.bott[slots].astype(np.int64))
            return
        self.sink.rows({
            "msg_id": Mv.okey[slots], "src": Mv.src[slots], "dst": Mv.dst[slots],
            "tag": self.tag[slots], "nbytes": Mv.nbytes[slots], "quiet_s": Mv.quiet[slots],
            "o_send_s": Mv.o_send[slots], "o_recv_s": Mv.o_recv[slots],
            "hops": Mv.route_end[slots] - Mv.route_ptr[slots],
            "t_post_send_s": G.t_post_send[slots], "t_post_recv_s": G.t_post_recv[slots],
            "t_start_s": G.t_start[slots], "t_end_s": G.t_end[slots],
            "bottleneck": G.bott[slots].astype(np.int64)})

    def finish(self):
        """After the run: the outputs of every slot, retired or still live (a request
        never waited on, a deadlock)."""
        self.drain()
        live = np.flatnonzero(self.live)
        if len(live):
            self._out(live)


def _transfer(old, new):
    """Copy the kernel state of arena ``old`` into the larger ``new`` (both ``(arena, I,
    F)``): slot, entry and pair indices keep their place, per-resource heap segments move
    to their new offsets, the pair free list gains the new pairs."""
    from ccmod.kernel.ccmod_rule import N_PF
    from ccmod.kernel.mm_classes import N_FREE
    from ccmod.kernel.state import HEADER, CcState, MmState
    (A0, I0, F0), (A1, I1, F1) = old, new
    segs = {CcState: (("g_item", "seg", "g_len"), ("ph_item", "ph_seg", "ph_len")),
            MmState: (("r_item", "seg", "r_len"), ("g_item", "seg", "g_len"))}
    skip = {"seg", "ph_seg", "ht", "pfree", "c_free", "g_item", "ph_item", "r_item"}
    for cls in HEADER:
        if cls not in A0.spec:
            continue
        a, b = A0.views(cls, I0, F0), A1.views(cls, I1, F1)
        for name in cls._fields:
            if A0.spec[cls][name][0] == "v":
                continue
            if cls in segs and name in skip:
                continue
            x, y = getattr(a, name), getattr(b, name)
            k = min(len(x), len(y))
            y[:k] = x[:k]
        for item, seg, ln in segs.get(cls, ()):
            xi, yi = getattr(a, item), getattr(b, item)
            s0, s1, lens = getattr(a, seg), getattr(b, seg), getattr(a, ln)
            for r in np.flatnonzero(lens):
                c = int(lens[r])
                yi[s1[r]:s1[r] + c] = xi[s0[r]:s0[r] + c]
        if cls is CcState:
            nf = int(a.si[N_PF])
            np0, np1 = len(a.pr), len(b.pr)
            b.pfree[:nf] = a.pfree[:nf]
            b.pfree[nf:nf + np1 - np0] = np.arange(np0, np1, dtype=np.int64)
            b.si[N_PF] = nf + np1 - np0
        if cls is MmState:
            # free class ids: the new ones below the old (popped only after them, as in a
            # whole-program run); live classes hashed again at the new table's mask
            nf = int(a.si[N_FREE])
            n0, n1 = len(a.c_free), len(b.c_free)
            b.c_free[:n1 - n0] = np.arange(n1 - 1, n0 - 1, -1, dtype=np.int64)
            b.c_free[n1 - n0:n1 - n0 + nf] = a.c_free[:nf]
            b.si[N_FREE] = nf + n1 - n0
            hm = int(b.hmask)
            for c in np.flatnonzero(a.c_rep >= 0):
                h = int(b.c_hash[c]) & hm
                while b.ht[h] != 0:
                    h = (h + 1) & hm
                b.ht[h] = c + 1
                b.c_slot[c] = h
