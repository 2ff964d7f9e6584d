"""The CCMOD evaluation engine: prepare flat arrays, run the compiled kernel, hand back.

The event-horizon loop itself (rank interpreter, waits, barrier, send modes, handlers,
both sharing rules, recording) is one compiled kernel, :mod:`ccmod.kernel`; the static
matching and routing is :mod:`ccmod.compile`, result assembly :mod:`ccmod.collect`.

Send modes
----------
rendezvous  transfer starts when both sides are posted; a blocking send/recv (or the wait
            on an isend/irecv) is released when the transfer ends (CCMOD's SCOM).
eager       transfer starts when the send is posted; the sender is released on delivery.
detached    transfer starts when the send is posted; the sender continues at once.

With ``eager_limit_bytes`` > 0, rendezvous applies only to messages larger than the limit
and smaller ones go eager, as MPI libraries do (e.g. 64 KiB).

Sharing rules: ``ccmod`` (the article: the whole quiet time divided by the bandwidth
availability), ``ccmod:latency=unshared`` (the latency phase paid unshared, the rest
divided), ``maxmin`` (SimGrid-CM02-like flows over capacities, latency unshared).
"""
from __future__ import annotations

import numpy as np

from ccmod.errors import CcmodInputError, DeadlockError

SEND_MODES = ("rendezvous", "eager", "detached")
SHARINGS = ("ccmod", "ccmod:latency=unshared", "maxmin")
INF = float("inf")
#: horizons per kernel call when progress is reported
PROGRESS_EVENTS = 1 << 16


def _zeros_like_msgs(msgs, name):
    v = getattr(msgs, name, None)
    M = len(msgs.nbytes)
    return np.zeros(M) if v is None else np.asarray(v, np.float64)


def capacity_ratio(nresources, capacity_Bps, route_ptr, route_res, flow_cap_Bps):
    """Per resource: capacity / the quiet bandwidth of the messages crossing it.

    A message's quiet bandwidth is the rate its bytes flow at alone: the cost model's
    bandwidth (``flow_cap_Bps``), at most its route's bottleneck capacity. Several messages
    of different sizes may cross a resource; the fastest one's rate is the reference (so no
    message's bytes go faster than ``capacity / count``). Resources no message crosses get 1.
    """
    cap = np.asarray(capacity_Bps, np.float64)[:nresources]
    rp = np.asarray(route_ptr, np.int64)
    rr = np.asarray(route_res, np.int64)
    hops = np.diff(rp)
    msg = np.repeat(np.arange(len(hops)), hops)
    # bottleneck capacity per message: min over its route entries
    route_min = np.full(len(hops), np.inf)
    np.minimum.at(route_min, msg, cap[rr])
    bw = np.minimum(np.asarray(flow_cap_Bps, np.float64), route_min)
    ref = np.zeros(nresources)
    np.maximum.at(ref, rr, bw[msg])
    out = np.ones(nresources)
    ok = (ref > 0) & np.isfinite(ref) & np.isfinite(cap)
    out[ok] = cap[ok] / ref[ok]
    return out


#: Messages fields the arena holds (Messages name, MsgIn name), in their dtype or, integers,
#: widened (int8 kind): shared, as views of the arena, once
#: copied in; :func:`message_column` gives a widened one its dtype back for the tables
_ARENA_INPUTS = (("quiet_s", "quiet"), ("latency_s", "latency"), ("o_send_s", "o_send"),
                 ("o_recv_s", "o_recv"), ("handler_s", "handler_s"),
                 ("flow_cap_Bps", "flow_cap"), ("nbytes", "nbytes"), ("route_ptr", "route_ptr"),
                 ("src", "src"), ("dst", "dst"), ("kind", "kind"), ("route_res", "route_res"))


def _detach_inputs(msgs, arena):
    """Take from ``msgs`` the fields the arena holds copies of (same shape, the same dtype
    or a narrower integer one, or any into an int32 field: checked as copied in, as
    ``route_ptr``): the arena's inputs then hold them alone, each freed once copied in (never
    two copies at the peak). Returns ``{name: dtype}`` of them, for :func:`_share_inputs`.
    ``msgs`` lacks them until then."""
    from ccmod.kernel.state import CONST_INPUTS, MsgIn
    spec = arena.spec[MsgIn]
    out = {}
    M = int(spec["nmsg"][1])
    for name, field in _ARENA_INPUTS:
        a = getattr(msgs, name, None)
        kind, _, n, _ = spec[field]
        if not (isinstance(a, np.ndarray) and (a.shape == (n,) or (
                n == 1 and field in CONST_INPUTS and a.shape == (M,)))):
            continue             # n 1: a float input held once (CONST_INPUTS)
        want = np.dtype({"i": np.int64, "j": np.int32, "f": np.float64}[kind])
        if a.dtype == want or (kind in "ij" and a.dtype.kind == "i" and
                               (a.dtype.itemsize < want.itemsize or kind == "j")):
            setattr(msgs, name, None)
            out[name] = a.dtype
    return out


def _share_inputs(msgs, views, names):
    """Point ``msgs``' fields ``names`` (``{name: dtype}``) at the kernel's read-only
    copies of them (``views``, numpy views of the arena): one copy of each in memory, not
    two. The kernel never writes its message inputs; the views are made read-only to keep
    it so. A field held in another dtype keeps its own in ``msgs.widened`` (message_column).
    """
    from ccmod.kernel.state import CONST_INPUTS
    widened = getattr(msgs, "widened", None) or {}
    for name, field in _ARENA_INPUTS:
        if name in names:
            v = getattr(views, field)
            v.flags.writeable = False
            if field in CONST_INPUTS and len(v) != views.nmsg:   # held once: for all
                v = np.broadcast_to(v, (views.nmsg,))
            setattr(msgs, name, v)
            if v.dtype != names[name]:
                widened.setdefault(name, names[name])
    if widened:
        msgs.widened = widened


def message_column(msgs, name):
    """Field ``name`` of ``msgs`` in the dtype compile_messages gave it (a field the
    kernel's arena holds widened is an int64 view of it during a run: narrowed again
    here, a copy, once the run's peak is past)."""
    a = getattr(msgs, name)
    dt = (getattr(msgs, "widened", None) or {}).get(name)
    return a if dt is None else np.asarray(a, dt)


#: the state a result reads after a run (the arena's views it keeps): the rest is the
#: kernel's scratch (:meth:`Engine.release_scratch`). Of the message inputs, what
#: :func:`ccmod.collect.collect` reads, and the Messages' other fields (:data:`_LOOP_ONLY`
#: unless they are let go too); the loop's own flags and order keys are let go (~20
#: bytes per message of the peak that follows, the result's tables and notes)
_KEEP = {"MsgIn": ("src", "dst", "nbytes", "quiet", "o_send", "o_recv", "route_ptr",
                   "route_res", "route_end", "node_of_rank", "gap_s", "latency",
                   "flow_cap", "handler_s", "kind"),
         "Scalars": "all", "BgSteps": "all",
         "MsgSt": ("t_post_send", "t_post_recv", "t_start", "t_end", "bott"),
         "RankSt": ("state_s", "finish", "handler_tot"),
         "CcState": ("area", "busy", "peak"), "MmState": ("area", "busy", "peak")}
#: message inputs that only the loop reads: the Messages' views of them go too with
#: ``release_scratch(messages=True)`` (a run that owns its Messages)
_LOOP_ONLY = ("latency", "flow_cap", "handler_s", "kind")


def _not_overlapping(drop, keep):
    """The ``(kind, offset, n)`` slices of ``drop`` that share no element with a slice of
    ``keep`` (all pairs at once: a Python loop over the pairs cost ~1 ms of every run)."""
    if not drop or not keep:
        return list(drop)
    d = np.array([(ord(k), o, o + n) for k, o, n in drop], np.int64)
    k = np.array([(ord(k), o, o + n) for k, o, n in keep], np.int64)
    hit = ((d[:, None, 0] == k[None, :, 0]) & (k[None, :, 1] < d[:, None, 2])
           & (d[:, None, 1] < k[None, :, 2])).any(axis=1)
    return [x for x, h in zip(drop, hit.tolist()) if not h]


#: the engine's views of its state (:meth:`Engine._state_views`): attribute -> group
_VIEWS = {"Mv": "MsgIn", "R": "RankSt", "G": "MsgSt", "K": "Scalars", "CS": "CcState",
          "MS": "MmState"}


class Engine:
    """Evaluate one workload on one network.

    Parameters
    ----------
    workload : workloads.base.Workload
    msgs : ccmod.compile.Messages
    nresources : int
    capacity_Bps, background : ndarray
        Per-resource capacity and background fraction (from t = 0).
    sharing : str
        A rule of :data:`ccmod.sharing.SHARING_RULES` (``ccmod``, ``ccmod:latency=unshared``,
        ``maxmin``).
    send_mode : {"rendezvous", "eager", "detached"}
    eager_limit_bytes : int
        Under rendezvous, messages of at most this size are sent eagerly (0 = none).
    record : bool
        Keep rank-state intervals and contention changes (for outputs).
    signals : bool
        Produce the full signal trace (debug sink).
    progress : callable, optional
        ``progress(records_done)`` called now and then.
    node_of_rank, gap_s : ndarray, optional
        Node of each rank and the NIC gap of each node (min seconds between injections).
    bg_t_s, bg_resource, bg_load : ndarray, optional
        Background-load steps sorted by time (load from that time on for that resource).
    window_records : int, optional
        Give the kernel at most this many records per rank at a time
        (:mod:`ccmod.kernel.window`, streaming); the results are bit for bit those of the
        whole program. None: the whole program at once.
    message_sink : callable, optional
        With ``window_records``: where each message's outputs go once its slot is
        retired (:mod:`ccmod.kernel.slots`; default: arrays the collector reads).
    stream : ccmod.stream_inputs.StreamInputs, optional
        With ``window_records``: a streamed run's record source (``source``), matcher
        and per-batch message inputs (``inputs``); ``workload`` and ``msgs`` are then
        not read (None is fine): nothing the size of the trace is built.
    on_pause : callable, optional
        ``on_pause(engine)`` whenever the kernel pauses (a window refill, every
        :data:`PROGRESS_EVENTS` horizons) and once at the end, before the results are
        gathered: a streamed run drains the recordings there (``engine.L``).
    """

    def __init__(self, workload, msgs, nresources, capacity_Bps, background, *,
                 sharing="ccmod", send_mode="rendezvous", eager_limit_bytes=0, record=True,
                 signals=False, progress=None, node_of_rank=None, gap_s=None, bg_t_s=None,
                 bg_resource=None, bg_load=None, window_records=None, on_pause=None,
                 message_sink=None, stream=None):
        from ccmod.kernel import state as ks
        from ccmod.kernel.waits import resolve_waits
        from ccmod.codes import OP_NAMES
        from ccmod.sharing import SHARING_RULES
        entry, params = SHARING_RULES.resolve(sharing, source="--sharing", defaults=True)
        rule = entry.name
        lat_unshared = rule == "maxmin" or params.get("latency") == "unshared"
        self.stream = stream
        self.w = w = workload if stream is None else stream.source
        self.m = msgs
        self.sharing = sharing
        self.send_mode = send_mode
        self.record = record
        self.progress = progress
        self.on_pause = on_pause
        n = w.nranks
        M = len(msgs.nbytes) if stream is None else int(stream.inputs.nmsg)
        bad = np.zeros(0, np.int64) if stream is not None else \
            np.flatnonzero((w.op < 0) | (w.op >= len(OP_NAMES)))
        if bad.size:
            f, ln = w.where(int(bad[0]))
            raise CcmodInputError(f"unknown op code {int(w.op[bad[0]])}", source=f, line=ln)
        self.feed = None
        if window_records is not None:
            from ccmod.kernel.window import WindowFeed
            # message ids from the incremental matcher (the static ones: a test checks)
            self.feed = WindowFeed(w, None, int(window_records), start=False,
                                   matcher=None if stream is None else stream.matcher)
            badpc = -1
        else:
            badpc, wait_msg, wait_side, wa_ptr, wa_msg, wa_side = resolve_waits(
                w.rank_ptr, w.op, w.req, msgs.rec_msg)
        if badpc >= 0:
            f, ln = w.where(badpc)
            raise CcmodInputError(f"rank {w.rank_of(badpc)} waits on request "
                                  f"{int(w.req[badpc])} that is not outstanding", source=f,
                                  line=ln, hint="each wait needs an earlier isend/irecv")
        if node_of_rank is None:
            node_of_rank = np.arange(max(n, 1), dtype=np.int64)
        node_of_rank = np.asarray(node_of_rank, np.int64)
        nnodes = int(node_of_rank.max()) + 1 if len(node_of_rank) else 1
        gap = np.zeros(nnodes) if gap_s is None else np.asarray(gap_s, np.float64)
        eager = unshared = None     # a streamed run's come with each batch of messages
        if stream is None and send_mode == "rendezvous":
            eager = (msgs.nbytes <= eager_limit_bytes) & (eager_limit_bytes > 0)
        elif stream is None:
            eager = np.ones(M, np.bool_)
        if stream is None:
            unshared = np.asarray(getattr(msgs, "unshared", msgs.intra), np.bool_)
        code = 1 if rule == "maxmin" else 0
        self.C = ks.config(code, lat_unshared, send_mode == "detached",
                           bool(record), bool(signals), bool(np.any(gap > 0)),
                           PROGRESS_EVENTS if progress is not None or on_pause is not None
                           else -1, window_records is not None)
        self._order = None
        #: after a run in slot order: slot -> message id of the outputs (else None)
        self.slot_ids = None
        if self.feed is not None:
            self.P = self.feed.program       # window positions, before any load
        else:
            # the Workload's int8 op codes and the Messages' int32 ids, as they are
            self.P = ks.whole_program(n, w.rank_ptr, w.op,
                                      np.asarray(w.duration_s, np.float64),
                                      msgs.rec_msg, wait_msg, wait_side,
                                      wa_ptr, wa_msg, wa_side)
            from ccmod.kernel import order as korder
            if korder.wanted(M, n, maxmin=code == 1):
                # the kernel's slots in execution order (kernel/order.py), ids as okey;
                # the records' messages as slots (the run puts them back: _restore_order)
                P = self.P
                self._order = korder.plan(P.rank_ptr, P.rec_msg, msgs.kind, M,
                                          (P.op, P.wait_msg, P.wa_ptr, P.wa_msg))
        if bg_t_s is None:
            bg_t_s, bg_resource, bg_load = np.zeros(0), np.zeros(0, np.int64), np.zeros(0)
        order = np.argsort(np.asarray(bg_t_s, np.float64), kind="stable")
        bg_res = np.asarray(bg_resource, np.int64)[order]
        bg_load = np.asarray(bg_load, np.float64)[order]
        bgr = np.asarray(background, np.float64)
        if code == 0 and params.get("capacity") == "ratio":
            # free[l] = (1 - background) * capacity / quiet bandwidth: BA counts capacities
            # (streamed: one route per resource crossed, of its reference rate, from a pass
            # over the trace's messages, ccmod/stream_inputs.py: the same ratio)
            ratio = capacity_ratio(nresources, capacity_Bps, *(
                (msgs.route_ptr, msgs.route_res, msgs.flow_cap_Bps) if stream is None
                else stream.ratio_routes))
            bgr = 1.0 - (1.0 - bgr) * ratio
            bg_load = 1.0 - (1.0 - bg_load) * ratio[bg_res]
        self._bg = (np.asarray(bg_t_s, np.float64)[order], bg_res, bg_load)
        self._net = (int(nresources), capacity_Bps, bgr, node_of_rank, gap, nnodes)
        self._eager, self._unshared = eager, unshared
        # a run that records nothing (and is not streamed: its pauses drain the logs) has
        # no logs (addresses 0)
        self.L = ks.new_logs() if record or signals or window_records is not None \
            else ks.NO_LOGS
        self.slots = None
        if self.feed is not None:
            from ccmod.kernel.slots import MessageInputs, Slots
            provider = stream.inputs if stream is not None else \
                MessageInputs(msgs, eager, unshared)
            self.slots = Slots(self, provider, sink=message_sink)  # lays the state out
            self.feed.start(self.slots.assign, self.slots.reserve)
            self.slots.settle()          # the heaps' room, once for the first windows
            self.P = self.feed.program
        elif self._order is None:
            self._layout(M)
        else:
            try:
                self._layout(M)
            except BaseException:
                korder.renumber_back(self.P.rec_msg, self._order)   # the caller's ids
                raise
            self._order = True           # the slots' ids are the arena's okey from here on
        if code == 0 and len(self.CS.count) < nresources:
            raise AssertionError("resource arrays too short")
        self.nresources = nresources
        self.signals = None

    def _layout(self, S, seg_cap=None, pair_cap=None):
        """Lay the kernel's state out for ``S`` messages (the trace's, or message slots
        under streaming: :mod:`ccmod.kernel.slots` gives their fields and caps). The state
        is slices of two buffers (a compiled call then costs a few reference counts, not
        one per array) and named tuples of offsets into them."""
        from ccmod.kernel import state as ks
        from ccmod.kernel.ccmod_rule import cc_new
        from ccmod.kernel.codes import STATE_NAMES
        from ccmod.kernel.maxmin import mm_new
        nres, capacity_Bps, bgr, node_of_rank, gap, nnodes = self._net
        n = self.w.nranks
        A = self._arena = ks.Arena()
        if self.slots is not None:
            fields, rp, rr = self.slots.msg_fields(S)
        else:
            msgs = self.m
            rp = msgs.route_ptr      # int32 (compile._ptr_dtype), as the arena holds it
            rr = msgs.route_res      # int32, as the arena holds it (4 bytes per entry less)
            okey = self._order
            fields = dict(
                nmsg=("v", S), src=("j", S, msgs.src), dst=("j", S, msgs.dst),
                nbytes=("i", S, msgs.nbytes), quiet=("f", S, msgs.quiet_s),
                latency=("f", S, msgs.latency_s),
                o_send=("f", S, _zeros_like_msgs(msgs, "o_send_s")),
                o_recv=("f", S, _zeros_like_msgs(msgs, "o_recv_s")),
                unshared=("j", S, self._unshared), kind=("j", S, msgs.kind),
                handler_s=("f", S, msgs.handler_s), flow_cap=("f", S, msgs.flow_cap_Bps),
                eager=("j", S, self._eager), route_ptr=("j", S + 1, rp),
                route_res=("j", len(rr), rr), route_end=("+", "route_ptr", 1, S),
                # no order keys out of slot order: the ids break the ties (heaps.order_key)
                okey=("v", -1) if okey is None else ("i", S, okey),
                fconst=("v", 0))
            self._eager = self._unshared = okey = None    # in the arena's inputs from here on
            # an input with one value for every message (bit for bit: a star's latency, no
            # rate cap, no eager or active message) is held once (8 bytes per message of a
            # float, a line per message in flight of a flag; the same in any slot order)
            fc = 0
            for name, bit in ks.CONST_INPUTS.items():
                kind, size, init = fields[name][:3]
                one = ks._constant(init, kind)
                if size > 1 and not isinstance(one, np.ndarray):
                    fields[name] = (kind, 1, one)
                    fc |= bit
            fields["fconst"] = ("v", fc)
            if self._order is not None:
                # the inputs in slot order (kernel/order.py); rp and rr size the rules'
                # state below, which does not depend on the order
                from ccmod.kernel.order import in_slot_order
                self._gathered = in_slot_order(fields, self._order)
        self.Min = A.struct(ks.MsgIn, node_of_rank=("i", len(node_of_rank), node_of_rank),
                            gap_s=("f", len(gap), gap), **fields)
        self.Ro = ks.rank_state(A, self.P.rank_ptr, len(STATE_NAMES))
        self.Go = ks.msg_state(A, S, nnodes, self.C.recycle)
        self.T = ks.timers(A, 2 * n + 2 + 2 * S, 2 * n + 2)
        self.Ko = ks.scalars(A)
        t, res, load = self._bg
        self.BG = A.struct(ks.BgSteps, n=("v", len(t)), t=("f", len(t), t),
                           res=("i", len(t), res), load=("f", len(t), load))
        routes = tuple(A.where(ks.MsgIn, f) for f in ("route_ptr", "route_res", "route_end",
                                                       "okey"))
        empty_p, empty_r = np.zeros(1, np.int64), np.zeros(0, np.int64)
        code = self.C.sharing
        # (streamed: message slots are recycled, each with its own route entries' links)
        caps = dict(seg_cap=seg_cap, pair_cap=pair_cap, entry_blocks=self.slots is None,
                    bott=A.where(ks.MsgSt, "bott"))      # the rule's groups: the output
        self.CSo = cc_new(A, nres, bgr, *((rp, rr) if code == 0 else (empty_p, empty_r)),
                          routes=routes if code == 0 else None, **(caps if code == 0 else {}))
        self.MSo = mm_new(A, nres, capacity_Bps, bgr,
                          *((rp, rr) if code == 1 else (empty_p, empty_r)),
                          routes=routes if code == 1 else None,
                          **({"seg_cap": seg_cap,
                              # classes: the messages' distinct (route, cap) pairs, or
                              # at most one per slot under streaming
                              "flow_cap": None if self.slots is not None
                              else self.m.flow_cap_Bps} if code == 1 else {}))
        # whole program: MsgIn is per message, so Messages can share the arena's copy
        shared = _detach_inputs(self.m, A) if self.slots is None else ()
        del fields, rp, rr               # the arena's inputs: held by it alone
        size = 8 * (A.size["i"] + A.size["f"])      # at least what the inputs let go
        ks.release_free_heap(size)
        self.I, self.F = A.alloc(ks.release_free_heap, dict(ks.SPARSE))
        if self._order is not None:    # the arena holds the slots' ids: the plan's go now
            self._order = True         # (not after the trim below: ~4 B/record of heap)
        if shared:
            _share_inputs(self.m, A.views(ks.MsgIn, self.I, self.F), shared)
        ks.release_free_heap(size)       # the inputs just copied in
        self._views = {}       # numpy views of the state, for Python: _state_views

    def _state_views(self, name):
        """The numpy views (:meth:`ccmod.kernel.state.Arena.views`) of state group ``name``
        (:data:`_VIEWS`), made once per lay-out: a small run reads a few of the six."""
        v = self._views.get(name)
        if v is None:
            from ccmod.kernel import state as ks
            cls = type(self.CSo) if name == "CS" else type(self.MSo) if name == "MS" else \
                getattr(ks, _VIEWS[name])
            v = self._views[name] = self._arena.views(cls, self.I, self.F)
        return v

    Mv, R, G, K, CS, MS = (property(lambda self, n=n: self._state_views(n), doc=f"{c}'s views")
                           for n, c in _VIEWS.items())

    # -- results the collector reads -------------------------------------------------
    @property
    def _share(self):
        return self.CS if self.C.sharing == 0 else self.MS

    def run(self) -> float:
        """Evaluate; return the time the last rank finished."""
        from ccmod.kernel import compiling
        from ccmod.kernel.loop import go_end, run_loop
        from ccmod.kernel.codes import K_RECORDS, K_STARVED
        args = [self.C, self.P, self.L, self.I, self.F]
        ks_ = self.K.ks
        with compiling(self.C, self.L):   # the first call compiles, if the cache is cold
            done = run_loop(*args)
        resume = None
        while not done:
            if ks_[K_STARVED]:
                # a rank consumed its window: load its next records (taking the retired
                # slots' outputs first), resume where it stopped
                self.slots.drain()
                self.feed.refill(int(ks_[K_STARVED]) - 1, lambda: self.R)
                args[1] = self.P = self.feed.program
                args[3], args[4] = self.I, self.F      # grown when the slots ran out
                ks_ = self.K.ks
            elif self.progress is not None:
                self.progress(int(ks_[K_RECORDS]))
            if self.on_pause is not None:
                self.on_pause(self)
                args[2] = self.L                     # (new recording lists, streamed)
            if resume is None:
                # the compiled entry, typed once: not numba's typing of the tuple arguments
                # at every resume (kernel/window.py)
                from ccmod.kernel.window import resumer
                resume = resumer(args)
            done = resume(*args)
        if self.on_pause is not None:
            self.on_pause(self)
        t = float(self.K.kf[0])
        if self.feed is not None and self.feed.matcher is not None:
            self.feed.matcher.finish()   # an unmatched send/recv, before any deadlock
        if self.slots is not None:
            self.slots.finish()          # every slot's outputs, retired or not
        finish = self.R.finish
        unfinished = np.flatnonzero(finish == INF)
        if self._order is not None:
            self._restore_order(deadlock=bool(unfinished.size))
        if unfinished.size:
            raise DeadlockError(t, [self._blocked_desc(int(r)) for r in unfinished])
        makespan = float(finish.max()) if len(finish) else 0.0
        if self.C.signals:
            go_end(self.C, self.L, t, makespan)      # the last signal; nothing else
        self._finish_arrays()
        return makespan

    def _restore_order(self, deadlock=False):
        """After a run in slot order (:mod:`ccmod.kernel.order`): the message inputs (the
        Messages share them) and the routes back in id order; the records' ids when
        ``Messages.rec_msg`` is read. The outputs (:data:`_KEEP`'s ``MsgSt``) stay in slot
        order, with ``slot_ids`` (slot -> id), for :func:`ccmod.collect.collect` to put in
        id order only when a column is read: a run that only summarises (``--json``) never
        pays it. The kernel's scratch is freed first but for the order keys (the temporary
        then fits in its place, below the run's peak), unless the run deadlocked: its
        description reads the outputs and the waiters, all in id order."""
        from ccmod.kernel.order import restore
        from ccmod.kernel.state import MsgIn
        A, Mv = self._arena, self.Mv
        if not deadlock:
            self.release_scratch(keep_inputs=("okey",))
        if deadlock:       # outputs and waiters: strided views (state.MF), by numpy
            for name in _KEEP["MsgSt"] + ("send_waiter", "recv_waiter"):
                v = getattr(self.G, name)
                v[Mv.okey] = v.copy()
        fields = [A.spec[MsgIn][name][:2] for name, g in self._gathered.items() if g.used
                  and name in _KEEP["MsgIn"]]
        rec = self.P.rec_msg
        if not deadlock and self.m.__dict__.get("rec_msg") is rec:   # (read back lazily)
            del self.m.__dict__["rec_msg"]
            self.m._rec_slots, rec = (rec, Mv.okey), np.zeros(0, np.int32)
        restore(self.I, self.F, fields, Mv.okey, Mv.route_ptr, Mv.route_res, rec,
                keep_okey=not deadlock)
        self._order = self._gathered = None
        if not deadlock:
            self.slot_ids = Mv.okey

    def release_scratch(self, messages=False, keep_inputs=()):
        """After :meth:`run`: give back the memory of the kernel's state that no result
        reads (sharing rule, timers, waiters, rank scratch: ~60 bytes per record at 1M),
        before the result's tables are made (the process's peak). Only whole-program
        runs (a streamed run's slots are drained already); the engine cannot run again.
        ``messages``: also the message inputs only the loop reads (:data:`_LOOP_ONLY`),
        and the Messages' fields that are views of them (set to None); ``keep_inputs``:
        message inputs kept all the same."""
        if self.slots is not None or not hasattr(self, "I"):
            return
        if self.slot_ids is not None:
            keep_inputs = tuple(keep_inputs) + ("okey",)   # the outputs' slot -> id
        # nothing to do when the last call dropped all this one would (the collector's)
        last = getattr(self, "_released", None)
        if last is not None and messages <= last[0] and last[1] <= set(keep_inputs):
            return
        self._released = (messages, set(keep_inputs))
        from ccmod.kernel.state import drop_pages
        A = self._arena
        keep, drop = [], []
        for cls, spec in A.spec.items():
            kept = _KEEP.get(cls.__name__, ())
            if messages and cls.__name__ == "MsgIn":
                kept = tuple(k for k in kept if k not in _LOOP_ONLY)
            if cls.__name__ == "MsgIn":
                kept = tuple(kept) + tuple(keep_inputs)
            for name, (kind, off, n, _) in spec.items():
                if kind in ("i", "f", "j") and n:
                    (keep if kept == "all" or name in kept else drop).append((kind, off, n))
        # shared slices (routes) are kept whole wherever one holder keeps them
        drop = _not_overlapping(drop, keep)
        drop_pages({"i": self.I, "f": self.F}, drop)
        # the Messages' views of dropped inputs would read zeros now: let them go too
        from ccmod.kernel.state import MsgIn
        dropped = set(drop)
        for name, field in _ARENA_INPUTS:
            kind, off, n, _ = A.spec[MsgIn][field]
            if (kind, off, n) in dropped and getattr(self.m, name, None) is not None:
                setattr(self.m, name, None)

    def _finish_arrays(self):
        from ccmod.kernel.record import load_arrays, signal_arrays, state_arrays
        G, R, S = self.G, self.R, self._share
        if self.slots is not None:
            # outputs by message id (the default sink; another sink took them already)
            G = self.slots.sink
        get = lambda name: getattr(G, name, None)  # noqa: E731
        self.t_post_send, self.t_post_recv = get("t_post_send"), get("t_post_recv")
        self.t_start, self.t_end, self.bott = get("t_start"), get("t_end"), get("bott")
        self.state_s, self.finish_s, self.handler_s = R.state_s, R.finish, R.handler_tot
        self.events = int(self.K.ks[1])
        self.records_done = int(self.K.ks[2])
        self.area, self.busy, self.peak = S.area, S.busy, S.peak
        self.states = state_arrays(self.L.states) if self.record else None
        self.load = load_arrays(self.L.load) if self.record else None
        if self.C.signals:
            self.signals = signal_arrays(self.L.sig)

    def _blocked_desc(self, r) -> str:
        """Say what rank r waits for, with the record's file:line."""
        from ccmod.kernel.codes import STATE_BARRIER, STATE_RECV, STATE_SEND, STATE_WAIT
        s = int(self.R.block_state[r])
        pc = int(self.R.pc[r]) - 1
        if self.feed is not None:
            pc = self.feed.record_of(r, pc)
        f, ln = self.w.where(max(pc, 0))
        where = f" at {f}:{ln}" if f and ln else ""
        if s == STATE_BARRIER:
            return f"rank {r} in barrier{where}"
        waits = []
        G, Mv = self.G, self.Mv
        detached = self.send_mode == "detached"
        okey = Mv.okey                    # slot -> message (streaming, slot order)
        if np.isscalar(okey):             # none: the identity
            okey = np.arange(len(G.t_end))
        tags = self.slots.tag if self.slots is not None else self.m.tag
        for s_ in range(len(G.t_end)):
            if int(okey[s_]) < 0:
                continue
            tag = int(tags[s_])
            if G.send_waiter[s_] == r and not (detached or G.t_end[s_] < INF):
                waits.append(f"send to {int(Mv.dst[s_])} (tag {tag}, {int(Mv.nbytes[s_])} B)")
            if G.recv_waiter[s_] == r and G.t_end[s_] == INF:
                waits.append(f"recv from {int(Mv.src[s_])} (tag {tag})")
            if len(waits) >= 3:
                break
        what = {STATE_SEND: "send", STATE_RECV: "recv", STATE_WAIT: "wait"}.get(s, "state")
        return f"rank {r} blocked in {what}{where} waiting for " + (", ".join(waits) or "?")
