"""Recordings out of the kernel: typed lists of fixed-width records -> column arrays.

Signals are integer codes with integer/float arguments while the kernel runs; they become
the debug sink's text (the article's otrdeb format) only here, when written.
"""
from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import overload
from numba.typed import List

from ccmod.kernel.compiled import kernel_jit  # (and numba's BLAS check without scipy.linalg)
from ccmod.kernel.codes import (SG_COMMCOST, SG_EVENTHORIZON, SG_GO_END, SG_GO_INIT,
                                SG_MSGSTART, SG_NEWPROC, SG_NEWSCOM, SG_UPPR_END, SG_UPPR_PROC,
                                SIGNALS)


@njit(cache=True)
def empty_logs():
    st = List()
    st.append((0, 0, 0.0, 0.0))
    st.pop()
    ld = List()
    ld.append((0.0, 0, 0))
    ld.pop()
    sg = List()
    sg.append((0.0, 0, 0, 0, 0, 0, 0.0))
    sg.pop()
    return st, ld, sg


# -- appends from the loop: ``L`` is the Logs, or None when nothing is recorded ----------
# (the loop is then compiled a second time with ``L`` None and no reference counting at
# all, see :func:`ccmod.kernel.loop.run_loop`: these appends type to nothing there)
def log_sig(L, row):
    """Append a signal row to ``L.sig`` (nothing when ``L`` is None)."""
    if L is not None:
        L.sig.append(row)


def log_state(L, row):
    """Append a rank-state interval to ``L.states`` (nothing when ``L`` is None)."""
    if L is not None:
        L.states.append(row)


def log_load(L, row):
    """Append a contention change to ``L.load`` (nothing when ``L`` is None)."""
    if L is not None:
        L.load.append(row)


def _log_impl(field):
    def impl(L, row):
        if isinstance(L, types.NoneType):
            return lambda L, row: None
        if field == "sig":
            return lambda L, row: L.sig.append(row)
        if field == "states":
            return lambda L, row: L.states.append(row)
        return lambda L, row: L.load.append(row)
    return impl


overload(log_sig)(_log_impl("sig"))
overload(log_state)(_log_impl("states"))
overload(log_load)(_log_impl("load"))


@njit(cache=True)
def _len(lst):
    return len(lst)


@njit(cache=True)
def _states(lst, r, s, t0, t1):
    for i in range(len(lst)):
        a, b, c, d = lst[i]
        r[i] = a
        s[i] = b
        t0[i] = c
        t1[i] = d


@njit(cache=True)
def _load(lst, t, r, c):
    for i in range(len(lst)):
        a, b, d = lst[i]
        t[i] = a
        r[i] = b
        c[i] = d


@njit(cache=True)
def _sigs(lst, t, code, ia, f):
    for i in range(len(lst)):
        a, b, c, d, e, g, h = lst[i]
        t[i] = a
        code[i] = b
        ia[i, 0] = c
        ia[i, 1] = d
        ia[i, 2] = e
        ia[i, 3] = g
        f[i] = h


def state_arrays(lst):
    """(rank int32, state int8, t_start_s, t_end_s) of the recorded intervals."""
    n = _len(lst)
    r, s = np.empty(n, np.int32), np.empty(n, np.int8)
    t0, t1 = np.empty(n), np.empty(n)
    if n:
        _states(lst, r, s, t0, t1)
    return r, s, t0, t1


def load_arrays(lst):
    """(t_s, resource int32, active int32) of every contention change."""
    n = _len(lst)
    t, r, c = np.empty(n), np.empty(n, np.int32), np.empty(n, np.int32)
    if n:
        _load(lst, t, r, c)
    return t, r, c


def signal_arrays(lst):
    """(t_s, code, int args (n, 4), float arg) of the signal log."""
    n = _len(lst)
    t, code = np.empty(n), np.empty(n, np.int64)
    ia, f = np.empty((n, 4), np.int64), np.empty(n)
    if n:
        _sigs(lst, t, code, ia, f)
    return t, code, ia, f


def render_signals(sig, route_ptr, route_res, start=0, stop=None):
    """Text batch ``{t_s, signal, args}`` of signals ``start:stop`` (the debug format)."""
    t, code, ia, f = sig
    stop = len(t) if stop is None else stop
    names, args = [], []
    for i in range(start, stop):
        c = int(code[i])
        a, b, cc, d = (int(x) for x in ia[i])
        names.append(SIGNALS[c])
        if c == SG_GO_INIT:
            s = f"{a} {b}"
        elif c in (SG_NEWPROC, SG_UPPR_END):
            s = f"{a}"
        elif c == SG_NEWSCOM:
            s = f"{a} {b} {cc} {d}"
        elif c == SG_COMMCOST:
            s = f"{a} {float(f[i])}"
        elif c == SG_MSGSTART:
            s = " ".join([str(a), "route"] + [str(int(x)) for x in
                                               route_res[route_ptr[a]:route_ptr[a + 1]]])
        elif c in (SG_EVENTHORIZON, SG_GO_END):
            s = f"{float(f[i])}"
        elif c == SG_UPPR_PROC:
            s = f"{a} block {b}"
        else:
            s = f"{a}"
        args.append(s)
    return {"t_s": np.asarray(t[start:stop], np.float64),
            "signal": np.array(names, dtype=object), "args": np.array(args, dtype=object)}


@kernel_jit
def sig(C, L, t, code, a, b, c, d, f):
    """Append one debug signal when the run asks for them (``C.signals``)."""
    if C.signals:
        log_sig(L, (t, code, a, b, c, d, f))
