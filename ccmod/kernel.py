"""The hot loop's data structures: how active messages share the network.

This is the only module where micro-optimisation belongs. Two sharing rules:

:class:`CcmodSharing` (the article)
    Each active message has a routing array (its resources). The contention array
    ``CA[l]`` counts active messages on resource ``l``; the bandwidth availability of a
    message is ``BA = min over its route of (1 - background[l]) / CA[l]`` and it progresses
    at ``BA`` quiet-seconds per second, so with a fixed pattern it takes ``Tquiet / BA``.

    All messages whose minimum is attained on the same resource ``l`` (its *group*)
    progress at the same rate ``share[l]``; the group keeps one virtual clock ``V[l]`` and a
    heap of finish marks in virtual time, so a start or end costs O(hops + log A) instead of
    touching every active message. Bottleneck changes are found lazily:

    * when ``CA[l]`` grows, ``share[l]`` drops: only messages that cross ``l`` but are
      bottlenecked elsewhere (``others[l]``) can move to ``l``;
    * when ``CA[l]`` shrinks, ``share[l]`` rises: a group member leaves only if its best
      other resource (``alt``, kept in a per-group heap, possibly stale-low which is safe)
      is now below ``share[l]``.

:class:`MaxMinSharing` (SimGrid-compatible flow model)
    Bytes flow at max-min fair rates (progressive filling over resource capacities, an
    optional per-flow cap) recomputed once per event horizon by :func:`maxmin_fill`
    (numba-compiled; it also runs as plain Python under ``NUMBA_DISABLE_JIT=1``).

Both expose the same small interface used by :mod:`ccmod.engine`: ``start(m, t, work,
resources, cap)``, ``next_time()``, ``pop_due(t)``, ``active_count()``, the bottleneck of
each finished message in ``bott_out``, per-resource ``peak``/``area``/``busy`` contention
statistics, and (when recording) every contention change in
``load_t``/``load_res``/``load_count`` (compact ``array`` buffers).
"""
from __future__ import annotations

import heapq
from array import array

import numpy as np
from numba import njit

INF = float("inf")


class CcmodSharing:
    """Incremental CCMOD sharing with per-resource virtual clocks.

    Starts and ends only update the contention array and mark resources dirty; the
    bottleneck of the messages that may have changed is re-evaluated once per event
    horizon (:meth:`_flush`), so a burst of k starts at one instant costs one pass.

    Parameters
    ----------
    nresources : int
        Number of (link, direction) resources.
    background : ndarray
        Background load fraction per resource, in [0, 1).
    record_load : bool
        Record every contention change (for link-load outputs).
    """

    def __init__(self, nresources: int, background: np.ndarray, record_load: bool = True):
        self.free = [1.0 - float(b) for b in background]   # (1 - background) per resource
        self.count = [0] * nresources                       # contention array CA
        self.share = [INF] * nresources                     # free / CA
        self.v_at = [0.0] * nresources                      # virtual clock value at t_at
        self.t_at = [0.0] * nresources
        self.group: list[list] = [[] for _ in range(nresources)]   # heap (vfin, m)
        self.alt: list[list] = [[] for _ in range(nresources)]     # heap (alt_share, m, altver)
        self.others: list[set] = [set() for _ in range(nresources)]
        self.gver = [0] * nresources
        self.events: list = []          # global heap (t, resource, gver)
        self.route: dict[int, tuple] = {}
        self.bott: dict[int, int] = {}
        self.vfin: dict[int, float] = {}
        self.altval: dict[int, float] = {}
        self.altver: dict[int, int] = {}
        self.peak = [0] * nresources
        self.area = [0.0] * nresources      # integral of contention over time
        self.busy = [0.0] * nresources      # time with at least one message
        self.t_chg = [0.0] * nresources     # last contention change
        self.bott_out: dict[int, int] = {}   # bottleneck resource of each finished message
        self.record_load = record_load
        self.load_t = array("d")
        self.load_res = array("i")
        self.load_count = array("i")
        # deferred work of the current instant
        self._t_dirty = 0.0
        self._new: list = []            # (m, work) started, not yet in a group
        self._dec: set = set()          # resources whose share fell
        self._inc: set = set()          # resources whose share rose
        self._touched: set = set()

    # -- helpers ------------------------------------------------------------------------
    def _vclock(self, r: int, t: float) -> float:
        s = self.share[r]
        if s == INF:
            return self.v_at[r]
        return self.v_at[r] + s * (t - self.t_at[r])

    def _set_count(self, r: int, t: float, delta: int) -> None:
        self.v_at[r] = self._vclock(r, t)
        self.t_at[r] = t
        c0 = self.count[r]
        if c0:
            dt = t - self.t_chg[r]
            self.area[r] += c0 * dt
            self.busy[r] += dt
        self.t_chg[r] = t
        c = c0 + delta
        self.count[r] = c
        self.share[r] = self.free[r] / c if c > 0 else INF
        if c > self.peak[r]:
            self.peak[r] = c
        if c == 0:
            self.v_at[r] = 0.0      # empty group: restart its clock (keeps precision)
        if self.record_load:
            self.load_t.append(t)
            self.load_res.append(r)
            self.load_count.append(c)

    def _best(self, m: int, exclude: int = -1) -> tuple[float, int]:
        """(min share, resource) over m's route, optionally excluding one resource."""
        best, br = INF, -1
        share = self.share
        for r in self.route[m]:
            if r != exclude:
                s = share[r]
                if s < best or (s == best and r < br):
                    best, br = s, r
        return best, br

    def _push_alt(self, m: int, b: int) -> None:
        alt, _ = self._best(m, exclude=b)
        av = self.altver.get(m, 0) + 1
        self.altver[m] = av
        self.altval[m] = alt
        if alt < INF:
            heapq.heappush(self.alt[b], (alt, m, av))

    def _join(self, m: int, r: int, t: float, remaining: float) -> None:
        """Put m into group r with ``remaining`` quiet-seconds of work."""
        self.bott[m] = r
        vf = self._vclock(r, t) + remaining
        self.vfin[m] = vf
        heapq.heappush(self.group[r], (vf, m))
        self.others[r].discard(m)
        for k in self.route[m]:
            if k != r:
                self.others[k].add(m)
        self._push_alt(m, r)
        self._touched.add(r)

    def _move(self, m: int, r_new: int, t: float) -> None:
        old = self.bott[m]
        rem = self.vfin[m] - self._vclock(old, t)
        self.others[old].add(m)
        self._touched.add(old)
        self._join(m, r_new, t, rem if rem > 0.0 else 0.0)

    def _touch(self, r: int, t: float) -> None:
        """Re-schedule the next completion of group r (its rate or head changed)."""
        self.gver[r] += 1
        g = self.group[r]
        bott = self.bott
        vfin = self.vfin
        while g and (bott.get(g[0][1], -1) != r or vfin.get(g[0][1]) != g[0][0]):
            heapq.heappop(g)
        if not g or self.share[r] == INF:
            return
        dv = g[0][0] - self._vclock(r, t)
        tn = t + (dv / self.share[r] if dv > 0.0 else 0.0)
        heapq.heappush(self.events, (tn, r, self.gver[r]))

    def _flush(self) -> None:
        """Re-evaluate bottlenecks of the messages the changes of this instant may affect."""
        if not (self._new or self._dec or self._inc):
            return
        t = self._t_dirty
        share, bott = self.share, self.bott
        cand: set = set()
        for r in self._dec:
            # a lower share on r can only attract messages crossing r bottlenecked elsewhere
            s = share[r]
            for m2 in self.others[r]:
                b = bott[m2]
                if s < share[b] or (s == share[b] and r < b):
                    cand.add(m2)
                elif s < self.altval[m2]:
                    cand.add(m2)     # not moving, but its alt must not stay stale-high
        for r in self._inc:
            # a higher share on r: members whose alternative is now better may leave
            h = self.alt[r]
            s = share[r]
            while h and h[0][0] < s:
                _, m2, av = heapq.heappop(h)
                if bott.get(m2, -1) == r and self.altver.get(m2) == av:
                    cand.add(m2)
        for m2 in sorted(cand):
            _, b = self._best(m2)
            if b != bott[m2]:
                self._move(m2, b, t)
            else:
                self._push_alt(m2, b)
        for m, work in self._new:
            _, b = self._best(m)
            self._join(m, b, t, work)
        self._new.clear()
        self._dec.clear()
        self._inc.clear()
        touched = self._touched
        self._touched = set()
        for r in sorted(touched):
            self._touch(r, t)

    # -- interface ----------------------------------------------------------------------
    def start(self, m: int, t: float, work: float, resources, cap: float = INF) -> None:
        """Message m begins with ``work`` quiet-seconds on the given resources at time t."""
        if t != self._t_dirty:
            self._flush()
            self._t_dirty = t
        route = tuple(int(r) for r in resources)
        self.route[m] = route
        for r in route:
            self._set_count(r, t, +1)
            self._dec.add(r)
            self._touched.add(r)
        self._new.append((m, work))

    def set_load(self, r: int, t: float, load: float) -> None:
        """Background load of resource r becomes ``load`` at time t (an event horizon)."""
        if t != self._t_dirty:
            self._flush()
            self._t_dirty = t
        r = int(r)
        self.v_at[r] = self._vclock(r, t)     # progress so far at the old share
        self.t_at[r] = t
        old = self.share[r]
        self.free[r] = 1.0 - float(load)
        c = self.count[r]
        self.share[r] = self.free[r] / c if c > 0 else INF
        if self.share[r] < old:
            self._dec.add(r)
        elif self.share[r] > old:
            self._inc.add(r)
        self._touched.add(r)

    def next_time(self) -> float:
        self._flush()
        ev = self.events
        while ev:
            t, r, v = ev[0]
            if v == self.gver[r]:
                return t
            heapq.heappop(ev)
        return INF

    def pop_due(self, t: float) -> list[int]:
        """Finish every message due at time t; return their ids (in a deterministic order)."""
        self._flush()
        self._t_dirty = t
        done: list[int] = []
        seen: set = set()
        ev = self.events
        while ev and ev[0][0] <= t:
            _, r, v = heapq.heappop(ev)
            if v != self.gver[r]:
                continue
            g = self.group[r]
            vt = self._vclock(r, t)
            # rounding of the virtual clock only: relative to its magnitude, so a long busy
            # period does not merge completions that are really apart
            tol = 16 * 2.2e-16 * abs(vt)
            first = True
            while g:
                vf, m2 = g[0]
                if self.bott.get(m2, -1) != r or self.vfin[m2] != vf or m2 in seen:
                    heapq.heappop(g)
                    continue
                if first or vf <= vt + tol:
                    heapq.heappop(g)
                    done.append(m2)
                    seen.add(m2)
                    first = False
                else:
                    break
            self.gver[r] += 1   # group head consumed: rescheduled by the flush
            self._touched.add(r)
        for m in done:
            r0 = self.bott.pop(m)
            self.bott_out[m] = r0
            del self.vfin[m]
            self.altver.pop(m, None)
            self.altval.pop(m, None)
            route = self.route.pop(m)
            for r in route:
                self.others[r].discard(m)
                self._set_count(r, t, -1)
                self._inc.add(r)
                self._touched.add(r)
        self._flush()
        return done

    def active_count(self) -> int:
        return len(self.route)


@njit(cache=True)
def maxmin_fill(routes, active, cap, fcap, rate, bott):  # pragma: no cover - jitted
    """Progressive filling: max-min fair rates of the active flows (in place).

    ``routes`` is (slots, width) with -1 padding; ``bott[f]`` gets the saturated
    resource that froze flow f (-1 when its own cap froze it).
    """
    R = cap.shape[0]
    n = routes.shape[0]
    W = routes.shape[1]
    cap_left = cap.copy()
    users = np.zeros(R, np.int64)
    frozen = np.ones(n, np.bool_)
    left = 0
    for f in range(n):
        rate[f] = 0.0
        bott[f] = -1
        if active[f]:
            frozen[f] = False
            left += 1
            for h in range(W):
                r = routes[f, h]
                if r >= 0:
                    users[r] += 1
    while left > 0:
        level = np.inf
        for r in range(R):
            if users[r] > 0:
                lv = cap_left[r] / users[r]
                if lv < level:
                    level = lv
        for f in range(n):
            if not frozen[f]:
                hd = fcap[f] - rate[f]
                if hd < level:
                    level = hd
        if level == np.inf:
            for f in range(n):
                if not frozen[f]:
                    rate[f] = np.inf
            break
        if level < 0.0:
            level = 0.0
        for f in range(n):
            if not frozen[f]:
                rate[f] += level
                for h in range(W):
                    r = routes[f, h]
                    if r >= 0:
                        cap_left[r] -= level
        progressed = False
        for f in range(n):
            if frozen[f]:
                continue
            sat = -1
            for h in range(W):
                r = routes[f, h]
                if r >= 0 and cap_left[r] <= 1e-12 * cap[r]:
                    sat = r
                    break
            if sat >= 0 or (fcap[f] < np.inf and fcap[f] - rate[f] <= 1e-12 * max(fcap[f], 1.0)):
                frozen[f] = True
                progressed = True
                bott[f] = sat
                left -= 1
        if progressed:
            for r in range(R):
                users[r] = 0
            for f in range(n):
                if not frozen[f]:
                    for h in range(W):
                        r = routes[f, h]
                        if r >= 0:
                            users[r] += 1
        else:
            break


class MaxMinSharing:
    """Max-min fair sharing of resource capacities (SimGrid CM02-like).

    ``work`` is in bytes; rates in bytes/s. Every start or end recomputes the allocation of
    all active flows by progressive filling (:func:`maxmin_fill`, numba-compiled), once
    per event horizon. Flows live in fixed slots (arrays grown by doubling).
    """

    def __init__(self, nresources: int, capacity_Bps: np.ndarray, background: np.ndarray,
                 record_load: bool = True):
        self.cap0 = np.asarray(capacity_Bps, float).copy()
        self.cap = self.cap0 * (1.0 - np.asarray(background, float))
        self.nres = nresources
        self.count = np.zeros(nresources, np.int64)
        self.peak = np.zeros(nresources, np.int64)
        self.area = np.zeros(nresources)
        self.busy = np.zeros(nresources)
        self.t_chg = np.zeros(nresources)
        n0 = 64
        self.routes = np.full((n0, 4), -1, np.int32)
        self.active = np.zeros(n0, np.bool_)
        self.remaining = np.zeros(n0)
        self.fcap = np.full(n0, INF)
        self.rate = np.zeros(n0)
        self.bott = np.full(n0, -1, np.int64)
        self.ids = np.full(n0, -1, np.int64)
        self.free_slots = list(range(n0 - 1, -1, -1))
        self.nactive = 0
        self.t_last = 0.0
        self.dirty = False
        self.bott_out: dict[int, int] = {}
        self.record_load = record_load
        self.load_t = array("d")
        self.load_res = array("i")
        self.load_count = array("i")

    def _grow(self, width: int) -> None:
        n, w = self.routes.shape
        if width > w:
            wide = np.full((n, max(width, 2 * w)), -1, np.int32)
            wide[:, :w] = self.routes
            self.routes = wide
        if not self.free_slots:
            n2 = 2 * n
            r = np.full((n2, self.routes.shape[1]), -1, np.int32)
            r[:n] = self.routes
            self.routes = r
            for name, fill in (("active", False), ("remaining", 0.0), ("fcap", INF),
                               ("rate", 0.0), ("bott", -1), ("ids", -1)):
                old = getattr(self, name)
                new = np.full(n2, fill, old.dtype)
                new[:n] = old
                setattr(self, name, new)
            self.free_slots = list(range(n2 - 1, n - 1, -1))

    def _advance(self, t: float) -> None:
        if self.nactive and t > self.t_last:
            a = self.active
            self.remaining[a] = np.maximum(self.remaining[a] - self.rate[a] * (t - self.t_last), 0.0)
        self.t_last = t

    def _count(self, route, t, delta):
        for r in route:
            r = int(r)
            c0 = int(self.count[r])
            if c0:
                dt = t - self.t_chg[r]
                self.area[r] += c0 * dt
                self.busy[r] += dt
            self.t_chg[r] = t
            self.count[r] += delta
            c = int(self.count[r])
            if c > self.peak[r]:
                self.peak[r] = c
            if self.record_load:
                self.load_t.append(t)
                self.load_res.append(r)
                self.load_count.append(c)

    def _solve(self) -> None:
        if self.dirty:
            maxmin_fill(self.routes, self.active, self.cap, self.fcap, self.rate, self.bott)
            self.dirty = False

    def start(self, m: int, t: float, work: float, resources, cap: float = INF) -> None:
        self._advance(t)
        route = np.asarray(resources, np.int32)
        self._grow(len(route))
        k = self.free_slots.pop()
        self.routes[k, :] = -1
        self.routes[k, :len(route)] = route
        self.active[k] = True
        self.remaining[k] = float(work)
        self.fcap[k] = cap
        self.ids[k] = m
        self.nactive += 1
        self._count(route, t, +1)
        self.dirty = True

    def set_load(self, r: int, t: float, load: float) -> None:
        """Background load of resource r becomes ``load`` at time t (an event horizon)."""
        self._advance(t)
        self.cap[int(r)] = self.cap0[int(r)] * (1.0 - float(load))
        self.dirty = True

    def next_time(self) -> float:
        if not self.nactive:
            return INF
        self._solve()
        a = np.flatnonzero(self.active)
        with np.errstate(divide="ignore", invalid="ignore"):
            dt = np.where(self.remaining[a] <= 0, 0.0, self.remaining[a] / self.rate[a])
        return self.t_last + float(dt.min())

    def pop_due(self, t: float) -> list[int]:
        self._solve()
        self._advance(t)
        a = np.flatnonzero(self.active)
        rem = self.remaining[a]
        with np.errstate(divide="ignore", invalid="ignore"):
            left_s = np.where(rem <= 0, 0.0, rem / self.rate[a])
        # the earliest flow is due now by construction of next_time(); others within rounding
        due = a[left_s <= max(float(left_s.min()), 1e-15, 1e-12 * t)]
        due = due[np.argsort(self.ids[due], kind="stable")]
        done = []
        for k in due:
            m = int(self.ids[k])
            done.append(m)
            route = self.routes[k]
            self._count(route[route >= 0], t, -1)
            self.bott_out[m] = int(self.bott[k])
            self.active[k] = False
            self.ids[k] = -1
            self.free_slots.append(int(k))
            self.nactive -= 1
        self.dirty = True
        return done

    def active_count(self) -> int:
        return self.nactive
