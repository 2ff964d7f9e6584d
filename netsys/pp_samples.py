"""Readers of per-row and per-repetition measurements: CSV/TSV, SimGrid calibration raw
samples, ``Rep# T1 T2 deltaT`` round trips and stackhpc ``nxnlatbw`` all-pairs CSV.

Each returns a :class:`netsys.pingpong.Measurements` of one-way times in seconds. The loops
are plain Python over lines so every bad row is reported as ``file:line`` (a 66,000-line
calibration file reads in about 0.1 s).
"""
from __future__ import annotations

import csv
import io
import re

import numpy as np

from ccmod.errors import CcmodInputError
from ccmod.netsys.pingpong import Measurements, ReadOptions, _NXN_ROW, _RAW_ROW, _is_data, _num, _size

TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}

_SIZE_NAMES = ("bytes", "nbytes", "size", "size_bytes", "msg_size", "message_size", "msgsize",
               "#bytes", "length", "len", "count_bytes")
_TIME_HINTS = ("latency", "lat", "time", "t", "duration", "rtt", "usec", "us", "delay", "elapsed",
               "seconds", "sec", "ns", "ms")
_UNIT_PATTERNS = (("ns", r"ns|nsec|nanosec\w*"), ("us", r"us|usec|µs|μs|microsec\w*|micros"),
                  ("ms", r"ms|msec|millisec\w*"), ("s", r"s|sec|secs|seconds?"))


def unit_from_name(name: str) -> str | None:
    """Time unit written in a column name (``lat(us)``, ``t[usec]``, ``time_s``), or None."""
    low = name.lower()
    for unit, pat in _UNIT_PATTERNS:
        if re.search(rf"(^|[^a-zµμ])({pat})([^a-z]|$)", low):
            return unit
    return None


def _pick(names: list[str], wanted: str | None, candidates, what: str, opt: str, src: str,
          line: int, exclude: int | None = None) -> int:
    low = [n.strip().lower() for n in names]
    if wanted is not None:
        if wanted.lower() in low:
            return low.index(wanted.lower())
        raise CcmodInputError(f"no column '{wanted}' in the header", source=src, line=line,
                              hint="columns: " + ", ".join(names))
    for cand in candidates:
        for i, n in enumerate(low):
            if i != exclude and re.sub(r"[\s(\[].*$", "", n) == cand:
                return i
    for cand in candidates:
        for i, n in enumerate(low):
            if i != exclude and cand in re.split(r"[^a-z#]+", n):
                return i
    raise CcmodInputError(f"cannot tell which column holds the {what}", source=src, line=line,
                          hint=f"name it with {opt}; columns: " + ", ".join(names))


def read_csv_table(text: str, src: str, opts: ReadOptions) -> Measurements:
    """CSV/TSV/whitespace table with a header line naming size and time columns.

    Several rows per size are per-repetition samples. Units: ``opts.time_unit`` or the
    unit written in the time column's name; ``opts.round_trip`` (or a column named
    ``rtt``/``round...``) halves the times.
    """
    lines = text.splitlines()
    hdr_no = next((i for i, ln in enumerate(lines)
                   if ln.strip() and not ln.lstrip().startswith("#")), None)
    if hdr_no is None:
        raise CcmodInputError("only comment lines, no table", source=src)
    header = lines[hdr_no]
    if "\t" in header:
        delim = "\t"
    elif "," in header:
        delim = ","
    elif ";" in header:
        delim = ";"
    else:
        delim = None
    names = _split(header, delim)
    if not any(re.search(r"[A-Za-z]", n) for n in names):
        raise CcmodInputError("CSV input needs a header line naming its columns", source=src,
                              line=hdr_no + 1, hint="e.g. 'bytes,usec' (then --size-col bytes "
                                                    "--time-col usec --time-unit us)")
    ci = _pick(names, opts.size_col, _SIZE_NAMES, "message size (bytes)", "--size-col", src,
               hdr_no + 1)
    ti = _pick(names, opts.time_col, _TIME_HINTS, "time", "--time-col", src, hdr_no + 1,
               exclude=ci)
    if ti == ci:
        raise CcmodInputError("size and time columns are the same", source=src, line=hdr_no + 1)
    unit = opts.time_unit or unit_from_name(names[ti])
    if unit not in TIME_UNITS:
        if opts.time_unit:
            raise CcmodInputError(f"unknown time unit '{opts.time_unit}'", source="--time-unit",
                                  hint="valid: s, ms, us, ns")
        raise CcmodInputError(f"unit of time column '{names[ti]}' unknown", source=src,
                              line=hdr_no + 1, hint="give --time-unit s|ms|us|ns")
    rt = opts.round_trip or bool(re.search(r"rtt|round", names[ti].lower()))
    scale = TIME_UNITS[unit] * (0.5 if rt else 1.0)
    sizes, times, nos = [], [], []
    for no in range(hdr_no + 1, len(lines)):
        s = lines[no].strip()
        if not s or s.startswith("#"):
            continue
        toks = _split(s, delim)
        if len(toks) <= max(ci, ti):
            raise CcmodInputError(f"row has {len(toks)} fields, the header {len(names)}",
                                  source=src, line=no + 1)
        sizes.append(_size(toks[ci], src, no + 1))
        times.append(_num(toks[ti], src, no + 1, "time") * scale)
        nos.append(no + 1)
    if not sizes:
        raise CcmodInputError("CSV has a header but no data rows", source=src, line=hdr_no + 1)
    n = np.asarray(sizes, np.int64)
    notes = [f"columns '{names[ci]}' (bytes) and '{names[ti]}' ({unit}"
             + (", round trip halved)" if rt else ", one-way)")]
    return Measurements(src, "csv", n, np.asarray(times, float), raw=np.unique(n).size < n.size,
                        notes=notes, lines=np.asarray(nos, np.int64))


def _split(line: str, delim: str | None) -> list[str]:
    if delim is None:
        return line.split()
    return [t.strip().strip('"').strip("'") for t in next(csv.reader(io.StringIO(line),
                                                                     delimiter=delim))]


def read_simgrid_calib(text: str, src: str, opts: ReadOptions) -> Measurements:
    """SimGrid platform-calibration ``*_PingPong.csv``: ``op,size,start_s,duration_s``.

    Lines come in pairs ``MPI_Send`` then ``MPI_Recv`` done by the same rank for one
    ping-pong; the round trip is the sum of the two durations and the one-way time half
    of it.
    """
    sizes, times, nos = [], [], []
    pending = None
    for no, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s:
            continue
        toks = s.split(",")
        if len(toks) != 4:
            raise CcmodInputError(f"expected 4 fields op,size,start_s,duration_s, got {len(toks)}",
                                  source=src, line=no)
        op = toks[0].strip()
        n = _size(toks[1], src, no)
        dur = _num(toks[3], src, no, "duration")
        _num(toks[2], src, no, "start time")
        if op == "MPI_Send":
            if pending is not None:
                raise CcmodInputError("MPI_Send not followed by its MPI_Recv", source=src,
                                      line=pending[2])
            pending = (n, dur, no)
        elif op == "MPI_Recv":
            if pending is None:
                raise CcmodInputError("MPI_Recv without a preceding MPI_Send", source=src, line=no,
                                      hint="a PingPong calibration file has Send/Recv pairs")
            if n != pending[0]:
                raise CcmodInputError(f"MPI_Recv size {n} differs from its MPI_Send size "
                                      f"{pending[0]}", source=src, line=no)
            sizes.append(n)
            times.append((pending[1] + dur) / 2.0)
            nos.append(pending[2])
            pending = None
        else:
            raise CcmodInputError(f"operation '{op}' is not MPI_Send/MPI_Recv", source=src, line=no,
                                  hint="only the *_PingPong.csv calibration files are ping-pongs")
    if pending is not None:
        raise CcmodInputError("last MPI_Send has no MPI_Recv", source=src, line=pending[2])
    if not sizes:
        raise CcmodInputError("no MPI_Send/MPI_Recv pairs", source=src)
    return Measurements(src, "simgrid-calib", np.asarray(sizes, np.int64), np.asarray(times, float),
                        raw=True, lines=np.asarray(nos, np.int64),
                        notes=["SimGrid calibration: round trip = MPI_Send + MPI_Recv durations, "
                               "one-way = half"])


def read_raw_latency(text: str, src: str, opts: ReadOptions) -> Measurements:
    """``Rep#  T1  T2  deltaT`` lines (seconds): one round trip per repetition.

    The file does not record the message size: ``opts.raw_size`` (default 1 byte, as in
    the imb-juno-arm latency test).
    """
    if opts.raw_size < 0:
        raise CcmodInputError(f"--raw-size must be >= 0, got {opts.raw_size}", source="--raw-size")
    times, nos = [], []
    started = False
    for no, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if re.match(r"Rep#\s+T1\s+T2\s+deltaT", s):
            started = True
            continue
        if not started or not s:
            continue
        if _RAW_ROW.match(s):
            toks = s.split()
            times.append(_num(toks[3], src, no, "deltaT") / 2.0)
            nos.append(no)
        elif _is_data(s):
            raise CcmodInputError("expected 'Rep# T1 T2 deltaT' numbers", source=src, line=no)
    if not times:
        raise CcmodInputError("no 'Rep# T1 T2 deltaT' rows", source=src)
    n = len(times)
    return Measurements(src, "raw-latency", np.full(n, opts.raw_size, np.int64),
                        np.asarray(times, float), raw=True, lines=np.asarray(nos, np.int64),
                        notes=[f"{n} round trips of {opts.raw_size} B (size not in the file: "
                               "--raw-size), one-way = deltaT / 2"])


NXN_BW_BYTES = 4 * 1024 * 1024


def read_nxn(text: str, src: str, opts: ReadOptions) -> Measurements:
    """stackhpc ``nxnlatbw``: one line ``src,dst,lat_us,bw_MBps`` per ordered node pair.

    Each pair gives two points: ``t(0) = lat`` and ``t(4 MiB) = lat + 4 MiB / bw``
    (the bandwidth is a 4 MiB streaming test, MB/s = 10^6 B/s). The header may appear in
    the middle of the file (interleaved stdout), so only matching lines are kept.
    """
    pairs, sizes, times, nos = [], [], [], []
    for no, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s:
            continue
        if _NXN_ROW.match(s):
            a, b, lat, bw = s.split(",")
            lat_s = _num(lat, src, no, "latency") * 1e-6
            bw_Bps = _num(bw, src, no, "bandwidth") * 1e6
            if lat_s <= 0 or bw_Bps <= 0:
                raise CcmodInputError("latency and bandwidth must be > 0", source=src, line=no)
            pairs.append({"src": int(a), "dst": int(b), "latency_s": lat_s, "bandwidth_Bps": bw_Bps})
            sizes += [0, NXN_BW_BYTES]
            times += [lat_s, lat_s + NXN_BW_BYTES / bw_Bps]
            nos += [no, no]
        elif re.match(r"^\d+\s*,", s):
            raise CcmodInputError("expected 'src,dst,lat_us,bw_MBps' numbers", source=src, line=no)
    if not pairs:
        raise CcmodInputError("no 'src,dst,lat,bw' rows", source=src)
    nodes = len({p["src"] for p in pairs} | {p["dst"] for p in pairs})
    return Measurements(src, "nxn", np.asarray(sizes, np.int64), np.asarray(times, float),
                        raw=True, lines=np.asarray(nos, np.int64), pairs=pairs,
                        notes=[f"nxnlatbw: {len(pairs)} ordered pairs of {nodes} nodes; each "
                               "gives t(0) = latency and t(4 MiB) = latency + 4 MiB / bandwidth"])
