"""The event-horizon loop: ranks walk their records, messages share the network.

One compiled function (:func:`run_loop`) over flat arrays, the article's evaluation
kernel. It jumps from event horizon to event horizon: the earliest of the next timer
(compute or overhead end, latency end, delayed injection, unshared message end, handler
end, resume), the next completion under the sharing rule (:mod:`ccmod.kernel.ccmod_rule`
or :mod:`ccmod.kernel.maxmin`) and the next background-load step.

Send modes: rendezvous (transfer starts when both sides are posted; the blocking call or
its wait is released when the transfer ends, CCMOD's SCOM), eager (starts when the send is
posted; the sender is released on delivery), detached (the sender continues at once).
Messages flagged ``eager`` start when the send is posted (the eager limit).

Per-message overheads (LogGP's o): ``o_send_s`` is CPU time the sending rank spends before
the send is posted, ``o_recv_s`` after the receive completes; both show as the rank state
"overhead". A node's NIC injects messages at least ``gap_s`` apart (LogGP's g).

Active messages (LoPC): a request runs a handler on its target as soon as the target's
processor is free of earlier handlers, interrupting compute; the reply's handler runs on
the requester, which resumes after it.

The loop can stop after ``max_events`` horizons and be called again (progress reports):
all its state lives in the arrays it is given.
"""
from __future__ import annotations

from numba import njit

from ccmod.kernel.ccmod_rule import (N_DEC, N_INC, N_NEW, N_TCH, cc_end, cc_flush, cc_pop_due,
                                     cc_set_free, cc_start)
from ccmod.kernel.heaps import timer_pop, timer_set
from ccmod.kernel.maxmin import (F_LEN, N_DIRTY, mm_end, mm_pop_due, mm_set_free, mm_solve,
                                 mm_start)
from ccmod.kernel.codes import (EV_COMPUTE, EV_HANDLER_END, EV_LAT_END, EV_MSG_END, EV_RESUME,
                                EV_START, K_BG, K_EVENTS, K_NBAR, K_RECORDS, K_RHEAD, K_RTAIL,
                                K_SEQ, K_STARTED, OP_AMREQUEST, OP_BARRIER, OP_COMPUTE,
                                OP_IRECV, OP_ISEND, OP_RECV, OP_SEND, OP_WAIT, OP_WAITALL,
                                RS_COMPUTING, RS_FINISHED, RS_RUNNABLE, SG_COMMCOST, SG_EVENTHORIZON,
                                SG_GO_END, SG_GO_INIT, SG_MSGEND, SG_MSGSTART, SG_NEWPROC,
                                SG_NEWSCOM, SG_UPPR_END, SG_UPPR_PROC, STATE_BARRIER,
                                STATE_COMPUTE, STATE_OVERHEAD, STATE_RECV, STATE_SEND,
                                STATE_WAIT)

INF = float("inf")


@njit(cache=True)
def _sig(C, L, t, code, a, b, c, d, f):
    if C.signals:
        L.sig.append((t, code, a, b, c, d, f))


@njit(cache=True)
def _timer(T, K, slot, kind, t):
    K.ks[K_SEQ] += 1
    T.kind[slot] = kind
    timer_set(T.item, T.pos, T.t, T.seq, T.len, slot, t, K.ks[K_SEQ])


@njit(cache=True)
def _ready(R, K, r):
    cap = R.ready.shape[0]
    tl = K.ks[K_RTAIL]
    if tl - K.ks[K_RHEAD] >= cap:
        raise RuntimeError("ready queue overflow")
    R.ready[tl % cap] = r
    K.ks[K_RTAIL] = tl + 1


@njit(cache=True)
def _interval(C, R, L, r, state, t0, t1):
    # handler time run inside the interval is counted in handler_s, not in the state
    R.state_s[r, state] += t1 - t0 - R.h_inside[r]
    R.h_inside[r] = 0.0
    if C.record and t1 > t0:
        L.states.append((r, state, t0, t1))


@njit(cache=True)
def _block(C, R, L, r, state, t):
    R.block_state[r] = state
    R.t_block[r] = t
    _sig(C, L, t, SG_UPPR_PROC, r, state, 0, 0, 0.0)


@njit(cache=True)
def _busy(C, n, R, T, K, r, t):
    """Delay a rank that would resume while its processor runs handlers."""
    if R.hfree[r] > t:
        _timer(T, K, n + r, EV_RESUME, R.hfree[r])
        return True
    return False


@njit(cache=True)
def _log_route(C, M, L, m, t, count):
    if C.record:
        for e in range(M.route_ptr[m], M.route_ptr[m + 1]):
            r = M.route_res[e]
            L.load.append((t, r, count[r]))


@njit(cache=True)
def _share_start(C, M, L, CS, MS, m, t, work):
    _sig(C, L, t, SG_MSGSTART, m, 0, 0, 0, 0.0)
    if C.sharing == 0:
        cc_start(CS, m, t, work)
        if C.record:   # the call passes arrays: skip it when not recording
            _log_route(C, M, L, m, t, CS.count)
    else:
        mm_start(MS, m, t, work, M.flow_cap[m])
        if C.record:   # the call passes arrays: skip it when not recording
            _log_route(C, M, L, m, t, MS.count)


@njit(cache=True)
def _start(C, n, M, G, T, K, L, CS, MS, m, t, gap):
    """Both sides allow the transfer: inject now, or (``gap``) when the node's NIC gap
    allows (then this is called again at that time with ``gap`` False)."""
    nd = M.node_of_rank[M.src[m]]
    # the NIC gap spaces injections into the network: a message inside a node (on the
    # node's copy resource, intra=shared) does not go through the NIC
    if gap and C.gap and not M.unshared[m] and M.route_ptr[m] < M.route_ptr[m + 1] and \
            nd != M.node_of_rank[M.dst[m]]:
        t0 = max(t, G.nic_next[nd])
        G.nic_next[nd] = t0 + M.gap_s[nd]
        if t0 > t:
            _timer(T, K, 2 * n + m, EV_START, t0)
            return
    # the transfer of m begins (injection)
    G.t_start[m] = t
    q = M.quiet[m]
    _sig(C, L, t, SG_COMMCOST, m, 0, 0, 0, q)
    if M.unshared[m] or q <= 0.0 or M.route_ptr[m] == M.route_ptr[m + 1]:
        _timer(T, K, 2 * n + m, EV_MSG_END, t + q)
    elif C.sharing == 0 and not C.lat_unshared:
        _share_start(C, M, L, CS, MS, m, t, q)
    else:
        _timer(T, K, 2 * n + m, EV_LAT_END, t + M.latency[m])


@njit(cache=True)
def _am_arrived(C, n, M, R, G, T, K, L, m, t):
    """Message m (a request or a reply) reached its destination: run its handler."""
    d = M.dst[m]
    h = M.handler_s[m]
    start = max(t, R.hfree[d])
    end = start + h
    R.hfree[d] = end
    R.handler_tot[d] += h
    if R.block_state[d] == RS_COMPUTING and R.comp_end[d] > t:
        # preemptive handler: the compute in progress finishes h later
        R.comp_end[d] += h
        _timer(T, K, d, EV_COMPUTE, R.comp_end[d])
        R.h_inside[d] += h
    elif R.block_state[d] >= 0:
        R.h_inside[d] += h      # a blocked rank resumes only after its handlers
    _timer(T, K, 2 * n + M.nmsg + m, EV_HANDLER_END, end)


@njit(cache=True)
def _done(C, n, M, R, G, T, K, L, m, t):
    G.t_end[m] = t
    _sig(C, L, t, SG_MSGEND, m, 0, 0, 0, 0.0)
    if M.kind[m]:
        _am_arrived(C, n, M, R, G, T, K, L, m, t)
        return
    r = G.send_waiter[m]
    if r >= 0:
        R.pending[r] -= 1
        if R.pending[r] == 0:
            _ready(R, K, r)
    if G.t_post_recv[m] < INF:
        r = G.recv_waiter[m]
        if r >= 0:
            R.pending[r] -= 1
            if R.pending[r] == 0:
                _ready(R, K, r)


@njit(cache=True)
def _wait_on(C, M, R, G, r, m, side):
    """Make rank r wait for one side of message m; return True if it must block."""
    if side == 0:
        if C.detached or G.t_end[m] < INF:
            return False
        G.send_waiter[m] = r
    else:
        R.ovh_due[r] += M.o_recv[m]   # paid once the receive completes
        if G.t_end[m] < INF:
            return False
        G.recv_waiter[m] = r
    R.pending[r] += 1
    return True


@njit(cache=True)
def _busy_for(C, R, T, K, r, t, d, state):
    """Rank r runs compute or overhead for d seconds from t."""
    R.comp_start[r] = t
    R.comp_end[r] = t + d
    R.comp_state[r] = state
    _timer(T, K, r, EV_COMPUTE, t + d)
    R.block_state[r] = RS_COMPUTING


@njit(cache=True)
def _advance(C, P, M, R, G, T, K, L, CS, MS, r, t):
    """Interpret rank r's records from its program counter until it blocks."""
    pc = R.pc[r]
    end = P.rank_ptr[r + 1]
    start_pc = pc
    while True:
        if R.ovh_due[r] > 0.0:         # receive overheads of the op just completed
            d = R.ovh_due[r]
            R.ovh_due[r] = 0.0
            _busy_for(C, R, T, K, r, t, d, STATE_OVERHEAD)
            break
        if pc >= end:
            break
        o = P.op[pc]
        if o == OP_COMPUTE:
            d = P.dur[pc]
            pc += 1
            if d > 0.0:
                _busy_for(C, R, T, K, r, t, d, STATE_COMPUTE)
                break
        elif o == OP_SEND or o == OP_ISEND:
            m = P.rec_msg[pc]
            if M.o_send[m] > 0.0 and R.paid_pc[r] != pc:
                R.paid_pc[r] = pc       # the CPU overhead comes before the post
                _busy_for(C, R, T, K, r, t, M.o_send[m], STATE_OVERHEAD)
                break
            G.t_post_send[m] = t
            _sig(C, L, t, SG_NEWSCOM, m, M.src[m], M.dst[m], M.nbytes[m], 0.0)
            if M.eager[m] or G.t_post_recv[m] < INF:
                _start(C, P.nranks, M, G, T, K, L, CS, MS, m, t, True)
            pc += 1
            if o == OP_SEND and _wait_on(C, M, R, G, r, m, 0):
                _block(C, R, L, r, STATE_SEND, t)
                break
        elif o == OP_RECV or o == OP_IRECV:
            m = P.rec_msg[pc]
            G.t_post_recv[m] = t
            if not M.eager[m] and G.t_post_send[m] < INF:
                _start(C, P.nranks, M, G, T, K, L, CS, MS, m, t, True)
            pc += 1
            if o == OP_RECV and _wait_on(C, M, R, G, r, m, 1):
                _block(C, R, L, r, STATE_RECV, t)
                break
        elif o == OP_WAIT:
            m = P.wait_msg[pc]
            side = P.wait_side[pc]
            pc += 1
            if _wait_on(C, M, R, G, r, m, side):
                _block(C, R, L, r, STATE_WAIT, t)
                break
        elif o == OP_WAITALL:
            k = P.wait_msg[pc]
            pc += 1
            for j in range(P.wa_ptr[k], P.wa_ptr[k + 1]):
                _wait_on(C, M, R, G, r, P.wa_msg[j], P.wa_side[j])
            if R.pending[r] > 0:
                _block(C, R, L, r, STATE_WAIT, t)
                break
        elif o == OP_AMREQUEST:
            m = P.rec_msg[pc]
            pc += 1
            G.t_post_send[m] = t
            G.t_post_recv[m] = t
            _start(C, P.nranks, M, G, T, K, L, CS, MS, m, t, True)
            G.am_waiter[m] = r
            R.pending[r] += 1
            _block(C, R, L, r, STATE_WAIT, t)
            break
        elif o == OP_BARRIER:
            pc += 1
            R.barrier[K.ks[K_NBAR]] = r
            K.ks[K_NBAR] += 1
            if K.ks[K_NBAR] == P.nranks:
                for i in range(K.ks[K_NBAR]):
                    if R.barrier[i] != r:
                        _ready(R, K, R.barrier[i])
                K.ks[K_NBAR] = 0
            else:
                R.pending[r] = 1
                _block(C, R, L, r, STATE_BARRIER, t)
                break
    K.ks[K_RECORDS] += pc - start_pc
    R.pc[r] = pc
    if pc >= end and R.block_state[r] != RS_COMPUTING and R.pending[r] == 0:
        R.finish[r] = t
        R.block_state[r] = RS_FINISHED
        _sig(C, L, t, SG_UPPR_END, r, 0, 0, 0, 0.0)


@njit(cache=True)
def _unblock(C, n, R, T, K, L, r, t):
    """Rank r is released at t: close its blocked interval; False if handlers delay it.

    The caller then calls :func:`_advance` (kept out of here: a call passing every array
    costs an incref per array).
    """
    if R.hfree[r] > t and _busy(C, n, R, T, K, r, t):
        return False
    s = R.block_state[r]
    if s >= 0:
        _interval(C, R, L, r, s, R.t_block[r], t)
    R.pending[r] = 0
    R.block_state[r] = RS_RUNNABLE
    return True


@njit(cache=True)
def _drain(C, P, M, R, G, T, K, L, CS, MS, t):
    cap = R.ready.shape[0]
    while K.ks[K_RHEAD] < K.ks[K_RTAIL]:
        r = R.ready[K.ks[K_RHEAD] % cap]
        K.ks[K_RHEAD] += 1
        if _unblock(C, P.nranks, R, T, K, L, r, t):
            _advance(C, P, M, R, G, T, K, L, CS, MS, r, t)


@njit(cache=True)
def _shared_due(C, n, M, R, G, T, K, L, CS, MS, t):
    """Messages finishing under the sharing rule at t."""
    if C.sharing == 0:
        nd = cc_pop_due(CS, t, G.bott)
        for i in range(nd):
            m = CS.done[i]
            cc_end(CS, m, t)
            if C.record:   # the call passes arrays: skip it when not recording
                _log_route(C, M, L, m, t, CS.count)
        cc_flush(CS)
        for i in range(nd):
            _done(C, n, M, R, G, T, K, L, CS.done[i], t)
    else:
        nd = mm_pop_due(MS, t, G.bott)
        for i in range(nd):
            m = MS.done[i]
            mm_end(MS, m, t)
            if C.record:   # the call passes arrays: skip it when not recording
                _log_route(C, M, L, m, t, MS.count)
        for i in range(nd):
            _done(C, n, M, R, G, T, K, L, MS.done[i], t)


@njit(cache=True)
def run_loop(C, P, M, R, G, T, K, L, CS, MS, BG):
    """Evaluate (or continue evaluating) until done or ``C.max_events`` horizons passed.

    Returns True when every event was processed.
    """
    n = P.nranks
    t = K.kf[0]
    if K.ks[K_STARTED] == 0:
        K.ks[K_STARTED] = 1
        _sig(C, L, 0.0, SG_GO_INIT, n, M.nmsg, 0, 0, 0.0)
        for r in range(n):
            _sig(C, L, 0.0, SG_NEWPROC, r, 0, 0, 0, 0.0)
            _advance(C, P, M, R, G, T, K, L, CS, MS, r, 0.0)
        _drain(C, P, M, R, G, T, K, L, CS, MS, 0.0)
    nbg = BG.t.shape[0]
    budget = C.max_events
    while budget != 0:
        budget -= 1
        # the sharing rule's next completion, read here: a call passes every array of the
        # rule's state (numba increfs each), too dear once per horizon when nothing changed
        if C.sharing == 0:
            si = CS.si
            if si[N_NEW] != 0 or si[N_DEC] != 0 or si[N_INC] != 0 or si[N_TCH] != 0:
                cc_flush(CS)
            tk = CS.ev_t[CS.ev_item[0]] if CS.ev_len[0] > 0 else INF
        else:
            if MS.si[N_DIRTY] != 0:
                mm_solve(MS)
            tk = MS.tfin[MS.f_item[0]] if MS.si[F_LEN] > 0 else INF
        th = T.t[T.item[0]] if T.len[0] > 0 else INF
        kb = K.ks[K_BG]
        tb = BG.t[kb] if kb < nbg else INF
        if tk == INF and th == INF:    # nothing left to move: later steps change nothing
            K.kf[0] = t
            return True
        t_new = min(tk, th, tb)
        _sig(C, L, t_new, SG_EVENTHORIZON, 0, 0, 0, 0, t_new - t)
        t = t_new
        K.ks[K_EVENTS] += 1
        if tb <= tk and tb <= th:
            # background steps change bandwidth availability from t on: all steps at t
            while kb < nbg and BG.t[kb] == t:
                if C.sharing == 0:
                    cc_set_free(CS, BG.res[kb], t, 1.0 - BG.load[kb])
                else:
                    mm_set_free(MS, BG.res[kb], t, 1.0 - BG.load[kb])
                kb += 1
            K.ks[K_BG] = kb
        elif tk <= th:
            _shared_due(C, n, M, R, G, T, K, L, CS, MS, t)
        else:
            x = timer_pop(T.item, T.pos, T.t, T.seq, T.len)
            kind = T.kind[x]
            if kind == EV_COMPUTE:
                _interval(C, R, L, x, R.comp_state[x], R.comp_start[x], t)
                R.block_state[x] = RS_RUNNABLE
                pc = R.pc[x]
                if (R.hfree[x] <= t and R.ovh_due[x] <= 0.0 and pc < P.rank_ptr[x + 1]
                        and P.op[pc] == OP_COMPUTE and P.dur[pc] > 0.0):
                    # compute after compute, as _advance would do it, without the call
                    # that passes every array
                    R.pc[x] = pc + 1
                    K.ks[K_RECORDS] += 1
                    _busy_for(C, R, T, K, x, t, P.dur[pc], STATE_COMPUTE)
                elif R.hfree[x] <= t or not _busy(C, n, R, T, K, x, t):   # a handler came
                    _advance(C, P, M, R, G, T, K, L, CS, MS, x, t)
            elif kind == EV_MSG_END:
                _done(C, n, M, R, G, T, K, L, x - 2 * n, t)
            elif kind == EV_LAT_END:
                m = x - 2 * n
                work = M.quiet[m] - M.latency[m] if C.sharing == 0 else float(M.nbytes[m])
                _share_start(C, M, L, CS, MS, m, t, work)
            elif kind == EV_START:
                _start(C, n, M, G, T, K, L, CS, MS, x - 2 * n, t, False)
            elif kind == EV_HANDLER_END:
                m = x - 2 * n - M.nmsg
                if M.kind[m] == 1:       # request handled: the server replies now
                    G.t_post_send[m + 1] = t
                    G.t_post_recv[m + 1] = t
                    _start(C, n, M, G, T, K, L, CS, MS, m + 1, t, True)
                else:                    # reply handled: the requester goes on
                    r = G.am_waiter[m - 1]
                    R.pending[r] -= 1
                    if R.pending[r] == 0:
                        _ready(R, K, r)
            elif kind == EV_RESUME:
                if _unblock(C, n, R, T, K, L, x - n, t):
                    _advance(C, P, M, R, G, T, K, L, CS, MS, x - n, t)
        if K.ks[K_RHEAD] < K.ks[K_RTAIL]:    # skip the call (all arrays) when none is ready
            _drain(C, P, M, R, G, T, K, L, CS, MS, t)
    K.kf[0] = t
    return False


@njit(cache=True)
def go_end(C, L, t, makespan):
    _sig(C, L, t, SG_GO_END, 0, 0, 0, 0, makespan)
