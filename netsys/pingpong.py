"""Read ping-pong / bandwidth benchmark output into one-way times per message size.

Every reader returns a :class:`Measurements`: message sizes (bytes) and the **one-way**
time of each measurement (seconds), plus notes saying how the numbers were derived. The
format is detected from the content (see :func:`detect_format`) or forced with ``fmt``.

Formats (``--format`` names):

``osu``
    OSU micro-benchmarks ``osu_latency`` (one-way µs, half the averaged round trip),
    ``osu_bw``, ``osu_bibw``, ``osu_mbw_mr`` (MB/s = 10^6 B/s). Several tables in one file
    (concatenated runs) are pooled as repetitions.
``imb``
    Intel MPI Benchmarks tables (``# Benchmarking PingPong``; ``t[usec]`` is half the round
    trip). Uniband/Biband tables give a message rate.
``csv``
    CSV/TSV with a header naming a size column (bytes) and a time column.
``simgrid-calib``
    SimGrid platform-calibration raw samples ``op,size,start_s,duration_s`` (no header),
    ``MPI_Send`` then ``MPI_Recv`` lines = one ping-pong round trip.
``raw-latency``
    ``Rep# T1 T2 deltaT`` per-repetition round trips in seconds (imb-juno-arm test).
``nxn``
    stackhpc ``nxnlatbw`` all-pairs CSV ``src,dst,lat_us,bw_MBps``.

Bandwidth tests measure a *stream* of back-to-back messages, so they are converted to the
per-message occupancy time of the link, ``n / bandwidth`` (see docs/fitting.md): that
identifies the bandwidth, not the latency.
"""
from __future__ import annotations

import gzip
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ccmod.errors import CcmodInputError

FORMATS = ("auto", "osu", "imb", "csv", "simgrid-calib", "raw-latency", "nxn", "simgrid-json")

#: what each format's times mean (for --help and docs)
FORMAT_HELP = {
    "osu": "OSU osu_latency / osu_bw / osu_bibw / osu_mbw_mr output",
    "imb": "Intel MPI Benchmarks output (PingPong; Uniband/Biband message rates)",
    "csv": "CSV/TSV with a header naming a size column (bytes) and a time column",
    "simgrid-calib": "SimGrid calibration raw samples op,size,start_s,duration_s (Send+Recv pairs)",
    "raw-latency": "per-repetition round trips 'Rep# T1 T2 deltaT' (seconds)",
    "nxn": "stackhpc nxnlatbw all-pairs CSV src,dst,lat_us,bw_MBps",
    "simgrid-json": "an already fitted SimGrid segmented-regression model (converted, not fitted)",
}


@dataclass
class ReadOptions:
    """Options of the readers (the ``ccmod fit`` input flags).

    Parameters
    ----------
    size_col, time_col : str, optional
        CSV column names (detected from common names when omitted).
    time_unit : {"s", "ms", "us", "ns"}, optional
        Unit of the CSV time column (detected from its name when omitted).
    round_trip : bool
        The CSV times are round trips (halved to one-way).
    benchmark : str, optional
        IMB benchmark to use (default PingPong, else Uniband, else Biband).
    processes : int, optional
        IMB ``#processes`` table to use.
    raw_size : int
        Message size of ``raw-latency`` files (they do not record it; default 1 byte).
    """

    size_col: str | None = None
    time_col: str | None = None
    time_unit: str | None = None
    round_trip: bool = False
    benchmark: str | None = None
    processes: int | None = None
    raw_size: int = 1


@dataclass
class Measurements:
    """One input file turned into (size, one-way time) samples.

    Attributes
    ----------
    source : str
        The file name.
    format : str
        Detected format and test, e.g. ``"osu_latency"``, ``"imb PingPong"``.
    nbytes : numpy.ndarray
        int64 message sizes.
    one_way_s : numpy.ndarray
        float64 one-way times in seconds.
    kind : {"latency", "throughput"}
        ``latency`` = ping-pong one-way times; ``throughput`` = per-message link occupancy
        derived from a bandwidth test.
    raw : bool
        The rows are per-repetition samples (several per size), not averages.
    notes : list of str
        How the numbers were obtained (table used, conversions).
    lines : numpy.ndarray, optional
        1-based line number of each row (for error messages).
    pairs : list of dict, optional
        Per node pair latency/bandwidth (``nxn`` only).
    """

    source: str
    format: str
    nbytes: np.ndarray
    one_way_s: np.ndarray
    kind: str = "latency"
    raw: bool = False
    notes: list[str] = field(default_factory=list)
    lines: np.ndarray | None = None
    pairs: list[dict] | None = None

    def __len__(self) -> int:
        return int(self.nbytes.size)


# --------------------------------------------------------------------------- file access

def read_text(path) -> str:
    """Read a (possibly gzip-compressed) text file; every failure is a CcmodInputError."""
    p = Path(path)
    src = str(path)
    if p.is_dir():
        raise CcmodInputError("is a directory, not a measurement file", source=src)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise CcmodInputError(f"cannot read file: {exc.strerror or exc}", source=src) from None
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise CcmodInputError(f"corrupt gzip file: {exc}", source=src) from None
    if not data.strip():
        raise CcmodInputError("empty file", source=src,
                              hint="give the benchmark's output (OSU, IMB, CSV, ...)")
    if b"\x00" in data[:4096]:
        raise CcmodInputError("binary file, not a benchmark text output", source=src,
                              hint="formats: " + ", ".join(FORMATS[1:]))
    return data.decode("utf-8", errors="replace")


# --------------------------------------------------------------------------- detection

_NXN_ROW = re.compile(r"^\s*\d+\s*,\s*\d+\s*,\s*[-+.\deE]+\s*,\s*[-+.\deE]+\s*$")
_RAW_ROW = re.compile(r"^\s*\d+\s+[-+.\deE]+\s+[-+.\deE]+\s+[-+.\deE]+\s*$")


def detect_format(text: str, source: str = "input") -> str:
    """Guess the format of a benchmark output from its content.

    Returns one of :data:`FORMATS` (never ``"auto"``); raises CcmodInputError when
    nothing is recognised.
    """
    head = text[:200_000]
    stripped = head.lstrip()
    if stripped.startswith("{"):
        return "simgrid-json"
    if "# OSU MPI" in head or re.search(r"^#\s*OSU One Sided\b", head, re.M):
        return "osu"
    if "# Benchmarking " in head or "Intel(R) MPI Benchmarks" in head or \
            "Intel (R) MPI Benchmarks" in head:
        return "imb"
    if re.search(r"^\s*Rep#\s+T1\s+T2\s+deltaT", head, re.M):
        return "raw-latency"
    lines = [ln for ln in head.splitlines() if ln.strip()]
    first = lines[0].strip() if lines else ""
    if re.match(r"^MPI_\w+\s*,\s*\d+\s*,", first):
        return "simgrid-calib"
    nxn = sum(1 for ln in lines[:400] if _NXN_ROW.match(ln))
    if "src,dst,lat" in head.replace(" ", "") or (nxn >= 2 and nxn >= 0.9 * min(len(lines), 400)
                                                  and not re.search(r"[A-Za-z]", first)):
        return "nxn"
    body = [ln for ln in lines[1:] if not ln.lstrip().startswith("#")]
    if first and re.search(r"[A-Za-z]", first) and len(re.split(r"[,\t;]|\s+", first)) >= 2 \
            and body and _is_data(body[0]):
        return "csv"
    raise CcmodInputError("no recognisable ping-pong table", source=source,
                          hint="expected OSU, IMB, CSV with a header, SimGrid calibration, "
                               "'Rep# T1 T2 deltaT' or nxnlatbw output; force one with --format")


def read_measurements(path, fmt: str = "auto", options: ReadOptions | None = None) -> Measurements:
    """Read one benchmark output file.

    Parameters
    ----------
    path : str or path-like
        The file (``.gz`` accepted for every format).
    fmt : str
        One of :data:`FORMATS`; ``"auto"`` detects it.
    options : ReadOptions, optional
        Column names, units, IMB table choice.

    Returns
    -------
    Measurements
    """
    opts = options or ReadOptions()
    src = str(path)
    if fmt not in FORMATS:
        raise CcmodInputError(f"unknown input format '{fmt}'", source="--format",
                              hint="valid: " + ", ".join(FORMATS))
    text = read_text(path)
    if fmt == "auto":
        fmt = detect_format(text, src)
        if fmt == "csv" and opts.size_col is None and opts.time_col is None:
            pass  # the CSV reader detects the columns itself
    if fmt == "simgrid-json":
        raise CcmodInputError("a SimGrid JSON model is converted, not fitted", source=src,
                              hint="use it alone: ccmod fit FILE.json --format simgrid-json")
    if fmt == "osu":
        m = read_osu(text, src)
    elif fmt == "imb":
        m = read_imb(text, src, opts)
    else:
        from ccmod.netsys import pp_samples
        reader = {"csv": pp_samples.read_csv_table, "simgrid-calib": pp_samples.read_simgrid_calib,
                  "raw-latency": pp_samples.read_raw_latency, "nxn": pp_samples.read_nxn}[fmt]
        m = reader(text, src, opts)
    check_measurements(m)
    return m


def check_measurements(m: Measurements) -> None:
    """Validate sizes and times (finite, size >= 0, time > 0) with file:line errors."""
    bad = ~np.isfinite(m.one_way_s) | (m.one_way_s <= 0)
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        raise CcmodInputError(f"time must be a positive number, got {m.one_way_s[i]!r} s",
                              source=m.source, line=_line(m, i))
    neg = m.nbytes < 0
    if np.any(neg):
        i = int(np.flatnonzero(neg)[0])
        raise CcmodInputError(f"message size must be >= 0 bytes, got {m.nbytes[i]}",
                              source=m.source, line=_line(m, i))
    if m.nbytes.size == 0:
        raise CcmodInputError("no measurement rows", source=m.source)


def _line(m: Measurements, i: int):
    return None if m.lines is None else int(m.lines[i])


def _num(tok: str, src: str, line: int, what: str) -> float:
    try:
        v = float(tok)
    except ValueError:
        raise CcmodInputError(f"non-numeric {what} '{tok}'", source=src, line=line) from None
    if not np.isfinite(v):
        raise CcmodInputError(f"{what} is not finite: '{tok}'", source=src, line=line)
    return v


def _size(tok: str, src: str, line: int) -> int:
    v = _num(tok, src, line, "message size")
    if v < 0:
        raise CcmodInputError(f"message size must be >= 0 bytes, got {tok}", source=src, line=line)
    if not float(v).is_integer():
        raise CcmodInputError(f"message size must be a whole number of bytes, got {tok}",
                              source=src, line=line)
    return int(v)


def _check_increasing(sizes: list[int], lines: list[int], src: str) -> None:
    for k in range(1, len(sizes)):
        if sizes[k] <= sizes[k - 1]:
            raise CcmodInputError(f"message sizes must increase within a table: {sizes[k]} "
                                  f"after {sizes[k - 1]}", source=src, line=lines[k],
                                  hint="split concatenated runs with their '#' headers")


def _is_data(line: str) -> bool:
    s = line.lstrip()
    return bool(s) and (s[0].isdigit() or s[0] in "+-.")


# --------------------------------------------------------------------------- OSU

_OSU_TITLE = re.compile(r"^#\s*OSU (?:MPI(?:-\w+)?|One Sided)\s+(.*?)\s+Test\b", re.I)


def _osu_kind(title: str) -> str | None:
    """Map an OSU test title to its point-to-point kind; None for collectives / one-sided."""
    t = title.lower()
    # one-sided (OSU 'One Sided MPI_Put/MPI_Get ... Test'): time per operation with its
    # synchronisation, read like the two-sided tables (a note says so)
    m = re.fullmatch(r"mpi_(put|get)\s+(.*)", t)
    if m:
        t = m.group(2)
    elif re.search(r"all|reduce|gather|scatter|bcast|barrier|put|get|acc|fop|cas|neighb", t):
        return None
    if "bi-directional" in t:
        return "osu_bibw"
    if "multiple bandwidth" in t or "message rate" in t:
        return "osu_mbw_mr"
    if "bandwidth" in t:
        return "osu_bw"
    if "latency" in t:
        return "osu_latency"
    return None


def read_osu(text: str, src: str) -> Measurements:
    """Read OSU point-to-point tables (latency, bw, bibw, mbw_mr); see module docs."""
    tables = []           # (kind, pairs, rows[(size, value, line)])
    kind = None
    pairs = 1
    col = None
    rows = None
    collective = None
    for no, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s:
            continue
        if s.startswith("#"):
            m = _OSU_TITLE.match(s)
            if m:
                kind = _osu_kind(m.group(1).strip())
                if kind is None:
                    collective = m.group(1).strip()
                pairs, col, rows = 1, None, None
                continue
            pm = re.search(r"pairs:\s*(\d+)", s)
            if pm:
                pairs = int(pm.group(1))
                continue
            if kind and re.match(r"#\s*Size\b", s):
                names = re.split(r"\s{2,}|\t", s.lstrip("#").strip())
                col = _osu_value_col(names, kind)
                if col is None:
                    raise CcmodInputError(f"OSU header without a latency/bandwidth column: "
                                          f"'{s}'", source=src, line=no)
                rows = []
                tables.append((kind, pairs, rows))
                continue
            if rows is not None and rows:
                rows = None   # a comment after the rows closes the table
            continue
        if rows is None:
            if _is_data(s) and kind is not None and col is not None:
                raise CcmodInputError("data row outside a table (after a non-numeric line)",
                                      source=src, line=no)
            continue
        if not _is_data(s):
            rows = None       # trailing job-output text ends the table
            continue
        toks = s.split()
        if len(toks) <= col:
            raise CcmodInputError(f"OSU row has {len(toks)} fields, expected {col + 1}",
                                  source=src, line=no)
        rows.append((_size(toks[0], src, no), _num(toks[col], src, no, "value"), no))
    tables = [t for t in tables if t[2]]
    if not tables:
        if collective:
            raise CcmodInputError(f"OSU '{collective}' test is not a point-to-point ping-pong",
                                  source=src, hint="use osu_latency (or osu_bw) output")
        raise CcmodInputError("no OSU latency/bandwidth table with data rows", source=src)
    kinds = {t[0] for t in tables}
    notes = []
    if len(kinds) > 1:
        keep = "osu_latency" if "osu_latency" in kinds else sorted(kinds)[0]
        notes.append(f"file holds {', '.join(sorted(kinds))}: used the {keep} tables only")
        tables = [t for t in tables if t[0] == keep]
    kind = tables[0][0]
    sizes, times, lines = [], [], []
    for _, npairs, trows in tables:
        _check_increasing([r[0] for r in trows], [r[2] for r in trows], src)
        for n, v, no in trows:
            t = _osu_time(kind, n, v, npairs, src, no)
            if t is None:
                continue
            sizes.append(n)
            times.append(t)
            lines.append(no)
    if len(tables) > 1:
        notes.append(f"{len(tables)} {kind} tables pooled as repetitions")
    if kind == "osu_latency":
        notes.append("osu_latency: one-way time = reported latency (half the round trip)")
    elif kind == "osu_bw":
        notes.append("osu_bw: one-way time = n / bandwidth (streaming, window of messages: "
                     "the latency is hidden, only the bandwidth is identified)")
    elif kind == "osu_bibw":
        notes.append("osu_bibw: one-way time = 2 n / bandwidth (MB/s counts both directions)")
    else:
        notes.append(f"osu_mbw_mr ({tables[0][1]} pairs): one-way time = n / aggregate bandwidth "
                     "(link occupancy per message)")
    return Measurements(src, kind, np.asarray(sizes, np.int64), np.asarray(times, float),
                        kind="latency" if kind == "osu_latency" else "throughput",
                        raw=len(tables) > 1, notes=notes, lines=np.asarray(lines, np.int64))


def _osu_value_col(names: list[str], kind: str) -> int | None:
    low = [n.lower() for n in names]
    if kind == "osu_latency":
        for pref in ("avg latency", "latency"):
            for i, n in enumerate(low):
                if pref in n:
                    return i
        return None
    for i, n in enumerate(low):
        if "mb/s" in n or "bandwidth" in n:
            return i
    return None


def _osu_time(kind, n, v, pairs, src, no):
    if kind == "osu_latency":
        return v * 1e-6
    if v <= 0:
        if n == 0:
            return None
        raise CcmodInputError(f"bandwidth must be > 0, got {v}", source=src, line=no)
    if n == 0:
        return None       # a 0-byte bandwidth row carries no timing information
    scale = 2.0 if kind == "osu_bibw" else 1.0
    return scale * n / (v * 1e6)


# --------------------------------------------------------------------------- IMB

def _imb_tables(text: str):
    """Split IMB output into tables: dicts with bench, procs, cols, rows[(line_no, toks)]."""
    tables = []
    bench = procs = None
    cur = None
    version = None
    for no, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if version is None:
            vm = re.search(r"MPI Benchmarks\s+(\d+)(?:\.(\d+))?", s)
            if vm:
                version = int(vm.group(1))
        if not s:
            cur = None
            continue
        if s.startswith("#bytes") or (s.startswith("#repetitions") and bench):
            cur = {"bench": bench, "procs": procs, "cols": s.split(), "rows": [],
                   "line": no}
            tables.append(cur)
            continue
        if s.startswith("#"):
            m = re.match(r"#\s*Benchmarking\s+(\S+)", s)
            if m:
                bench, procs = m.group(1), None
            m = re.match(r"#\s*#processes\s*=\s*(\d+)", s)
            if m:
                procs = int(m.group(1))
            cur = None
            continue
        if cur is not None:
            if not _is_data(s):
                cur = None
                continue
            cur["rows"].append((no, s.split()))
    return tables, version


def read_imb(text: str, src: str, opts: ReadOptions) -> Measurements:
    """Read an IMB-MPI1 output: PingPong by default (see module docs for the choice)."""
    tables, version = _imb_tables(text)
    if not tables:
        raise CcmodInputError("no IMB '# Benchmarking' table found", source=src)
    benches = []
    for t in tables:
        if t["bench"] not in benches:
            benches.append(t["bench"])
    if opts.benchmark:
        want = [b for b in benches if b.lower() == opts.benchmark.lower()]
        if not want:
            raise CcmodInputError(f"IMB benchmark '{opts.benchmark}' not in the file",
                                  source=src, hint="found: " + ", ".join(benches))
        bench = want[0]
    else:
        for cand in ("PingPong", "Uniband", "Biband"):
            if cand in benches:
                bench = cand
                break
        else:
            raise CcmodInputError("no IMB PingPong, Uniband or Biband table", source=src,
                                  hint="found: " + ", ".join(b for b in benches if b) +
                                       "; choose one with --benchmark")
    cands = [t for t in tables if t["bench"] == bench]
    if opts.processes is not None:
        cands = [t for t in cands if t["procs"] == opts.processes]
        if not cands:
            raise CcmodInputError(f"no IMB {bench} table with #processes = {opts.processes}",
                                  source=src)
    full = [t for t in cands if t["rows"]]
    if not full:
        raise CcmodInputError(f"the IMB {bench} table(s) have no data rows "
                              "(the benchmark did not finish?)", source=src, line=cands[0]["line"])
    # PingPong: the first (2-process) table. Uniband/Biband with -npmin: only the full-N
    # table pairs ranks on different nodes under block placement, so take the largest.
    tab = full[0] if bench in ("PingPong", "PingPing") or opts.processes is not None else \
        max(full, key=lambda t: t["procs"] or 0)
    cols = [c.lower() for c in tab["cols"]]
    notes = [f"IMB {bench} table '#processes = {tab['procs']}' (line {tab['line']})"
             + (f" of {len(full)} with data" if len(full) > 1 else "")]
    if "#bytes" not in cols:
        raise CcmodInputError(f"IMB {bench} table has no #bytes column", source=src,
                              line=tab["line"])
    ci = cols.index("#bytes")
    tcol = next((cols.index(c) for c in ("t[usec]", "t_avg[usec]") if c in cols), None)
    rate = next((cols.index(c) for c in ("msg/sec",) if c in cols), None)
    mb = next((cols.index(c) for c in ("mbytes/sec",) if c in cols), None)
    sizes, times, lines = [], [], []
    for no, toks in tab["rows"]:
        if len(toks) != len(cols):
            raise CcmodInputError(f"IMB row has {len(toks)} fields, expected {len(cols)}",
                                  source=src, line=no)
        n = _size(toks[ci], src, no)
        if tcol is not None:
            t = _num(toks[tcol], src, no, "time") * 1e-6
        elif rate is not None:
            r = _num(toks[rate], src, no, "message rate")
            if r <= 0:
                raise CcmodInputError(f"message rate must be > 0, got {toks[rate]}", source=src,
                                      line=no)
            t = (2.0 if bench == "Biband" else 1.0) / r
        elif mb is not None:
            v = _num(toks[mb], src, no, "bandwidth")
            if n == 0:
                continue
            if v <= 0:
                raise CcmodInputError(f"bandwidth must be > 0, got {toks[mb]}", source=src,
                                      line=no)
            unit = 2.0 ** 20 if version is not None and version < 2018 else 1e6
            t = (2.0 if bench == "Biband" else 1.0) * n / (v * unit)
        else:
            raise CcmodInputError(f"IMB {bench} table has no time or rate column", source=src,
                                  line=tab["line"])
        sizes.append(n)
        times.append(t)
        lines.append(no)
    _check_increasing(sizes, lines, src)
    if tcol is not None:
        kind = "latency"
        notes.append(f"IMB {bench}: one-way time = {tab['cols'][tcol]} "
                     + ("(half the round trip)" if bench == "PingPong" else ""))
    else:
        kind = "throughput"
        pairs = (tab["procs"] or 2) // 2
        notes.append(f"IMB {bench}: one-way time = {'2 / ' if bench == 'Biband' else '1 / '}"
                     f"aggregate message rate of {pairs} pair(s) (link occupancy per message)")
        if tab is not max(full, key=lambda t: t["procs"] or 0):
            notes.append("not the full-N table: with -npmin and block placement its pairs may "
                         "be on the same node")
    return Measurements(src, f"imb {bench}", np.asarray(sizes, np.int64),
                        np.asarray(times, float), kind=kind, raw=False, notes=notes,
                        lines=np.asarray(lines, np.int64))
