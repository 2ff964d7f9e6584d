"""Functions only the loop calls: compiled to LLVM IR for their callers, not to machine code.

numba compiles a function called from compiled code as a library of its own: optimised
over the whole module of itself and its callees (linked in), then turned into machine
code. Its callers link that module in and optimise and generate the machine code of the
whole again, each level of the loop (``run_entry`` > ``_loop`` > ``_advance`` > ... >
``heap_up``) redoing all the code below it: in a cold first run ~40% of the compile
went to module passes and machine code of functions nobody calls by address.

A function given a :class:`~ccmod.kernel.rawbuf.RawBuf` is only ever called from
compiled code (see :class:`ccmod.kernel.compiled._InternalCompiler`). Its library is a
:class:`LinkOnlyLibrary`: after numba's per-function passes it is finished as IR, ready
to be linked into its callers, with no module passes (the caller that ends up as machine
code, e.g. ``run_entry``, optimises the whole, callees first, once) and no machine code;
numba's cache stores that IR (kind ``ccmod-link-only``) and loads it back the same way. If
anything ever asks such a library for a function's address, it is optimised and compiled
then, as numba would have done.

Installed on numba's CPU code generator by :func:`install` (idempotent); libraries not
marked link-only behave exactly as numba's.

This reaches into numba's private code generator (the library's finishing steps, the
codegen's library class and ``set_env``), checked on the numba releases in
:data:`TESTED_NUMBA`. On any other release (:data:`SUPPORTED` False), or with
``CCMOD_LINK_ONLY=0`` (:data:`ENABLED` False), every function compiles as numba does: the
results are the same, a cold first run takes about twice as long.
"""
from __future__ import annotations

import os

import numba
from llvmlite import binding as ll
from numba.core.codegen import JITCodeLibrary

#: numba releases (major, minor) the link-only compile was checked on (tests/test_linkonly.py)
TESTED_NUMBA = ((0, 68),)


def supported(version: str) -> bool:
    """Whether numba ``version`` is one the link-only compile was checked on, with the
    private steps it relies on."""
    try:
        major_minor = tuple(int(x) for x in version.split(".")[:2])
    except ValueError:                 # a development build's version string
        return False
    needed = ("_optimize_final_module", "_finalize_final_module", "_finalize_dynamic_globals",
              "_verify_declare_only_symbols", "serialize_using_object_code", "_unserialize")
    return major_minor in TESTED_NUMBA and all(hasattr(JITCodeLibrary, n) for n in needed)


#: the installed numba is one the link-only libraries work on (they are read back from a
#: cache whenever it is, whether or not new compiles use them)
SUPPORTED = supported(numba.__version__)
#: new compiles of functions only the loop calls are link-only (see the module's docstring)
ENABLED = SUPPORTED and os.environ.get("CCMOD_LINK_ONLY") != "0"

#: the functions linked into a library that becomes machine code are made private to it
#: (:func:`internalize`); ``CCMOD_INTERNALIZE=0`` leaves them as numba links them
INTERNALIZE = ENABLED and os.environ.get("CCMOD_INTERNALIZE") != "0"

#: the cache's kind for a link-only library (its IR, as bitcode)
KIND = "ccmod-link-only"


def internalize(module) -> None:
    """Make the functions linked into ``module`` (numba links each callee's module in as
    ``linkonce_odr`` copies) private to it, before its module passes.

    numba's calling convention passes every field of a named tuple as an argument of its
    own: the interpreter's ``_advance(C, P, L, I, F, r, t)`` took 29 arguments, ~20 of
    them pushed on the stack at each call, whether used or not. A ``linkonce_odr``
    function may be called from other modules, so LLVM keeps its signature and inlines it
    only when small; a private one it may change: unused arguments go (dead argument
    elimination), constant ones are folded in (the logs of a run that records nothing),
    and a function called from one place is inlined there (``_loop`` into the entry).
    This is only sound for a module that becomes machine code and whose linked functions
    nobody else looks up by name: the entry of a compiled loop (its own functions, those
    numba asks addresses of, stay external). Same results; light16's loop ~0.33 -> ~0.2
    us CPU per record.
    """
    for fn in module.functions:
        if not fn.is_declaration and fn.linkage == ll.Linkage.linkonce_odr:
            fn.linkage = ll.Linkage.internal


class LinkOnlyLibrary(JITCodeLibrary):
    """numba's JIT library; with ``link_only`` set before it is finalised, finished as IR
    only (see the module's docstring)."""

    link_only = False
    _pending = False       # link-only and not yet optimised / in the execution engine
    #: the library's function is kept out of line in its callers (LLVM's ``noinline``:
    #: :func:`ccmod.kernel.compiled.leaf_apart`)
    apart = False

    def _optimize_final_module(self):
        if self.link_only:
            return                 # optimised in the caller that becomes machine code
        if INTERNALIZE:
            internalize(self._final_module)
        super()._optimize_final_module()

    def _finalize_final_module(self):
        if not self.link_only:
            return super()._finalize_final_module()
        if self.apart:
            # its own function is the module's one external definition (the callees
            # linked in are linkonce_odr copies); the attribute goes with the IR into
            # the callers and the cache
            for fn in self._final_module.functions:
                if not fn.is_declaration and fn.linkage == ll.Linkage.external:
                    fn.add_function_attribute("noinline")
        self._finalize_dynamic_globals()
        self._verify_declare_only_symbols()
        self._pending = True
        self._finalized = True

    def _materialize(self):
        """Machine code after all: optimise and add to the engine as numba would have."""
        self.link_only = False
        self._pending = False
        self._dynamic_globals = []
        self._shared_module = None
        super()._optimize_final_module()
        super()._finalize_final_module()
        for gv in self._final_module.global_variables:
            env = _PENDING_ENVS.pop(gv.name, None)
            if env is not None and not gv.is_declaration:
                self._codegen.set_env(gv.name, env)

    def get_pointer_to_function(self, name):
        if self._pending:
            try:
                fn = self._final_module.get_function(name)
            except NameError:
                return 0           # e.g. its CPython wrapper: none was built
            if fn.is_declaration:
                return 0
            self._materialize()
        return super().get_pointer_to_function(name)

    def serialize_using_object_code(self):
        if self._pending:
            return (self.name, KIND, self._final_module.as_bitcode())
        return super().serialize_using_object_code()

    #: a cached machine-code library's module for linking, as bitcode not yet parsed
    _lazy_bitcode = None

    def _get_module_for_linking(self):
        if self._lazy_bitcode is not None:
            data, self._lazy_bitcode = self._lazy_bitcode, None
            self._shared_module = ll.parse_bitcode(data)
        return super()._get_module_for_linking()

    @classmethod
    def _unserialize(cls, codegen, state):
        name, kind, data = state
        if kind == "object" and SUPPORTED:
            names = defined_symbols(data[0])
            if names is not None:
                return cls._unserialize_object(codegen, name, data, names)
        if kind != KIND:
            return super()._unserialize(codegen, state)
        self = codegen.create_library(name)
        self.link_only = True
        self._final_module = ll.parse_bitcode(data)
        self._finalize_final_module()
        return self

    @classmethod
    def _unserialize_object(cls, codegen, name, data, names):
        """numba's load of a cached machine-code library, without parsing its bitcode.

        numba parses the bitcode kept beside the machine code (to link it into a later
        compile's callers) and walks it for the names it defines (so that the engine is
        asked only for symbols it has): for the loop's entry 10-20 ms of every warm run,
        though only a compile ever links it. The names come from the machine code's
        symbol table (:func:`defined_symbols`; the same set, ``tests/test_linkonly.py``)
        and the bitcode is parsed when a compile first links the library in.
        """
        obj, bitcode = data
        self = codegen.create_library(name)
        self.enable_object_caching()
        self._set_compiled_object(obj)
        self._lazy_bitcode = bitcode
        self._finalize_final_module()
        codegen._engine._defined_symbols |= names
        return self


def defined_symbols(obj: bytes):
    """The names an x86-64/AArch64 ELF object defines (functions and data, local or global:
    what numba reads from the matching bitcode's definitions), or None when ``obj`` is not
    a little-endian 64-bit ELF object this reads."""
    import struct
    if len(obj) < 64 or obj[:4] != b"\x7fELF" or obj[4] != 2 or obj[5] != 1:
        return None
    try:
        shoff, = struct.unpack_from("<Q", obj, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
        if shentsize != 64 or shnum == 0:
            return None
        names = set()
        for k in range(shnum):
            sh = struct.unpack_from("<IIQQQQIIQQ", obj, shoff + 64 * k)
            if sh[1] != 2:                              # SHT_SYMTAB
                continue
            off, size, link, entsize = sh[4], sh[5], sh[6], sh[9]
            if entsize != 24 or link >= shnum or off + size > len(obj):
                return None
            stroff, strsize = struct.unpack_from("<QQ", obj, shoff + 64 * link + 24)
            strtab = obj[stroff:stroff + strsize]
            for st_name, st_info, _, shndx, _, _ in struct.iter_unpack("<IBBHQQ",
                                                                       obj[off:off + size]):
                # defined (not SHN_UNDEF), named, not a section or file symbol
                if shndx != 0 and st_name and (st_info & 0xF) not in (3, 4):
                    names.add(strtab[st_name:strtab.index(b"\0", st_name)].decode())
        return names
    except (struct.error, ValueError, UnicodeDecodeError):
        return None


#: environments of link-only functions (numba sets each compiled function's environment
#: pointer in the engine; a link-only library is not in it), set if one is materialised
_PENDING_ENVS: dict = {}


def install(codegen) -> None:
    """Make ``codegen`` (numba's CPU JIT code generator) create :class:`LinkOnlyLibrary`
    libraries, and let it skip the environment of a function not in the engine (nothing
    unless :data:`SUPPORTED`)."""
    if not SUPPORTED or getattr(codegen, "_ccmod_link_only", False):
        return
    original = codegen.set_env

    def set_env(env_name, env):
        if codegen._engine.get_global_value_address(env_name) == 0:
            _PENDING_ENVS[env_name] = env      # a link-only function's (see above)
            return
        original(env_name, env)

    codegen.set_env = set_env
    codegen._library_class = LinkOnlyLibrary
    codegen._ccmod_link_only = True
