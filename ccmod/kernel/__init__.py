"""The compiled event-horizon kernel (numba, cached once per install).

Modules: :mod:`~ccmod.kernel.loop` (the hot loop: ranks, waits, barrier, send modes,
handlers, horizons), :mod:`~ccmod.kernel.messages` (a message's injection, end,
handler and waiters), :mod:`~ccmod.kernel.ccmod_rule` (the article's contention /
bandwidth-availability sharing with per-resource virtual clocks; its flush in
:mod:`~ccmod.kernel.cc_flush`),
:mod:`~ccmod.kernel.maxmin` (incremental max-min over
:mod:`~ccmod.kernel.mm_classes`, classes of flows with one virtual clock each), :mod:`~ccmod.kernel.heaps` (indexed
heaps), :mod:`~ccmod.kernel.state` (the arrays), :mod:`~ccmod.kernel.record` (recordings
out), :mod:`~ccmod.kernel.waits` (static wait mapping), :mod:`~ccmod.kernel.facade`
(the sharing rules driven one call at a time, for tests and experiments).

``NUMBA_DISABLE_JIT=1`` runs the same code as plain Python with identical results.
"""
from __future__ import annotations

import gc
import os
import sys
from contextlib import contextmanager
from pathlib import Path

def _drop_stale_cache() -> None:
    """Forget numba's cached kernels when any kernel source changed.

    numba keys the cache of the loop's entries on loop.py alone: after an edit of ccmod_rule.py
    or maxmin.py (a developer's checkout, an upgrade that keeps loop.py's timestamp) the
    cached loop would silently run the old rule. A fingerprint of every kernel source,
    kept beside the cache, decides when to drop it.
    """
    import hashlib
    here = Path(__file__).resolve().parent
    cache = here / "__pycache__"
    try:
        h = hashlib.sha256()
        for f in sorted(here.glob("*.py")):
            h.update(f.name.encode())
            h.update(f.read_bytes())
        stamp = cache / "ccmod-kernel-sources.sha256"
        digest = h.hexdigest()
        if stamp.is_file() and stamp.read_text() == digest:
            return
        if cache.is_dir():
            for f in list(cache.glob("*.nbi")) + list(cache.glob("*.nbc")):
                f.unlink(missing_ok=True)
        cache.mkdir(exist_ok=True)
        tmp = cache / f".{stamp.name}.{os.getpid()}"
        tmp.write_text(digest)
        os.replace(tmp, stamp)
    except OSError:
        pass  # a read-only install: numba caches elsewhere or not at all


_drop_stale_cache()


_ANY = object()

#: What a note says a cold compile takes (CPU on the 2-core development machine:
#: bench/compile_profile.py; stop 25: 20-26 s for the Quickstart or a cold --json, 15 s
#: for a second rule): the whole loop for one sharing rule; only the entry when the loop
#: below it is already compiled (a cache that lost the entry).
_COMPILE_FULL = "about 20-40 s"
_COMPILE_ENTRY = "a few seconds"


def _cached_signatures(name: str):
    """The argument types numba's cache holds compiled for ``loop.<name>`` (every cache
    folder numba would read; an index whose source stamp is out of date holds nothing)."""
    import pickle
    here = Path(__file__).resolve().parent
    src = here / "loop.py"
    try:
        st = src.stat()
    except OSError:
        return
    try:        # numba's own stamp of the source file (private: ignored when it moves)
        from numba.core.caching import _hash_source_file
        stamp = _hash_source_file(str(src), st.st_mtime, st.st_size)
    except (ImportError, TypeError, OSError):
        stamp = None
    # numba caches in NUMBA_CACHE_DIR when it is set, else beside the sources
    base = os.environ.get("NUMBA_CACHE_DIR")
    dirs = [Path(base)] if base else [here / "__pycache__"]
    for d in dirs:
        if not d.is_dir():
            continue
        for f in d.rglob(f"loop.{name}-*.nbi"):
            try:
                with open(f, "rb") as fh:
                    pickle.load(fh)                 # numba's version
                    got, overloads = pickle.loads(fh.read())
            except Exception:                       # unreadable: numba recompiles too
                continue
            if stamp is not None and got != stamp:
                continue
            for key in overloads:
                yield key[0]


def _is_config(t, C) -> bool:
    return getattr(t, "instance_class", None) is type(C)


def cache_is_cold(C=None, sharing: str | None = None, L=_ANY) -> bool:
    """True when numba's cache lacks the compiled loop a run needs (it compiles first).

    ``C``: the run's :class:`~ccmod.kernel.state.Config` (each sharing rule compiles its
    loop on its own first run); or ``sharing`` (any entry of that rule); neither: any
    compiled loop at all. ``L``, the run's logs, changes nothing: runs that record and runs
    that do not share one entry (:data:`~ccmod.kernel.state.NO_LOGS`).
    """
    if os.environ.get("NUMBA_DISABLE_JIT") == "1":
        return False
    if C is None and sharing is not None:
        from ccmod.kernel.state import config
        C = config(1 if sharing == "maxmin" else 0, *([0] * 7))
    try:
        for sig in _cached_signatures("run_entry"):
            if (C is None or _is_config(sig[0], C)) and _is_logs(sig[2]):
                return False
    except Exception:           # numba's cache layout changed: say nothing is cached
        return True
    return True


def _is_logs(t) -> bool:
    """Whether numba type ``t`` is the logs' (:class:`~ccmod.kernel.state.Logs` of
    addresses), as every run passes them."""
    from ccmod.kernel.state import Logs
    return getattr(t, "instance_class", None) is Logs


def _loop_is_cached(C) -> bool:
    """Whether the loop below the entries is compiled in the cache for ``C``'s rule (a
    cold entry then compiles in seconds)."""
    try:
        return any(_is_config(sig[0], C) for sig in _cached_signatures("_loop_entry"))
    except Exception:
        return False


@contextmanager
def compiling(C, L=_ANY):
    """Around a run's first call of the loop (config ``C``; ``L``, its logs, changes
    nothing: see :func:`cache_is_cold`): when numba will compile it (a cold cache), say
    "compiling kernels (first run only: ...)" with roughly how long on a terminal, and
    pause Python's cyclic garbage collector meanwhile.

    numba's compiler makes millions of objects, and each of the collector's full passes
    walks all of them (and every module loaded): 5-6 s of a first run's CPU here. The
    cycles the compiler leaves are freed by one collection at the end.
    """
    cold = _compiled_here(C) is False and cache_is_cold(C)
    try:
        if cold and sys.stderr.isatty():
            how_long = _COMPILE_ENTRY if _loop_is_cached(C) else _COMPILE_FULL
            print(f"compiling kernels (first run only: {how_long})", file=sys.stderr,
                  flush=True)
    except (OSError, ValueError):
        pass
    paused = cold and gc.isenabled()
    if paused:
        gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()
            gc.collect()


def _compiled_here(C) -> bool:
    """Whether this process already compiled or loaded the loop's entry for ``C`` (then
    nothing to say, and no need to look at the cache)."""
    if os.environ.get("NUMBA_DISABLE_JIT") == "1" or "ccmod.kernel.loop" not in sys.modules:
        return False
    from ccmod.kernel.loop import run_entry
    return any(_is_config(sig[0], C) and _is_logs(sig[2]) for sig in run_entry.signatures)


def __getattr__(name):
    if name in ("CcmodSharing", "MaxMinSharing"):
        from ccmod.kernel import facade
        return getattr(facade, name)
    raise AttributeError(name)
