"""numba start-up shared by every compiled helper (the kernel, the TI reader's tokeniser).

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
