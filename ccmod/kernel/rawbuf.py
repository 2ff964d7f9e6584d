"""The state buffers as the compiled loop sees them: one pointer each, plain loads and stores.

The loop's whole state is two buffers, ``I`` (int64) and ``F`` (float64) (see
:mod:`ccmod.kernel.state`), passed to every kernel function. As numba arrays each is a
seven-word struct (meminfo, parent, size, item size, data, shape, strides) that numba
passes as seven separate arguments: a call such as ``heap_push(I, F, ...)`` pushed ~20
words on the stack, and most kernel functions are a few loads and stores. Each indexing
also corrected negative indices (``I[-1]``: a shift, a mask and an add per access), though
the kernel's offsets are never negative.

:func:`raw` gives the buffer as a :class:`RawBuf`: its data pointer alone (one register),
indexed ``b[i]`` / ``b[i] = v`` / ``b[i] += v`` by a plain load or store at ``i``
(no wraparound, no bounds check: numba checks no bounds by default either). Everything
else about the code stays the same. The loop takes its raw views when it is entered
(:func:`ccmod.kernel.loop.run_entry`); the buffers live, held by the caller, for the
whole call. Under ``NUMBA_DISABLE_JIT=1`` :func:`raw` is the identity: the same code
indexes the numpy arrays.
"""
from __future__ import annotations

import operator

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils, ir_utils
from numba.core.imputils import lower_builtin
from numba.core.typing.templates import AbstractTemplate, infer_global, signature
from numba.extending import intrinsic, models, overload, register_model


class RawBuf(types.Type):
    """numba type of a buffer seen through its data pointer (element type ``dtype``)."""

    def __init__(self, dtype):
        self.dtype = dtype
        super().__init__(name=f"RawBuf({dtype})")


@register_model(RawBuf)
class _RawBufModel(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, ir.PointerType(dmm.lookup(fe_type.dtype).get_value_type()))


def raw(a):
    """``a`` itself; compiled, its data pointer as a :class:`RawBuf` (see above)."""
    return a


@intrinsic
def _raw(typingctx, a):
    if not (isinstance(a, types.Array) and a.ndim == 1 and a.layout == "C"):
        return None

    def codegen(context, builder, sig, args):
        return context.make_array(a)(context, builder, value=args[0]).data
    return RawBuf(a.dtype)(a), codegen


@overload(raw)
def _raw_impl(a):
    if isinstance(a, types.Array):
        return lambda a: _raw(a)
    return None


# -- indexing: typed once for any integer index (cast to intp, literal or not), lowered to
# one getelementptr and a load or store inline (no function per call, nothing to compile)
def _loaded(dtype):
    # an int32 field (as_i32) reads as int64: the kernel computes with it as with the others
    return types.int64 if dtype == types.int32 else dtype


@infer_global(operator.getitem)
class _GetItem(AbstractTemplate):
    def generic(self, args, kws):
        if len(args) == 2 and isinstance(args[0], RawBuf) and isinstance(args[1], types.Integer):
            return signature(_loaded(args[0].dtype), args[0], types.intp)
        return None


@infer_global(operator.setitem)
class _SetItem(AbstractTemplate):
    def generic(self, args, kws):
        if len(args) == 3 and isinstance(args[0], RawBuf) and isinstance(args[1], types.Integer):
            return signature(types.none, args[0], types.intp, args[0].dtype)
        return None


@lower_builtin(operator.getitem, RawBuf, types.intp)
def _getitem(context, builder, sig, args):
    value = builder.load(builder.gep(args[0], [args[1]]))
    if sig.args[0].dtype == types.int32:
        value = builder.sext(value, ir.IntType(64))
    return value


@lower_builtin(operator.setitem, RawBuf, types.intp, types.Any)
def _setitem(context, builder, sig, args):
    builder.store(args[2], builder.gep(args[0], [args[1]]))
    return context.get_dummy_value()



# -- int32 fields -----------------------------------------------------------------------------
# Fields that hold ids (entries, pairs, messages, resources: < 2^31, state.Arena refuses
# more) are laid out as int32 inside ``I`` (kind "j": their offsets count int32 elements
# from I's start). ``J = as_i32(I)`` indexes them: ``J[S.e_next + e]`` loads 4 bytes and
# sign-extends them (the value is an int64, as any ``I[...]``), ``J[...] = v`` stores v's
# low 32 bits. Half the memory of such a field; the code computes as before.
class _Int32Fields:
    """``as_i32(I)`` as plain Python (NUMBA_DISABLE_JIT, set-up code): I's int32 view,
    read as Python ints."""

    __slots__ = ("a",)

    def __init__(self, I):
        self.a = I.view(np.int32)

    def __getitem__(self, k):
        return int(self.a[k])

    def __setitem__(self, k, v):
        self.a[k] = v


def as_i32(I):
    """The int32 fields of buffer ``I`` (see above): compiled, ``I``'s data pointer as a
    :class:`RawBuf` of int32 (no copy, no reference count)."""
    return _Int32Fields(I)


@intrinsic
def _as_i32(typingctx, a):
    if isinstance(a, RawBuf) and a.dtype == types.int64:
        def codegen(context, builder, sig, args):
            return builder.bitcast(args[0], ir.IntType(32).as_pointer())
        return RawBuf(types.int32)(a), codegen
    if isinstance(a, types.Array) and a.dtype == types.int64 and a.ndim == 1 and a.layout == "C":
        def codegen(context, builder, sig, args):
            data = context.make_array(a)(context, builder, value=args[0]).data
            return builder.bitcast(data, ir.IntType(32).as_pointer())
        return RawBuf(types.int32)(a), codegen
    return None


@overload(as_i32, inline="always")
def _as_i32_impl(I):
    return lambda I: _as_i32(I)


def _aliases_its_buffer(lhs, args, alias_map, arg_aliases):
    ir_utils._add_alias(lhs, args[0].name, alias_map, arg_aliases)


# numba's dead-code pass keeps a store only into a variable that is live or may alias one
# (an argument): it must know that J is I, else a function that only writes J loses it
for _f in (as_i32, _as_i32):
    for _name in {getattr(_f, k, None) for k in ("_name", "__name__")} - {None}:
        ir_utils.alias_func_extensions[(_name, __name__)] = _aliases_its_buffer
        ir_utils.alias_func_extensions[(_name, getattr(_f, "__module__", __name__))] = \
            _aliases_its_buffer


# -- prefetching ------------------------------------------------------------------------------
def prefetch(addr, i):
    """Ask the CPU to fetch element ``i`` of the int64 array at data address ``addr`` (a
    :func:`ccmod.kernel.compiled.program_view` field), or of a state buffer seen as a
    :class:`RawBuf`, into cache; nothing as plain Python."""
    return None


@intrinsic
def _prefetch(typingctx, addr, i):
    if not (isinstance(addr, (types.Integer, RawBuf)) and isinstance(i, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        i8p = ir.IntType(8).as_pointer()
        if isinstance(sig.args[0], RawBuf):
            ptr = args[0]
        else:
            ptr = builder.inttoptr(args[0], ir.IntType(64).as_pointer())
        k = context.cast(builder, args[1], sig.args[1], types.int64)
        p = builder.bitcast(builder.gep(ptr, [k]), i8p)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [i8p, ir.IntType(32), ir.IntType(32),
                                                            ir.IntType(32)]), "llvm.prefetch.p0i8")
        i32 = ir.IntType(32)
        builder.call(fn, [p, i32(0), i32(3), i32(1)])     # read, keep, data cache
        return context.get_dummy_value()
    return types.none(addr, i), codegen


@overload(prefetch)
def _prefetch_impl(addr, i):
    if isinstance(addr, (types.Integer, RawBuf)):
        return lambda addr, i: _prefetch(addr, i)
    return lambda addr, i: None
