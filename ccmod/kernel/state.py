"""The kernel's state: every field a slice of one int64 and one float64 buffer.

Why flat: numba increments and decrements the reference count of every array a compiled
call is given (atomic operations, ~20 cycles each). With one array per field, a call that
passed the whole state cost hundreds of them, most of the time of an event. Now the state
is two arrays, ``I`` (int64, booleans as 0/1) and ``F`` (float64), and each group of
fields is a named tuple of *offsets* (plain ints, copied by value): ``R.pc`` is where the
ranks' program counters start in ``I``, so rank r's is ``I[R.pc + r]``.

``Config``  scalars: sharing (0 ccmod, 1 maxmin), flags; made by :func:`config`, a
            :class:`CcConfig` or an :class:`MmConfig` by the rule.
``Program`` the ranks' records (CSR by rank) with waits resolved to messages (arrays: the
            input, not copied). Rank r runs ``[pc, rank_end[r])``; ``more[r]`` != 0 says
            its trace goes on beyond ``rank_end[r]`` (a window, see :mod:`ccmod.kernel.window`):
            the loop then pauses there instead of finishing the rank. A whole program has
            ``rank_end = rank_ptr[1:]`` and ``more`` all 0 (:func:`whole_program`).
``MsgIn``   per-message inputs (compile time) and per-node NIC gap (an input the
            same for every message held once: ``fconst``, :data:`CONST_INPUTS`). A message's index
            ``m`` is its *slot*: the message id in a whole-program run; under streaming
            (:mod:`ccmod.kernel.slots`) slots are recycled and ``okey[m]`` is the message
            id, the order every tie between messages is broken by. Message m's route is
            ``route_res[route_ptr[m]:route_end[m]]`` (int32 fields, as the ids:
            :func:`check_ids`).
``MsgSt``   per-message times and waiters; ``refs`` (streaming) counts what may still
            read a slot, ``ret`` lists the slots retired since the host last drained them.
``RankSt``  per-rank state; ``Timers`` the timer queue (one slot per rank compute and rank
            resume, ``r`` and ``n + r``; from ``2 n`` on, a pool of slots recycled for
            the messages' timers, ``msg[x]`` the message of slot x);
``Scalars`` counters; ``Logs`` the recordings (logs of fixed-width records);
``BgSteps`` background-load steps sorted by time.

:class:`Arena` lays the fields out; :meth:`Arena.views` gives the same named tuple with
numpy views for Python (results, tests).
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

INF = np.inf

Config = namedtuple("Config", "sharing lat_unshared detached record signals gap max_events "
                               "recycle")


class CcConfig(Config):
    """:class:`Config` of a run under the article's rule (``sharing`` 0)."""
    __slots__ = ()


class MmConfig(Config):
    """:class:`Config` of a run under max-min (``sharing`` 1): its own numba type, so that
    the compiled loop is specialised per rule (:mod:`ccmod.kernel.rules`)."""
    __slots__ = ()


def config(sharing, *flags):
    """The :class:`Config` of rule ``sharing`` (0 ccmod, 1 maxmin) and the flags after it."""
    return (MmConfig if sharing == 1 else CcConfig)(sharing, *flags)
Program = namedtuple("Program", "nranks rank_ptr op dur rec_msg wait_msg wait_side wa_ptr "
                                "wa_msg wa_side rank_end more")
MsgIn = namedtuple("MsgIn", "nmsg src dst nbytes quiet latency o_send o_recv unshared kind "
                            "handler_s flow_cap eager route_ptr route_res node_of_rank gap_s "
                            "route_end okey fconst")
#: message inputs that a whole-program run holds once when every message has the
#: same value (bit for bit): their bit in ``MsgIn.fconst`` (a plain value) says so, and
#: the kernel reads element 0 for every message (:func:`ccmod.kernel.compiled.per_msg`).
#: The floats save 8 bytes per message each; the int32 flags (``eager``, ``kind``,
#: ``unshared``: one value in most traces) save no resident memory (a zero flag's pages
#: were never touched) but a cache line per message in flight each: every message read
#: its own place in each of the three, ~31,000 ids apart in an incast of 16 senders
CONST_INPUTS = {"quiet": 1, "latency": 2, "o_send": 4, "o_recv": 8, "handler_s": 16,
                "flow_cap": 32, "eager": 64, "kind": 128, "unshared": 256}
(FC_QUIET, FC_LATENCY, FC_O_SEND, FC_O_RECV, FC_HANDLER, FC_FLOW_CAP, FC_EAGER, FC_KIND,
 FC_UNSHARED) = CONST_INPUTS.values()
RankSt = namedtuple("RankSt", "nranks nready ri rf pc pending block_state t_block finish "
                              "comp_end comp_start comp_state hfree handler_tot h_inside "
                              "paid_pc ovh_due state_s barrier ready")
#: a rank's fields side by side, a record of ``RI`` words in ``I`` and one of ``RF`` in
#: ``F`` per rank (one cache line each: the buffers and the records are 64-byte aligned),
#: rank r's program counter at ``I[R.pc + r * RI]``: waking one of many ranks touches two
#: lines, not one per field (the per-field arrays of 1024 ranks fall out of the cache)
#: The seconds spent per state (``state_s``, :data:`ccmod.codes.STATE_NAMES`' order) are in
#: the float record too, from word ``RF_STATE`` on: a wake-up closes the rank's blocked
#: interval into them, and as an array of their own they were one more line per wake-up
#: (1024 ranks: 48 KB, out of L1 between two wake-ups of a rank). The record's first line
#: holds what a wake-up reads and the compute, send and receive totals; wait, barrier and
#: overhead go on in the second line, with the fields written once or by handlers only.
RI, RF = 8, 16
RANK_I = ("pc", "pending", "block_state", "comp_state", "paid_pc")
RANK_F = ("t_block", "hfree", "h_inside", "ovh_due", "comp_start", "s_compute", "s_send",
          "s_recv", "s_wait", "s_barrier", "s_overhead", "comp_end", "finish", "handler_tot")
#: each field's place in the records (the compiled loop reads rank r's pending count at
#: ``I[R.ri + r * RI + RI_PENDING]``: one base per rank and constant displacements, where
#: one offset per field, each held in a register or spilled, cost loads at every wake-up)
RI_PC, RI_PENDING, RI_BLOCK, RI_COMP_STATE, RI_PAID_PC = range(len(RANK_I))
(RF_T_BLOCK, RF_HFREE, RF_H_INSIDE, RF_OVH_DUE, RF_COMP_START, RF_STATE) = range(6)
(RF_COMP_END, RF_FINISH, RF_HANDLER_TOT) = (RANK_F.index(f) for f in ("comp_end", "finish",
                                                                     "handler_tot"))
RankRec = namedtuple("RankRec", "irec frec")
MsgSt = namedtuple("MsgSt", "t_post_send t_post_recv t_start t_end send_waiter recv_waiter "
                            "am_waiter bott nic_next refs ret")
#: a message slot's times side by side, a record of ``MF`` float64 words in ``F`` (two
#: slots to a cache line: the records are 32-byte aligned), and its waiters, ``MJ`` int32
#: elements of ``I``: slot m's end at ``F[G.t_end + m * MF]``. A message's post, start,
#: end and wake-up read one line of each, not one per field (as the ranks', :data:`RI`)
MF, MJ = 4, 2
MSG_F = ("t_post_send", "t_post_recv", "t_start", "t_end")
MSG_J = ("send_waiter", "recv_waiter")
MsgRec = namedtuple("MsgRec", "frec jrec")
Timers = namedtuple("Timers", "item pos t seq kind len msg free nf")
Scalars = namedtuple("Scalars", "ks kf")
Logs = namedtuple("Logs", "states load sig")
BgSteps = namedtuple("BgSteps", "n t res load")
#: the sharing rules' state (:mod:`ccmod.kernel.ccmod_rule`, :mod:`ccmod.kernel.maxmin`)
CcState = namedtuple("CcState", (
    "ri rf free count share v_at t_at peak area busy t_chg "
    "seg g_len g_item g_pos vfin pr pb pcnt phead pkey ph_pos rnext rprev pfree rp_head "
    "ph_len ph_seg ph_item e_pair e_next e_prev stk chk_f chk_l bott ev_len ev_item ev_pos ev_t new_m new_w dec_f dec_l inc_f inc_l tch_f tch_l "
    "cand_f cand_l done si sf route_ptr route_res emsg route_end okey lone l_head l_tail g_next "
    "dfr dgrp dmsg ndef dmin e_base eb_head"))
#: a resource's fields under the article's rule side by side: a record of ``CRI`` int64
#: words in ``I`` and one of ``CRF`` float64 words in ``F`` per resource (64-byte aligned),
#: resource r's at ``S.ri + r * CRI`` and ``S.rf + r * CRF``, each field at a fixed place
#: in it (``CI_*``, ``CF_*``): ``I[S.ri + r * CRI + CI_COUNT]``. A rule function computes
#: one base per resource and reaches its fields at constant displacements, where one
#: offset per field (each loaded from the head of ``I``, kept in a register or spilled)
#: cost most of a small function's instructions. For Python the fields are also
#: :class:`CcState`'s strided views (``S.count``, ``S.share``, ...), as the ranks' (:data:`RI`).
#: (the first line holds what a message's start and end read on every resource of its
#: route, deferrals included: an incast's senders touch one line of each record)
CC_RES_I = ("count", "lone", "dfr", "dgrp", "dmsg", "peak", "tch_f", "ndef",
            "g_len", "l_head", "l_tail", "rp_head", "ph_len", "dec_f", "inc_f", "chk_f")
CC_RES_F = ("share", "free", "t_at", "v_at", "t_chg", "area", "busy", "dmin")
(CI_COUNT, CI_LONE, CI_DFR, CI_DGRP, CI_DMSG, CI_PEAK, CI_TCH, CI_NDEF, CI_G_LEN, CI_L_HEAD,
 CI_L_TAIL, CI_RP_HEAD, CI_PH_LEN, CI_DEC, CI_INC, CI_CHK) = range(len(CC_RES_I))
CF_SHARE, CF_FREE, CF_T_AT, CF_V_AT, CF_T_CHG, CF_AREA, CF_BUSY, CF_DMIN = range(len(CC_RES_F))
CRI, CRF = 16, 8
CcRes = namedtuple("CcRes", "irec frec")
MmState = namedtuple("MmState", (
    "cap_full cap count peak area busy t_chg seg r_len r_item "
    "f_cls vfin h_left h_right f_msg f_okey f_free done_s d_flag d_list r_seen rl cap_left users done si sf "
    "route_ptr route_res hb hmask ht "
    "c_free c_rep c_w c_rate c_v c_t c_fcap c_hash c_slot c_root c_bott c_fz c_seen c_tfin "
    "c_item c_hpos cl c_pos route_end okey "
    "nx lb g_on g_v g_t g_rate g_len g_top g_item g_mark c_sh c_grp c_off c_gkey c_gpos"))

#: The offsets (and sizes) of every group are also written at the head of ``I``, each
#: group at a fixed place: a compiled function reads the few it needs from there
#: (:mod:`ccmod.kernel.compiled`) instead of being passed hundreds of words of offsets.
HEADER = (MsgIn, RankSt, MsgSt, Timers, Scalars, BgSteps, CcState, MmState)
H_BASE = {}
_h = 0
for _cls in HEADER:
    H_BASE[_cls] = _h
    _h += len(_cls._fields)
H_LEN = _h

#: Fields the kernel touches only in part (pools and heaps sized for the worst case,
#: scratch lists, the active messages' fields): :meth:`Arena.alloc` keeps them out of
#: transparent huge pages (numpy asks for them on large arrays), under which one word
#: written makes a whole 2 MB resident: ~45 bytes per record at 1M records.
#: the timer slots' fields: sized for every message at once, touched as far as the most
#: timers armed at once (the messages' slots are recycled, :func:`timers`)
TIMER_SLOTS = ("pos", "t", "seq", "kind", "msg", "free")
SPARSE = {"CcState": ("g_item", "pr", "pb", "pcnt", "phead", "pkey", "ph_pos", "rnext",
                      "rprev", "pfree", "ph_item", "stk", "new_m", "new_w", "cand_l", "done",
                      "e_pair", "e_next", "e_prev", "emsg"),
          "MmState": ("r_item", "g_item", "done", "done_s", "f_cls", "vfin", "h_left",
                      "h_right", "f_msg", "f_okey", "f_free"), "MsgSt": ("am_waiter",),
          "MsgIn": ("handler_s",), "Timers": ("item",) + TIMER_SLOTS}


class Arena:
    """Lay out named fields in one int64 buffer ``I`` and one float64 buffer ``F``.

    :meth:`struct` takes, per field, ``("i" | "f" | "j", length, init)`` (init a scalar or
    an array of that length; ``"j"``: int32 elements inside ``I``, at an offset counted in
    int32 elements, read through :func:`ccmod.kernel.rawbuf.as_i32`), ``("v", value)`` (a
    plain value, e.g. a size) or ``("=", kind, offset, length)`` (the same slice as another
    field: shared inputs) or ``("+", name, delta, length)`` (a slice of field ``name`` of
    the same struct, ``delta`` further on) or ``("%", kind, offset, length, stride)`` (every
    ``stride``-th element from ``offset``: a field of records laid out already; its spec's
    length is the span it covers, its view strided; ``("%", kind, offset, length, stride,
    cols)``: ``cols`` consecutive elements at each, a ``(length, cols)`` view).
    """

    def __init__(self):
        self.size = {"i": H_LEN, "f": 0}
        self.inits = []
        self.spec = {}

    def struct(self, cls, **fields):
        vals, spec = [], {}
        for name in cls._fields:
            f = fields[name]
            if f[0] == "v":
                vals.append(f[1])
                spec[name] = ("v", f[1], 0, None)
                continue
            if f[0] == "=":
                kind, off, n = f[1], f[2], f[3]
                shape = None
            elif f[0] == "%":
                cols = f[5] if len(f) > 5 else 0
                kind, off, shape = f[1], f[2], ("stride", f[4], f[3], cols)
                n = (f[3] - 1) * f[4] + max(cols, 1) if f[3] else 0
            elif f[0] == "+":
                kind, off = spec[f[1]][:2]
                off, n, shape = off + f[2], f[3], None
            else:
                kind, n, init = f[0], f[1], f[2]
                shape = f[3] if len(f) > 3 else None
                n = int(n)
                if kind == "j":          # whole int64 words of I: 2 int32 elements each
                    off = 2 * self.size["i"]
                    self.size["i"] += (n + 1) // 2
                else:
                    off = self.size[kind]
                    self.size[kind] += n
                self.inits.append((kind, off, n, init))
            vals.append(int(off))
            spec[name] = (kind, int(off), int(n), shape)
        self.spec[cls] = spec
        if cls in H_BASE:
            self.inits.append(("i", H_BASE[cls], len(vals), np.asarray(vals, np.int64)))
        return cls(*vals)

    def align(self, kind, words):
        """Start the next field of ``kind`` ("i" or "f") at a multiple of ``words``."""
        self.size[kind] = -(-self.size[kind] // words) * words

    def where(self, cls, name):
        """``("=", kind, offset, length)`` of a field laid out already (to share it)."""
        kind, off, n, _ = self.spec[cls][name]
        return ("=", kind, off, n)

    def alloc(self, release=None, sparse=None):
        """The buffers, initialised: ``(I, F)``. ``release(nbytes)``, if given, is called
        each time inputs of 4 MB in all (``nbytes``) have been let go (the engine gives the C heap's free
        pages back: freed inputs would otherwise stay resident under the new buffers).
        ``sparse``: ``{struct name: field names}`` kept in small pages (:data:`SPARSE`)."""
        bufs = {"i": _zeros64(max(self.size["i"], 1), np.int64),
                "f": _zeros64(max(self.size["f"], 1), np.float64)}
        bufs["j"] = bufs["i"].view(np.int32)
        # numpy asks for huge pages only from 4 MB on (and the system gives them only
        # when asked, or to none): a smaller state has no region to keep out of them
        if sparse and max(bufs["i"].nbytes, bufs["f"].nbytes) >= _HUGE_MIN_BYTES:
            regions = [self.spec[cls][name][:3] for cls in self.spec
                       for name in sparse.get(cls.__name__, ()) if name in self.spec[cls]]
            # message inputs of all zeros (kinds, flags of a trace without them): the
            # kernel only reads them, so their pages stay untouched unless a neighbour's
            # huge page takes them in (2 bytes per record each at 1M records)
            ins = {v[:2] for v in self.spec.get(MsgIn, {}).values() if v[0] in "ijf"}
            regions += [(k, o, n) for k, o, n, init in self.inits
                        if (k, o) in ins and n > 1 and _all_zeros(init, k)]
            _small_pages(bufs, regions)
        inits, self.inits = self.inits, []
        inits.reverse()
        dropped = 0
        while inits:
            # popped: an input no one else holds is freed as soon as it is copied in
            kind, off, n, init = inits.pop()
            if init.__class__ in _SCALARS:
                # a plain value (most fields of a small state: ~200 of them per run):
                # filled unless zero (the buffers are zeros already)
                if n and init != 0:
                    if kind == "j":
                        _check_i32(init)
                    bufs[kind][off:off + n] = init
                continue
            if hasattr(init, "resolve"):
                # an input taken in slot order (:class:`ccmod.kernel.order.Gathered`),
                # written in place here unless it is one value
                size = init.a.nbytes
                if kind == "j":
                    _check_i32(init.a)
                init = init.resolve(lambda a: _constant(a, kind), bufs[kind][off:off + n])
                n = 0 if init is None else n
            else:
                size = init.nbytes if isinstance(init, np.ndarray) else 0
                if size >= 1 << 16:      # (a small one is copied: as fast as a fill)
                    init = _constant(init, kind)
            # the buffers are zeros already: a zero fill would only touch pages (time, and
            # resident memory for scratch fields the kernel may never reach)
            if n and not (np.isscalar(init) and init == 0):
                if kind == "j":
                    _check_i32(init)
                bufs[kind][off:off + n] = init
            del init
            dropped += size
            # often: what is not given back yet sits under the pages being filled (at
            # 32 MB, ~10 bytes per record more of a run's peak at 1M records)
            if release is not None and dropped >= _TRIM_MIN_BYTES:
                release(dropped)
                dropped = 0
        return bufs["i"], bufs["f"]

    def views(self, cls, I, F):
        """The named tuple ``cls`` with numpy views of its fields (values as they are)."""
        out = []
        for name in cls._fields:
            kind, off, n, shape = self.spec[cls][name]
            if kind == "v":
                out.append(off)
                continue
            v = (I if kind == "i" else I.view(np.int32) if kind == "j" else F)[off:off + n]
            if shape is not None and shape[0] == "stride" and shape[3]:
                v = np.lib.stride_tricks.as_strided(
                    v, (shape[2], shape[3]), (shape[1] * v.itemsize, v.itemsize))
            elif shape is not None and shape[0] == "stride":
                v = v[::shape[1]][:shape[2]]
            elif shape is not None:
                v = v.reshape(shape)
            out.append(v)
        return cls(*out)


def _zeros64(n, dtype):
    """``np.zeros(n, dtype)`` starting at a multiple of 64 bytes (a cache line), so that
    a record aligned in the buffer (:data:`RI`) is one line."""
    a = np.zeros(n + 8, dtype)
    k = (-a.ctypes.data % 64) // a.itemsize
    return a[k:k + n]


#: the plain values of :meth:`Arena.alloc`'s fast path (no array: nothing to let go)
_SCALARS = frozenset((int, float, bool, np.int64, np.int32, np.float64, np.bool_))
#: numpy's threshold for asking transparent huge pages of an array (its ``madvise``)
_HUGE_MIN_BYTES = 4 << 20
_MADV_DONTNEED = 4
_MADV_NOHUGEPAGE = 15
_madvise = None


def check_ids(entries, messages, resources):
    """Refuse a state whose ids do not fit the kernel's int32 fields: route entries
    (``route_ptr``, the rules' entry links), messages (``bott``, ``g_next``, the slots'
    links; one value fewer, kept from when ``g_pos`` was int32) and resources, with one line
    saying to stream the trace (a streamed run holds ids only for what is in flight)."""
    for n, top, what in ((entries, _I32_MAX, "route entries"),
                         (messages, _I32_MAX - 1, "messages"),
                         (resources, _I32_MAX, "resources")):
        if n > top:
            from ccmod.errors import TraceTooLargeError
            raise TraceTooLargeError(f"{n} {what}: one run holds at most {top}")


_I32_MAX = 2**31 - 1


def _check_i32(init):
    """Refuse an int32 field's initial values that do not fit (an id past 2^31 - 1)."""
    a = np.asarray(init)
    if a.size and a.dtype.itemsize > 4 and (a.min() < -2**31 or a.max() > 2**31 - 1):
        from ccmod.errors import TraceTooLargeError
        raise TraceTooLargeError(f"a kernel id does not fit in int32 ({int(a.min())}.."
                                 f"{int(a.max())}): too large a trace for one whole-program run")


def _small_pages(bufs, regions):
    """Keep ``regions`` (``(kind, offset, length)`` of the buffers) out of transparent huge
    pages (Linux ``madvise(MADV_NOHUGEPAGE)``; nothing elsewhere). Regions under 2 MB
    too: they hold no huge page of their own, but their neighbours' huge pages would cover
    them (a never-written 2 MB field between two written ones was wholly resident)."""
    _advise(bufs, regions, _MADV_NOHUGEPAGE, 4096)


def drop_pages(bufs, regions):
    """Give the memory of ``regions`` (``(kind, offset, length)`` of ``bufs``, a dict
    ``{"i": I, "f": F}``) back to the system: their whole pages read as zeros afterwards
    (Linux ``madvise(MADV_DONTNEED)``; nothing elsewhere)."""
    _advise(bufs, regions, _MADV_DONTNEED, 4096)


def release_free_heap(freed_bytes=None):
    """Give the C heap's free pages back to the system (glibc's ``malloc_trim``; nothing
    elsewhere). Arrays below glibc's mmap threshold (up to 32 MB) are freed into the heap,
    which stays resident: the reader's and the matching's temporaries otherwise sit under
    the kernel's state for the whole run (~60-100 bytes per record of peak RSS).
    ``freed_bytes``: about how much was let go, if known; under 4 MB nothing is done (the
    heap's walk costs 0.03-0.5 ms, a few times per run: more than a small run's set-up
    saves)."""
    if freed_bytes is not None and freed_bytes < _TRIM_MIN_BYTES:
        return
    global _trim
    if _trim is None:
        try:
            import ctypes
            _trim = ctypes.CDLL("libc.so.6").malloc_trim
        except (OSError, AttributeError):
            _trim = False
    if _trim:
        _trim(0)


_trim = None
_TRIM_MIN_BYTES = 4 << 20


def _advise(bufs, regions, advice, min_bytes):
    global _madvise
    if _madvise is None:
        _madvise = False
        import sys
        if sys.platform.startswith("linux"):
            try:
                import ctypes
                libc = ctypes.CDLL("libc.so.6")
                libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
                _madvise = libc.madvise
            except (OSError, AttributeError):
                pass
    if not _madvise:
        return
    page = 4096
    for kind, off, n in regions:
        size = 4 if kind == "j" else 8       # "j": int32 elements of I
        buf = bufs.get("i" if kind == "j" else kind)
        if buf is None or n * size < min_bytes:
            continue
        a = buf.ctypes.data + size * off
        lo = -(-a // page) * page
        hi = (a + size * n) // page * page
        if hi > lo:
            _madvise(lo, hi - lo, advice)   # advice: a failure changes nothing


def _all_zeros(init, kind):
    """Whether input ``init`` (an array, a value or an order's gathered array) leaves its
    field all zeros, bit for bit (:func:`_constant`)."""
    c = _constant(getattr(init, "a", init), kind)
    return np.isscalar(c) and c == 0 and not np.signbit(c)


def _constant(init, kind):
    """``init``, or its one value when an array holds nothing else (as the buffer's type,
    bit for bit): a constant input is filled, a zero one (overheads, handler times, kinds
    of a trace without them) not even that, so its pages are never touched."""
    if not isinstance(init, np.ndarray) or init.ndim != 1 or init.size < 2:
        return init
    if init.nbytes >= 1 << 20:
        from ccmod.compile import is_untouched_zeros
        if is_untouched_zeros(init):     # zeros, known without a page fault per page
            return np.float64(0.0) if kind == "f" else np.int64(0)
    x0 = init[0]
    if (init[:64] != x0).any() or init[-1] != x0:
        return init                  # most inputs: told apart by their first values
    if kind == "f":
        a = init.astype(np.float64, copy=False)
        bits = a.view(np.int64)      # floats by their bits: -0.0 is not 0.0
        if (bits != bits[0]).any() or (a[0] == 0 and bits[0] != 0):
            return init
        return a[0]
    if (init != x0).any():
        return init
    return np.int64(x0)


def new_logs():
    """Empty recordings: rank-state intervals, contention changes, signals (numba's C lists
    of fixed-width records, given to the compiled loop as their addresses:
    :mod:`ccmod.kernel.record`)."""
    from ccmod.kernel.record import empty_logs
    return Logs(*empty_logs())


#: the logs of a run that records nothing (the loop appends nothing): the same type as a
#: recorded run's, so both run one compiled entry
NO_LOGS = Logs(0, 0, 0)


def records(A, cls, n, ints, floats, init):
    """Lay out ``n`` records in arena ``A``, as struct ``cls`` (fields ``irec``, ``frec``):
    ``ints = (names, words)`` int64 fields in a record of that many words of ``I``,
    ``floats`` float64 fields in one of ``F`` (both 64-byte aligned), each field's
    initial value ``init[name]`` (0 when absent). Returns ``(recs, fields)``: the records'
    offsets and the strided spec of each field (Python's views of it), as the ranks'
    (:data:`RI`) and the resources' (:data:`CC_RES_I`) are laid out."""
    (inames, iw), (fnames, fw) = ints, floats
    irec, frec = np.zeros((n, iw), np.int64), np.zeros((n, fw))
    for rec, names in ((irec, inames), (frec, fnames)):
        for k, name in enumerate(names):
            rec[:, k] = init.get(name, 0)
    A.align("i", 8)                     # 64 bytes: a record's first words share one line
    A.align("f", 8)
    recs = A.struct(cls, irec=("i", n * iw, irec.ravel()), frec=("f", n * fw, frec.ravel()))
    fields = {name: ("%", "i", recs.irec + k, n, iw) for k, name in enumerate(inames)}
    fields.update({name: ("%", "f", recs.frec + k, n, fw) for k, name in enumerate(fnames)})
    return recs, fields


def rank_state(A, rank_ptr, nstates):
    n = len(rank_ptr) - 1
    # the ready ring holds at most 2n + 4 ranks; its capacity a power of two, so that a
    # place is the counter masked (``h & (nready - 1)``), not a division on the pop's path
    nready = 1 << (2 * n + 3).bit_length()
    init = {"pc": np.asarray(rank_ptr[:-1], np.int64), "block_state": -1, "paid_pc": -1,
            "finish": INF, "comp_end": INF}
    recs, fields = records(A, RankRec, n, (RANK_I, RI), (RANK_F, RF), init)
    # state_s: the records' RF_STATE.. words, an (n, nstates) strided view for Python
    for name in RANK_F[RF_STATE:RF_STATE + nstates]:
        del fields[name]
    return A.struct(
        RankSt, nranks=("v", n), nready=("v", nready), ri=("v", recs.irec), rf=("v", recs.frec),
        state_s=("%", "f", recs.frec + RF_STATE, n, RF, nstates), barrier=("i", n, 0),
        ready=("i", nready, 0), **fields)


def msg_state(A, M, nnodes, recycle=False):
    # am_waiter is written when a request is posted, before its reply's handler reads it:
    # left zero (not filled), its pages stay untouched in a trace without active messages
    K = M if recycle else 1
    A.align("f", MF)
    recs = A.struct(MsgRec, frec=("f", M * MF, INF), jrec=("j", M * MJ, -1))
    fields = {name: ("%", "f", recs.frec + k, M, MF) for k, name in enumerate(MSG_F)}
    fields.update({name: ("%", "j", recs.jrec + k, M, MJ) for k, name in enumerate(MSG_J)})
    return A.struct(
        MsgSt, am_waiter=("j", M, 0), bott=("j", M, -1), nic_next=("f", max(nnodes, 1), 0.0),
        refs=("i", K, 0), ret=("i", K, 0), **fields)


Routes = namedtuple("Routes", "route_ptr route_res okey")


def own_routes(A, route_ptr, route_res, okey=None):
    """Lay out routes (CSR) and order keys (default: the ids) for a sharing rule's state
    that does not share the engine's; returns the ``("=", ...)`` specs of ``route_ptr``,
    ``route_res``, ``route_end`` (``route_ptr[1:]``, no copy) and ``okey``."""
    M = len(route_ptr) - 1
    if okey is None:
        okey = np.arange(max(M, 0), dtype=np.int64)
    A.struct(Routes, route_ptr=("j", M + 1, np.asarray(route_ptr, np.int64)),
             route_res=("j", len(route_res), np.asarray(route_res)),
             okey=("i", M, okey))
    rp = A.where(Routes, "route_ptr")
    return rp, A.where(Routes, "route_res"), ("=", "j", rp[2] + 1, M), A.where(Routes, "okey")


def timers(A, nslots, first):
    """The timer queue: ``nslots`` slots (``2 n + 2 + 2 M`` for n ranks and M message
    slots), the ranks' ``2 n`` first, then the queue's two sentinels (``2 n``: time +inf,
    ``2 n + 1``: -inf, :mod:`ccmod.kernel.heaps`), the messages' from ``first``
    (``2 n + 2``) on. The queue's places are 1-based, and each holds up to twice the last
    timer's place and one: ``item`` has ``2 nslots`` of them.

    A message's timer takes a slot from a pool when it is armed and gives it back when it
    fires (``free``, a stack of ``nf[0]`` slots; ``nf[1]`` the first slot never used), so
    the slots touched are as many as the timers armed at once, not two per message (each
    message's own slot made every timer field's pages resident, page after page, as the
    run went on: four fields, 16 bytes per message each, under max-min's latency phase).
    """
    n = max(nslots, 1)
    # nothing to fill: a slot's time is written when it is armed, and a position of 0
    # (never armed) is told apart by the heap's item (heaps.timer_set); the sentinels are
    # set when the loop starts (heaps.timer_init)
    return A.struct(Timers, item=("i", 2 * n + 2, 0), pos=("i", n, 0), t=("f", n, 0.0),
                    seq=("i", n, 0), kind=("i", n, 0), len=("i", 1, 0),
                    msg=("i", n, 0), free=("i", n, 0),
                    nf=("i", 2, np.array([0, first], np.int64)))


def scalars(A):
    from ccmod.kernel.codes import NKS
    return A.struct(Scalars, ks=("i", NKS, 0), kf=("f", 2, 0.0))


def whole_program(nranks, rank_ptr, op, dur, rec_msg, wait_msg, wait_side, wa_ptr, wa_msg,
                  wa_side):
    """The :class:`Program` of a whole trace (every rank's records at once). ``op`` and
    ``rec_msg`` are read as int8 and int32 (:data:`ccmod.kernel.compiled.PROGRAM_DTYPES`):
    converted here if given wider (a copy), after checking that every value fits."""
    rank_ptr = np.asarray(rank_ptr, np.int64)
    op, rec_msg = _narrow(op, np.int8, "op code"), _narrow(rec_msg, np.int32, "message id")
    return Program(nranks, rank_ptr, op, dur, rec_msg, wait_msg, wait_side, wa_ptr, wa_msg,
                   wa_side, rank_ptr[1:], np.zeros(max(nranks, 1), np.int64))


def _narrow(a, dtype, what):
    """``a`` as ``dtype`` (no copy when it is already), refusing values that do not fit
    (a message id past 2^31 - 1: more messages than one whole-program run can hold)."""
    a = np.asarray(a)
    if a.dtype == dtype:
        return a
    info = np.iinfo(dtype)
    if a.size and (a.min() < info.min or a.max() > info.max):
        from ccmod.errors import TraceTooLargeError
        raise TraceTooLargeError(f"a {what} does not fit in {np.dtype(dtype).name} "
                                 f"({int(a.min())}..{int(a.max())})")
    return a.astype(dtype)
