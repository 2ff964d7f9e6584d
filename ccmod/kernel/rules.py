"""The loop's calls into the sharing rule, chosen by the type of ``C`` when compiling.

The loop asks its sharing rule to start a message, for the next completion, for the
messages due (ended and taken out), and to change a resource's background. A run uses
one rule (``C.sharing``: 0 the article's, :mod:`ccmod.kernel.ccmod_rule`; 1 max-min,
:mod:`ccmod.kernel.maxmin`); were the choice a run-time test, numba would compile both
rules into the loop though a run executes one. ``C`` is a
:class:`~ccmod.kernel.state.CcConfig` or an :class:`~ccmod.kernel.state.MmConfig` (the
same fields), so the compiled loop is specialised per rule: each ``rule_*`` function here,
compiled, is its rule's version (chosen by ``C``'s type at each call site), and a first run
compiles only the rule it uses. As plain Python (``NUMBA_DISABLE_JIT=1``) it tests
``C.sharing``.
"""
from __future__ import annotations

from numba import types

from ccmod.kernel.ccmod_rule import (N_DEC, N_INC, cc_end, cc_flush, cc_pending, cc_pop_due_s,
                                     cc_set_free, cc_start)
from ccmod.kernel.codes import SG_MSGSTART
from ccmod.kernel.compiled import (cc_state, kernel_jit, kernel_jit_by_type, mm_state, msg_in,
                                   msg_st, per_msg)
from ccmod.kernel.maxmin import F_LEN, N_DIRTY, mm_end, mm_pop_due, mm_set_free, mm_solve, mm_start
from ccmod.kernel.rawbuf import as_i32
from ccmod.kernel.record import log_load, msg_sig
from ccmod.kernel.state import CI_COUNT, CRI, FC_FLOW_CAP, MmConfig

INF = float("inf")


@kernel_jit
def log_route(L, I, m, t, count, stride):
    """Record the message count of each resource on message m's route (resource r's at
    ``I[count + r * stride]``: the rule's per-resource counts)."""
    M = msg_in(I)
    for e in range(as_i32(I)[M.route_ptr + m], as_i32(I)[M.route_end + m]):
        r = as_i32(I)[M.route_res + e]
        log_load(L, (t, r, I[count + r * stride]))


# -- the article's rule ------------------------------------------------------------------
def _cc_start(C, L, I, F, m, t, work):
    msg_sig(C, L, I, msg_in(I).okey, t, SG_MSGSTART, m, 0.0)
    cc_start(I, F, m, t, work)
    if C.record:
        log_route(L, I, m, t, cc_state(I).ri + CI_COUNT, CRI)


def _cc_offsets(C, I):
    return cc_state(I)


def _cc_next(C, I, F, CS):
    if cc_pending(I, CS.si):
        cc_flush(I, F)
    return F[CS.ev_t + I[CS.ev_item]] if I[CS.ev_len] > 0 else INF


def _cc_due(C, L, I, F, t, CS):
    nd = cc_pop_due_s(CS, I, F, t, msg_st(I).bott)
    for i in range(nd):
        m = I[CS.done + i]
        cc_end(I, F, m, t)
        if C.record:
            log_route(L, I, m, t, CS.ri + CI_COUNT, CRI)
    if I[CS.si + N_DEC] != 0 or I[CS.si + N_INC] != 0:
        cc_flush(I, F)
    # else only re-schedules are pending: left to the next rule_next, after the starts
    # the ends' waiters make at this instant (nothing reads the completion heap before;
    # a group touched again then is re-scheduled once, from the same state)
    return nd, CS.done


def _cc_set_free(C, I, F, r, t, free):
    cc_set_free(I, F, r, t, free)


# -- max-min -----------------------------------------------------------------------------
def _mm_start(C, L, I, F, m, t, work):
    M = msg_in(I)
    msg_sig(C, L, I, M.okey, t, SG_MSGSTART, m, 0.0)
    mm_start(I, F, m, t, work, F[M.flow_cap + per_msg(M, FC_FLOW_CAP, m)])
    if C.record:
        log_route(L, I, m, t, mm_state(I).count, 1)


def _mm_offsets(C, I):
    return 0     # max-min reads its own offsets: given by the loop, they made it slower


def _mm_next(C, I, F, S):
    MS = mm_state(I)
    if I[MS.si + N_DIRTY] != 0:
        mm_solve(I, F)
    return F[MS.c_tfin + I[MS.c_item]] if I[MS.si + F_LEN] > 0 else INF


def _mm_due(C, L, I, F, t, S):
    MS = mm_state(I)
    nd = mm_pop_due(I, F, t, msg_st(I).bott)
    for i in range(nd):
        mm_end(I, F, I[MS.done_s + i], t)
        if C.record:
            log_route(L, I, I[MS.done + i], t, MS.count, 1)
    return nd, MS.done


def _mm_set_free(C, I, F, r, t, free):
    mm_set_free(I, F, r, t, free)


def _rule(cc, mm, doc):
    """A ``rule_*`` entry: ``cc`` or ``mm``; as Python, by ``C.sharing``; compiled, by
    ``C``'s type (:func:`~ccmod.kernel.compiled.kernel_jit_by_type`): each is a kernel
    function of its own, compiled to IR for the loop only (numba's overloads, as they
    were, also optimised and compiled to machine code the rule's code below them, ~3 s
    of a cold run)."""
    disp = kernel_jit_by_type(cc, mm, _is_maxmin)
    if disp is not None:
        disp.__doc__ = doc
        return disp

    def f(C, *args):
        return (cc if C.sharing == 0 else mm)(C, *args)
    f.__doc__ = doc
    return f


def _is_maxmin(C):
    """Whether the numba type of ``C`` is max-min's config."""
    return isinstance(C, types.BaseTuple) and getattr(C, "instance_class", None) is MmConfig


rule_start = _rule(_cc_start, _mm_start, "Message m starts sharing at t with ``work`` "
                   "(quiet-seconds or bytes) left: signal, rule, contention recorded.")
rule_offsets = _rule(_cc_offsets, _mm_offsets, "The rule's offsets in ``I`` (its state's named "
                    "tuple), read once by the loop and given to ``rule_next`` and ``rule_due``"
                    " (read at each completion, ~20 were loaded and spilled every time).")
rule_next = _rule(_cc_next, _mm_next, "Settle pending changes; the next completion's time "
                  "(``S``: :func:`rule_offsets`).")
rule_due = _rule(_cc_due, _mm_due, "Take out (end) the messages done at t; ``(nd, done)``: "
                 "how many, and the offset in ``I`` of the list of their ids (``S``: "
                 ":func:`rule_offsets`).")
rule_set_free = _rule(_cc_set_free, _mm_set_free,
                      "Resource r's free fraction becomes ``free`` at t (background step).")
