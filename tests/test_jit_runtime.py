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


@pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1", reason="about compiled code")
def test_object_symbols_read_from_the_object_file():
    """A library loaded from object code keeps its bitcode unparsed
    (:func:`ccmod.jit.load_object`): the symbols it defines, read from the
    object file's symbol table, are the ones numba reads from the parsed module."""
    import llvmlite.binding as ll
    from numba.core.registry import cpu_target
    from numba.core.runtime import rtsys
    import ccmod.kernel.compiled  # noqa: F401 - numba_startup
    from ccmod.jit import _RUNTIME_MAGIC, _runtime_cache_file
    from ccmod.jit import _defined_symbols
    rtsys.initialize(cpu_target.target_context)       # the runtime's file, written once
    path, key = _runtime_cache_file(cpu_target.target_context)
    if not path.exists():
        pytest.skip("no runtime file (a read-only cache)")
    data = path.read_bytes()[len(_RUNTIME_MAGIC) + len(key):]
    n = int.from_bytes(data[:8], "little")
    obj, bitcode = data[8:8 + n], data[8 + n:]
    mod = ll.parse_bitcode(bitcode)
    defined = {g.name for group in (mod.functions, mod.global_variables) for g in group
               if not g.is_declaration}
    assert defined and _defined_symbols(obj) == defined
    assert _defined_symbols(b"not an object file") is None
