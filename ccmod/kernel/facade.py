"""The sharing rules driven one call at a time (tests, experiments, teaching).

:class:`CcmodSharing` and :class:`MaxMinSharing` wrap the compiled state of
:mod:`ccmod.kernel.ccmod_rule` and :mod:`ccmod.kernel.maxmin` behind the small interface
``start(m, t, work, resources, cap)``, ``next_time()``, ``pop_due(t)``,
``active_count()``, with per-resource ``peak`` / ``area`` / ``busy`` statistics and the
bottleneck of each finished message in ``bott_out``. The engine does not use them (it runs
the whole loop compiled); they hold up to ``max_messages`` messages (ids may be any ints).
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

INF = float("inf")
_Out = namedtuple("_Out", "bott")


class _Facade:
    def __init__(self, nresources, max_messages, max_hops):
        self.nres = int(nresources)
        self.cap_msgs = int(max_messages)
        self.route_ptr = np.zeros(self.cap_msgs + 1, np.int64)
        self.route_res = np.zeros(self.cap_msgs * max_hops, np.int64)
        self.seg_cap = np.full(self.nres, self.cap_msgs, np.int64)
        self.ids: list[int] = []
        self.bott_out: dict[int, int] = {}
        self.nactive = 0

    def _alloc(self, A, offsets):
        """Buffers of arena ``A``; ``S`` the state's views (routes are filled through them)."""
        self.So = offsets
        self._Bo = A.struct(_Out, bott=("j", self.cap_msgs, -1))   # as MsgSt.bott
        self.I, self.F = A.alloc()
        self.S = A.views(type(offsets), self.I, self.F)
        self._bott = A.views(_Out, self.I, self.F).bott
        self.route_ptr, self.route_res = self.S.route_ptr, self.S.route_res

    def _add_route(self, m, resources):
        k = len(self.ids)
        if k >= self.cap_msgs:
            raise ValueError(f"more than max_messages={self.cap_msgs} messages")
        route = np.asarray([int(r) for r in resources], np.int64)
        p = self.route_ptr[k]
        self.route_res[p:p + len(route)] = route
        self.route_ptr[k + 1:] = p + len(route)
        self.ids.append(int(m))
        self.nactive += 1
        return k

    def _done(self, nd):
        out = [self.ids[int(k)] for k in self.S.done[:nd]]
        for k, m in zip(self.S.done[:nd], out):
            self.bott_out[m] = int(self._bott[k])
        self.nactive -= nd
        return out

    def active_count(self) -> int:
        return self.nactive

    @property
    def peak(self):
        return self.S.peak

    @property
    def area(self):
        return self.S.area

    @property
    def busy(self):
        return self.S.busy


class CcmodSharing(_Facade):
    """The article's sharing rule (work in quiet-seconds), see :mod:`ccmod.kernel.ccmod_rule`."""

    def __init__(self, nresources, background, record_load=True, max_messages=1024,
                 max_hops=16):
        from ccmod.kernel.ccmod_rule import cc_new
        from ccmod.kernel.state import Arena
        super().__init__(nresources, max_messages, max_hops)
        A = Arena()
        self.max_hops = int(max_hops)
        self._alloc(A, cc_new(A, nresources, np.asarray(background, float), self.route_ptr,
                              self.route_res, seg_cap=self.seg_cap, max_hops=max_hops))

    def start(self, m, t, work, resources, cap=INF):
        from ccmod.kernel.ccmod_rule import cc_start
        if len(resources) > self.max_hops:
            raise ValueError(f"a route of more than max_hops={self.max_hops} resources")
        k = self._add_route(m, resources)
        cc_start(self.I, self.F, k, float(t), float(work))

    def set_load(self, r, t, load):
        """Background load of resource r becomes ``load`` at time t (an event horizon)."""
        from ccmod.kernel.ccmod_rule import cc_set_free
        cc_set_free(self.I, self.F, int(r), float(t), 1.0 - float(load))

    def next_time(self) -> float:
        from ccmod.kernel.ccmod_rule import cc_next_time
        return float(cc_next_time(self.I, self.F))

    def pop_due(self, t):
        from ccmod.kernel.ccmod_rule import cc_end, cc_flush, cc_pop_due
        nd = cc_pop_due(self.I, self.F, float(t), self._Bo.bott)
        for k in self.S.done[:nd]:
            cc_end(self.I, self.F, int(k), float(t))
        cc_flush(self.I, self.F)
        return self._done(nd)


class MaxMinSharing(_Facade):
    """Max-min fair flows (work in bytes), see :mod:`ccmod.kernel.maxmin`."""

    def __init__(self, nresources, capacity_Bps, background, record_load=True,
                 max_messages=1024, max_hops=16):
        from ccmod.kernel.maxmin import mm_new
        from ccmod.kernel.state import Arena
        super().__init__(nresources, max_messages, max_hops)
        A = Arena()
        self.max_hops = int(max_hops)
        self._alloc(A, mm_new(A, nresources, capacity_Bps, background, self.route_ptr,
                              self.route_res, seg_cap=self.seg_cap, max_hops=max_hops))

    def start(self, m, t, work, resources, cap=INF):
        from ccmod.kernel.maxmin import mm_start
        if len(resources) > self.max_hops:
            raise ValueError(f"a route of more than max_hops={self.max_hops} resources")
        k = self._add_route(m, resources)
        mm_start(self.I, self.F, k, float(t), float(work), float(cap))

    def next_time(self) -> float:
        from ccmod.kernel.maxmin import mm_next_time
        return float(mm_next_time(self.I, self.F))

    def pop_due(self, t):
        from ccmod.kernel.maxmin import mm_end, mm_pop_due
        nd = mm_pop_due(self.I, self.F, float(t), self._Bo.bott)
        for s in self.S.done_s[:nd]:
            mm_end(self.I, self.F, int(s), float(t))
        return self._done(nd)

    def set_load(self, r, t, load):
        """Background load of resource r becomes ``load`` at time t (an event horizon)."""
        from ccmod.kernel.maxmin import mm_set_free
        mm_set_free(self.I, self.F, int(r), float(t), 1.0 - float(load))
