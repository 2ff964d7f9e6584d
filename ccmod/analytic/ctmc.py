"""Steady state of a finite continuous-time Markov chain (sparse).

:func:`explore` builds the reachable state space from an initial state and a transition
function (breadth first, refusing more than ``max_states`` states); :func:`steady_state`
solves ``pi Q = 0, sum(pi) = 1`` with a sparse LU factorisation.  Used by the exact
solution of data-flow models (:mod:`ccmod.analytic.ctmc_dataflow`), in the spirit of MMT's
GSPN solution by SPNP (Childers et al. 1994).
"""
from __future__ import annotations

from collections import deque

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ccmod.errors import CcmodInputError

__all__ = ["explore", "steady_state", "MAX_STATES"]

#: default limit on reachable states (a sparse LU of this size takes seconds)
MAX_STATES = 200_000


def explore(init_key, init_obj, successors, max_states: int = MAX_STATES, what: str = "model"):
    """Reachable states and the generator's entries.

    Parameters
    ----------
    init_key : hashable
        Identity of the initial state.
    init_obj : object
        The initial state passed to ``successors``.
    successors : callable
        ``successors(obj) -> iterable of (rate, key, obj, label)``; ``label`` (any
        hashable or None) names the event, for throughputs.
    max_states : int
        Refuse (CcmodInputError) beyond this many states.

    Returns
    -------
    keys : list
        State identities, index = state number.
    rows, cols, rates : ndarray
        Transition i -> j with rate (parallel arrays, i != j; repeats allowed).
    labels : list
        Label of each transition.
    objs : list
        One representative object per state.
    """
    index = {init_key: 0}
    keys, objs = [init_key], [init_obj]
    rows, cols, rates, labels = [], [], [], []
    q = deque([0])
    while q:
        i = q.popleft()
        for rate, k, obj, label in successors(objs[i]):
            j = index.get(k)
            if j is None:
                j = len(keys)
                if j >= max_states:
                    raise CcmodInputError(
                        f"the {what} has more than {max_states} reachable states (stopped at "
                        f"{j}); too large to solve exactly",
                        hint="simulate it (drop --solve ctmc) or make the graph smaller "
                             "(fewer actors, iterations in flight or data capacity)")
                index[k] = j
                keys.append(k)
                objs.append(obj)
                q.append(j)
            if j != i:
                rows.append(i)
                cols.append(j)
                rates.append(rate)
                labels.append(label)
    return (keys, np.asarray(rows, np.int64), np.asarray(cols, np.int64),
            np.asarray(rates, float), labels, objs)


def steady_state(n: int, rows, cols, rates) -> np.ndarray:
    """Stationary distribution of an irreducible generator given by its off-diagonal rates.

    Solves ``Q^T pi = 0`` with the last equation replaced by ``sum(pi) = 1``.
    """
    if n == 1:
        return np.ones(1)
    out = np.bincount(rows, weights=rates, minlength=n)
    Q = sp.coo_matrix((rates, (rows, cols)), shape=(n, n)).tocsr()
    Q = Q - sp.diags(out)
    A = Q.T.tolil()
    A[n - 1, :] = np.ones(n)
    b = np.zeros(n)
    b[n - 1] = 1.0
    pi = spla.spsolve(A.tocsc(), b)
    if not np.all(np.isfinite(pi)):
        raise CcmodInputError("the Markov chain has no unique steady state",
                              hint="check that the model is closed and cannot deadlock")
    pi = np.clip(pi, 0.0, None)
    return pi / pi.sum()
