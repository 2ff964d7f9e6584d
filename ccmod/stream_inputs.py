"""A streamed run's message inputs, computed per batch of newly matched messages.

In a whole-program run :func:`ccmod.compile.compile_messages` matches the trace and gives
every message its route and quiet costs up front (~60 bytes per record). A streamed run
(:mod:`ccmod.streaming`) cannot hold that: when a window is loaded, the messages it names
for the first time get a slot (:mod:`ccmod.kernel.slots`) and :class:`BatchInputs` computes
their inputs then, with :func:`ccmod.compile.message_costs` (the same vectorised code, each
message on its own, so the values are the whole program's bit for bit). Routes come from
:class:`RouteCache`: the node pairs the trace uses (from the source's survey) compiled once.
What a batch of messages leads to in the notes is counted as it goes
(:class:`ccmod.compile.CostNotes`).
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ccmod.codes import OP_IRECV, OP_RECV
from ccmod.errors import CcmodInputError

#: new messages in a batch up to which their costs are looked up by (src, dst, bytes)
SMALL_BATCH = 16
#: messages the small batches' memo holds at most
SMALL_MEMO = 1 << 14


class RouteCache:
    """Route table rows of (src node, dst node) pairs, compiled once per pair.

    ``table(pairs)`` answers like ``network.compile_routes(pairs)`` (a RouteTable's
    fields), from rows compiled ahead (:meth:`add`) or now.
    """

    def __init__(self, network):
        self.net = network
        self.K = np.int64(max(int(network.nnodes), 1))
        self.keys = np.zeros(0, np.int64)            # sorted pair keys
        self.row = np.zeros(0, np.int64)             # their rows
        self.hops = np.zeros(0, np.int32)
        self.indptr = np.zeros(1, np.int64)
        self.res = np.zeros(0, np.int32)
        self.lat = np.zeros(0)
        self.bw = np.zeros(0)
        self.fcap = None

    def add(self, pairs) -> None:
        """Compile the pairs (int64[k, 2]) not compiled yet."""
        pairs = np.asarray(pairs, np.int64).reshape(-1, 2)
        keys = np.unique(pairs[:, 0] * self.K + pairs[:, 1])
        new = keys[~np.isin(keys, self.keys)]
        if not len(new):
            return
        t = self.net.compile_routes(np.stack([new // self.K, new % self.K], 1))
        base = len(self.hops)
        self.hops = np.concatenate([self.hops, t.hops])
        self.indptr = np.concatenate([self.indptr, self.indptr[-1] + t.indptr[1:]])
        self.res = np.concatenate([self.res, t.resources])
        self.lat = np.concatenate([self.lat, t.latency_s])
        self.bw = np.concatenate([self.bw, t.bandwidth_Bps])
        if t.flow_cap_Bps is not None or self.fcap is not None:
            old = self.fcap if self.fcap is not None else np.full(base, np.inf)
            add = t.flow_cap_Bps if t.flow_cap_Bps is not None else np.full(len(new), np.inf)
            self.fcap = np.concatenate([old, add])
        keys = np.concatenate([self.keys, new])
        rows = np.concatenate([self.row, base + np.arange(len(new))])
        o = np.argsort(keys, kind="stable")
        self.keys, self.row = keys[o], rows[o]

    def table(self, pairs):
        """The RouteTable fields of ``pairs`` (distinct rows, int64[k, 2])."""
        pairs = np.asarray(pairs, np.int64).reshape(-1, 2)
        keys = pairs[:, 0] * self.K + pairs[:, 1]
        i = np.searchsorted(self.keys, keys)
        if len(keys) and (np.any(i >= len(self.keys)) or
                          np.any(self.keys[np.minimum(i, len(self.keys) - 1)] != keys)):
            self.add(pairs)
            i = np.searchsorted(self.keys, keys)
        rows = self.row[i]
        hops = self.hops[rows]
        indptr = np.zeros(len(rows) + 1, np.int64)
        np.cumsum(hops, out=indptr[1:])
        offs = np.arange(indptr[-1]) - np.repeat(indptr[:-1], hops)
        res = self.res[np.repeat(self.indptr[rows], hops) + offs]
        return SimpleNamespace(pairs=pairs, indptr=indptr, resources=res,
                               latency_s=self.lat[rows], bandwidth_Bps=self.bw[rows],
                               hops=hops, flow_cap_Bps=None if self.fcap is None
                               else self.fcap[rows])


class BatchInputs:
    """Message inputs for :class:`ccmod.kernel.slots.Slots`, per batch of new messages.

    Parameters
    ----------
    source : record source
        For error locations (``where``).
    survey : the source after :meth:`survey` (``sends``, ``am_requests``, ``rank_pairs``)
    prep : namespace from :func:`ccmod.api.prepare_run` (network, placement, intra costs,
        eager limit)
    sharing, send_mode : str
    """

    def __init__(self, source, survey, prep, sharing: str, send_mode: str):
        from ccmod.compile import CostNotes
        self.src = source
        self.net = prep.net
        self.node_of_rank = np.asarray(prep.node_of_rank, np.int64)
        self.sharing, self.send_mode = sharing, send_mode
        self.eager_limit = int(prep.eager_limit_bytes)
        self.intra = (prep.intra_latency_s, prep.intra_bandwidth_Bps)
        self.nmsg = int(np.sum(survey.sends)) + 2 * int(np.sum(survey.am_requests))
        self.routes = RouteCache(self.net)
        n = np.int64(max(int(source.nranks), 1))
        rp = np.asarray(survey.rank_pairs, np.int64)
        nodes = self.node_of_rank
        if len(rp):
            self.routes.add(np.stack([nodes[rp // n], nodes[rp % n]], 1))
        # the route stride of a slot: the longest route, plus a rank's own copy or
        # injection resource appended by message_costs
        extra = 1 if getattr(self.net, "node_resources", None) is not None else 0
        self.H = max(int(self.routes.hops.max()) if len(self.routes.hops) else 0, 1) + extra
        self.notes = CostNotes(sharing, self.net.cost)
        self.messages = 0
        # small batches' costs by (src rank, dst rank, bytes): see _small
        self.memo: dict = {}

    def inputs(self, ids, rec, kind, cols, r):
        """``(fields, tag, hops, starts, res)`` of new messages ``ids`` made by records
        ``rec`` of rank r's window (columns ``cols``; ``kind`` 0 point-to-point, 1 an
        active-message request, 2 its reply); see :class:`ccmod.kernel.slots.MessageInputs`."""
        from ccmod.compile import message_costs
        op = np.asarray(cols["op"], np.int64)[rec]
        peer = np.asarray(cols["peer"], np.int64)[rec]
        # a receive (or a reply) travels from the peer to this rank
        back = (kind == 2) | ((kind == 0) & ((op == OP_RECV) | (op == OP_IRECV)))
        src = np.where(back, peer, r).astype(np.int32)
        dst = np.where(back, r, peer).astype(np.int32)
        nbytes = np.asarray(cols["msg_nbytes"], np.int64)[rec]
        small = len(ids) <= SMALL_BATCH
        c = self._small(src, dst, nbytes) if small else None
        if c is None:
            c = message_costs(self.net, self.node_of_rank, src, dst, nbytes, self.sharing,
                              self.intra[0], self.intra[1], charge_overheads=True,
                              compile_routes=self.routes.table)
            if c["bad"] >= 0:
                k = c["bad"]
                raise CcmodInputError(f"the cost model gives no finite time for a message of "
                                      f"{int(nbytes[k])} bytes from rank {int(src[k])} to "
                                      f"rank {int(dst[k])}", source="--cost")
            self.notes.add(c)
            if small:
                self._keep(src, dst, nbytes, c)
        self.messages += len(ids)
        if self.send_mode == "rendezvous":
            eager = (nbytes <= self.eager_limit) & (self.eager_limit > 0)
        else:
            eager = np.ones(len(ids), np.bool_)
        am = kind > 0
        fields = dict(src=src, dst=dst, nbytes=nbytes, quiet=c["quiet"], latency=c["latency"],
                      o_send=c["o_send"], o_recv=c["o_recv"], kind=kind,
                      handler_s=np.where(am, np.asarray(cols["duration_s"],
                                                        np.float64)[rec], 0.0),
                      flow_cap=c["cap"], unshared=c["intra"], eager=eager)
        tag = np.where(am, 0, np.asarray(cols["tag"], np.int64)[rec])
        hops = c["hops"].astype(np.int64)
        if len(hops) and int(hops.max()) > self.H:
            raise AssertionError("a route longer than the slots' stride")
        return fields, tag, hops, c["route_ptr"][:-1], c["route_res"]

    def _small(self, src, dst, nbytes):
        """:func:`ccmod.compile.message_costs`'s arrays for a small batch whose every
        message is in the memo (else None).

        A window of a few records (``--window 1``, a rank's last records) brings one to a
        few new messages at a time, and message_costs' ~50 array passes cost ~0.5 ms a
        batch whatever its size: most of a small window's refill. Its values are per
        message (each message on its own), so a message of the same ranks and size has
        the same costs and route, bit for bit; only messages that add nothing to the
        notes are kept (:meth:`_keep`), so a batch from the memo adds nothing either."""
        memo = self.memo
        rows = []
        if not len(src):
            return None
        for key in zip(src.tolist(), dst.tolist(), nbytes.tolist()):
            row = memo.get(key)
            if row is None:
                return None
            rows.append(row)
        quiet, latency, o_send, o_recv, cap, intra, route = zip(*rows)
        hops = np.array([len(x) for x in route], np.int32)
        route_ptr = np.zeros(len(rows) + 1, np.int32)
        np.cumsum(hops, out=route_ptr[1:])
        return dict(quiet=np.array(quiet, np.float64), latency=np.array(latency, np.float64),
                    o_send=np.array(o_send, np.float64), o_recv=np.array(o_recv, np.float64),
                    cap=np.array(cap, np.float64), intra=np.array(intra, np.bool_),
                    hops=hops, route_ptr=route_ptr,
                    route_res=np.array([h for x in route for h in x], np.int32))

    def _keep(self, src, dst, nbytes, c) -> None:
        """Keep a small batch's messages in the memo when they add nothing to the notes
        (none faster than its route, none beyond a fitted model's range); the memo holds
        at most :data:`SMALL_MEMO` messages (started again when full)."""
        if c["fast"][0] or c["over"][0]:
            return
        if len(self.memo) > SMALL_MEMO:
            self.memo = {}
        rp = np.asarray(c["route_ptr"]).tolist()
        res = np.asarray(c["route_res"]).tolist()
        cols = (np.asarray(c[k]).tolist() for k in ("quiet", "latency", "o_send", "o_recv",
                                                    "cap", "intra"))
        for j, (key, *v) in enumerate(zip(zip(src.tolist(), dst.tolist(), nbytes.tolist()),
                                          *cols)):
            self.memo[key] = (*v, tuple(res[rp[j]:rp[j + 1]]))

    def ratio_routes(self, capacity_Bps, nresources: int):
        """What ``ccmod:capacity=ratio`` needs of every message before the run, from one
        pass over the trace's messages (batch by batch: memory per resource, not per
        message).

        The in-memory run gives :func:`ccmod.engine.capacity_ratio` every message's route
        and flow cap; its result only depends, per resource, on the reference bandwidth
        ``ref[l]`` = max over the messages crossing l of min(flow cap, route bottleneck).
        This returns ``(route_ptr, route_res, flow_cap_Bps)`` of one one-hop route per
        resource some message crosses, of flow cap ``ref[l]`` (at most l's capacity, so
        its own bottleneck changes nothing): ``capacity_ratio`` of these gives the
        in-memory ratio bit for bit (a max is exact in any order, and each message's
        costs are the whole program's, :func:`ccmod.compile.message_costs`)."""
        from ccmod.codes import OP_AMREQUEST, OP_ISEND, OP_SEND
        from ccmod.compile import message_costs
        cap = np.asarray(capacity_Bps, np.float64)[:nresources]
        ref = np.zeros(nresources)
        n = self.src.nranks
        for r, t in self.src.batches(("op", "peer", "nbytes")):
            op = np.asarray(t["op"], np.int64)
            peer = np.asarray(t["peer"], np.int64)
            ok = (peer >= 0) & (peer < n)      # bad peers are reported when loaded
            snd = ((op == OP_SEND) | (op == OP_ISEND)) & ok
            am = (op == OP_AMREQUEST) & ok
            # sends from r; an active-message request from r and its reply back to r
            src = np.concatenate([np.full(int(snd.sum()) + int(am.sum()), r, np.int64),
                                  peer[am]])
            dst = np.concatenate([peer[snd], peer[am], np.full(int(am.sum()), r, np.int64)])
            nb = np.asarray(t["nbytes"], np.int64)
            nbytes = np.concatenate([nb[snd], nb[am], nb[am]])
            if not len(nbytes):
                continue
            c = message_costs(self.net, self.node_of_rank, src.astype(np.int32),
                              dst.astype(np.int32), nbytes, self.sharing, self.intra[0],
                              self.intra[1], charge_overheads=True,
                              compile_routes=self.routes.table)
            rp = np.asarray(c["route_ptr"], np.int64)
            rr = np.asarray(c["route_res"], np.int64)
            hops = np.diff(rp)
            msg = np.repeat(np.arange(len(hops)), hops)
            # as capacity_ratio: each message's bottleneck capacity, then its quiet rate
            route_min = np.full(len(hops), np.inf)
            np.minimum.at(route_min, msg, cap[rr])
            bw = np.minimum(np.asarray(c["cap"], np.float64), route_min)
            np.maximum.at(ref, rr, bw[msg])
        crossed = np.flatnonzero(ref != 0)
        return (np.arange(len(crossed) + 1, dtype=np.int64), crossed, ref[crossed])


def needs_ratio(sharing: str) -> bool:
    """Whether ``sharing`` is ``ccmod`` with ``capacity=ratio`` (its ratio needs every
    message's route before the run)."""
    from ccmod.sharing import SHARING_RULES
    entry, params = SHARING_RULES.resolve(sharing, source="--sharing", defaults=True)
    return entry.name == "ccmod" and params.get("capacity") == "ratio"


def stream_inputs(source, prep, opts, ratio_routes=None):
    """The ``stream=`` of :class:`ccmod.engine.Engine`: the source (surveyed), its matcher,
    the per-batch message inputs and, under ``ccmod:capacity=ratio``, the per-resource
    reference routes (:meth:`BatchInputs.ratio_routes`; ``ratio_routes`` given: those of
    an earlier run on the same source and preparation, not a second pass)."""
    from ccmod.kernel.matcher import Matcher
    survey = source.survey()
    inputs = BatchInputs(source, survey, prep, opts.sharing, opts.send_mode)
    if ratio_routes is None and needs_ratio(opts.sharing):
        ratio_routes = inputs.ratio_routes(prep.net.resource_capacity_Bps(),
                                           int(prep.net.nresources))
    matcher = Matcher(source, counts=(survey.sends, survey.am_requests))
    return SimpleNamespace(source=source, matcher=matcher, inputs=inputs,
                           ratio_routes=ratio_routes)
