"""How the kernel is compiled: without numba's reference counts on the hot path.

numba counts references to every array (and typed list) a compiled function is given: an
atomic increment when the call starts and a decrement when it returns, ~20 cycles each,
more than the work of the kernel's small functions. Two ways out, both safe because the
state buffers live (held by the caller of :func:`ccmod.kernel.loop.run_loop`) for the
whole call:

* :data:`leaf` compiles a function without reference counting at all (``_nrt=False``):
  for functions that only index arrays (no allocation, no typed list, nor anything they
  call: numba compiles the callees of such a function the same way);
* the loop's entry passes its buffers on as raw data pointers (:mod:`ccmod.kernel.rawbuf`),
  its logs as their C lists' addresses (:func:`ccmod.kernel.record.logs_view`) and the
  program through :func:`program_view`: nothing below it carries a reference count.

Arguments are copied on every call (a named tuple of 45 offsets is 45 pushes): functions
take the buffers and read the offsets they need from the head of ``I``
(:func:`msg_in`, :func:`rank_st`, ...: one intrinsic per group, whose unused loads LLVM
drops, so only the fields used are loaded).

Under ``NUMBA_DISABLE_JIT=1`` both are the plain Python identity.
"""
from __future__ import annotations

import os
import sys

import numpy as np
from numba import njit, types
from numba.np import numpy_support
from numba.core import cgutils
from numba.core import compiler
from numba.core.dispatcher import _FunctionCompiler
from numba.core.registry import CPUDispatcher
from numba.extending import intrinsic, overload

from ccmod.jit import load_hooks, numba_startup
from ccmod.kernel import linkonly
from ccmod.kernel.rawbuf import RawBuf
from ccmod.kernel.state import (H_BASE, BgSteps, CcState, MmState, MsgIn, MsgSt, Program, RankSt,
                                Scalars, Timers)


# before any compile or cache load: cached kernels load without numba's registry refresh,
# the BLAS check without scipy.linalg (ccmod.jit)
numba_startup()
# a cache holds link-only libraries (ccmod.kernel.linkonly): numba must read them back
load_hooks.append(lambda target_context: linkonly.install(target_context.codegen()))


class _InternalCompiler(_FunctionCompiler):
    """numba's compiler of one function; for a function only compiled code calls, without
    what only a call from Python needs.

    numba builds, with every compile, a CPython wrapper (unboxing each argument: a named
    tuple of 65 offsets is 65 unboxings) and a C wrapper, then optimises the function's
    module (itself and all its callees) and turns it into machine code: in a cold first
    run most of that went to functions only the loop calls, each level of the loop
    redoing all the code below it. A function given a :class:`RawBuf` (the state buffers
    as the loop passes them on, :mod:`ccmod.kernel.rawbuf`) is called from compiled code
    only (no Python value has that type): those argument types compile without wrappers,
    to IR for the callers alone (:mod:`ccmod.kernel.linkonly`); any other argument types
    (arrays, from Python: tests, the facade) compile as numba does. The choice depends on
    the types alone, so numba's cache (keyed by them) never hands such a compile to a
    Python call.
    """

    def _compile_core(self, args, return_type):
        codegen = self.targetdescr.target_context.codegen()
        linkonly.install(codegen)
        if not linkonly.ENABLED or not any(isinstance(a, RawBuf) for a in args):
            return super()._compile_core(args, return_type)
        flags = compiler.Flags()
        self.targetdescr.options.parse_as_flags(flags, self.targetoptions)
        flags = self._customize_flags(flags)
        flags.no_cpython_wrapper = True
        flags.no_cfunc_wrapper = True
        library = codegen.create_library(self.py_func.__qualname__)
        library.enable_object_caching()
        library.link_only = True
        library.apart = getattr(self.py_func, "_ccmod_apart", False)
        cres = compiler.compile_extra(self.targetdescr.typing_context,
                                      self.targetdescr.target_context, self.py_func,
                                      args=args, return_type=return_type, flags=flags,
                                      locals=self.locals, library=library,
                                      pipeline_class=self.pipeline_class)
        if cres.typing_error is not None:
            raise cres.typing_error
        return cres


class _LeafDispatcher(CPUDispatcher):
    """numba's dispatcher, compiling through :class:`_InternalCompiler`."""

    def __init__(self, py_func, locals=None, targetoptions=None, pipeline_class=None):
        kw = {} if pipeline_class is None else {"pipeline_class": pipeline_class}
        super().__init__(py_func, locals=locals or {}, targetoptions=targetoptions or {}, **kw)
        # numba's compiler, as the subclass: the same fields (its signature not worked out
        # again by inspect: ~0.05 ms per function at every import)
        compiler_ = _InternalCompiler.__new__(_InternalCompiler)
        compiler_.__dict__.update(self._compiler.__dict__)
        self._compiler = compiler_


class KernelDispatcher(_LeafDispatcher):
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


class _ByTypeDispatcher(KernelDispatcher):
    """A kernel function compiled as one of two Python functions, chosen at each call
    site by the type of the first argument (:func:`kernel_jit_by_type`)."""

    other = None            # the KernelDispatcher of the second function
    use_other = None        # predicate on the first argument's numba type

    def _routed(self, args):
        return self.other if args and self.use_other(args[0]) else None

    def get_call_template(self, args, kws):
        d = self._routed(args)
        return (d or super()).get_call_template(args, kws)

    def get_overload(self, sig):
        d = self._routed(tuple(sig.args) if hasattr(sig, "args") else tuple(sig))
        return (d or super()).get_overload(sig)


def kernel_jit_by_type(first, second, use_second):
    """A kernel function that is ``first`` compiled, or ``second`` for the calls whose
    first argument's numba type satisfies ``use_second``: one run compiles only the one
    it calls (the sharing rules, :mod:`ccmod.kernel.rules`). Both are compiled as
    :func:`kernel_jit` functions (compiled to IR only when given the raw buffers). Under
    ``NUMBA_DISABLE_JIT=1``: None (the caller tests at run time)."""
    if os.environ.get("NUMBA_DISABLE_JIT") == "1":
        return None
    disp = _dispatcher(_ByTypeDispatcher, first, True, {})
    disp.other = kernel_jit(second)
    disp.use_other = use_second
    return disp


class _CacheOnFirstUse:
    """numba's cache of one function (``FunctionCache``), made when first asked for.

    ``enable_caching`` makes it at once: it locates the cache folder (a test file written
    there) and stamps the source, ~0.1 ms per function: for the kernel's ~115 functions
    ~15 ms of every start-up, though a warm run loads two or three of them.
    """

    __slots__ = ("_py_func", "_real")

    def __init__(self, py_func):
        self._py_func = py_func
        self._real = None

    def __getattr__(self, name):
        if self._real is None:
            from numba.core.caching import FunctionCache
            self._real = FunctionCache(self._py_func)
        return getattr(self._real, name)


def _dispatcher(cls, func, cache, opts):
    # error_model "numpy": a float division by zero gives inf or nan instead of raising, so
    # no division carries a zero test and a raise path (light16 752 -> 740 loop
    # instructions per record). The kernel divides by a share or a count it has checked
    # (bit-identical on every test trace, which never divided by zero: it would have raised)
    disp = cls(py_func=func, locals={}, targetoptions={"nopython": True, "boundscheck": None,
                                                      "error_model": "numpy", **opts})
    if cache:
        disp._cache = _CacheOnFirstUse(func)     # numba's enable_caching(), deferred
    return disp


def kernel_jit(func=None, *, cache=True, inline="never", _nrt=True):
    """``numba.njit(cache=True)`` for kernel functions, through :class:`KernelDispatcher`
    (``inline="always"`` functions are inlined before typing: plain ``njit``)."""
    if func is None:
        return lambda f: kernel_jit(f, cache=cache, inline=inline, _nrt=_nrt)
    if inline != "never" or os.environ.get("NUMBA_DISABLE_JIT") == "1":
        # _nrt only when False: unset, a callee inherits its caller's (see leaf)
        return njit(cache=cache, inline=inline, **({} if _nrt else {"_nrt": False}))(func)
    return _dispatcher(KernelDispatcher, func, cache, {} if _nrt else {"_nrt": False})


def leaf(func):
    """``numba.njit(cache=True, _nrt=False)`` through :class:`_LeafDispatcher` (no wrappers
    when called from the loop)."""
    if os.environ.get("NUMBA_DISABLE_JIT") == "1":
        return func
    return _dispatcher(_LeafDispatcher, func, True, {"_nrt": False})


def leaf_apart(func):
    """:data:`leaf`, kept out of line in its callers (LLVM's ``noinline``: a function called
    from one place is otherwise always inlined there, see
    :func:`ccmod.kernel.linkonly.internalize`). For a rare or a separate path whose values,
    inlined, would be loaded and spilled by every call of its caller. Only when called from
    the loop (a link-only compile, :class:`_InternalCompiler`); otherwise as :data:`leaf`."""
    func._ccmod_apart = True
    return leaf(func)


# -- the program seen through raw addresses --------------------------------------------------
# The interpreter (loop._advance) is called once per rank wake-up; given the Program (eleven
# arrays, ~80 words) it would copy them all at every call. :func:`program_view` gives the
# same named tuple with each array replaced by its data address (eleven words) and
# :func:`at_i` / :func:`at_f` read an element through it. Under NUMBA_DISABLE_JIT the view
# is the Program itself and the readers index the arrays: the same code, the same results.
# The arrays are contiguous (state.whole_program, window.WindowFeed: :data:`PROGRAM_DTYPES`)
# and live for the whole call that uses the view.
def program_view(P):
    """``P`` as the compiled interpreter reads it (see above)."""
    return P


def at_i(a, i):
    """``a[i]`` of an int64 array, or of its data address (compiled)."""
    return a[i]


def at_i8(a, i):
    """``a[i]`` of an int8 array (the op codes), or of its data address, as an int64."""
    return int(a[i])


def at_i32(a, i):
    """``a[i]`` of an int32 array (the records' message ids), or of its data address, as an
    int64 (compiled: sign-extended as it is loaded)."""
    return int(a[i])


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


def _loader(kind, widen=False):
    # with widen, an element of a narrower integer array, sign-extended to int64: callers
    # compute with it (offsets, ids) as with an at_i value
    @intrinsic
    def load(typingctx, addr, i):
        if not (isinstance(addr, types.Integer) and isinstance(i, types.Integer)):
            return None

        def codegen(context, builder, sig, args):
            ty = context.get_value_type(kind)
            ptr = builder.inttoptr(args[0], ty.as_pointer())
            k = context.cast(builder, args[1], sig.args[1], types.int64)
            value = builder.load(builder.gep(ptr, [k]))
            if widen:
                return builder.sext(value, context.get_value_type(types.int64))
            return value
        return (types.int64 if widen else kind)(addr, i), codegen
    return load


_load_i = _loader(types.int64)
_load_f = _loader(types.float64)
_load_i8 = _loader(types.int8, widen=True)
_load_i32 = _loader(types.int32, widen=True)


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


def _narrow_reader(load):
    def typer(a, i):
        if isinstance(a, types.Integer):
            return lambda a, i: load(a, i)
        return lambda a, i: np.int64(a[i])
    return typer


overload(at_i8)(_narrow_reader(_load_i8))
overload(at_i32)(_narrow_reader(_load_i32))

#: the dtype of each Program array: op codes as the readers make them (int8, no int64
#: copy of them per run), message ids of the records int32 (8 + 4 bytes per record less)
PROGRAM_DTYPES = {"op": np.int8, "dur": np.float64, "rec_msg": np.int32}


@overload(program_view)
def _program_view(P):
    for name, ty in zip(P.fields[1:], P.types[1:]):
        want = numpy_support.from_dtype(np.dtype(PROGRAM_DTYPES.get(name, np.int64)))
        if not (isinstance(ty, types.Array) and ty.dtype == want and ty.ndim == 1
                and ty.layout == "C"):
            raise TypeError(f"Program.{name} must be a contiguous {want} array, not {ty}")

    def impl(P):
        return Program(P.nranks, _addr(P.rank_ptr), _addr(P.op), _addr(P.dur),
                       _addr(P.rec_msg), _addr(P.wait_msg), _addr(P.wait_side),
                       _addr(P.wa_ptr), _addr(P.wa_msg), _addr(P.wa_side), _addr(P.rank_end),
                       _addr(P.more))
    return impl


@njit(inline="always")
def per_msg(M, bit, m):
    """Index of message ``m`` in the input whose :data:`~ccmod.kernel.state.CONST_INPUTS`
    bit is ``bit``: 0 when that input is held once (the same for every message), else m."""
    return 0 if M.fconst & bit else m


# -- the offsets of each group of fields, from the head of I ---------------------------------
def _header_reader(cls, name):
    """``name(I)``: the :class:`~ccmod.kernel.state` named tuple ``cls`` of offsets, read
    from its place at the head of ``I`` (:data:`~ccmod.kernel.state.H_BASE`).

    Compiled, one intrinsic loads every field at once (unused loads are dropped by LLVM):
    written as a named tuple of ``I[b + k]`` it cost numba a typing and a lowering per field
    at every call site (57 for the ccmod rule's state, in nearly every function), ~20% of
    a cold compile. As Python (and ``NUMBA_DISABLE_JIT=1``), the same values from ``I``.
    """
    b, n = H_BASE[cls], len(cls._fields)

    def read(I):
        return cls(*I[b:b + n])
    read.__name__ = read.__qualname__ = name
    read.__doc__ = f"The {cls.__name__} offsets, from the head of ``I``."

    @intrinsic
    def _read(typingctx, I):
        tup = types.NamedUniTuple(types.int64, n, cls)
        if isinstance(I, RawBuf) and I.dtype == types.int64:
            def codegen(context, builder, sig, args):      # I is its data pointer
                # the head of I is written by the engine's set-up, never by compiled
                # code: the loads are marked invariant, so that LLVM reuses a value
                # loaded once instead of loading it again after every store into I
                inv = builder.module.add_metadata([])
                vals = []
                for k in range(n):
                    ld = builder.load(builder.gep(args[0],
                                                  [context.get_constant(types.intp, b + k)]))
                    ld.set_metadata("invariant.load", inv)
                    vals.append(ld)
                return context.make_tuple(builder, tup, vals)
            return tup(I), codegen
        if not (isinstance(I, types.Array) and I.dtype == types.int64 and I.ndim == 1):
            return None

        def codegen(context, builder, sig, args):
            aty = sig.args[0]
            ary = context.make_array(aty)(context, builder, value=args[0])
            align = None if aty.aligned else 1
            vals = []
            for k in range(n):
                ptr = cgutils.get_item_pointer(context, builder, aty, ary,
                                               [context.get_constant(types.intp, b + k)],
                                               wraparound=False)
                vals.append(context.unpack_value(builder, types.int64, ptr, align=align))
            return context.make_tuple(builder, tup, vals)
        return tup(I), codegen

    overload(read, inline="always")(lambda I: (lambda I: _read(I)))
    return read


msg_in = _header_reader(MsgIn, "msg_in")
rank_st = _header_reader(RankSt, "rank_st")
msg_st = _header_reader(MsgSt, "msg_st")
timers = _header_reader(Timers, "timers")
scalars = _header_reader(Scalars, "scalars")
bg_steps = _header_reader(BgSteps, "bg_steps")
cc_state = _header_reader(CcState, "cc_state")
mm_state = _header_reader(MmState, "mm_state")
