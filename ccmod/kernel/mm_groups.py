"""Max-min bottleneck groups: the classes sharing one resource at one rate, one clock.

When K senders on K nodes send to one node, each sender's route is a class of its own
(:mod:`ccmod.kernel.mm_classes`) and every class crosses the receiver's downlink D; a
start or an end there re-rates all K classes. Here the classes bottlenecked at D move
together instead: D's *group* has one virtual clock (``g_v`` bytes per flow at ``g_t``,
rate ``g_rate``) and each member class an offset (``c_off``: the class's clock is the
group's less it), its next completion a key (finish point plus offset) in a heap of the
group's members (per-resource segments of ``g_item``, as ``r_item``). Only the group's
first member is in the heap of next completions, so a rate change re-keys one entry.

When the allocation is exactly "everyone on D gets D's fair share" is decided without
visiting D's classes:

* the component is a *star* around D: every class on D has all its other hops private
  (crossed by no other class). ``c_sh`` counts a class's shared hops (crossed by two
  classes or more) and ``nx[r]`` the classes on r with two shared hops or more, so the
  star test is ``nx[D] == 0`` (kept up to date when a resource becomes shared or private,
  O(hops) per class that joins or leaves, :func:`shape_join` and :func:`shape_leave`);
* no member is held below the fair share by a private hop or its rate cap: ``lb[D]`` is
  a lower bound of those limits over D's classes while D is shared (lowered when a limit
  may drop, made exact by one pass over D's classes when it is in the way; a class
  alone on its route pushes nothing).

Then progressive filling would end in one round with every class at ``cap[D] / count[D]``
(the same quotient the full solve computes first), bottlenecked at D: the *fast* solve
sets that rate. Otherwise the dirty resource goes to the full solve of
:mod:`ccmod.kernel.maxmin`, whose walk dissolves any group it meets (members back on their
own clocks). Groups serve stars of at least :data:`G_MIN` classes; smaller components keep
the full solve (cheap there), so their results are those of the per-class solver.
"""
from __future__ import annotations

import numpy as np

from ccmod.kernel.compiled import leaf, mm_state
from ccmod.kernel.heaps import iheap_push, iheap_remove, iheap_update
from ccmod.kernel.mm_classes import F_LEN, N_DIRTY, class_advance, class_finish, group_advance
from ccmod.kernel.rawbuf import as_i32

INF = np.inf
#: the smallest star served by a group
G_MIN = 8
#: how far below a private limit the fair share must be (the full solve's saturation
#: tests use 1e-12: a margin far above rounding keeps both solves' answers the same)
MARGIN = 1e-9


@leaf
def _limit(I, F, c):
    """Class c's rate limit apart from shared resources: its cap, its private hops'
    capacity per flow."""
    S = mm_state(I)
    v = F[S.c_fcap + c]
    f = I[S.c_rep + c]
    for e in range(as_i32(I)[S.route_ptr + f], as_i32(I)[S.route_end + f]):
        u = as_i32(I)[S.route_res + e]
        if I[S.r_len + u] == 1:
            x = F[S.cap + u] / I[S.count + u]
            if x < v:
                v = x
    return v


@leaf
def _lower(I, F, c, v):
    """Class c's limit may have dropped to v: lower the bound of every hop of it."""
    S = mm_state(I)
    f = I[S.c_rep + c]
    for e in range(as_i32(I)[S.route_ptr + f], as_i32(I)[S.route_end + f]):
        r = as_i32(I)[S.route_res + e]
        if v < F[S.lb + r]:
            F[S.lb + r] = v


@leaf
def _count_x(I, c, d):
    """Class c starts (d = 1) or stops (-1) having two shared hops or more."""
    S = mm_state(I)
    f = I[S.c_rep + c]
    for e in range(as_i32(I)[S.route_ptr + f], as_i32(I)[S.route_end + f]):
        I[S.nx + as_i32(I)[S.route_res + e]] += d


@leaf
def _other(I, r, c):
    """The class on resource r (two listed) that is not c."""
    S = mm_state(I)
    o = S.r_item + I[S.seg + r]
    c0 = I[o] >> S.hb
    if c0 == c:
        c0 = I[o + 1] >> S.hb
    return c0


@leaf
def _gtop(I, F, g):
    """Group g's first member is the group's entry in the heap of next completions."""
    S = mm_state(I)
    old = I[S.g_top + g]
    new = I[S.g_item + I[S.seg + g]] if I[S.g_len + g] > 0 else -1
    if old >= 0 and old != new:
        if I[S.c_hpos + old] >= 0:
            iheap_remove(I, F, S.c_item, S.c_hpos, S.c_tfin, 0, S.si, F_LEN, old)
        F[S.c_tfin + old] = INF
    I[S.g_top + g] = new
    if new < 0:
        return
    f = I[S.c_root + new]
    tf = INF if f < 0 else class_finish(I, F, new, F[S.vfin + f])
    F[S.c_tfin + new] = tf
    if tf == INF:
        if I[S.c_hpos + new] >= 0:
            iheap_remove(I, F, S.c_item, S.c_hpos, S.c_tfin, 0, S.si, F_LEN, new)
    elif I[S.c_hpos + new] >= 0:
        iheap_update(I, F, S.c_item, S.c_hpos, S.c_tfin, 0, S.si, F_LEN, new)
    else:
        iheap_push(I, F, S.c_item, S.c_hpos, S.c_tfin, 0, S.si, F_LEN, new)


@leaf
def _key(I, F, c):
    S = mm_state(I)
    f = I[S.c_root + c]
    return INF if f < 0 else F[S.vfin + f] + F[S.c_off + c]


@leaf
def group_rekey(I, F, c):
    """Member c's first flow changed: its key, its group's first member."""
    S = mm_state(I)
    g = I[S.c_grp + c]
    F[S.c_gkey + c] = _key(I, F, c)
    iheap_update(I, F, S.g_item, S.c_gpos, S.c_gkey, I[S.seg + g], S.g_len, g, c)
    _gtop(I, F, g)


@leaf
def _add(I, F, g, c):
    """Class c (its clock at the group's time) joins group g."""
    S = mm_state(I)
    F[S.c_off + c] = F[S.g_v + g] - F[S.c_v + c]
    I[S.c_grp + c] = g
    I[S.c_bott + c] = g
    F[S.c_gkey + c] = _key(I, F, c)
    iheap_push(I, F, S.g_item, S.c_gpos, S.c_gkey, I[S.seg + g], S.g_len, g, c)


@leaf
def _dissolve(I, F, g, t):
    """Group g's members back on clocks of their own, at t."""
    S = mm_state(I)
    group_advance(I, F, g, t)
    o = S.g_item + I[S.seg + g]
    for i in range(I[S.g_len + g]):
        c = I[o + i]
        F[S.c_v + c] = F[S.g_v + g] - F[S.c_off + c]
        F[S.c_t + c] = t
        F[S.c_rate + c] = F[S.g_rate + g]
        I[S.c_grp + c] = -1
        I[S.c_gpos + c] = -1
    I[S.g_len + g] = 0
    I[S.g_on + g] = 0
    I[S.g_top + g] = -1


@leaf
def group_dissolve(I, F, g, t):
    S = mm_state(I)
    _dissolve(I, F, g, t)


@leaf
def _fast_ok(I, F, g):
    """Whether the star around g is served by one rate, its fair share (see above)."""
    S = mm_state(I)
    if I[S.r_len + g] < G_MIN or I[S.nx + g] != 0:
        return False
    cap = F[S.cap + g]
    if not (cap > 0.0 and cap < INF):
        return False
    thr = cap / I[S.count + g] * (1.0 + MARGIN) + MARGIN
    if F[S.lb + g] > thr:
        return True
    v = INF                            # the bound is in the way: make it exact
    o = S.r_item + I[S.seg + g]
    for j in range(I[S.r_len + g]):
        x = _limit(I, F, I[o + j] >> S.hb)
        if x < v:
            v = x
    F[S.lb + g] = v
    return v > thr


@leaf
def _fast_solve(I, F, g, t):
    S = mm_state(I)
    if I[S.g_on + g] and I[S.g_len + g] != I[S.r_len + g]:
        _dissolve(I, F, g, t)       # a class became part of the star meanwhile
    if I[S.g_on + g]:
        group_advance(I, F, g, t)
    else:
        I[S.g_on + g] = 1
        F[S.g_v + g] = 0.0
        F[S.g_t + g] = t
        o = S.r_item + I[S.seg + g]
        for j in range(I[S.r_len + g]):
            c = I[o + j] >> S.hb
            class_advance(I, F, c, t)
            if I[S.c_hpos + c] >= 0:
                iheap_remove(I, F, S.c_item, S.c_hpos, S.c_tfin, 0, S.si, F_LEN, c)
            F[S.c_tfin + c] = INF
            _add(I, F, g, c)
    F[S.g_rate + g] = F[S.cap + g] / I[S.count + g]
    _gtop(I, F, g)


@leaf
def _center(I, r):
    """The resource whose star holds dirty resource r: -2 when r carries nothing, -3
    when r's component is one class alone on its route (every hop private, no group:
    :func:`ccmod.kernel.maxmin.mm_solve` rates it without the walk), -1 when it is no
    star (or a lone class in a group, which the full solve does cheaply)."""
    S = mm_state(I)
    n = I[S.r_len + r]
    if n == 0:
        return -2
    if n >= 2:
        return r if I[S.nx + r] == 0 else -1
    c = I[S.r_item + I[S.seg + r]] >> S.hb
    if I[S.c_sh + c] != 1:
        return -3 if I[S.c_sh + c] == 0 and I[S.c_grp + c] < 0 else -1
    f = I[S.c_rep + c]
    for e in range(as_i32(I)[S.route_ptr + f], as_i32(I)[S.route_end + f]):
        q = as_i32(I)[S.route_res + e]
        if I[S.r_len + q] >= 2:
            return q if I[S.nx + q] == 0 else -1
    return -1


@leaf
def mm_fast(I, F, t):
    """Serve the dirty resources whose component is a star with one rate; leave the
    others in the dirty list for the full solve. Returns how many of those left are not
    a lone class's (:func:`_center`'s -3)."""
    S = mm_state(I)
    nd = I[S.si + N_DIRTY]
    k = 0
    nc = 0
    nl = 0
    for i in range(nd):
        r = I[S.d_list + i]
        g = _center(I, r)
        if g == -3:
            nl += 1
        if g >= 0 and I[S.g_mark + g] == 0:
            I[S.g_mark + g] = 1 if _fast_ok(I, F, g) else 2
            I[S.rl + nc] = g
            nc += 1
        if g == -2 or (g >= 0 and I[S.g_mark + g] == 1):
            I[S.d_flag + r] = 0
        else:
            I[S.d_list + k] = r
            k += 1
    I[S.si + N_DIRTY] = k
    for i in range(nc):
        g = I[S.rl + i]
        if I[S.g_mark + g] == 1:
            _fast_solve(I, F, g, t)
        I[S.g_mark + g] = 0
    return k - nl


@leaf
def shape_join(I, F, c, t):
    """After a flow joined class c at t: shared-hop counts and limits (a new class), the
    group's order (a member)."""
    S = mm_state(I)
    f = I[S.c_rep + c]
    rp, re, rr = S.route_ptr, S.route_end, S.route_res
    if I[S.c_w + c] == 1:              # a new class
        sh = 0
        g = -1
        for e in range(as_i32(I)[rp + f], as_i32(I)[re + f]):
            q = as_i32(I)[rr + e]
            n = I[S.r_len + q]
            if n == 2:                 # q was private to one class
                c0 = _other(I, q, c)
                I[S.c_sh + c0] += 1
                if I[S.c_sh + c0] == 2:
                    _count_x(I, c0, 1)
                v = _limit(I, F, c0)
                if v < F[S.lb + q]:
                    F[S.lb + q] = v
            if n >= 2:
                sh += 1
                g = q
        I[S.c_sh + c] = sh
        if sh >= 2:
            _count_x(I, c, 1)
        if sh >= 1:
            _lower(I, F, c, _limit(I, F, c))
        if sh == 1 and I[S.g_on + g]:
            group_advance(I, F, g, t)
            _add(I, F, g, c)
            _gtop(I, F, g)
        return
    if I[S.c_sh + c] >= 1:
        _lower(I, F, c, _limit(I, F, c))
    if I[S.c_grp + c] >= 0:
        group_rekey(I, F, c)


@leaf
def shape_leave(I, F, c):
    """Class c (flows all gone, route still listed) is about to be dropped."""
    S = mm_state(I)
    g = I[S.c_grp + c]
    if g >= 0:
        iheap_remove(I, F, S.g_item, S.c_gpos, S.c_gkey, I[S.seg + g], S.g_len, g, c)
        I[S.c_grp + c] = -1
        if I[S.g_top + g] == c:
            if I[S.c_hpos + c] >= 0:
                iheap_remove(I, F, S.c_item, S.c_hpos, S.c_tfin, 0, S.si, F_LEN, c)
            I[S.g_top + g] = -1
        if I[S.g_len + g] == 0:
            I[S.g_on + g] = 0
        else:
            _gtop(I, F, g)
    if I[S.c_sh + c] >= 2:
        _count_x(I, c, -1)
    I[S.c_sh + c] = 0
    f = I[S.c_rep + c]
    for e in range(as_i32(I)[S.route_ptr + f], as_i32(I)[S.route_end + f]):
        q = as_i32(I)[S.route_res + e]
        n = I[S.r_len + q]
        if n == 2:                     # q becomes private to the other class
            c0 = _other(I, q, c)
            I[S.c_sh + c0] -= 1
            if I[S.c_sh + c0] == 1:
                _count_x(I, c0, -1)
            if I[S.c_sh + c0] >= 1:
                _lower(I, F, c0, F[S.cap + q] / I[S.count + q])
        if n <= 2:
            F[S.lb + q] = INF


@leaf
def shape_free(I, F, r):
    """Resource r's capacity changed: the limit of the class it is private to."""
    S = mm_state(I)
    if I[S.r_len + r] == 1:
        c = I[S.r_item + I[S.seg + r]] >> S.hb
        if I[S.c_sh + c] >= 1:
            _lower(I, F, c, F[S.cap + r] / I[S.count + r])
