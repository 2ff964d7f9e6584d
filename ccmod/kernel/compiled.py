"""How the kernel is compiled: without numba's reference counts on the hot path.

numba counts references to every array (and typed list) a compiled function is given: an
atomic increment when the call starts and a decrement when it returns, ~20 cycles each,
more than the work of the kernel's small functions. Two ways out, both safe because the
state buffers live (held by the caller of :func:`ccmod.kernel.loop.run_loop`) for the
whole call:

* :data:`leaf` compiles a function without reference counting at all (``_nrt=False``):
  for functions that only index arrays (no allocation, no typed list, nor anything they
  call: numba compiles the callees of such a function the same way);
* :func:`borrow` gives a view of an array (or typed list) that carries no reference count
  (no meminfo), so passing it on costs nothing: the loop borrows its buffers and
  logs once when it is entered, and sees the program through :func:`program_view`.

Arguments are copied on every call (a named tuple of 45 offsets is 45 pushes): functions
take the buffers and read the offsets they need from the head of ``I``
(:func:`msg_in`, :func:`rank_st`, ... inlined, so only the fields used are loaded; a
field added to a group needs its term here, numba says so otherwise).

Under ``NUMBA_DISABLE_JIT=1`` both are the plain Python identity.
"""
from __future__ import annotations

import os
import sys

from numba import njit, types
from numba.core import cgutils
from numba.core.registry import CPUDispatcher
from numba.extending import intrinsic, overload

from ccmod.jit import blas_check_without_scipy_linalg
from ccmod.kernel.state import (H_BASE, BgSteps, CcState, MmState, MsgIn, MsgSt, Program, RankSt,
                                Scalars, Timers)


# numba's BLAS check without scipy.linalg: before any compile or cache load (ccmod.jit)
blas_check_without_scipy_linalg()


class KernelDispatcher(CPUDispatcher):
    """A dispatcher that compiles a kernel function once per argument *types*.

    numba compiles a function called from compiled code once per distinct argument
    type, and a constant argument has its own literal type (``_block(..., STATE_SEND,
    t)`` and ``_block(..., STATE_RECV, t)`` were two compiles, the signal recorder 13):
    a third of a first run's compiles were such copies, each also linked and optimised
    again in every caller. Here constants are typed as their plain type, one compile
    serves every call site; LLVM still folds the constants where it inlines the call.
    Used for the loop's own functions (:func:`kernel_jit`); :data:`leaf` functions (the
    rules' and heaps' small steps) keep numba's literal copies: the ccmod rule ran ~15%
    slower per record without them (measured on random64).
    """

    def get_call_template(self, args, kws):
        args = tuple(types.unliteral(a) for a in args)
        kws = {k: types.unliteral(v) for k, v in kws.items()}
        return super().get_call_template(args, kws)


def kernel_jit(func=None, *, cache=True, inline="never", _nrt=True):
    """``numba.njit(cache=True)`` for kernel functions, through :class:`KernelDispatcher`
    (``inline="always"`` functions are inlined before typing: plain ``njit``)."""
    if func is None:
        return lambda f: kernel_jit(f, cache=cache, inline=inline, _nrt=_nrt)
    if inline != "never" or os.environ.get("NUMBA_DISABLE_JIT") == "1":
        # _nrt only when False: unset, a callee inherits its caller's (see leaf)
        return njit(cache=cache, inline=inline, **({} if _nrt else {"_nrt": False}))(func)
    opts = {"nopython": True, "boundscheck": None}
    if not _nrt:
        opts["_nrt"] = False
    disp = KernelDispatcher(py_func=func, locals={}, targetoptions=opts)
    if cache:
        disp.enable_caching()
    return disp


leaf = njit(cache=True, _nrt=False)


def borrow(a):
    """``a`` itself, seen by compiled code as a view without a reference count."""
    return a


@intrinsic
def _borrow(typingctx, a):
    if isinstance(a, types.Array):
        def codegen(context, builder, sig, args):
            ary = context.make_array(a)(context, builder, value=args[0])
            ary.meminfo = cgutils.get_null_value(ary.meminfo.type)
            ary.parent = cgutils.get_null_value(ary.parent.type)
            return ary._getvalue()
    elif isinstance(a, types.ListType):
        def codegen(context, builder, sig, args):
            # a typed list is (meminfo, pointer to the C list): appends use the pointer
            lst = cgutils.create_struct_proxy(a)(context, builder, value=args[0])
            lst.meminfo = cgutils.get_null_value(lst.meminfo.type)
            return lst._getvalue()
    else:
        return None
    return a(a), codegen


@overload(borrow)
def _borrow_impl(a):
    if isinstance(a, (types.Array, types.ListType)):
        return lambda a: _borrow(a)
    return None


# -- the program seen through raw addresses --------------------------------------------------
# The interpreter (loop._advance) is called once per rank wake-up; given the Program (eleven
# arrays, ~80 words) it would copy them all at every call. :func:`program_view` gives the
# same named tuple with each array replaced by its data address (eleven words) and
# :func:`at_i` / :func:`at_f` read an element through it. Under NUMBA_DISABLE_JIT the view
# is the Program itself and the readers index the arrays: the same code, the same results.
# The arrays are contiguous int64 / float64 (state.whole_program, window.WindowFeed) and
# live for the whole call that uses the view.
def program_view(P):
    """``P`` as the compiled interpreter reads it (see above)."""
    return P


def at_i(a, i):
    """``a[i]`` of an int64 array, or of its data address (compiled)."""
    return a[i]


def at_f(a, i):
    """``a[i]`` of a float64 array, or of its data address (compiled)."""
    return a[i]


@intrinsic
def _addr(typingctx, a):
    if not isinstance(a, types.Array):
        return None

    def codegen(context, builder, sig, args):
        ary = context.make_array(a)(context, builder, value=args[0])
        return builder.ptrtoint(ary.data, context.get_value_type(types.int64))
    return types.int64(a), codegen


def _loader(kind):
    @intrinsic
    def load(typingctx, addr, i):
        if not (isinstance(addr, types.Integer) and isinstance(i, types.Integer)):
            return None

        def codegen(context, builder, sig, args):
            ty = context.get_value_type(kind)
            ptr = builder.inttoptr(args[0], ty.as_pointer())
            k = context.cast(builder, args[1], sig.args[1], types.int64)
            return builder.load(builder.gep(ptr, [k]))
        return kind(addr, i), codegen
    return load


_load_i = _loader(types.int64)
_load_f = _loader(types.float64)


@overload(at_i)
def _at_i(a, i):
    if isinstance(a, types.Integer):
        return lambda a, i: _load_i(a, i)
    return lambda a, i: a[i]


@overload(at_f)
def _at_f(a, i):
    if isinstance(a, types.Integer):
        return lambda a, i: _load_f(a, i)
    return lambda a, i: a[i]


@overload(program_view)
def _program_view(P):
    for name, ty in zip(P.fields[1:], P.types[1:]):
        want = types.float64 if name == "dur" else types.int64
        if not (isinstance(ty, types.Array) and ty.dtype == want and ty.ndim == 1
                and ty.layout == "C"):
            raise TypeError(f"Program.{name} must be a contiguous {want} array, not {ty}")

    def impl(P):
        return Program(P.nranks, _addr(P.rank_ptr), _addr(P.op), _addr(P.dur),
                       _addr(P.rec_msg), _addr(P.wait_msg), _addr(P.wait_side),
                       _addr(P.wa_ptr), _addr(P.wa_msg), _addr(P.wa_side), _addr(P.rank_end),
                       _addr(P.more))
    return impl


_MI = H_BASE[MsgIn]
_RS = H_BASE[RankSt]
_MS = H_BASE[MsgSt]
_TI = H_BASE[Timers]
_SC = H_BASE[Scalars]
_BG = H_BASE[BgSteps]
_CC = H_BASE[CcState]
_MM = H_BASE[MmState]


@njit(cache=True, inline="always")
def msg_in(I):
    b = _MI
    return MsgIn(I[b], I[b + 1], I[b + 2], I[b + 3], I[b + 4], I[b + 5], I[b + 6], I[b + 7],
                 I[b + 8], I[b + 9], I[b + 10], I[b + 11], I[b + 12], I[b + 13], I[b + 14],
                 I[b + 15], I[b + 16], I[b + 17], I[b + 18])


@njit(cache=True, inline="always")
def rank_st(I):
    b = _RS
    return RankSt(I[b], I[b + 1], I[b + 2], I[b + 3], I[b + 4], I[b + 5], I[b + 6],
                  I[b + 7], I[b + 8], I[b + 9], I[b + 10], I[b + 11], I[b + 12], I[b + 13],
                  I[b + 14], I[b + 15], I[b + 16], I[b + 17])


@njit(cache=True, inline="always")
def msg_st(I):
    b = _MS
    return MsgSt(I[b], I[b + 1], I[b + 2], I[b + 3], I[b + 4], I[b + 5], I[b + 6], I[b + 7],
                 I[b + 8], I[b + 9], I[b + 10])


@njit(cache=True, inline="always")
def timers(I):
    b = _TI
    return Timers(I[b], I[b + 1], I[b + 2], I[b + 3], I[b + 4], I[b + 5])


@njit(cache=True, inline="always")
def scalars(I):
    b = _SC
    return Scalars(I[b], I[b + 1])


@njit(cache=True, inline="always")
def bg_steps(I):
    b = _BG
    return BgSteps(I[b], I[b + 1], I[b + 2], I[b + 3])


@njit(cache=True, inline="always")
def cc_state(I):
    b = _CC
    return CcState(I[b], I[b + 1], I[b + 2], I[b + 3], I[b + 4], I[b + 5], I[b + 6],
                   I[b + 7], I[b + 8], I[b + 9], I[b + 10], I[b + 11], I[b + 12], I[b + 13],
                   I[b + 14], I[b + 15], I[b + 16], I[b + 17], I[b + 18], I[b + 19],
                   I[b + 20], I[b + 21], I[b + 22], I[b + 23], I[b + 24], I[b + 25],
                   I[b + 26], I[b + 27], I[b + 28], I[b + 29], I[b + 30], I[b + 31],
                   I[b + 32], I[b + 33], I[b + 34], I[b + 35], I[b + 36], I[b + 37],
                   I[b + 38], I[b + 39], I[b + 40], I[b + 41], I[b + 42], I[b + 43],
                   I[b + 44], I[b + 45], I[b + 46], I[b + 47], I[b + 48], I[b + 49],
                   I[b + 50], I[b + 51], I[b + 52], I[b + 53], I[b + 54], I[b + 55],
                   I[b + 56])


@njit(cache=True, inline="always")
def mm_state(I):
    b = _MM
    return MmState(I[b], I[b + 1], I[b + 2], I[b + 3], I[b + 4], I[b + 5], I[b + 6],
                   I[b + 7], I[b + 8], I[b + 9], I[b + 10], I[b + 11], I[b + 12],
                   I[b + 13], I[b + 14], I[b + 15], I[b + 16], I[b + 17], I[b + 18],
                   I[b + 19], I[b + 20], I[b + 21], I[b + 22], I[b + 23], I[b + 24],
                   I[b + 25], I[b + 26], I[b + 27], I[b + 28], I[b + 29], I[b + 30],
                   I[b + 31], I[b + 32], I[b + 33], I[b + 34], I[b + 35], I[b + 36],
                   I[b + 37], I[b + 38], I[b + 39], I[b + 40], I[b + 41], I[b + 42],
                   I[b + 43], I[b + 44], I[b + 45], I[b + 46], I[b + 47], I[b + 48],
                   I[b + 49], I[b + 50], I[b + 51], I[b + 52], I[b + 53], I[b + 54],
                   I[b + 55], I[b + 56], I[b + 57], I[b + 58], I[b + 59], I[b + 60],
                   I[b + 61], I[b + 62], I[b + 63])
