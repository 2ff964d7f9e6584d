"""numba start-up shared by every compiled helper (the kernel, the TI reader's tokeniser):
:func:`numba_startup`.

Core: imports nothing else of ccmod, so the plugin rooms may use it as well as the engine.
"""
from __future__ import annotations

import os
import sys


def blas_check_without_scipy_linalg() -> None:
    """Let numba's BLAS check pass without importing the whole of scipy.linalg.

    At its first compile or cache load numba imports ``numba.np.arraymath``, which checks
    that a BLAS is there (for ``np.dot`` & co.) by importing ``scipy.linalg.cython_blas``:
    that runs scipy.linalg's ``__init__`` (scipy's array-API layer, numpy.f2py,
    numpy.testing: ~0.25 s of a warm ``ccmod run``), though no kernel calls a BLAS. Here the
    module is looked up on disk instead (so numba's answer is the same) and an empty stand-in
    sits in ``sys.modules`` only while ``numba.np.arraymath`` is imported; were a BLAS call
    ever compiled, numba would import the real module then.
    """
    name = "scipy.linalg.cython_blas"
    if (os.environ.get("NUMBA_DISABLE_JIT") == "1" or "numba.np.arraymath" in sys.modules
            or name in sys.modules):
        return
    import importlib.machinery
    import importlib.util
    from types import ModuleType
    try:
        spec = importlib.util.find_spec("scipy")
        dirs = [os.path.join(d, "linalg") for d in (spec.submodule_search_locations or [])]
        if importlib.machinery.PathFinder.find_spec(name, dirs) is None:
            return
    except (AttributeError, ImportError, ValueError):
        return                      # no scipy: numba finds no BLAS either way
    stand_in = sys.modules[name] = ModuleType(name)
    try:
        import numba.np.arraymath  # noqa: F401  (runs the check)
    finally:
        if sys.modules.get(name) is stand_in:
            del sys.modules[name]


def jit_enabled() -> bool:
    """False under ``NUMBA_DISABLE_JIT=1`` (compiled helpers then run as plain Python)."""
    return os.environ.get("NUMBA_DISABLE_JIT") != "1"


_LOADS_PATCHED = _STARTED = False


def cache_loads_without_refresh() -> None:
    """Load ccmod's cached compiled functions without numba's registry refresh first.

    numba's ``Cache.load_overload`` starts by refreshing the target context: it imports some
    forty numba modules and installs their typing and lowering registries (0.09-0.15 s of
    every fresh process here, a sixth of a 1M-record run's engine time), though a function
    loaded from the cache is machine code that needs none of them: only numba's runtime
    (NRT) must be initialised, which is done here. Nothing is lost, only deferred: numba
    refreshes both contexts itself whenever it compiles (``CompilerBase``) and whenever
    lowering meets a function it does not know yet (``BaseContext.get_function``).
    Applies to ccmod's own functions only (others load as numba does); idempotent.
    """
    global _LOADS_PATCHED
    if not jit_enabled() or _LOADS_PATCHED:
        return
    _LOADS_PATCHED = True
    from numba.core import caching
    original = caching.Cache.load_overload

    def load_overload(self, sig, target_context):
        module = getattr(getattr(self, "_py_func", None), "__module__", "") or ""
        if not module.startswith("ccmod."):
            return original(self, sig, target_context)
        from numba.core.runtime import rtsys
        rtsys.initialize(target_context)
        with self._guard_against_spurious_io_errors():
            return self._load_overload(sig, target_context)

    caching.Cache.load_overload = load_overload


def numba_startup() -> None:
    """What every compiled ccmod module calls at import, before any compile or cache load.

    A warm run loads its kernels from the cache without numba's registry refresh
    (:func:`cache_loads_without_refresh`). The BLAS check
    (:func:`blas_check_without_scipy_linalg`) is then only needed if something compiles:
    it runs just before numba's first refresh loads its registries (which imports
    ``numba.np.arraymath``, ~0.05 s), not at every start-up.
    """
    global _STARTED
    if not jit_enabled() or _STARTED:
        return
    _STARTED = True
    cache_loads_without_refresh()
    from numba.core import cpu
    original = cpu.CPUContext.load_additional_registries

    def load_additional_registries(self):
        blas_check_without_scipy_linalg()
        return original(self)

    cpu.CPUContext.load_additional_registries = load_additional_registries
