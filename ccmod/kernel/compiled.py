"""How the kernel is compiled: without numba's reference counts on the hot path.

numba counts references to every array (and typed list) a compiled function is given: an
atomic increment when the call starts and a decrement when it returns, ~20 cycles each,
more than the work of the kernel's small functions. Two ways out, both safe because the
state buffers live (held by the caller of :func:`ccmod.kernel.loop.run_loop`) for the
whole call:

* :data:`leaf` compiles a function without reference counting at all (``_nrt=False``):
  for functions that only index arrays (no allocation, no typed list, nor anything they
  call: numba compiles the callees of such a function the same way);
* :func:`borrow` gives a view of an array that carries no reference count (no meminfo), so
  passing it on costs nothing: the loop borrows its buffers once when it is entered.

Under ``NUMBA_DISABLE_JIT=1`` both are the plain Python identity.
"""
from __future__ import annotations

from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic, overload

leaf = njit(cache=True, _nrt=False)


def borrow(a):
    """``a`` itself, seen by compiled code as a view without a reference count."""
    return a


@intrinsic
def _borrow(typingctx, a):
    if not isinstance(a, types.Array):
        return None

    def codegen(context, builder, sig, args):
        ary = context.make_array(a)(context, builder, value=args[0])
        ary.meminfo = cgutils.get_null_value(ary.meminfo.type)
        ary.parent = cgutils.get_null_value(ary.parent.type)
        return ary._getvalue()
    return a(a), codegen


@overload(borrow)
def _borrow_impl(a):
    if isinstance(a, types.Array):
        return lambda a: _borrow(a)
    return None
