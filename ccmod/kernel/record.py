"""Recordings out of the kernel: typed lists of fixed-width records -> column arrays.

Signals are integer codes with integer/float arguments while the kernel runs; they become
the debug sink's text (the article's otrdeb format) only here, when written.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic, overload
from numba.typed import List

from ccmod.kernel.state import Logs
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


# -- appends from the loop ---------------------------------------------------------------
# ``L`` is the Logs (typed lists); compiled, the loop sees it through :func:`logs_view`:
# each list as the address of its C list, appended to by numba's C function directly, so
# that the loop needs no reference counting (numba's own ``append`` requires it, and its
# calls to ``NRT_incref``/``NRT_decref`` at each entry and exit of every function given a
# list or array cost the loop ~2x). One compiled loop then serves runs that record and
# runs that do not (``C.record``/``C.signals`` false: nothing appended). ``L`` None (the
# facade) appends nothing.
ST_ROW = types.Tuple((types.int64, types.int64, types.float64, types.float64))
LD_ROW = types.Tuple((types.float64, types.int64, types.int64))
SG_ROW = types.Tuple((types.float64, types.int64, types.int64, types.int64, types.int64,
                      types.int64, types.float64))


def logs_view(L):
    """``L`` as the compiled loop appends to it (see above); as Python, ``L`` itself."""
    return L


@intrinsic
def _list_addr(typingctx, lst):
    if not isinstance(lst, types.ListType):
        return None

    def codegen(context, builder, sig, args):
        data = cgutils.create_struct_proxy(sig.args[0])(context, builder, value=args[0]).data
        return builder.ptrtoint(data, ir.IntType(64))
    return types.int64(lst), codegen


@overload(logs_view)
def _logs_view(L):
    if isinstance(L, types.BaseTuple) and all(isinstance(t, types.ListType) for t in L.types):
        for t, want in zip(L.types, (ST_ROW, LD_ROW, SG_ROW)):
            if t.item_type != want:
                raise TypeError(f"log rows must be {want}, not {t.item_type}")
        return lambda L: Logs(_list_addr(L.states), _list_addr(L.load), _list_addr(L.sig))
    if isinstance(L, types.NoneType):       # a run that records nothing has no logs
        return lambda L: Logs(0, 0, 0)
    return None


def _appender(row_ty):
    @intrinsic
    def append(typingctx, addr, row):
        """numba_list_append(list at ``addr``, row cast to the list's item type): 0 if done."""
        if not isinstance(addr, types.Integer):
            return None

        def codegen(context, builder, sig, args):
            fnty = ir.FunctionType(ir.IntType(32), [cgutils.voidptr_t, cgutils.voidptr_t])
            fn = cgutils.get_or_insert_function(builder.module, fnty, "numba_list_append")
            data = context.data_model_manager[row_ty].as_data(builder, args[1])
            ptr = cgutils.alloca_once_value(builder, data)
            lp = builder.inttoptr(args[0], cgutils.voidptr_t)
            return builder.call(fn, [lp, builder.bitcast(ptr, cgutils.voidptr_t)])
        return types.int32(types.int64, row_ty), codegen
    return append


_append_st, _append_ld, _append_sg = _appender(ST_ROW), _appender(LD_ROW), _appender(SG_ROW)


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
        if isinstance(L, types.BaseTuple) and isinstance(L.types[0], types.Integer):
            # addresses (logs_view): numba's C append, no reference counts
            if field == "sig":
                def f(L, row):
                    if _append_sg(L.sig, row) != 0:
                        raise MemoryError("cannot grow the signal log")
            elif field == "states":
                def f(L, row):
                    if _append_st(L.states, row) != 0:
                        raise MemoryError("cannot grow the rank-state log")
            else:
                def f(L, row):
                    if _append_ld(L.load, row) != 0:
                        raise MemoryError("cannot grow the contention log")
            return f
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
