"""The kernel's flat arrays, grouped in named tuples (numba passes them as one argument).

``Config``  scalars: nranks is in ``Program``; sharing (0 ccmod, 1 maxmin), flags.
``Program`` the ranks' records (CSR by rank) with waits resolved to messages.
``MsgIn``   per-message inputs (compile time) and per-node NIC gap.
``RankSt``  per-rank state; ``MsgSt`` per-message times and waiters; ``Timers`` the timer
            queue (one slot per rank compute, rank resume, message, handler);
``Scalars`` counters; ``Logs`` the recordings (typed lists of fixed-width records);
``BgSteps`` background-load steps sorted by time.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

INF = np.inf

Config = namedtuple("Config", "sharing lat_unshared detached record signals gap max_events")
Program = namedtuple("Program", "nranks rank_ptr op dur rec_msg wait_msg wait_side wa_ptr "
                                "wa_msg wa_side")
MsgIn = namedtuple("MsgIn", "nmsg src dst nbytes quiet latency o_send o_recv unshared kind "
                            "handler_s flow_cap eager route_ptr route_res node_of_rank gap_s")
RankSt = namedtuple("RankSt", "pc pending block_state t_block finish comp_end comp_start "
                              "comp_state hfree handler_tot h_inside paid_pc ovh_due state_s "
                              "barrier ready")
MsgSt = namedtuple("MsgSt", "t_post_send t_post_recv t_start t_end send_waiter recv_waiter "
                            "am_waiter bott nic_next")
Timers = namedtuple("Timers", "item pos t seq kind len")
Scalars = namedtuple("Scalars", "ks kf")
Logs = namedtuple("Logs", "states load sig")
BgSteps = namedtuple("BgSteps", "t res load")


def new_logs():
    """Empty recordings: rank-state intervals, contention changes, signals (typed lists of
    fixed-width records, made in compiled code so that no list method is compiled at
    start-up; Python only hands them back to compiled functions)."""
    from ccmod.kernel.record import empty_logs
    return Logs(*empty_logs())


def new_rank_state(rank_ptr, nstates):
    n = len(rank_ptr) - 1
    f8 = lambda v=0.0: np.full(n, v, np.float64)  # noqa: E731
    i8 = lambda v=0: np.full(n, v, np.int64)  # noqa: E731
    return RankSt(np.asarray(rank_ptr[:-1], np.int64).copy(), i8(), i8(-1), f8(), f8(INF),
                  f8(INF), f8(), i8(), f8(), f8(), f8(), i8(-1), f8(),
                  np.zeros((n, nstates)), i8(), np.zeros(2 * n + 4, np.int64))


def new_msg_state(M, nnodes):
    return MsgSt(np.full(M, INF), np.full(M, INF), np.full(M, INF), np.full(M, INF),
                 np.full(M, -1, np.int64), np.full(M, -1, np.int64), np.full(M, -1, np.int64),
                 np.full(M, -1, np.int64), np.zeros(max(nnodes, 1)))


def new_timers(nslots):
    return Timers(np.zeros(max(nslots, 1), np.int64), np.full(max(nslots, 1), -1, np.int64),
                  np.full(max(nslots, 1), INF), np.zeros(max(nslots, 1), np.int64),
                  np.zeros(max(nslots, 1), np.int64), np.zeros(1, np.int64))


def new_scalars():
    return Scalars(np.zeros(8, np.int64), np.zeros(2))
