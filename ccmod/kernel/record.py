"""Recordings out of the kernel: logs of fixed-width records -> column arrays.

Signals are integer codes with integer/float arguments while the kernel runs; they become
the debug sink's text (the article's otrdeb format) only here, when written.
"""
from __future__ import annotations

import ctypes

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic, overload

from ccmod.jit import jit_enabled
from ccmod.kernel.state import Logs
from ccmod.kernel.compiled import kernel_jit  # (and numba's BLAS check without scipy.linalg)
from ccmod.kernel.heaps import order_key
from ccmod.kernel.codes import (SG_COMMCOST, SG_EVENTHORIZON, SG_GO_END, SG_GO_INIT,
                                SG_MSGSTART, SG_NEWPROC, SG_NEWSCOM, SG_UPPR_END, SG_UPPR_PROC,
                                SIGNALS)

# -- the logs: numba's C lists, made and read without compiling ---------------------------
# A log is a C list of numba's (``numba_list_*`` in its helper library: what a typed list
# holds), appended to by the compiled loop through its address (see below). Made and read
# here through ctypes: numba's typed lists made in compiled code cost a first run the
# compile of their methods (new, append, pop, len, getitem: ~3-4 s of a cold Quickstart
# with the functions that read them out), and a recorded run's loop entry was a compile of
# its own, apart from the quiet run's (logs typed as lists, or None). As addresses, every
# run's logs have one type (``Logs`` of three ints; 0 when nothing is recorded).
#: each log's row: its fields as the compiled loop appends them and as numpy reads them
#: (numba lays a tuple of 8-byte scalars out packed, in order: the same bytes)
ST_FIELDS = (("rank", "i8"), ("state", "i8"), ("t0", "f8"), ("t1", "f8"))
LD_FIELDS = (("t", "f8"), ("resource", "i8"), ("active", "i8"))
SG_FIELDS = (("t", "f8"), ("code", "i8"), ("a", "i8"), ("b", "i8"), ("c", "i8"), ("d", "i8"),
             ("f", "f8"))
_NB = {"i8": types.int64, "f8": types.float64}
ST_ROW, LD_ROW, SG_ROW = (types.Tuple(tuple(_NB[k] for _, k in fields))
                          for fields in (ST_FIELDS, LD_FIELDS, SG_FIELDS))


def _c_list_api():
    """numba's C list functions (new, free, length, base pointer) through ctypes."""
    from numba import _helperlib
    h, vp, size = _helperlib.c_helpers, ctypes.c_void_p, ctypes.c_ssize_t
    fn = lambda name, res, *args: ctypes.CFUNCTYPE(res, *args)(h[name])  # noqa: E731
    return (fn("list_new", ctypes.c_int, ctypes.POINTER(vp), size, size),
            fn("list_free", None, vp), fn("list_length", size, vp),
            fn("list_base_ptr", vp, vp))


_API = None


class CLog(int):
    """One log: a C list of numba's (its rows ``fields``), as its address, which is what
    the compiled loop is given (an int to numba); freed with the object. Every list
    method is numba's C (appends grow it as a typed list grows)."""

    __slots__ = ()

    def __new__(cls, fields):
        global _API
        if _API is None:
            _API = _c_list_api()
        out = ctypes.c_void_p()
        if _API[0](ctypes.byref(out), 8 * len(fields), 0) != 0 or not out.value:
            raise MemoryError("cannot make a recording log")
        return super().__new__(cls, out.value)

    def __del__(self):
        if _API is not None:             # (None only while the interpreter shuts down)
            _API[1](int(self))

    def rows(self, fields) -> np.ndarray:
        """The rows, a structured array of ``fields`` (a view of the list: read it before
        the list grows or goes)."""
        n = _API[2](int(self))
        dtype = np.dtype(list(fields))
        if n == 0:
            return np.zeros(0, dtype)
        buf = (ctypes.c_char * (n * dtype.itemsize)).from_address(_API[3](int(self)))
        return np.frombuffer(buf, dtype)


def empty_logs():
    """Empty recordings (states, load, signals): C lists, or Python lists as plain Python
    (``NUMBA_DISABLE_JIT=1``)."""
    if not jit_enabled():
        return [], [], []
    return CLog(ST_FIELDS), CLog(LD_FIELDS), CLog(SG_FIELDS)


def _rows(log, fields) -> np.ndarray:
    """A log's rows as a structured array of ``fields`` (a C list's, or a Python list's)."""
    if isinstance(log, CLog):
        return log.rows(fields)
    return np.array(log, np.dtype(list(fields)))


# -- appends from the loop ---------------------------------------------------------------
# Compiled, the loop sees ``L`` through :func:`logs_view` (the Logs of addresses as they
# are) and appends by numba's C function directly: no reference counting (numba's own
# ``append`` requires it, and its calls to ``NRT_incref``/``NRT_decref`` at each entry and
# exit of every function given a list or array cost the loop ~2x). One compiled loop, and
# one entry, then serve runs that record and runs that do not (``C.record``/``C.signals``
# false: nothing appended). ``L`` None (the facade) appends nothing.
def logs_view(L):
    """``L`` as the compiled loop appends to it (see above); as Python, ``L`` itself."""
    return L


def _is_addresses(L) -> bool:
    return isinstance(L, types.BaseTuple) and len(L) == 3 and all(
        isinstance(t, types.Integer) for t in L.types)


@overload(logs_view)
def _logs_view(L):
    if _is_addresses(L):
        return lambda L: Logs(L[0], L[1], L[2])
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
        if not _is_addresses(L):
            return None
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
    return impl


overload(log_sig)(_log_impl("sig"))
overload(log_state)(_log_impl("states"))
overload(log_load)(_log_impl("load"))


def state_arrays(lst):
    """(rank int32, state int8, t_start_s, t_end_s) of the recorded intervals."""
    a = _rows(lst, ST_FIELDS)
    return (a["rank"].astype(np.int32), a["state"].astype(np.int8), a["t0"].copy(),
            a["t1"].copy())


def load_arrays(lst):
    """(t_s, resource int32, active int32) of every contention change."""
    a = _rows(lst, LD_FIELDS)
    return a["t"].copy(), a["resource"].astype(np.int32), a["active"].astype(np.int32)


def signal_arrays(lst):
    """(t_s, code, int args (n, 4), float arg) of the signal log."""
    a = _rows(lst, SG_FIELDS)
    ia = np.empty((len(a), 4), np.int64)
    for k, name in enumerate("abcd"):
        ia[:, k] = a[name]
    return a["t"].copy(), a["code"].copy(), ia, a["f"].copy()


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
    """Append one debug signal when the run asks for them (``C.signals``). A caller whose
    arguments are read from the state tests ``C.signals`` itself first (as
    :func:`msg_sig` does): the arguments are computed before the call, and LLVM did not
    move those loads under the test (~4 instructions per message and call site on a run
    without signals)."""
    if C.signals:
        log_sig(L, (t, code, a, b, c, d, f))


@njit(cache=True, inline="always")
def msg_sig(C, L, I, okey, t, code, m, f):
    """Signal ``code`` of message m (its order key, then ``f``), the key read from the
    state only when the run asks for signals (see :func:`sig`)."""
    if C.signals:
        sig(C, L, t, code, order_key(I, okey, m), 0, 0, 0, f)
