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

import os
import sys
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


def cache_is_cold() -> bool:
    """True when the compiled loop is not in numba's cache yet (first run)."""
    if os.environ.get("NUMBA_DISABLE_JIT") == "1":
        return False
    base = os.environ.get("NUMBA_CACHE_DIR")
    here = Path(__file__).resolve().parent
    dirs = [here / "__pycache__"]
    if base:
        dirs.insert(0, Path(base))
    for d in dirs:
        if d.is_dir() and any(d.rglob("loop.run_*-*.nbi")):
            return False
    return True


def compiling_notice() -> None:
    """Say "compiling kernels (first run only)" on a terminal when the cache is cold."""
    global _noticed
    if _noticed:
        return
    _noticed = True
    try:
        if sys.stderr.isatty() and cache_is_cold():
            print("compiling kernels (first run only)", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


def __getattr__(name):
    if name in ("CcmodSharing", "MaxMinSharing"):
        from ccmod.kernel import facade
        return getattr(facade, name)
    raise AttributeError(name)
