"""numba's runtime (NRT) comes from ccmod's file cache instead of a compile in every process
(:func:`ccmod.jit.runtime_from_cache`), and code compiled after such a load still links and
runs."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

PROBE = r"""
import numpy as np
import ccmod.jit as J
J.numba_startup()
from numba import njit
from numba.core.registry import cpu_target
from numba.core.runtime import rtsys
rtsys.initialize(cpu_target.target_context)
source = J.runtime_source


@njit
def grow(n):                 # allocates (NRT) and refcounts: links against the runtime
    a = np.arange(n) * 2
    b = [a]
    return b[0].sum()


print(source, grow(10))
"""


def _probe(cache_dir):
    env = dict(os.environ, PYTHONPATH=str(ROOT), NUMBA_CACHE_DIR=str(cache_dir))
    env.pop("NUMBA_DISABLE_JIT", None)
    p = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                       env=env, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout.split()


@pytest.mark.slow
def test_runtime_compiled_once_then_loaded(tmp_path):
    assert _probe(tmp_path) == ["compiled", "90"]
    assert len(list(tmp_path.glob("nrt-*.bin"))) == 1
    assert _probe(tmp_path) == ["cache", "90"]


def test_runtime_file_checked_before_use(tmp_path):
    """A file of another key, truncated or damaged is not used (None: compiled again);
    nothing here reaches LLVM, so the check costs no compile."""
    from ccmod.jit import _RUNTIME_MAGIC, _load_runtime
    key = b"0" * 64
    path = tmp_path / "nrt-x.bin"
    assert _load_runtime(None, path, key) is None                     # absent
    path.write_bytes(_RUNTIME_MAGIC + b"1" * 64 + (3).to_bytes(8, "little") + b"abcdef")
    assert _load_runtime(None, path, key) is None                     # another key
    path.write_bytes(_RUNTIME_MAGIC + key + (30).to_bytes(8, "little") + b"abcdef")
    assert _load_runtime(None, path, key) is None                     # truncated
    path.write_bytes(_RUNTIME_MAGIC + key + (6).to_bytes(8, "little") + b"abcdef")
    assert _load_runtime(None, path, key) is None                     # no bitcode


PROBE_AFTER_RUN = r"""
import numpy as np
import ccmod
from numba import njit
from numba.core.runtime import rtsys
r = ccmod.run("traces/stencil16.ti", "myrinet16", record=False)
lazy = getattr(rtsys.library, "_lazy_bitcode", None) is not None


@njit
def grow(n):                 # links against the runtime loaded with its bitcode unparsed
    a = np.arange(n) * 2
    b = [a]
    return b[0].sum()


print(lazy, grow(10), r.makespan_s > 0)
"""


@pytest.mark.slow
def test_compile_after_a_cached_run_links_the_runtime(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT), NUMBA_CACHE_DIR=str(tmp_path))
    env.pop("NUMBA_DISABLE_JIT", None)
    for _ in range(2):       # the first run compiles and writes the caches, the second loads
        p = subprocess.run([sys.executable, "-c", PROBE_AFTER_RUN], capture_output=True,
                           text=True, env=env, timeout=900, cwd=ROOT)
        assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.split() == ["True", "90", "True"]
