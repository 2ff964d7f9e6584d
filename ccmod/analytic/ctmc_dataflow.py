"""Exact solution of a data-flow model as a continuous-time Markov chain.

With exponential service and transfer times the net of :mod:`ccmod.dataflow_net` is a
Markov chain over its markings (MMT solves the same chain as a GSPN with SPNP).  The
states are the markings reached from the initial one; a timed transition is an actor or
a transfer stage finishing, at rate

* FCFS processor: ``speed (1 - background) / mean`` for the running actor;
* PS processor with n running actors: ``speed (1 - background) / (n mean)`` each;
* exclusive link stage (circuit, store-and-forward hop): ``1 / mean_stage``;
* ethernet with n active transfers: ``1 / (n mean_stage)`` each;

followed by the immediate consequences (:func:`ccmod.dataflow_net.settle_ready`,
:func:`~ccmod.dataflow_net.admit`), branching with equal probability over the orders of
simultaneous arrivals at a FCFS queue.  :func:`solve` returns the metrics with the same
keys as the simulator.
"""
from __future__ import annotations

import numpy as np

from ccmod import dataflow_net as net
from ccmod.analytic.ctmc import MAX_STATES, explore, steady_state
from ccmod.errors import CcmodInputError

__all__ = ["solve", "build"]


def _rates(model, m):
    out = []
    for p, run in enumerate(m.prun):
        if not run:
            continue
        f = model.proc_speed[p] * (1.0 - model.proc_background[p])
        if model.proc_discipline[p] == "FCFS":
            a = run[0]
            out.append((f / model.actor_mean[a], ("actor", a)))
        else:
            n = len(run)
            for a in run:
                out.append((f / (n * model.actor_mean[a]), ("actor", a)))
    shared = {}
    for c, s, _ in m.active:
        st = model.comms[c].stages[s]
        if st.kind == "shared":
            shared[st.links[0]] = shared.get(st.links[0], 0) + 1
    for job in m.active:
        st = model.comms[job[0]].stages[job[1]]
        n = shared[st.links[0]] if st.kind == "shared" else 1
        out.append((1.0 / (n * st.mean), ("job", job)))
    return out


def _settle(model, m):
    """Immediate consequences: every (probability, settled marking)."""
    net.settle_ready(model, m)
    res = []
    for pr, orders in net.arrival_orders(m):
        m2 = m.copy() if pr < 1.0 else m
        net.admit(model, m2, orders)
        m2.started.clear()
        m2.born.clear()
        m2.delivered.clear()
        res.append((pr, m2))
    return res


def build(model, max_states: int = MAX_STATES):
    """Explore the chain; returns (markings, rows, cols, rates, labels)."""
    ok, why = model.all_exponential()
    if not ok:
        raise CcmodInputError(f"--solve ctmc needs exponential times: {why}",
                              source=model.source,
                              hint="set every distribution to exponential or simulate instead")
    if not model.closed:
        raise CcmodInputError("--solve ctmc solves closed models (steady state); this model "
                              "runs once", source=model.source,
                              hint="write \"closed\": 1 or simulate it")
    m0 = net.initial(model, tags=False)
    starts = _settle(model, m0)
    if len(starts) != 1:
        # several initial orders: an immediate start state is not a chain state; take the
        # first (the steady state does not depend on it for an irreducible chain)
        starts = starts[:1]
    m0 = starts[0][1]

    def successors(m):
        for rate, ev in _rates(model, m):
            m1 = m.copy()
            if ev[0] == "actor":
                net.actor_done(model, m1, ev[1])
            else:
                net.job_done(model, m1, ev[1])
            for pr, m2 in _settle(model, m1):
                yield rate * pr, m2.key(), m2, ev
    keys, rows, cols, rates, labels, objs = explore(m0.key(), m0, successors,
                                                    max_states=max_states,
                                                    what="Markov chain of this data-flow model")
    return objs, rows, cols, rates, labels


def solve(model, max_states: int = MAX_STATES) -> dict:
    """Steady-state MMT metrics of a closed, all-exponential data-flow model.

    Returns the dict of :func:`ccmod.dataflow_net.summarize` plus ``method``, ``model``,
    ``states`` and ``transitions``.
    """
    objs, rows, cols, rates, labels = build(model, max_states)
    n = len(objs)
    pi = steady_state(n, rows, cols, rates)
    lay = net.reward_layout(model)
    R = np.array([net.rewards(model, m, lay) for m in objs], float)
    avg = (pi @ R).tolist()
    # throughputs: probability flux of each completion (self-loops included)
    x_actor = np.zeros(model.nactors)
    x_comm = np.zeros(len(model.comms))
    for i, m in enumerate(objs):
        for rate, ev in _rates(model, m):
            if ev[0] == "actor":
                x_actor[ev[1]] += pi[i] * rate
            else:
                c, s, _ = ev[1]
                if s == len(model.comms[c].stages) - 1:
                    x_comm[c] += pi[i] * rate
    out = {"model": model.name, "method": "ctmc", "states": n, "transitions": int(len(rows))}
    out.update(net.summarize(model, avg, lay, x_actor.tolist(), x_comm.tolist()))
    return out
