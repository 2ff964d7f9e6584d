"""The vectorised TI reader (workloads/ti_fast.py) against the line parser it shortcuts.

For every input -- the shipped TI samples, generated traces full of odd fields, and
mutated samples -- both ways must give the same records, meta and notes, or the same
one-line error (file, line, message). Blocks are made tiny so that block boundaries,
per-rank state carried across blocks and the line-number merge are exercised.
"""
from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from ccmod.errors import CcmodInputError
from ccmod.workloads import read_workload, ti_fast
from ccmod.workloads.ti import _feed_text
from ccmod.workloads.ti_parse import TIParser, looks_untagged

from fuzzkit import mutate

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = sorted(ROOT.glob("traces/*.ti")) + sorted(ROOT.glob("tests/data/smpi-npb/*_files/*.txt")) \
    + [ROOT / "traces" / "simgrid-actions_with_isend.txt", ROOT / "tests" / "data" / "tiny3.ti"]
COLS = ("rank_ptr", "op", "peer", "tag", "nbytes", "duration_s", "req", "line", "file_id")


def _outcome(texts, fast: bool, nranks=None, **opts):
    """Parse files ``texts`` one way; the Workload's arrays and meta, or the error."""
    p = TIParser(nranks, **opts)
    try:
        for i, text in enumerate(texts):
            name = f"f{i}.ti"
            if fast:
                data = ti_fast.to_bytes(text)
                if data is None:    # the fast path declines: the line parser reads it
                    p.feed(text.splitlines(), name, untagged=looks_untagged(text))
                    continue
                assert ti_fast.untagged(data) == looks_untagged(text)
                ti_fast.feed(p, data, name, ti_fast.untagged(data), ti_fast.LazyLines(text))
            else:
                p.feed(text.splitlines(), name, untagged=looks_untagged(text))
        w = p.finish("trace")
    except CcmodInputError as exc:
        return ("error", str(exc))
    return ("ok", {k: (getattr(w, k).dtype.str, getattr(w, k).tolist()) for k in COLS},
            w.nranks, w.files, repr(sorted(w.meta.items())))


def _same(texts, nranks=None, **opts):
    slow = _outcome(texts, False, nranks, **opts)
    fast = _outcome(texts, True, nranks, **opts)
    assert fast == slow
    return slow


@pytest.fixture(autouse=True)
def tiny_blocks(monkeypatch):
    monkeypatch.setattr(ti_fast, "BLOCK_BYTES", 97)


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_samples_read_the_same(path):
    got = _same([path.read_text()])
    # a per-rank file alone lacks rank 0: the same gap error both ways
    assert got[0] == "ok" or "_files" in str(path)


def test_per_rank_files_read_the_same():
    files = sorted((ROOT / "tests/data/smpi-npb/MG.S.4_files").glob("*.txt"))
    texts = [f.read_text() for f in files]
    assert _same(texts, nranks=len(texts))[0] == "ok"
    assert _same(texts, nranks=len(texts), wait_ids="rank")[0] == "error"


_ACTIONS = ["compute", "send", "recv", "isend", "irecv", "wait", "waitall", "barrier", "init",
            "finalize", "bcast", "allreduce", "sleep", "Isend", "Irecv", "comm_size", "test",
            "reduce", "compute", "send", "recv", "send", "recv"]
_NUMS = ["0", "1", "2", "3", "7", "12", "1e3", "2.5", "1.", ".5", "1E+2", "-1", "+3", "007",
         "99999999999999999", "2147483648", "4294967296", "1e400", "nan", "x", "-", "1e",
         "65536", "123456789012345678901", "9e18", "8999999999999999999", "60", "59", "6",
         "-2147483648", "-2147483649", "1_0", "0.0", "3.0"]


def _line(rng: random.Random, nranks: int) -> str:
    if rng.random() < 0.04:
        return rng.choice(["", "   ", "# a comment", "\t", "0", "x compute 1"])
    r = str(rng.randrange(nranks)) if rng.random() < 0.97 else rng.choice(["-1", "1.0", "01"])
    act = rng.choice(_ACTIONS)
    nargs = rng.choice([0, 1, 2, 3, 3, 3, 4, 5])
    args = [str(rng.randrange(nranks)) if i == 0 and rng.random() < 0.8
            else (str(rng.randint(0, 3)) if rng.random() < 0.5 else rng.choice(_NUMS))
            for i in range(nargs)]
    sep = rng.choice([" ", " ", " ", "  ", "\t"])
    tail = rng.choice(["", "", "", " ", " # note", "#x"])
    return sep.join([r, act, *args]) + tail


def _clean_line(rng: random.Random, nranks: int, seq: list) -> str:
    """A well-formed line (most of a real trace): compute, send/recv pairs by channel."""
    r = rng.randrange(nranks)
    k = rng.random()
    if k < 0.3:
        return f"{r} compute {rng.choice(['1e6', '2500', repr(rng.uniform(0, 1e5))])}"
    peer = rng.randrange(nranks)
    size = rng.choice(["8", "1024", "65536", "3e4"])
    if k < 0.65:
        return rng.choice([f"{r} send {peer} 0 {size}", f"{r} send {peer} {size}",
                           f"{r} send {peer} 3 {size} 0", f"{r} send {peer} 1 {size} 9"])
    return rng.choice([f"{r} recv {peer} 0 {size}", f"{r} recv {peer}",
                       f"{r} recv {peer} {size} 1", f"{r} recv {peer} -4 {size} 2"])


@pytest.mark.parametrize("seed", range(40))
def test_generated_traces_read_the_same(seed):
    rng = random.Random(seed)
    nranks = rng.choice([1, 2, 3, 4])
    clean = [_clean_line(rng, nranks, []) for _ in range(rng.randint(5, 60))]
    for _ in range(rng.randint(0, 4)):    # a few odd lines anywhere
        clean.insert(rng.randrange(len(clean) + 1), _line(rng, nranks))
    if rng.random() < 0.3:
        clean.insert(0, f"{rng.randrange(nranks)} init {'1' if rng.random() < 0.5 else ''}")
    nl = rng.choice(["\n", "\n", "\r\n"])
    text = nl.join(clean) + rng.choice(["", nl])
    opts = rng.choice([{}, {"syntax": "untagged"}, {"elem_bytes": 4}, {"wait_ids": "pid"},
                       {"collectives": {"allreduce": "ring"}}])
    _same([text], **opts)
    _same([text], nranks=nranks, **opts)


@pytest.mark.parametrize("seed", range(30))
def test_mutated_samples_read_the_same(seed):
    rng = random.Random(1000 + seed)
    src = rng.choice(SAMPLES)
    ops = [(rng.randrange(64), rng.randrange(1 << 16), rng.randrange(64))
           for _ in range(rng.randint(1, 4))]
    data = mutate(src.read_bytes(), ops)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    _same([text])


def test_the_reader_takes_the_fast_path_on_large_files(tmp_path, monkeypatch):
    # a large file goes through ti_fast.feed, and the result equals the line parser's
    calls = []
    real = ti_fast.feed
    monkeypatch.setattr(ti_fast, "feed", lambda *a: calls.append(1) or real(*a))
    rng = random.Random(7)
    body = "\n".join(_clean_line(rng, 4, []) for _ in range(6000))
    path = tmp_path / "big.ti"
    path.write_text("0 init\n1 init 1\n" + body + "\n")
    monkeypatch.setattr(ti_fast, "FAST_MIN_BYTES", 1 << 16)
    assert path.stat().st_size >= ti_fast.FAST_MIN_BYTES
    try:
        w = read_workload(path)
    except CcmodInputError as exc:    # random pairs rarely balance: same error both ways
        w, err = None, str(exc)
    assert calls
    monkeypatch.setattr(ti_fast, "FAST_MIN_BYTES", 1 << 40)
    try:
        w2 = read_workload(path)
    except CcmodInputError as exc:
        w2, err2 = None, str(exc)
    if w is None:
        assert w2 is None and err == err2
    else:
        for k in COLS:
            assert np.array_equal(getattr(w, k), getattr(w2, k)), k
        assert w.meta == w2.meta


@pytest.mark.parametrize("variant", ["plain", "crlf", "lone-cr", "mixed-eol", "non-ascii", "bom",
                                     "vtab", "nul", "bad-utf8", "old-syntax", "gzip"])
def test_files_read_as_text_mode_reads_them(tmp_path, variant):
    # the reader takes a file's bytes (no decode for ASCII); the result -- records, meta or
    # the one-line error -- must be what parsing the file's text-mode contents (UTF-8,
    # universal newlines) gives, on large files (fast path) and small ones
    import gzip
    rng = random.Random(11)
    lines = ["0 init", "1 init"]
    for i in range(4000):
        lines += [f"0 send 1 {i % 5} {rng.randint(1, 9999)}", f"1 recv 0 {i % 5} 0",
                  f"1 compute {rng.random() * 1e6!r}"]
    eol = {"crlf": "\r\n", "lone-cr": "\r"}.get(variant, "\n")
    text = eol.join(lines) + eol
    if variant == "mixed-eol":
        text = text.replace("\n1 recv", "\r\n1 recv").replace("\n1 compute", "\r1 compute")
    if variant == "non-ascii":
        text = text.replace("0 send 1 3", "0 send 1 3 # \u00e9t\u00e9", 5)
    if variant == "bom":
        text = "\ufeff" + text
    if variant == "vtab":
        text = text.replace("1 recv 0 2 0\n", "1 recv 0 2 0\x0b\n", 3)
    if variant == "nul":
        text = text[:5000] + "\x00" + text[5000:]
    if variant == "old-syntax":
        text = text.replace(" init\n", " init\n0 Isend 1 0 8\n0 wait\n", 1)
    data = text.encode("utf-8")
    if variant == "bad-utf8":
        data = data[:7000] + b"\xff\xfe" + data[7000:]
    outcomes = []
    for size in (len(data), 300):
        path = tmp_path / ("t.ti.gz" if variant == "gzip" else "t.ti")
        body = data[:size]
        if size < len(data):
            body = body[:body.rfind(b"\n") + 1] if b"\n" in body else body
        path.write_bytes(gzip.compress(body) if variant == "gzip" else body)
        opener = gzip.open if variant == "gzip" else open
        try:
            with opener(path, "rt", encoding="utf-8") as f:
                want_text = f.read()
        except UnicodeDecodeError:
            want_text = None
        try:
            got = ("ok", read_workload(path))
        except CcmodInputError as exc:
            got = ("error", str(exc))
        if want_text is None:
            assert got[0] == "error" and "cannot decode as UTF-8" in got[1]
            continue
        if "\x00" in want_text:
            assert got[0] == "error" and "contains NUL bytes" in got[1]
            continue
        p = TIParser(None)
        try:
            p.feed(want_text.splitlines(), str(path), untagged=looks_untagged(want_text))
            want = ("ok", p.finish(str(path)))
        except CcmodInputError as exc:
            want = ("error", str(exc))
        assert got[0] == want[0], (got, want)
        outcomes.append(got[0])
        if got[0] == "error":
            assert got[1] == want[1]
            continue
        for k in COLS:
            assert np.array_equal(getattr(got[1], k), getattr(want[1], k)), (variant, k)
    # a BOM is part of the first rank field and an old-syntax marker changes how every
    # 5-field send reads: errors, the same both ways; the others read
    if variant not in ("nul", "bad-utf8", "bom", "old-syntax"):
        assert outcomes == ["ok", "ok"], outcomes


def test_feed_text_declines_control_bytes():
    # a vertical tab is whitespace to str.split(): the line parser keeps that rule
    assert ti_fast.to_bytes("0 compute 1\x0b\n") is None
    assert ti_fast.to_bytes("0 compute 1\r\n1 compute 2\n") == b"0 compute 1\n1 compute 2\n"
    assert ti_fast.to_bytes("0 compute 1\r1 compute 2\n") is None
    p = TIParser(None)
    _feed_text(p, "0 compute 1\x0b\n0 send 0 1\n0 recv 0 1\n", "vt.ti")
    assert p.finish("vt.ti").nrecords == 3


def test_digit_reader_agrees_with_int():
    # the 8-bytes-at-once digit reader: every length, digits next to ':' '/' and others
    rng = random.Random(3)
    alphabet = "0123456789" * 6 + "/:.-eE+x\x7f "
    toks = [str(v) for v in (0, 7, 10, 99999999, 100000000, 123456789, 2**31 - 1, 2**31)]
    toks += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 17)))
             for _ in range(3000)]
    toks = [t.replace(" ", "0") for t in toks]
    text = " ".join(toks)
    T = ti_fast._Tokens(text.encode())
    assert len(T.st) == len(toks)
    for maxlen in (2, 8, 10, 15):
        val, ok = ti_fast._digits(T, T.st, T.en, maxlen)
        for t, v, good in zip(toks, val.tolist(), ok.tolist()):
            want = t.isdigit() and len(t) <= maxlen
            assert good == want, (t, maxlen)
            if want:
                assert v == int(t), t


def test_compiled_tokens_and_digits_equal_numpy(monkeypatch):
    # the compiled tokeniser and digit reader (ccmod.workloads.ti_compiled) give what the
    # numpy versions (used under NUMBA_DISABLE_JIT=1) give, on odd bytes too
    rng = np.random.default_rng(7)
    alphabet = np.frombuffer(b"0123456789 \t\n-.ea#", np.uint8)
    for n in (0, 1, 2, 50, 3000):
        data = rng.choice(alphabet, n).tobytes() + b"\n12 345678901 00000000000000001\n"
        data += b"x" * int(rng.integers(0, 3))
        for jit in (True, False):
            if not jit:
                monkeypatch.setattr(ti_fast, "_compiled", lambda name: None)
            T = ti_fast._Tokens(data)
            got = (T.st.tolist(), T.en.tolist(), T.nl.tolist(), T.first.tolist(),
                   T.line_idx.tolist(), T.ntok.tolist())
            digits = [ti_fast._digits(T, T.st, T.en, m) for m in (2, 10, 15)]
            if jit:
                ref_t, ref_d = got, digits
            else:
                assert got == ref_t
                for (v, ok), (rv, rok) in zip(digits, ref_d):
                    assert ok.tolist() == rok.tolist() and v[ok].tolist() == rv[rok].tolist()
            monkeypatch.undo()
    assert sum(ok.sum() for _, ok in ref_d) > 0      # some tokens were numbers


def test_byte_census_flags_each_kind():
    from ccmod.workloads import ti_bytes as tb
    base = b"0 send 1 0 8\n0 compute 1e6\t# E is fine\n"
    cases = {b"": (), b"\xc3\xa9": (tb.C_HIGH,), b"\x0b": (tb.C_CTRL,), b"\x7f": (tb.C_CTRL,),
             b"\x1f": (tb.C_CTRL,), b"I": (tb.C_UPPER,), b"Z": (tb.C_UPPER,), b"E": (),
             b"\r": (tb.C_CR,), b"\x00": (tb.C_NUL, tb.C_CTRL)}
    for extra, want in cases.items():
        for at in (0, 17, len(base)):          # the odd byte at the start, inside, at the end
            data = base[:at] + extra + base[at:]
            out = np.zeros(5, np.uint8)
            tb.census(np.frombuffer(data * 9, np.uint8), out)
            assert {i for i in range(5) if out[i]} == set(want), (extra, at)


def test_large_ascii_files_are_read_into_a_mapping(tmp_path, monkeypatch):
    # a large ASCII file comes as a MappedText and reads exactly as its plain bytes
    from ccmod.jit import jit_enabled
    from ccmod.workloads import ti, ti_bytes
    if not jit_enabled():
        pytest.skip("with numba's JIT off the file is read as plain bytes")
    rng = random.Random(5)
    path = tmp_path / "big.ti"
    path.write_text("".join(f"0 send 1 0 {rng.randint(1, 99999)}\n1 recv 0 0 0\n"
                            f"1 compute {rng.random() * 1e6!r}\n" for _ in range(5000)))
    src = ti.read_source(path)
    assert isinstance(src, ti_bytes.MappedText) and src[:] == path.read_bytes()
    w = read_workload(path)
    monkeypatch.setattr(ti, "_read_mapped", lambda f: None)
    w2 = read_workload(path)
    for k in COLS:
        assert np.array_equal(getattr(w, k), getattr(w2, k)), k
    with open(path, "rb", buffering=0) as f:       # a file shorter than its size said
        assert ti_bytes.read_mapped(f, path.stat().st_size + 1) is None
