"""Simulate a data-flow model with the engine's event-horizon sharing machinery.

Resources are the processors (ids ``0..P-1``) and the links (``P..P+L-1``).  Every running
activity (an actor's execution, a stage of a transfer) is handed to the engine's CCMOD
sharing kernel (:class:`ccmod.kernel.CcmodSharing`) with its work at full rate and its
resources; the kernel progresses every activity at its bandwidth availability
``BA = min over its resources of (1 - background) / CA`` between event horizons, which is
processor sharing on a PS processor and on an ethernet medium, and full speed for
activities that hold their resources alone (FCFS processors, circuit and
store-and-forward stages, whose queueing and FCFS admission :mod:`ccmod.dataflow_net`
does).  At each event horizon the finished activities change the marking, the immediate
consequences are settled and new activities start.

:func:`simulate` runs independent seeded replications (``numpy`` ``SeedSequence``
spawned from ``seed``) and reports every MMT metric with a 95 % confidence half-width
over replications.  Same model, seed and options give bit-identical results.
"""
from __future__ import annotations

import math

import numpy as np

from ccmod import dataflow_net as net
from ccmod.errors import CcmodInputError

__all__ = ["simulate", "replicate_once"]

#: response-time samples kept per actor / communication for the report
MAX_SAMPLES = 20_000


def _sharing_class():
    """The engine's CCMOD sharing kernel, or the local equivalent if it is unavailable."""
    try:
        from ccmod.kernel import CcmodSharing
        return CcmodSharing
    except ImportError:   # the kernel module was reorganised: keep working
        return _LocalSharing


class _LocalSharing:
    """Minimal CCMOD bandwidth-availability sharing (same interface as the kernel's).

    Recomputes every active activity's rate ``min (1 - bg) / CA`` at each event horizon;
    O(active) per event, enough for data-flow graphs.
    """

    def __init__(self, nresources: int, background, record_load: bool = False):
        self.free = [1.0 - float(b) for b in background]
        self.count = [0] * nresources
        self.work = {}       # id -> remaining work
        self.route = {}
        self.t = 0.0

    def _rate(self, m):
        return min(self.free[r] / self.count[r] for r in self.route[m])

    def _advance(self, t):
        if t > self.t:
            dt = t - self.t
            for m in self.work:
                self.work[m] -= dt * self._rate(m)
            self.t = t

    def start(self, m, t, work, resources, cap=math.inf):
        self._advance(t)
        self.route[m] = tuple(int(r) for r in resources)
        for r in self.route[m]:
            self.count[r] += 1
        self.work[m] = work

    def next_time(self):
        if not self.work:
            return math.inf
        return self.t + min(max(w, 0.0) / self._rate(m) for m, w in self.work.items())

    def pop_due(self, t):
        self._advance(t)
        done = sorted(m for m, w in self.work.items()
                      if w <= 1e-12 * max(1.0, abs(t)) * self._rate(m))
        for m in done:
            del self.work[m]
            for r in self.route.pop(m):
                self.count[r] -= 1
        return done


def _make_sharing(cls, nres: int, background, max_activities: int, max_hops: int):
    """Build the sharing kernel; the compiled kernel's facade sizes its arrays up front
    (``max_messages``: activities over the whole replication), older ones grow."""
    try:
        return cls(nres, background, record_load=False, max_messages=max_activities,
                   max_hops=max_hops)
    except TypeError:
        return cls(nres, background, record_load=False)


def _sampler(model, rng, transfer_constant: bool):
    def actor_work(a):
        mean = model.actor_mean[a]
        kind, par = model.actor_dist[a]
        if kind == "exponential":
            x = rng.exponential(mean)
        elif kind == "constant":
            x = mean
        elif kind == "erlang":
            x = rng.gamma(par, mean / par)
        else:                                  # normal, truncated at 0
            x = max(rng.normal(mean, math.sqrt(par)), 0.0)
        return x / model.proc_speed[model.actor_proc[a]]

    def job_work(st):
        return st.mean if transfer_constant else rng.exponential(st.mean)
    return actor_work, job_work


def replicate_once(model, rng, iterations: int, warmup: int, samples: dict | None = None,
                   sharing_cls=None) -> dict:
    """One replication; returns the metrics dict of :func:`ccmod.dataflow_net.summarize`.

    Closed models run until ``warmup + iterations`` completions of the (first) sink and
    measure after the first ``warmup``; ``once`` models run to the end.
    """
    P = model.nproc
    bg = np.asarray(list(model.proc_background) + [0.0] * model.nlinks, float)
    # activities per iteration: every actor once, every stage of every communication once
    per_iter = model.nactors + sum(len(c.stages) for c in model.comms)
    n_iter = (warmup + iterations + model.population + 2) if model.closed else 1
    hops = max([len(st.links) for c in model.comms for st in c.stages] + [1])
    sh = _make_sharing(sharing_cls or _sharing_class(), P + model.nlinks, bg,
                       per_iter * n_iter + 16, hops)
    actor_work, job_work = _sampler(model, rng, model.transfer_distribution == "constant")
    lay = net.reward_layout(model)
    acc = [0.0] * lay["size"]
    n_actor = [0] * model.nactors
    n_comm = [0] * len(model.comms)
    running = {}
    nid = [0]
    ready_t = [None] * model.nactors
    born_t = {}
    iter_start = []
    sink0 = model.sinks[0] if model.sinks else -1
    src0 = model.sources[0] if model.sources else -1
    m = net.initial(model, tags=True)
    t, t0 = 0.0, 0.0
    measuring = not model.closed or warmup == 0
    sink_done = 0

    def keep(kind, name, x):
        if samples is not None and measuring:
            lst = samples.setdefault(kind, {}).setdefault(name, [])
            if len(lst) < MAX_SAMPLES:
                lst.append(x)

    def settle():
        net.settle_ready(model, m)
        po = [rng.permutation(len(q)).tolist() if len(q) > 1 else None for q in m.parr]
        po = [None if o is None else [m.parr[p][i] for i in o] for p, o in enumerate(po)]
        xo = None
        if len(m.xarr) > 1:
            xo = [m.xarr[i] for i in rng.permutation(len(m.xarr)).tolist()]
        net.admit(model, m, (po, xo))
        for a in range(model.nactors):
            if m.astat[a] and ready_t[a] is None:
                ready_t[a] = t
                if a == src0:
                    iter_start.append(t)
        for kind, item in m.started:
            nid[0] += 1
            if kind == "actor":
                sh.start(nid[0], t, actor_work(item), (model.actor_proc[item],))
            else:
                st = model.comms[item[0]].stages[item[1]]
                sh.start(nid[0], t, job_work(st), tuple(P + l for l in st.links))
            running[nid[0]] = (kind, item)
        m.started.clear()
        for c, tag in m.born:
            born_t[tag] = t
        m.born.clear()
        for c, tag in m.delivered:
            t_b = born_t.pop(tag)
            if model.comms[c].stages and measuring:
                n_comm[c] += 1
                keep("communications", model.comms[c].name, t - t_b)
        m.delivered.clear()

    settle()
    rew = net.rewards(model, m, lay)
    while True:
        tn = sh.next_time()
        if tn == math.inf:
            if model.closed:
                raise CcmodInputError("the data-flow model deadlocks (nothing can run)",
                                      source=model.source,
                                      hint="check data capacities and the closed population")
            break
        if measuring:
            dt = tn - t
            for i, r in enumerate(rew):
                if r:
                    acc[i] += r * dt
        t = tn
        for i in sorted(sh.pop_due(t)):
            kind, item = running.pop(i)
            if kind == "actor":
                net.actor_done(model, m, item)
                if measuring:
                    n_actor[item] += 1
                    keep("actors", model.actor_names[item], t - ready_t[item])
                ready_t[item] = None
                if item == sink0:
                    sink_done += 1
                    t_it = iter_start.pop(0) if iter_start else t
                    if measuring:
                        keep("application", "iteration", t - t_it)
            else:
                net.job_done(model, m, item)
        settle()
        rew = net.rewards(model, m, lay)
        if model.closed:
            if not measuring and sink_done >= warmup:
                measuring, t0 = True, t
            elif measuring and sink_done >= warmup + iterations:
                break
    T = t - t0
    if T <= 0:
        raise CcmodInputError("the simulated time is zero", source=model.source,
                              hint="give actors and transfers positive mean times")
    avg = [a / T for a in acc]
    out = net.summarize(model, avg, lay, [n / T for n in n_actor], [n / T for n in n_comm])
    if not model.closed:
        out["application"] = {"throughput": 1.0 / T, "response_time": T}
    return out


def _leaves(d, prefix=()):
    for k, v in d.items():
        if isinstance(v, dict):
            yield from _leaves(v, prefix + (k,))
        else:
            yield prefix + (k,), v


def _set(d, path, v):
    for k in path[:-1]:
        d = d.setdefault(k, {})
    d[path[-1]] = v


def simulate(model, replications: int = 10, seed: int = 0, iterations: int = 2000,
             warmup: int | None = None, samples: dict | None = None,
             sharing_cls=None) -> dict:
    """Replicated simulation: means of every metric and 95 % CI half-widths (``ci95``).

    Parameters
    ----------
    model : DataflowModel
    replications : int
        Independent replications (CI over them; Student t with ``replications - 1``).
    seed : int
        Root seed (``numpy.random.SeedSequence(seed).spawn(replications)``).
    iterations : int
        Measured application iterations per replication (closed models).
    warmup : int, optional
        Iterations discarded first (default ``iterations // 10``).
    samples : dict, optional
        Filled with response-time samples (for the HTML report).
    """
    if replications < 1:
        raise CcmodInputError(f"--replications {replications} must be >= 1",
                              source="--replications", hint="e.g. --replications 10")
    if iterations < 1:
        raise CcmodInputError(f"--iterations {iterations} must be >= 1", source="--iterations")
    w = iterations // 10 if warmup is None else warmup
    seqs = np.random.SeedSequence(seed).spawn(replications)
    runs = [replicate_once(model, np.random.default_rng(s), iterations, w, samples,
                           sharing_cls) for s in seqs]
    out = {"model": model.name, "method": "simulation", "replications": replications,
           "seed": seed, "iterations": iterations if model.closed else 1, "warmup": w}
    ci = {}
    tq = _t975(replications - 1)
    for path, _ in _leaves(runs[0]):
        vals = []
        for r in runs:
            x = r
            for k in path:
                x = x[k]
            vals.append(x)
        a = np.asarray(vals, float)
        mean = float(np.mean(a))
        half = float(tq * np.std(a, ddof=1) / math.sqrt(len(a))) if len(a) > 1 else math.nan
        _set(out, path, mean)
        _set(ci, path, half)
    out["ci95"] = ci
    return out


def _t975(dof: int) -> float:
    if dof < 1:
        return math.nan
    from scipy.stats import t
    return float(t.ppf(0.975, dof))
