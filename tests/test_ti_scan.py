"""The compiled one-pass TI reader (workloads/ti_scan.py) against the line parser.

Every input must give the same records, meta and notes as the line parser, or the same
one-line error. Besides the cases of tests/test_ti_fast.py (which run through this path
when numba's JIT is on), here: the numbers the scan reads itself or hands over (digit
strings of every length, floats, signs, huge values), ranks that make the per-rank
tables grow, blocks that go wholly to the line parser between fast ones (with ``init``
lines on both sides), side lists cut short, and the scan's own Python (``py_func``)
giving what its compiled code gives.
"""
from __future__ import annotations

import itertools
import random
import re

import numpy as np

import pytest
from hypothesis import given, settings, strategies as st
from conftest import examples

from ccmod.jit import jit_enabled
from ccmod.workloads import ti_fast, ti_scan
from ccmod.workloads import ti_compiled

from test_ti_fast import _clean_line, _line, _outcome

needs_jit = pytest.mark.skipif(not jit_enabled(), reason="the scan runs only with numba's JIT on")

_COUNTS = ["0", "7", "2495", "123456789012345", "1234567890123456", "99999999999999999",
           "3e4", "2.5", "1.", ".5", "1E+2", "1e", "1.2.3", "-3", "+3", "1e400", "nan", "x",
           "9007199254740992", "9007199254740991.0", "0.1e-3", "00000000000000000001", "e5"]
_TAGS = ["0", "-4", "12", "2147483647", "2147483648", "-2147483648", "-2147483649",
         "12345678901", "-", "x", "007", "1.0"]
_DTYPES = ["0", "6", "7", "07", "00", "59", "60", "100", "x", "-1"]


def _scan_line(rng: random.Random, nranks: int) -> str:
    """A line aimed at the scan's field rules: mostly compute/send/recv, odd fields."""
    r = rng.randrange(nranks)
    peer = str(rng.randrange(nranks)) if rng.random() < 0.9 else rng.choice(
        ["2147483648", "x", "-1", "1e0", "12345678901"])
    k = rng.random()
    if k < 0.25:
        flops = rng.choice(_COUNTS + [repr(rng.uniform(0, 1e9)), str(rng.randrange(10**12))])
        return f"{r} compute {flops}"
    act = rng.choice(["send", "recv"])
    fields = rng.choice([
        [peer], [peer, rng.choice(_COUNTS)],
        [peer, rng.choice(_TAGS), rng.choice(_COUNTS)],
        [peer, rng.choice(_COUNTS), rng.choice(_DTYPES)],
        [peer, rng.choice(_TAGS), rng.choice(_COUNTS), rng.choice(_DTYPES)],
        [peer, rng.choice(_TAGS), rng.choice(_COUNTS), rng.choice(_DTYPES), "extra"]])
    return " ".join([str(r), act, *fields])


def _text(rng: random.Random, nranks: int, n: int) -> str:
    lines = []
    for _ in range(n):
        k = rng.random()
        if k < 0.6:
            lines.append(_scan_line(rng, nranks))
        elif k < 0.9:
            lines.append(_clean_line(rng, nranks, []))
        elif k < 0.95:
            lines.append(f"{rng.randrange(nranks)} init" + rng.choice(["", " 1"]))
        else:
            lines.append(_line(rng, nranks))
    sep = rng.choice(["\n", "\r\n"])
    body = sep.join(ln.replace(" ", rng.choice([" ", "\t", "  "]), 1) for ln in lines)
    return body + rng.choice(["", sep, " # the end" + sep])


def _same(texts, nranks=None, **opts):
    slow = _outcome(texts, False, nranks, **opts)
    fast = _outcome(texts, True, nranks, **opts)
    assert fast == slow
    return slow


@needs_jit
@pytest.mark.parametrize("seed", range(25))
def test_scan_fields_read_the_same(seed, monkeypatch):
    rng = random.Random(500 + seed)
    monkeypatch.setattr(ti_fast, "BLOCK_BYTES", rng.choice([61, 300, 1 << 20]))
    nranks = rng.choice([1, 3, 70, 200])        # > 64 ranks: the per-rank tables grow
    text = _text(rng, nranks, rng.randint(20, 300))
    opts = rng.choice([{}, {"syntax": "untagged"}, {"syntax": "tagged"}, {"elem_bytes": 4}])
    _same([text], **opts)
    _same([text], nranks=nranks, **opts)
    # most lines of a real trace are clean: the same with every odd line dropped
    clean = "\n".join(_clean_line(rng, nranks, []) for _ in range(200))
    assert _same([clean], **opts)[0] in ("ok", "error")


@needs_jit
def test_scan_takes_records_itself(monkeypatch):
    # the fast path really is the scan, and clean lines become records without the parser
    calls = []
    real = ti_compiled.scan_lines
    monkeypatch.setattr(ti_compiled, "scan_lines", lambda *a: calls.append(1) or real(*a))
    fed = []
    from ccmod.workloads.ti_parse import TIParser
    real_feed = TIParser.feed

    def feed(self, lines, fname, untagged=False, numbered=None):
        numbered = None if numbered is None else list(numbered)
        fed.extend(numbered or [])
        return real_feed(self, lines, fname, untagged, numbered=numbered)

    monkeypatch.setattr(TIParser, "feed", feed)
    text = "".join(f"{r} send {1 - r} 0 {10 + r}\n{1 - r} recv {r} 0 {10 + r}\n"
                   f"{r} compute 2.5e3\n" for r in (0, 1) for _ in range(50))
    got = _same(["0 init\n" + text])
    assert got[0] == "ok" and calls
    # the line parser of the fast way saw only the init line (the slow way saw all)
    assert fed.count((1, "0 init")) == 1 and len(fed) == 1


@needs_jit
def test_bad_rank_blocks_between_fast_ones(monkeypatch):
    # '1.0' is rank 1 to the line parser, not to the scan: that block is the parser's, and
    # the element size set by an init inside it holds in the next blocks
    monkeypatch.setattr(ti_fast, "BLOCK_BYTES", 64)
    lines = []
    for i in range(40):
        lines += [f"0 send 1 0 {i}", f"1 recv 0 0 {i}", "0 compute 7"]
        if i == 10:
            lines += ["1.0 init 5", "0 init"]
        if i == 25:
            lines += ["1 init", "1.0 compute 3", "0 init 1"]
    for opts in ({}, {"elem_bytes": 2}):
        assert _same(["\n".join(lines)], **opts)[0] == "ok"
        assert _same(["\n".join(lines)], nranks=2, **opts)[0] == "ok"


@needs_jit
def test_side_lists_cut_short(monkeypatch):
    # with side lists of two rows, blocks end early whenever one fills: the same records
    monkeypatch.setattr(ti_scan, "side_rows", lambda block_bytes: 2)
    rng = random.Random(9)
    for _ in range(6):
        text = _text(rng, 5, 150)
        _same([text])
        _same([text, text], nranks=5)


@needs_jit
def test_columns_made_anew(monkeypatch):
    # a new set of record columns every block (earlier blocks' records are views of the
    # old ones): the same records
    monkeypatch.setattr(ti_scan, "COLUMN_ROWS", 1)
    monkeypatch.setattr(ti_fast, "BLOCK_BYTES", 200)
    rng = random.Random(12)
    text = "\n".join(_clean_line(rng, 3, []) for _ in range(400))
    assert _same([text], nranks=3)[0] in ("ok", "error")
    _same([_text(rng, 3, 200)])


@needs_jit
def test_huge_and_sparse_ranks(monkeypatch):
    # ranks past the tables' bound: their blocks go to the line parser (same error)
    monkeypatch.setattr(ti_scan, "MAX_TABLE", 100)
    text = "\n".join(f"{r} compute 1\n{r} send {r} 0 5\n{r} recv {r} 0 5"
                     for r in list(range(150)))
    assert _same([text])[0] == "ok"
    assert _same(["0 compute 1\n2147483647 compute 1\n"])[0] == "error"
    assert _same(["0 compute 1\n2147483648 compute 1\n"])[0] == "error"


@needs_jit
def test_compiled_scan_equals_its_python(monkeypatch):
    # the scan's own Python (what NUMBA_DISABLE_JIT=1 would run) gives the same records
    rng = random.Random(4)
    texts = [_text(rng, 4, 60) for _ in range(4)]
    want = [_outcome([t], True) for t in texts]
    monkeypatch.setattr(ti_compiled, "scan_lines", ti_compiled.scan_lines.py_func)
    for t, w in zip(texts, want):
        assert _outcome([t], True) == w


def _combos(full, *fields):
    """Every combination of the fields' values (``full``), else each value of each field
    at least once, the other fields cycling through theirs."""
    if full:
        return list(itertools.product(*fields))
    return [tuple(f[(i if k == j else i + k) % len(f)] for k, f in enumerate(fields))
            for j, field in enumerate(fields) for i in range(len(field))]


# the default run reads each value of each field in each form (~140 forms); the slow twin
# (CI) every combination of them (~2000 forms, ~8000 parses, ~1.9 s here)
@needs_jit
@pytest.mark.parametrize("full", [False, pytest.param(True, marks=pytest.mark.slow)],
                         ids=["each-value", "every-combination"])
def test_every_field_form_line_by_line(full):
    # each odd send/recv/compute form on its own (an error stops a file at its line)
    forms = [f"0 compute {c}" for c in _COUNTS]
    for act in ("send", "recv"):
        forms += [f"0 {act} 1", f"0 {act} x 5"] + [f"0 {act} 1 {c}" for c in _COUNTS]
        forms += [f"0 {act} 1 {t} {c}"
                  for t, c in _combos(full, _TAGS + _COUNTS, _COUNTS[:8] + _DTYPES)]
        forms += [f"0 {act} 1 {t} {c} {d}"
                  for t, c, d in _combos(full, _TAGS, ("5", "2.5", "x"), _DTYPES)]
    seen = set()
    for form in forms:
        for opts in ({}, {"syntax": "untagged"}):
            got = _same([f"1 init 1\n{form}\n1 compute 1 # done"], **opts)
            seen.add(got[0])
    assert seen == {"ok", "error"}


def _decimal(rng: random.Random) -> str:
    """A number as traces write them, or close to one (odd forms too)."""
    k = rng.random()
    if k < 0.3:
        return repr(rng.uniform(0, 10 ** rng.randint(0, 12)))
    if k < 0.5:
        return f"{rng.uniform(0, 1e6):.{rng.randint(0, 6)}f}"
    if k < 0.7:
        return f"{rng.uniform(0, 1e6):.{rng.randint(0, 10)}{rng.choice('eE')}}"
    digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(0, 20)))
    pos = rng.randint(0, len(digits))
    tok = digits[:pos] + rng.choice([".", "", ""]) + digits[pos:]
    if rng.random() < 0.5:
        tok += rng.choice("eE") + rng.choice(["", "+", "-"]) + str(rng.randint(0, 30))
    return tok + rng.choice(["", "", "", "x", ".", "e", "1_0"])


@pytest.mark.parametrize("py", [False, True])
def test_exact_floats_equal_float(py):
    # whatever the compiled fast path claims, float() gives bit for bit
    rng = random.Random(11)
    toks = [_decimal(rng) for _ in range(4000 if not py else 600)]
    toks += [repr(rng.uniform(0, 1e6)) for _ in range(300)]
    toks += [f"{rng.randrange(1, 10**18)}e{rng.randint(-340, 300)}" for _ in range(300)]
    toks += ["1e-400", "1e309", "2.2250738585072011e-308", "1.7976931348623157e308",
             "999999999999999999", "1000000000000000000", "123456789012345678e-5", "3e23",
             "0", "0.0", "0e999", "1.", ".5", "1e22", "1e23", "9007199254740992",
             "9007199254740993", "0.1", "312.5", "1e-22", "1e-23", "00012.50", ".", "e5",
             "1e", "-1", "+1", "1.2.3", "123456789012345.6", "4.35e+06"]
    toks = " ".join(toks).split()       # (a generated token may be empty)
    text = " ".join(toks).encode()
    buf = np.frombuffer(text, np.uint8)
    s = np.array([m.start() for m in re.finditer(rb"\S+", text)], np.int64)
    e = np.array([m.end() for m in re.finditer(rb"\S+", text)], np.int64)
    val, ok = np.empty(len(s)), np.empty(len(s), np.bool_)
    fn = ti_compiled.exact_floats
    (getattr(fn, "py_func", fn) if py else fn)(buf, s, e, ti_scan._POW10, *ti_scan._pow5(),
                                                   val, ok)
    claimed = 0
    for t, v, good in zip(toks, val.tolist(), ok.tolist()):
        if good:
            assert v == float(t) and str(v) == str(float(t)), t
            claimed += 1
    assert claimed > len(toks) // 2
    # Clinger's cases and Eisel-Lemire's (17-digit reprs, 1e23) are both claimed
    assert ok[toks.index("312.5")] and ok[toks.index("3e23")]
    reprs = [i for i, t in enumerate(toks) if len(t.replace(".", "").lstrip("0")) >= 16
             and t.replace(".", "").isdigit()]
    assert reprs and ok[reprs].mean() > 0.9


# -- the scan's own reader of the common lines (8 bytes at a time) ---------------------
_TAIL = "\n# " + "-" * 70 + "\n"    # the lines before it start >= FAST_REACH bytes from the end


def _halfway(rng: random.Random) -> str:
    """A plain decimal (<= 18 digits) at or next to the midpoint of two adjacent doubles:
    where Eisel-Lemire cannot decide and the general conversion must."""
    from decimal import Decimal
    import math
    d = rng.uniform(0, 10 ** rng.randint(0, 12))
    mid = (Decimal(d) + Decimal(math.nextafter(d, math.inf))) / 2
    digits = rng.randint(15, 18)
    q = Decimal(10) ** (mid.adjusted() - digits + 1)
    m = mid.quantize(q, rounding=rng.choice(["ROUND_FLOOR", "ROUND_CEILING", "ROUND_HALF_EVEN"]))
    m += q * rng.choice([0, 0, 0, 1, -1])
    s = format(max(m, Decimal(0)), "f")
    return s if rng.random() < 0.8 else s.rstrip("0")


def _flops(rng: random.Random, odd: bool) -> str:
    """A flops or count field: mostly valid; ``odd``: now and then not a number."""
    k = rng.random()
    if k < 0.3:
        return repr(rng.uniform(0, 10 ** rng.randint(0, 15)))       # as traces write them
    if k < 0.5:
        return _halfway(rng)
    if k < 0.6:
        return str(rng.randrange(10 ** rng.randint(1, 18)))         # 1..18 digits
    lead, frac = rng.randint(0, 12), rng.randint(0, 19)
    dot = rng.choice([".", ".", ""])
    tok = ("0" * rng.choice([0, 0, 1, 5]) + "".join(rng.choice("0123456789") for _ in range(lead))
           + dot + "".join(rng.choice("0123456789") for _ in range(frac if dot else 0)))
    tok = (tok if tok.strip(".") else "1.") + rng.choice(["", "", "", "e5", "e-3", " ", "\t"])
    return tok + rng.choice(["x", "."]) if odd and rng.random() < 0.1 else tok


def _fast_line(rng: random.Random, nranks: int, odd: bool) -> str:
    """A line of the scan's common shapes, or close to one (other spacing, fields, forms);
    ``odd``: wrong fields too (an error ends the file there)."""
    r = str(rng.randrange(nranks)).zfill(rng.choice([1, 1, 1, 3, 8]))
    sp = rng.choice([" "] * 12 + ["\t", "  "])
    if rng.random() < 0.5:
        return f"{r} compute{sp}{_flops(rng, odd)}"
    num = lambda: str(rng.randrange(10 ** rng.randint(1, 9))).zfill(rng.choice([0, 0, 2, 8]))
    peer = str(rng.randrange(nranks)).zfill(rng.choice([1, 1, 7, 8]))
    count = rng.choice([num(), num(), str(rng.randrange(10 ** rng.randint(8, 15))),
                        repr(rng.uniform(0, 1e6)), _halfway(rng)[:16], "2.5", ".5", "5.", "3e4"])
    count = count + "x" if odd and rng.random() < 0.1 else count
    act = rng.choice(["send", "recv"] * 10 + (["sendx", "recv2"] if odd else []))
    fields = [peer, rng.choice([num(), num(), "-3", "0"]), count]
    if rng.random() < 0.1:
        fields = rng.choice([[peer, count], fields + ["7"], [peer] if act == "recv" else fields])
    return sp.join([r, act, *fields])


@needs_jit
@settings(max_examples=examples(60), deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1))
def test_fast_lines_read_the_same(seed):
    # the common shapes with numbers of every length and form (plain decimals near a
    # halfway point, leading zeros, '.5', '5.', 16+ digits, exponents), odd ranks and tags
    rng = random.Random(seed)
    nranks = rng.choice([1, 2, 5])
    first = [f"{r} compute 1" for r in range(nranks)]
    texts = []
    for odd in (False, True):
        lines = first + [_fast_line(rng, nranks, odd and rng.random() < 0.02)
                         for _ in range(rng.randint(1, 150))]
        if rng.random() < 0.3:
            lines.insert(rng.randrange(len(lines) + 1), f"{rng.randrange(nranks)} init")
        texts.append("\n".join(lines) + rng.choice([_TAIL, "\n", ""]))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ti_fast, "BLOCK_BYTES", rng.choice([97, 1 << 20]))
        for opts in ({}, {"syntax": "untagged"}, {"elem_bytes": 4}):
            got = _same(texts[:1], **opts)[0]
            assert got == "ok" or opts == {"syntax": "untagged"}   # (count read as dtype)
            _same(texts[1:], **opts)
            _same(texts, nranks=nranks, **opts)


@needs_jit
def test_fast_floats_need_no_pending_list(monkeypatch):
    # traces' 16-17 digit floats are converted inside the pass (exact_floats: none left),
    # bit for bit float()'s; an undecided one still goes to the general conversion
    rng = random.Random(3)
    toks = [repr(rng.uniform(0, 1e6)) for _ in range(500)] + ["0.5", "5.", ".5", "007.250"]
    calls = []
    real = ti_compiled.exact_floats
    monkeypatch.setattr(ti_compiled, "exact_floats", lambda *a: calls.append(len(a[1])) or real(*a))
    text = "".join(f"0 compute {t}\n0 send 0 0 5\n0 recv 0 0 5\n" for t in toks) + _TAIL
    got = _same([text])
    assert got[0] == "ok" and not calls
    _same(["0 compute 900719925474099.3\n0 compute 0.30000000000000004441\n" + _TAIL])


@needs_jit
def test_lead_digits_swar():
    # 8 bytes at a time: the count and value of the leading digits, for every length and
    # whatever follows (any byte, >= 0xFA included: its carry must not hide it)
    rng = random.Random(8)
    f = ti_compiled._lead_digits
    for _ in range(3000):
        n = rng.randint(0, 8)
        b = bytes(rng.choice(b"0123456789") for _ in range(n))
        b += bytes(rng.choice([32, 10, 46, 47, 58, 0x3A, 0x3F, 0x40, 0xFA, 0xFF, 0x2F, 0x30,
                               rng.randrange(256)]) for _ in range(8 - n))
        want = len(b) - len(b.lstrip(b"0123456789")) if b[:1].isdigit() else 0
        want = min(want, 8)
        v, nd = f(np.uint64(int.from_bytes(b, "little")))
        assert (v, nd) == (int(b[:want]) if want else 0, want), b


def test_count_lines():
    for text in (b"", b"\n", b"a", b"a\n", b"a\nb", b"\n\n", b"0 compute 1\n" * 100000 + b"x"):
        buf = np.frombuffer(text, np.uint8)
        assert ti_scan._count_lines(buf) == len(text.decode().splitlines())


@needs_jit
def test_columns_sized_by_lines(monkeypatch):
    # one set of columns for the whole file (its lines bound its records), pages mapped at
    # once, however small the blocks; the same records
    made = []
    real = ti_scan._fresh
    monkeypatch.setattr(ti_scan, "_fresh", lambda shape, dtype, populate=False:
                        made.append((shape, populate)) or real(shape, dtype, populate))
    monkeypatch.setattr(ti_fast, "BLOCK_BYTES", 300)
    rng = random.Random(5)
    for end in ("", "\n"):
        made.clear()
        text = "\n".join(_clean_line(rng, 3, []) for _ in range(3000)) + end
        assert _same([text], nranks=3)[0] in ("ok", "error")
        cols = [shape for shape, populate in made if populate]
        assert cols == [(2, 3001), (3, 3001), 3001, 3001]


@needs_jit
def test_intrinsic_stand_ins():
    # the plain Python stand-ins NUMBA_DISABLE_JIT=1 uses give what numba's intrinsics do
    from numba import njit
    tc = ti_compiled
    both = njit(lambda x: (tc.trailing_zeros(x), tc.leading_zeros(x), tc.viewer(x, np.float64)))
    rng = random.Random(2)
    xs = [0, 1, 2 ** 63, 2 ** 64 - 1] + [rng.getrandbits(rng.randint(1, 64)) for _ in range(200)]
    for x in xs:
        x = np.uint64(x)
        tz, lz, v = both(x)
        assert (tz, lz) == (tc._py_trailing_zeros(x), tc._py_leading_zeros(x))
        assert np.float64(v).tobytes() == tc._py_viewer(x, np.float64).tobytes()


@needs_jit
def test_few_pending_numbers_by_the_cast_alone(monkeypatch):
    # a block with a few numbers left over (exponents, long or undecided decimals) converts
    # them with numpy's cast only; with many, exact_floats first: the same records
    calls = []
    real = ti_compiled.exact_floats
    monkeypatch.setattr(ti_compiled, "exact_floats", lambda *a: calls.append(len(a[1])) or real(*a))
    short = ["3e4", "2.5E-3", "1e15", "1234567890123456789", "0.30000000000000004441",
             ".5e1", "9007199254740993.0e0", "4.35e+06", "0" * 30 + "7.25"]
    long = ["0" * 45 + "7", "0." + "0" * 40 + "5"]  # > 40 bytes: exact_floats' to read
    for toks, want in ((short[:3], 0), (short[:2] + long[:1], 1), (short[:1] + long[1:], 1),
                       (short * 12, 1)):
        calls.clear()
        text = "".join(f"0 compute {t}\n0 send 0 0 {t[:15]}\n" for t in toks) + _TAIL
        assert _same([text])[0] == "ok"
        assert len(calls) == want, (toks, calls)


@needs_jit
def test_the_scans_rank_rows_are_given_back_once_built(tmp_path):
    # the Workload keeps views of the scan's other rows; the rank row's pages are freed
    # after the build (its values zero then), and the Workload's columns are untouched
    import random
    from ccmod.workloads import read_workload, ti_scan
    rng = random.Random(2)
    path = tmp_path / "big.ti"
    path.write_text("".join(f"0 send 1 0 {rng.randint(1, 999)}\n1 recv 0 0 0\n"
                            for _ in range(60000)))
    rows = []
    real = ti_scan._release
    ti_scan._release = lambda row: rows.append(row) or real(row)
    try:
        w = read_workload(path)
    finally:
        ti_scan._release = real
    # released: reads as zeros (but the last page, shared with the next row)
    assert rows and all(not r[:len(r) - 1024].any() for r in rows)
    assert w.nrecords == 120000 and (w.peer[0], w.peer[-1]) == (1, 0)
    assert w.line.tolist() == [2 * i + 1 for i in range(60000)] + [2 * i + 2 for i in range(60000)]
