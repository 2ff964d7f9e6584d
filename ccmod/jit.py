"""numba start-up shared by every compiled helper (the kernel, the TI reader's tokeniser):
:func:`numba_startup`.

Core: imports nothing else of ccmod, so the plugin rooms may use it as well as the engine.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path


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


_STARTED = False
#: called with numba's target context before a ccmod function is loaded from the cache
#: (``ccmod.kernel.compiled`` registers the loader of its link-only libraries)
load_hooks: list = []


def cache_loads_without_refresh() -> None:
    """Load ccmod's cached compiled functions without numba's registry refresh first.

    numba's ``Cache.load_overload`` starts by refreshing the target context: it imports some
    forty numba modules and installs their typing and lowering registries (0.09-0.15 s of
    every fresh process here, a sixth of a 1M-record run's engine time), though a function
    loaded from the cache is machine code that needs none of them: only numba's runtime
    (NRT) must be initialised, which is done here. Nothing is lost, only deferred: numba
    refreshes both contexts itself whenever it compiles (``CompilerBase``) and whenever
    lowering meets a function it does not know yet (``BaseContext.get_function``).
    Applies to ccmod's own functions only (others load as numba does). Installed once, by
    :func:`numba_startup`.
    """
    from numba.core import caching
    original = caching.Cache.load_overload

    def load_overload(self, sig, target_context):
        module = getattr(getattr(self, "_py_func", None), "__module__", "") or ""
        if not module.startswith("ccmod."):
            return original(self, sig, target_context)
        from numba.core.runtime import rtsys
        # the hooks first: the runtime, read from ccmod's cache, then loads as a link-only
        # library does (its bitcode unparsed: ~3.5 MB of every process)
        for hook in load_hooks:
            hook(target_context)
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
    runtime_from_cache()
    from numba.core import cpu
    original = cpu.CPUContext.load_additional_registries

    def load_additional_registries(self):
        blas_check_without_scipy_linalg()
        return original(self)

    cpu.CPUContext.load_additional_registries = load_additional_registries


#: where this process's numba runtime came from: "cache", "compiled" (and written to the
#: cache), None (not initialised here, or by numba's own compile when internals moved)
runtime_source = None
#: the head of a cached runtime file (then the key, the object code's length, object code
#: and bitcode)
_RUNTIME_MAGIC = b"ccmod-nrt-1\n"


def runtime_from_cache() -> None:
    """Load numba's runtime functions (NRT) from a file cache instead of compiling them.

    Every process that runs compiled code initialises numba's runtime first, and that
    compiles a small LLVM module (reference counting, atomics: ``nrtdynmod``) to machine
    code: 0.025-0.05 s of CPU in every warm ``ccmod run``, a tenth of what a 1M-record
    run spends outside its loop. The module is the same in every process, so its machine
    code is cached here exactly as numba caches a compiled function (its object code and
    its bitcode for linking, loaded by numba's own ``unserialize_library``), keyed like
    numba's cache on the machine (triple, CPU, features), numba's and llvmlite's versions
    and the options that change the code. numba still registers the runtime's C helpers
    and keeps the library as its own (``rtsys.initialize``); only the compile is skipped.
    Installed once, by :func:`numba_startup` (which does nothing under
    ``NUMBA_DISABLE_JIT=1``).
    """
    from numba.core.runtime import nrtdynmod
    original = nrtdynmod.compile_nrt_functions

    def compile_nrt_functions(ctx):
        try:
            path, key = _runtime_cache_file(ctx)
        except Exception:            # numba's internals moved: compile as numba does
            return original(ctx)
        global runtime_source
        library = _load_runtime(ctx, path, key)
        runtime_source = "cache" if library is not None else "compiled"
        if library is None:
            # numba's own steps, with the machine code kept (numba keeps it only for the
            # functions it caches) so that it can be written
            ir_mod, library = nrtdynmod.create_nrt_module(ctx)
            library.enable_object_caching()
            library.add_ir_module(ir_mod)
            library.finalize()
            _save_runtime(library, path, key)
        return library

    nrtdynmod.compile_nrt_functions = compile_nrt_functions


def _runtime_cache_file(ctx):
    """(path, key) of the cached runtime for this machine, numba and options."""
    import hashlib

    import llvmlite
    import numba
    from numba.core import config
    what = (numba.__version__, llvmlite.__version__, ctx.codegen().magic_tuple(),
            config.OPT, config.DEBUG_NRT, config.DEBUGINFO_DEFAULT,
            config.LLVM_REFPRUNE_PASS, config.BOUNDSCHECK)
    key = hashlib.sha256(repr(what).encode()).hexdigest().encode()
    # numba caches in NUMBA_CACHE_DIR when it is set, else beside the kernel's sources
    base = os.environ.get("NUMBA_CACHE_DIR")
    folder = Path(base) if base else Path(__file__).resolve().parent / "kernel" / "__pycache__"
    return folder / f"nrt-{key[:16].decode()}.bin", key


def _load_runtime(ctx, path, key):
    """The runtime library from ``path`` (None when absent, stale or unreadable)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    head = len(_RUNTIME_MAGIC) + len(key)
    if data[:head] != _RUNTIME_MAGIC + key or len(data) < head + 8:
        return None
    n = int.from_bytes(data[head:head + 8], "little")
    obj, bitcode = data[head + 8:head + 8 + n], data[head + 8 + n:]
    if len(obj) != n or not bitcode:
        return None
    try:
        return ctx.codegen().unserialize_library(("nrt", "object", (obj, bitcode)))
    except Exception:                # a damaged file: compiled again (and rewritten)
        return None


def _save_runtime(library, path, key) -> None:
    """Write the runtime library's object code and bitcode to ``path`` (atomically; a
    read-only install simply compiles it in each process)."""
    try:
        name, kind, (obj, bitcode) = library.serialize_using_object_code()
        if kind != "object":
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_bytes(_RUNTIME_MAGIC + key + len(obj).to_bytes(8, "little") + obj
                        + bitcode)
        os.replace(tmp, path)
    except Exception:
        pass
