"""Functions only compiled code calls are compiled to IR for their callers, no machine code
(ccmod/kernel/linkonly.py), and their cached form loads back the same way."""
import os

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1",
                                reason="about compiled code")


@pytest.mark.slow
def test_link_only_callee_round_trip():
    from numba import njit
    from ccmod.kernel.compiled import _dispatcher, _LeafDispatcher, kernel_jit
    from ccmod.kernel.linkonly import KIND, LinkOnlyLibrary
    from ccmod.kernel.rawbuf import RawBuf, raw

    def twice(I, i):
        return I[i] * 2

    def thrice(I, i):
        return I[i] * 3

    twice_c = kernel_jit(twice, cache=False)
    thrice_c = _dispatcher(_LeafDispatcher, thrice, False, {"_nrt": False})   # a leaf

    @njit
    def caller(a, i):
        return twice_c(raw(a), i) + thrice_c(raw(a), i)

    a = np.arange(5, dtype=np.int64)
    assert caller(a, 3) == 15
    # called with arrays from Python: an ordinary compile, machine code and wrappers
    assert twice_c(a, 2) == 4
    for disp in (twice_c, thrice_c):
        (raw_sig,) = [s for s in disp.overloads if isinstance(s[0], RawBuf)]
        lib = disp.overloads[raw_sig].library
        assert isinstance(lib, LinkOnlyLibrary) and lib.link_only
        assert lib.get_pointer_to_function(
            disp.overloads[raw_sig].fndesc.llvm_cpython_wrapper_name) == 0
        name, kind, data = lib.serialize_using_object_code()
        assert kind == KIND
        again = type(lib)._unserialize(lib.codegen, (name, kind, data))
        assert again.link_only and again._get_module_for_linking() is not None
        (py_sig,) = [s for s in disp.overloads if not isinstance(s[0], RawBuf)] or [None]
        if py_sig is not None:
            assert not disp.overloads[py_sig].library.link_only


def test_link_only_library_ir_only_until_an_address_is_asked():
    # cheap: a hand-made LLVM function, no numba compile (under numba's compiler lock, as
    # numba finalises libraries)
    from numba.core.compiler_lock import global_compiler_lock
    with global_compiler_lock:
        _check_library()


def _check_library():
    import ctypes

    from llvmlite import ir
    from numba.core.registry import cpu_target
    from ccmod.kernel.linkonly import KIND, LinkOnlyLibrary, install

    codegen = cpu_target.target_context.codegen()
    install(codegen)
    install(codegen)                                  # idempotent
    assert codegen._library_class is LinkOnlyLibrary
    mod = codegen._create_empty_module("t")
    i64 = ir.IntType(64)
    fn = ir.Function(mod, ir.FunctionType(i64, [i64]), name="ccmod_test_add7")
    b = ir.IRBuilder(fn.append_basic_block())
    b.ret(b.add(fn.args[0], ir.Constant(i64, 7)))
    lib = codegen.create_library("t")
    lib.add_ir_module(mod)
    lib.link_only = True
    lib.finalize()
    assert lib._pending                               # finished as IR, no machine code
    assert lib.get_pointer_to_function("ccmod_test_absent") == 0
    name, kind, data = lib.serialize_using_object_code()
    assert kind == KIND
    again = LinkOnlyLibrary._unserialize(codegen, (name, kind, data))
    assert again._pending
    assert again._get_module_for_linking().get_function("ccmod_test_add7") is not None
    addr = again.get_pointer_to_function("ccmod_test_add7")   # compiled now, on demand
    assert addr and not again._pending
    assert ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(addr)(35) == 42
    # a library not marked link-only is numba's: machine code when finalised
    plain = codegen.create_library("t2")
    plain.add_ir_module(codegen._create_empty_module("t2"))
    plain.finalize()
    assert not plain._pending


def test_link_only_only_on_checked_numba_releases(monkeypatch):
    # other releases (or CCMOD_LINK_ONLY=0) compile as numba does: nothing is installed
    import numba
    from ccmod.kernel import linkonly
    assert not linkonly.supported("0.61.2")
    assert not linkonly.supported("0.69.0")
    assert not linkonly.supported("dev-build")
    assert linkonly.supported(numba.__version__) == linkonly.SUPPORTED
    monkeypatch.setattr(linkonly, "SUPPORTED", False)

    class Codegen:
        _library_class = object
    codegen = Codegen()
    linkonly.install(codegen)
    assert codegen._library_class is object and not hasattr(codegen, "_ccmod_link_only")


@pytest.mark.slow
def test_numba_own_compile_gives_the_same_results(tmp_path):
    # CCMOD_LINK_ONLY=0 (as on an unchecked numba release): an empty cache, numba's own
    # compile of every function, the same tables as the link-only compile
    import subprocess
    import sys
    from pathlib import Path
    trace = Path(__file__).resolve().parents[1] / "traces" / "stencil16.ti"
    outs = {}
    for flag in ("0", "1"):
        env = dict(os.environ, CCMOD_LINK_ONLY=flag)
        if flag == "0":                      # the other run may use the suite's warm cache
            env["NUMBA_CACHE_DIR"] = str(tmp_path / "cache")
        out = tmp_path / f"out{flag}"
        subprocess.run([sys.executable, "-m", "ccmod", "run", str(trace), "--network",
                        "myrinet16", "--out", str(out)], env=env, check=True,
                       capture_output=True)
        outs[flag] = {p.name: p.read_bytes() for p in out.glob("*.parquet")}
    assert outs["0"] and outs["0"] == outs["1"]


def test_cached_machine_code_loads_without_parsing_its_bitcode():
    # cheap: a hand-made module (an exported function calling an internal one, a global)
    # turned into machine code by the target machine, as numba's cache holds it
    import ctypes

    import llvmlite.binding as ll
    from llvmlite import ir
    from numba.core.compiler_lock import global_compiler_lock
    from numba.core.registry import cpu_target
    from ccmod.kernel.linkonly import LinkOnlyLibrary, defined_symbols, install

    codegen = cpu_target.target_context.codegen()
    install(codegen)
    mod = codegen._create_empty_module("t3")
    i64 = ir.IntType(64)
    inner = ir.Function(mod, ir.FunctionType(i64, [i64]), name="ccmod_test_inner")
    inner.linkage = "internal"
    b = ir.IRBuilder(inner.append_basic_block())
    b.ret(b.mul(inner.args[0], ir.Constant(i64, 3)))
    outer = ir.Function(mod, ir.FunctionType(i64, [i64]), name="ccmod_test_thrice_plus1")
    b = ir.IRBuilder(outer.append_basic_block())
    b.ret(b.add(b.call(inner, [outer.args[0]]), ir.Constant(i64, 1)))
    gv = ir.GlobalVariable(mod, i64, name="ccmod_test_global")
    gv.initializer = ir.Constant(i64, 5)
    llmod = ll.parse_assembly(str(mod))
    obj, bitcode = codegen._tm.emit_object(llmod), llmod.as_bitcode()
    # the names numba would read from the bitcode's definitions
    want = {g.name for gs in (llmod.functions, llmod.global_variables) for g in gs
            if not g.is_declaration}
    assert defined_symbols(obj) == want
    assert defined_symbols(b"not an object") is None
    with global_compiler_lock:
        lib = LinkOnlyLibrary._unserialize(codegen, ("t3", "object", (obj, bitcode)))
        assert lib._lazy_bitcode is not None and lib._shared_module is None
        assert all(codegen._engine.is_symbol_defined(n) for n in want)
        addr = lib.get_pointer_to_function("ccmod_test_thrice_plus1")
        assert ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(addr)(4) == 13
        linked = lib._get_module_for_linking()          # a compile linking it: parsed now
        assert lib._lazy_bitcode is None and linked.get_function("ccmod_test_thrice_plus1")


def test_internalize_makes_linked_copies_private_only():
    # cheap: a hand-made module; linked copies (linkonce_odr) become internal so LLVM may
    # drop their unused arguments and inline them; the module's own (external) functions,
    # the ones numba asks addresses of, and declarations stay as they were
    from llvmlite import binding as ll
    from ccmod.kernel.linkonly import internalize
    mod = ll.parse_assembly("""
        declare i64 @outside(i64)
        define linkonce_odr i64 @callee(i64 %a, i64 %unused) {
          %r = call i64 @outside(i64 %a)
          ret i64 %r
        }
        define i64 @entry(i64 %a) {
          %r = call i64 @callee(i64 %a, i64 7)
          ret i64 %r
        }
    """)
    internalize(mod)
    link = {fn.name: fn.linkage for fn in mod.functions}
    assert link == {"outside": ll.Linkage.external, "callee": ll.Linkage.internal,
                    "entry": ll.Linkage.external}
    mod.verify()
