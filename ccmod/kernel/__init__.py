"""The compiled event-horizon kernel (numba, cached once per install).

Modules: :mod:`~ccmod.kernel.loop` (the hot loop: ranks, waits, barrier, send modes,
handlers, horizons), :mod:`~ccmod.kernel.ccmod_rule` (the article's contention /
bandwidth-availability sharing with per-resource virtual clocks),
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

_noticed = False


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


def _entry(C) -> tuple[str, bytes]:
    """The loop's compiled entry a run with config ``C`` calls, and its config's type name
    (both in the entry's cache index, :mod:`ccmod.kernel.loop`, :mod:`ccmod.kernel.rules`)."""
    name = "run_recorded" if (C.record or C.signals) else "run_quiet"
    return name, type(C).__name__.encode()


def cache_is_cold(C=None, sharing: str | None = None) -> bool:
    """True when numba's cache lacks the compiled loop a run needs (it compiles first).

    ``C``: the run's :class:`~ccmod.kernel.state.Config` (the entry and the sharing rule it
    compiles: each rule's loop compiles on its own first run); or ``sharing`` (any entry of
    that rule); neither: any compiled loop at all.
    """
    if os.environ.get("NUMBA_DISABLE_JIT") == "1":
        return False
    base = os.environ.get("NUMBA_CACHE_DIR")
    here = Path(__file__).resolve().parent
    dirs = [here / "__pycache__"]
    if base:
        dirs.insert(0, Path(base))
    pattern, mark = "loop.run_*-*.nbi", b""
    if C is not None:
        name, mark = _entry(C)
        pattern = f"loop.{name}-*.nbi"
    elif sharing is not None:
        mark = b"MmConfig" if sharing == "maxmin" else b"CcConfig"
    for d in dirs:
        if not d.is_dir():
            continue
        for f in d.rglob(pattern):
            try:
                # the index pickles each compiled signature: the config's class by name
                if mark in f.read_bytes():
                    return False
            except OSError:
                pass
    return True


@contextmanager
def compiling(C):
    """Around a run's first call of the loop (config ``C``): when numba will compile it (a
    cold cache), say "compiling kernels (first run only)" on a terminal, once per process,
    and pause Python's cyclic garbage collector meanwhile.

    numba's compiler makes millions of objects, and each of the collector's full passes
    walks all of them (and every module loaded): 5-6 s of a first run's CPU here. The
    cycles the compiler leaves are freed by one collection at the end.
    """
    global _noticed
    cold = cache_is_cold(C)
    try:
        if cold and not _noticed and sys.stderr.isatty():
            _noticed = True
            print("compiling kernels (first run only)", file=sys.stderr, flush=True)
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


def __getattr__(name):
    if name in ("CcmodSharing", "MaxMinSharing"):
        from ccmod.kernel import facade
        return getattr(facade, name)
    raise AttributeError(name)
