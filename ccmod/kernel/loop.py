"""The event-horizon loop: ranks walk their records, messages share the network.

Compiled functions (entered through :func:`run_loop`) over flat arrays, the article's evaluation
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

A message's own steps (injection and the NIC gap, its end, its handler, its waiters and
slot references) are in :mod:`ccmod.kernel.messages`.

Active messages (LoPC): a request runs a handler on its target as soon as the target's
processor is free of earlier handlers, interrupting compute; the reply's handler runs on
the requester, which resumes after it.

Streaming (:mod:`ccmod.kernel.window`): a rank about to read past ``rank_end[r]`` while
``more[r]`` says its trace goes on is *starved*: the loop sets ``K_STARVED`` and returns
mid-horizon; the caller refills the window and the loop resumes exactly where it stopped,
bit for bit the whole program's run. With ``C.recycle`` every reader of a message slot
holds a reference and a slot whose last one drops goes to ``MsgSt.ret``
(:mod:`ccmod.kernel.slots`; an active-message pair retires when the reply's handler ends).

The loop can stop after ``max_events`` horizons and be called again (progress reports):
all its state lives in the arrays it is given: two buffers, ``I`` (int64) and ``F``
(float64), and named tuples of offsets into them (:mod:`ccmod.kernel.state`), so that a
call costs a few reference counts, not one per field; compiled, the loop's functions see
each buffer as its data pointer alone (:mod:`ccmod.kernel.rawbuf`). Everything the entry calls
is private to its compiled module (:func:`ccmod.kernel.linkonly.internalize`): unused
arguments are dropped and functions called once inlined.
"""
from __future__ import annotations

from ccmod.kernel.compiled import (at_f, at_i, at_i8, at_i32, bg_steps, leaf,
                                   msg_in, msg_st, per_msg, program_view, rank_st, scalars,
                                   timers)
from ccmod.kernel.compiled import kernel_jit as njit   # one compile per argument types
from ccmod.kernel.heaps import order_key, timer_init, timer_pop
from ccmod.kernel.messages import (arm_timer, make_ready, message_done, retire, start_transfer,
                                   unref, wait_on)
from ccmod.kernel.rawbuf import as_i32, prefetch, raw
from ccmod.kernel.record import log_state, logs_view, sig as _sig
from ccmod.kernel.rules import rule_due, rule_next, rule_offsets, rule_set_free, rule_start
from ccmod.kernel.state import (FC_EAGER, FC_KIND, FC_LATENCY, FC_O_SEND, FC_QUIET, MF, RF,
                                RF_COMP_END, RF_COMP_START, RF_FINISH, RF_H_INSIDE, RF_HFREE,
                                RF_OVH_DUE, RF_STATE, RF_T_BLOCK, RI, RI_BLOCK, RI_COMP_STATE,
                                RI_PAID_PC, RI_PC, RI_PENDING)
from ccmod.kernel.codes import (EV_COMPUTE, EV_HANDLER_END, EV_LAT_END, EV_MSG_END, EV_RESUME,
                                EV_START, K_BG, K_EVENTS, K_NBAR, K_INIT, K_RECORDS,
                                K_RHEAD, K_RTAIL, K_STARTED, K_STARVED,
                                OP_AMREQUEST, OP_BARRIER, OP_COMPUTE, OP_IRECV, OP_ISEND, OP_RECV,
                                OP_SEND, OP_WAIT, OP_WAITALL, RS_COMPUTING, RS_FINISHED,
                                RS_RUNNABLE, SG_EVENTHORIZON, SG_GO_END, SG_GO_INIT,
                                SG_NEWPROC, SG_NEWSCOM, SG_UPPR_END,
                                SG_UPPR_PROC, STATE_BARRIER, STATE_COMPUTE, STATE_OVERHEAD,
                                STATE_RECV, STATE_SEND, STATE_WAIT)

INF = float("inf")


@njit(cache=True)
def _interval(C, L, I, F, r, state, t0, t1):
    R = rank_st(I)
    rf = R.rf + r * RF           # rank r's record in F
    # handler time run inside the interval is counted in handler_s, not in the state
    F[rf + RF_STATE + state] += t1 - t0 - F[rf + RF_H_INSIDE]
    F[rf + RF_H_INSIDE] = 0.0
    if C.record and t1 > t0:
        log_state(L, (r, state, t0, t1))


@njit(cache=True)
def _block(C, L, I, F, r, state, t):
    R = rank_st(I)
    ri, rf = R.ri + r * RI, R.rf + r * RF
    I[ri + RI_BLOCK] = state
    F[rf + RF_T_BLOCK] = t
    _sig(C, L, t, SG_UPPR_PROC, r, state, 0, 0, 0.0)


@leaf
def _busy(I, F, r, t):
    """Delay a rank that would resume while its processor runs handlers."""
    R = rank_st(I)
    n = R.nranks
    rf = R.rf + r * RF
    if F[rf + RF_HFREE] > t:
        arm_timer(I, F, n + r, EV_RESUME, F[rf + RF_HFREE])
        return True
    return False


@njit(cache=True, inline="always")
def _busy_for(I, F, r, t, d, state):
    """Rank r runs compute or overhead for d seconds from t (inlined where called: with
    its timer's push inlined (:func:`ccmod.kernel.heaps.timer_set`) LLVM kept it a call
    of ~75 instructions, ~25 of them the call's)."""
    R = rank_st(I)
    ri, rf = R.ri + r * RI, R.rf + r * RF
    F[rf + RF_COMP_START] = t
    F[rf + RF_COMP_END] = t + d
    I[ri + RI_COMP_STATE] = state
    arm_timer(I, F, r, EV_COMPUTE, t + d)
    I[ri + RI_BLOCK] = RS_COMPUTING


@njit(cache=True)
def _advance(C, P, L, I, F, r, t, M, R, G, K):
    """Interpret rank r's records from its program counter until it blocks. The offsets
    (``M``, ``R``, ``G``, ``K``) are the caller's, read once a call of the loop: read here,
    they were read again from the head of ``I`` at every wake-up (a store into ``I`` may
    have changed them, as far as the compiler knows)."""
    n = P.nranks
    ri, rf = R.ri + r * RI, R.rf + r * RF      # rank r's records: each field at a fixed place
    pc = I[ri + RI_PC]
    end = at_i(P.rank_end, r)
    start_pc = pc
    while True:
        if F[rf + RF_OVH_DUE] > 0.0:     # receive overheads of the op just completed
            d = F[rf + RF_OVH_DUE]
            F[rf + RF_OVH_DUE] = 0.0
            _busy_for(I, F, r, t, d, STATE_OVERHEAD)
            break
        if pc >= end:
            break
        o = at_i8(P.op, pc)
        if o == OP_COMPUTE:
            d = at_f(P.dur, pc)
            pc += 1
            if d > 0.0:
                _busy_for(I, F, r, t, d, STATE_COMPUTE)
                break
        elif o == OP_SEND or o == OP_ISEND:
            m = at_i32(P.rec_msg, pc)
            o_send = F[M.o_send + per_msg(M, FC_O_SEND, m)]
            if o_send > 0.0 and I[ri + RI_PAID_PC] != pc:
                I[ri + RI_PAID_PC] = pc           # the CPU overhead comes before the post
                _busy_for(I, F, r, t, o_send, STATE_OVERHEAD)
                break
            F[G.t_post_send + m * MF] = t
            _sig(C, L, t, SG_NEWSCOM, order_key(I, M.okey, m), as_i32(I)[M.src + m], as_i32(I)[M.dst + m],
                 I[M.nbytes + m], 0.0)
            if (as_i32(I)[M.eager + per_msg(M, FC_EAGER, m)]
                    or F[G.t_post_recv + m * MF] < INF):
                start_transfer(C, L, I, F, m, t, True)
            pc += 1
            blocks = o == OP_SEND and wait_on(C, I, F, r, m, 0)
            if C.recycle:
                unref(I, m)
            if blocks:
                _block(C, L, I, F, r, STATE_SEND, t)
                break
        elif o == OP_RECV or o == OP_IRECV:
            m = at_i32(P.rec_msg, pc)
            F[G.t_post_recv + m * MF] = t
            if (not as_i32(I)[M.eager + per_msg(M, FC_EAGER, m)]
                    and F[G.t_post_send + m * MF] < INF):
                start_transfer(C, L, I, F, m, t, True)
            pc += 1
            blocks = o == OP_RECV and wait_on(C, I, F, r, m, 1)
            if C.recycle:
                unref(I, m)
            if blocks:
                _block(C, L, I, F, r, STATE_RECV, t)
                break
        elif o == OP_WAIT:
            m = at_i(P.wait_msg, pc)
            side = at_i(P.wait_side, pc)
            pc += 1
            blocks = wait_on(C, I, F, r, m, side)
            if C.recycle:
                unref(I, m)
            if blocks:
                _block(C, L, I, F, r, STATE_WAIT, t)
                break
        elif o == OP_WAITALL:
            k = at_i(P.wait_msg, pc)
            pc += 1
            for j in range(at_i(P.wa_ptr, k), at_i(P.wa_ptr, k + 1)):
                wait_on(C, I, F, r, at_i(P.wa_msg, j), at_i(P.wa_side, j))
                if C.recycle:
                    unref(I, at_i(P.wa_msg, j))
            if I[ri + RI_PENDING] > 0:
                _block(C, L, I, F, r, STATE_WAIT, t)
                break
        elif o == OP_AMREQUEST:
            m = at_i32(P.rec_msg, pc)
            pc += 1
            F[G.t_post_send + m * MF] = t
            F[G.t_post_recv + m * MF] = t
            start_transfer(C, L, I, F, m, t, True)
            as_i32(I)[G.am_waiter + m] = r
            I[ri + RI_PENDING] += 1
            _block(C, L, I, F, r, STATE_WAIT, t)
            break
        elif o == OP_BARRIER:
            pc += 1
            nb = I[K.ks + K_NBAR]
            I[R.barrier + nb] = r
            nb += 1
            I[K.ks + K_NBAR] = nb
            if nb == n:
                for i in range(nb):
                    if I[R.barrier + i] != r:
                        make_ready(I, I[R.barrier + i])
                I[K.ks + K_NBAR] = 0
            else:
                I[ri + RI_PENDING] = 1
                _block(C, L, I, F, r, STATE_BARRIER, t)
                break
    I[K.ks + K_RECORDS] += pc - start_pc
    I[ri + RI_PC] = pc
    if pc >= end and I[ri + RI_BLOCK] != RS_COMPUTING and I[ri + RI_PENDING] == 0:
        if at_i(P.more, r):
            # the end of its window, not of its trace: the caller refills it (only the
            # `pc >= end` exit above gets here: every other exit blocks or computes)
            I[K.ks + K_STARVED] = r + 1
            return
        F[rf + RF_FINISH] = t
        I[ri + RI_BLOCK] = RS_FINISHED
        _sig(C, L, t, SG_UPPR_END, r, 0, 0, 0, 0.0)


@njit(cache=True, inline="always")
def _unblock(C, L, I, F, r, t):
    """Rank r is released at t: close its blocked interval; False if handlers delay it.
    The caller then calls :func:`_advance`."""
    R = rank_st(I)
    ri, rf = R.ri + r * RI, R.rf + r * RF
    if F[rf + RF_HFREE] > t and _busy(I, F, r, t):
        return False
    s = I[ri + RI_BLOCK]
    if s >= 0:
        _interval(C, L, I, F, r, s, F[rf + RF_T_BLOCK], t)
    I[ri + RI_PENDING] = 0
    I[ri + RI_BLOCK] = RS_RUNNABLE
    return True


def run_loop(C, P, L, I, F):
    """Evaluate (or continue evaluating) until done or ``C.max_events`` horizons passed.

    Returns True when every event was processed; False when ``C.max_events`` horizons
    passed or a rank is starved (``I[K.ks + K_STARVED]`` = rank + 1, see above).
    """
    return run_entry(C, P, L, I, F)


@njit(cache=True)
def run_entry(C, P, L, I, F):
    """:func:`run_loop` compiled: one loop whether or not the run records
    (``C.record``, ``C.signals``), so a first run compiles it once for both."""
    return _loop_entry(C, program_view(P), logs_view(L), raw(I), raw(F))


@leaf
def _loop_entry(C, P, L, I, F):
    """The loop entered from a leaf: every function below compiled without numba's
    reference counting, which otherwise costs a call per array argument at each entry and
    exit of each function (~2x slower); the logs are appended to through their addresses
    (:func:`ccmod.kernel.record.logs_view`)."""
    return _loop(C, P, L, I, F)


@njit(cache=True)
def _loop(C, P, L, I, F):
    M, R, G, T = msg_in(I), rank_st(I), msg_st(I), timers(I)
    K, BG = scalars(I), bg_steps(I)
    S = rule_offsets(C, I)       # the sharing rule's, read once
    n = P.nranks
    mask = R.nready - 1          # the ready ring's capacity is a power of two
    t = F[K.kf]
    adv = -1                     # the rank to interpret next (-1: none)
    if I[K.ks + K_STARVED] != 0:
        # resume a rank starved at the end of its window (refilled since), then go on
        # exactly as the interrupted horizon would have
        adv = I[K.ks + K_STARVED] - 1
        I[K.ks + K_STARVED] = 0
    if I[K.ks + K_STARTED] == 0:
        I[K.ks + K_STARTED] = 1
        timer_init(I, F, T.item, T.t, T.seq, 2 * n, 2 * n + 1)
        _sig(C, L, 0.0, SG_GO_INIT, n, M.nmsg, 0, 0, 0.0)
        # every rank starts at 0, runnable, in rank order: on the ready ring first, so the
        # loop's wake-ups have one source and no test for ranks not started yet (their
        # release by the ring changes nothing: no handler time, no blocked interval)
        for r in range(n):
            make_ready(I, r)
    nbg = BG.n
    budget = C.max_events
    while True:
        # the ranks that run at t: the one a timer released, then the ready ring (at the
        # start, every rank in rank order). _advance has this one call site, so that it
        # is inlined here (its offsets, the Program's fields and the flags are not passed
        # and reloaded at every wake-up)
        while True:
            if adv < 0:
                if I[K.ks + K_RHEAD] < I[K.ks + K_RTAIL]:
                    h = I[K.ks + K_RHEAD]
                    r = I[R.ready + (h & mask)]
                    I[K.ks + K_RHEAD] = h + 1
                    if h + 2 < I[K.ks + K_RTAIL]:
                        # the rank two places on: with many ranks its next record is
                        # rarely in cache any more (one line per rank, reused once a
                        # round), fetch it while these run
                        pc2 = I[R.ri + I[R.ready + ((h + 2) & mask)] * RI + RI_PC]
                        prefetch(P.op, pc2 >> 3)            # in 8-byte words: int8 codes
                        prefetch(P.rec_msg, pc2 >> 1)
                    if C.signals and I[K.ks + K_INIT] < n:
                        # the ring's first n ranks are the ranks starting, 0 to n - 1
                        I[K.ks + K_INIT] += 1
                        _sig(C, L, 0.0, SG_NEWPROC, r, 0, 0, 0, 0.0)
                    if not _unblock(C, L, I, F, r, t):
                        continue
                    adv = r
                else:
                    break
            _advance(C, P, L, I, F, adv, t, M, R, G, K)
            adv = -1
            if I[K.ks + K_STARVED] != 0:
                F[K.kf] = t
                return False                 # resumed by run_loop after the refill
        if budget == 0:
            break
        budget -= 1
        tk = rule_next(C, I, F, S)      # the sharing rule's next completion
        th = F[T.t + I[T.item + 1]]     # +inf when no timer is armed (a sentinel)
        kb = I[K.ks + K_BG]
        tb = F[BG.t + kb] if kb < nbg else INF
        if tk == INF and th == INF:    # nothing left to move: later steps change nothing
            F[K.kf] = t
            return True
        t_new = min(tk, th, tb)
        _sig(C, L, t_new, SG_EVENTHORIZON, 0, 0, 0, 0, t_new - t)
        t = t_new
        I[K.ks + K_EVENTS] += 1
        if tb <= tk and tb <= th:
            # background steps change bandwidth availability from t on: all steps at t
            while kb < nbg and F[BG.t + kb] == t:
                rule_set_free(C, I, F, I[BG.res + kb], t, 1.0 - F[BG.load + kb])
                kb += 1
            I[K.ks + K_BG] = kb
        elif tk <= th:               # messages finishing under the sharing rule at t
            nd, done = rule_due(C, L, I, F, t, S)
            for i in range(nd):
                message_done(C, L, I, F, I[done + i], t, M, R, G)
        else:
            x = timer_pop(I, F, T.item, T.pos, T.t, T.seq, T.len)
            kind = I[T.kind + x]
            m = -1
            if x >= 2 * n:              # a message's timer: its slot back to the pool
                m = I[T.msg + x]
                k = I[T.nf]
                I[T.free + k] = x
                I[T.nf] = k + 1
            if kind == EV_COMPUTE:
                xi, xf = R.ri + x * RI, R.rf + x * RF
                _interval(C, L, I, F, x, I[xi + RI_COMP_STATE], F[xf + RF_COMP_START], t)
                I[xi + RI_BLOCK] = RS_RUNNABLE
                if F[xf + RF_HFREE] <= t or not _busy(I, F, x, t):
                    adv = x
            elif kind == EV_MSG_END:
                message_done(C, L, I, F, m, t, M, R, G)
            elif kind == EV_LAT_END:
                if C.sharing == 0:
                    work = (F[M.quiet + per_msg(M, FC_QUIET, m)]
                            - F[M.latency + per_msg(M, FC_LATENCY, m)])
                else:
                    work = float(I[M.nbytes + m])
                rule_start(C, L, I, F, m, t, work)
            elif kind == EV_START:
                start_transfer(C, L, I, F, m, t, False)
            elif kind == EV_HANDLER_END:
                # a request handled: the server replies now
                if as_i32(I)[M.kind + per_msg(M, FC_KIND, m)] == 1:
                    F[G.t_post_send + (m + 1) * MF] = t
                    F[G.t_post_recv + (m + 1) * MF] = t
                    start_transfer(C, L, I, F, m + 1, t, True)
                else:                    # reply handled: the requester goes on
                    r = as_i32(I)[G.am_waiter + m - 1]
                    I[R.ri + r * RI + RI_PENDING] -= 1
                    if I[R.ri + r * RI + RI_PENDING] == 0:
                        make_ready(I, r)
                    if C.recycle:       # request and reply are over: both slots free
                        retire(I, m - 1)
                        retire(I, m)
            elif kind == EV_RESUME:
                if _unblock(C, L, I, F, x - n, t):
                    adv = x - n
            if I[K.ks + K_STARVED] != 0:
                F[K.kf] = t
                return False
    F[K.kf] = t
    return False


@njit(cache=True)
def go_end(C, L, t, makespan):
    _sig(C, L, t, SG_GO_END, 0, 0, 0, 0, makespan)
