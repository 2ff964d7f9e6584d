"""A message's life in the event-horizon loop: injection, end, handlers, waiters, slots.

Called by the loop (:mod:`ccmod.kernel.loop`) when a rank posts a side of a message, when
a timer of the message fires, or when the sharing rule ends its transfer. Kept apart from
the rank interpreter so that each module stays readable; numba inlines across modules
all the same (``leaf`` functions), so the split costs nothing at run time.

Timers: a message has one timer armed at a time, drawn from a recycled slot pool; the
rank timers are slots ``0..nranks-1`` (compute, overhead) and ``nranks..2*nranks-1``
(resume after handlers).
"""
from __future__ import annotations

from ccmod.kernel.compiled import leaf, msg_in, msg_st, per_msg, rank_st, scalars, timers
from ccmod.kernel.compiled import kernel_jit as njit   # one compile per argument types
from ccmod.kernel.heaps import timer_set
from ccmod.kernel.rawbuf import as_i32
from ccmod.kernel.state import (FC_HANDLER, FC_KIND, FC_LATENCY, FC_O_RECV, FC_QUIET,
                                FC_UNSHARED, MF, MJ, RF, RF_COMP_END, RF_H_INSIDE,
                                RF_HANDLER_TOT, RF_HFREE, RF_OVH_DUE, RI, RI_BLOCK, RI_PENDING)
from ccmod.kernel.record import msg_sig
from ccmod.kernel.rules import rule_start
from ccmod.kernel.codes import (EV_COMPUTE, EV_HANDLER_END, EV_LAT_END, EV_MSG_END, EV_START,
                                K_NRET, K_RHEAD, K_RTAIL, K_SEQ, RS_COMPUTING, SG_COMMCOST,
                                SG_MSGEND)

INF = float("inf")


@leaf
def arm_timer(I, F, slot, kind, t):
    T = timers(I)
    K = scalars(I)
    seq = I[K.ks + K_SEQ] + 1
    I[K.ks + K_SEQ] = seq
    I[T.kind + slot] = kind
    timer_set(I, F, T.item, T.pos, T.t, T.seq, T.len, slot, t, seq)


@leaf
def arm_msg_timer(I, F, m, kind, t):
    """Arm a timer of message m: a slot from the pool (:func:`ccmod.kernel.state.timers`;
    the last one given back first, still in cache), freed by the loop when it fires. A
    message has one timer armed at a time (its injection, latency or transfer end, then
    its handler's end), so any slot serves; ties between timers follow their sequence
    numbers, not their slots."""
    T = timers(I)
    k = I[T.nf]
    if k > 0:
        x = I[T.free + k - 1]
        I[T.nf] = k - 1
    else:
        x = I[T.nf + 1]
        I[T.nf + 1] = x + 1
    I[T.msg + x] = m
    arm_timer(I, F, x, kind, t)


@leaf
def make_ready(I, r):
    R = rank_st(I)
    K = scalars(I)
    cap = R.nready
    tl = I[K.ks + K_RTAIL]
    if tl - I[K.ks + K_RHEAD] >= cap:
        raise RuntimeError("ready queue overflow")
    I[R.ready + (tl & (cap - 1))] = r     # cap: a power of two
    I[K.ks + K_RTAIL] = tl + 1


@njit(cache=True)
def start_transfer(C, L, I, F, m, t, gap):
    """Both sides allow the transfer: inject now, or (``gap``) when the node's NIC gap
    allows (then this is called again at that time with ``gap`` False)."""
    M = msg_in(I)
    G = msg_st(I)
    has_route = as_i32(I)[M.route_ptr + m] < as_i32(I)[M.route_end + m]
    nd = I[M.node_of_rank + as_i32(I)[M.src + m]]
    # the NIC gap spaces injections into the network: a message inside a node (on the
    # node's copy resource, intra=shared) does not go through the NIC
    if (gap and C.gap and not as_i32(I)[M.unshared + per_msg(M, FC_UNSHARED, m)]
            and has_route and nd != I[M.node_of_rank + as_i32(I)[M.dst + m]]):
        t0 = max(t, F[G.nic_next + nd])
        F[G.nic_next + nd] = t0 + F[M.gap_s + nd]
        if t0 > t:
            arm_msg_timer(I, F, m, EV_START, t0)
            return
    # the transfer of m begins (injection)
    F[G.t_start + m * MF] = t
    q = F[M.quiet + per_msg(M, FC_QUIET, m)]
    msg_sig(C, L, I, M.okey, t, SG_COMMCOST, m, q)
    if as_i32(I)[M.unshared + per_msg(M, FC_UNSHARED, m)] or q <= 0.0 or not has_route:
        arm_msg_timer(I, F, m, EV_MSG_END, t + q)
    elif C.sharing == 0 and not C.lat_unshared:
        rule_start(C, L, I, F, m, t, q)
    else:
        arm_msg_timer(I, F, m, EV_LAT_END, t + F[M.latency + per_msg(M, FC_LATENCY, m)])


@leaf
def am_arrived(I, F, m, t):
    """Message m (a request or a reply) reached its destination: run its handler."""
    M = msg_in(I)
    R = rank_st(I)
    d = as_i32(I)[M.dst + m]
    di, df = R.ri + d * RI, R.rf + d * RF
    h = F[M.handler_s + per_msg(M, FC_HANDLER, m)]
    start = max(t, F[df + RF_HFREE])
    end = start + h
    F[df + RF_HFREE] = end
    F[df + RF_HANDLER_TOT] += h
    if I[di + RI_BLOCK] == RS_COMPUTING and F[df + RF_COMP_END] > t:
        # preemptive handler: the compute in progress finishes h later
        F[df + RF_COMP_END] += h
        arm_timer(I, F, d, EV_COMPUTE, F[df + RF_COMP_END])
        F[df + RF_H_INSIDE] += h
    elif I[di + RI_BLOCK] >= 0:
        F[df + RF_H_INSIDE] += h      # a blocked rank resumes only after its handlers
    arm_msg_timer(I, F, m, EV_HANDLER_END, end)


@leaf
def retire(I, m):
    """Slot m is free for another message once the host has taken its outputs."""
    G = msg_st(I)
    K = scalars(I)
    k = I[K.ks + K_NRET]
    I[G.ret + k] = m
    I[K.ks + K_NRET] = k + 1


@leaf
def unref(I, m):
    """One reader of slot m is done (a side posted, a wait passed, the transfer ended)."""
    G = msg_st(I)
    k = I[G.refs + m] - 1
    I[G.refs + m] = k
    if k == 0:
        retire(I, m)


@njit(cache=True, inline="always")
def message_done(C, L, I, F, m, t, M, R, G):
    """Message m's transfer ended at t: its waiters released (or its handler run).
    Inlined where the loop calls it, with the loop's offsets (``M``, ``R``, ``G``)."""
    F[G.t_end + m * MF] = t
    msg_sig(C, L, I, M.okey, t, SG_MSGEND, m, 0.0)
    if as_i32(I)[M.kind + per_msg(M, FC_KIND, m)]:
        am_arrived(I, F, m, t)
        return
    r = as_i32(I)[G.send_waiter + m * MJ]
    if r >= 0:
        ri = R.ri + r * RI
        I[ri + RI_PENDING] -= 1
        if I[ri + RI_PENDING] == 0:
            make_ready(I, r)
    if F[G.t_post_recv + m * MF] < INF:
        r = as_i32(I)[G.recv_waiter + m * MJ]
        if r >= 0:
            ri = R.ri + r * RI
            I[ri + RI_PENDING] -= 1
            if I[ri + RI_PENDING] == 0:
                make_ready(I, r)
    if C.recycle:
        unref(I, m)


@leaf
def wait_on(C, I, F, r, m, side):
    """Make rank r wait for one side of message m; return True if it must block."""
    M = msg_in(I)
    R = rank_st(I)
    G = msg_st(I)
    if side == 0:
        if C.detached or F[G.t_end + m * MF] < INF:
            return False
        as_i32(I)[G.send_waiter + m * MJ] = r
    else:
        # paid once received
        F[R.rf + r * RF + RF_OVH_DUE] += F[M.o_recv + per_msg(M, FC_O_RECV, m)]
        if F[G.t_end + m * MF] < INF:
            return False
        as_i32(I)[G.recv_waiter + m * MJ] = r
    I[R.ri + r * RI + RI_PENDING] += 1
    return True
