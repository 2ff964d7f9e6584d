"""SST DUMPI trace readers: binary (``.meta`` + ``PREFIX-NNNN.bin``) and dumpi2ascii text.

* ``dumpi``: pure-Python decoding of the binary files (:mod:`workloads.dumpi_format`), with
  datatype sizes from each file's size table.
* ``dumpi-ascii``: the text written by sst-dumpi's ``dumpi2ascii`` (one file per rank named
  ``PREFIX-NNNN.txt``); datatype sizes from the dump's ``Datatype N (...) has size S``
  lines when present, else LP64 defaults (noted in ``meta``).

Both produce the same calls and go through :mod:`workloads.dumpi_convert`.
"""
from __future__ import annotations

import glob
import os
import re

from ccmod.errors import CcmodInputError
from ccmod.workloads.assembler import TraceAssembler
from ccmod.workloads.reader_input import input_guard, numbered_rank_files, reject_options
from ccmod.workloads.dumpi_convert import DEFAULT_TYPE_SIZES, Resolver, convert
from ccmod.workloads.dumpi_format import MAGIC, BinTrace, rank_files, read_meta
from ccmod.workloads.registry import READERS

_RANK_FILE = re.compile(r"^(.*)-(\d{4,})\.(bin|txt)$")


def _siblings(path: str, ext: str) -> list[str]:
    """Files ``PREFIX-NNNN.ext`` sharing ``path``'s prefix, in rank order 0..n-1."""
    m = _RANK_FILE.match(os.path.basename(path))
    if m is None:
        raise CcmodInputError(f"cannot tell the rank from the file name (expected "
                              f"PREFIX-NNNN.{ext})", source=path)
    return numbered_rank_files(path, _RANK_FILE, "-*." + ext, f"of '{m.group(1)}'",
                               hint="every rank needs its own file")


def _assemble(fmt, per_rank, files, type_sizes, compute_scale, collectives, extra_meta):
    """Shared back end: resolve communicators, convert, build."""
    n = len(per_rank)
    res = Resolver(n, type_sizes)
    asm = TraceAssembler(n, fmt, compute_scale=compute_scale, collectives=collectives)
    # all ranks' handles first: members of split/created communicators need every member
    for phase in ("annotate", "convert"):
        for r in range(n):
            state = {"rec": None}
            with input_guard(files[r], lambda: state["rec"], "inconsistent DUMPI call"):
                if phase == "annotate":
                    res.annotate(r, per_rank[r])
                else:
                    convert(asm, res, r, per_rank[r], asm.file(files[r]), state)
    if res.unknown_types:
        asm.count("unknown_datatype_sizes", res.unknown_types)
        asm.note("datatypes of unknown size were counted as 1 byte per element "
                 "(unknown_datatype_sizes)")
    nrec = sum(len(c) for c in per_rank)
    return asm.build(records=nrec, **extra_meta)


@READERS.register()
class DumpiReader:
    """SST DUMPI binary trace (.meta file or one of its .bin files)."""

    name = "dumpi"
    description = "SST DUMPI binary trace (.meta + PREFIX-NNNN.bin), pure-Python decoder"
    extensions = (".meta", ".bin")

    @staticmethod
    def _meta_in_dir(d: str) -> str | None:
        metas = glob.glob(os.path.join(glob.escape(d), "*.meta"))
        return metas[0] if len(metas) == 1 else None

    @staticmethod
    def sniff(path) -> bool:
        p = os.fspath(path)
        if os.path.isdir(p):
            p = DumpiReader._meta_in_dir(p) or ""
        if not os.path.isfile(p):
            return False
        if p.endswith(".meta"):
            try:
                with open(p, encoding="utf-8", errors="replace") as f:
                    text = f.read(4096)
            except OSError:
                return False
            return "fileprefix=" in text and "numprocs=" in text
        try:
            with open(p, "rb") as f:
                return f.read(8) == MAGIC
        except OSError:
            return False

    @staticmethod
    def read(path, *, compute_rate=1e9, compute_scale=1.0, collectives=None, **opts):
        p = os.fspath(path)
        reject_options(opts, "DUMPI", p)
        if os.path.isdir(p):
            m = DumpiReader._meta_in_dir(p)
            if m is None:
                raise CcmodInputError("folder has no (or several) DUMPI .meta file(s)", source=p,
                                      hint="give the .meta file")
            p = m
        if not os.path.isfile(p):
            raise CcmodInputError("DUMPI trace not found", source=p)
        meta = {}
        if p.endswith(".meta"):
            meta = read_meta(p)
            files = rank_files(p, meta)
        else:
            files = _siblings(p, "bin")
        for fn in files:
            if not os.path.isfile(fn):
                raise CcmodInputError("rank file named by the .meta file is missing", source=fn)
        traces = []
        for fn in files:
            with input_guard(fn, what="unreadable DUMPI file"):
                with open(fn, "rb") as f:
                    data = f.read()
                traces.append(BinTrace(fn, data))
        base = min(t.wall_bias for t in traces)
        per_rank = []
        for t in traces:
            t.time_base = base
            state = {"rec": 0}
            calls = []
            with input_guard(t.path, lambda: state["rec"] or None, "malformed DUMPI record"):
                for rec in t.records():
                    state["rec"] = rec[0]
                    calls.append(rec)
            per_rank.append(calls)
        v = traces[0].version
        return _assemble("dumpi", per_rank, files, [t.type_sizes or DEFAULT_TYPE_SIZES
                                                    for t in traces],
                         compute_scale, collectives,
                         dict(dumpi_version=".".join(map(str, v)),
                              hostname=traces[0].hostname, clock_resolution_s=1e-9,
                              time_base_s=base, meta_file=p if meta else None,
                              **_placement([t.hostname for t in traces])))


def _placement(hostnames) -> dict:
    """Each rank file's header hostname -> ``meta["placement"]`` (if every rank has one)."""
    from ccmod.workloads.placement import placement_meta
    placed = placement_meta([h or None for h in hostnames], "DUMPI headers (hostname)")
    return {} if placed is None else {"placement": placed}


# ------------------------------------------------------------------------------ text
_ENTER = re.compile(r"^MPI_(\w+) entering at walltime ([-\d.eE+]+), cputime ([-\d.eE+]+) "
                    r"seconds in thread \d+\.\s*$")
_RETURN = re.compile(r"^MPI_(\w+) returning at walltime ([-\d.eE+]+), cputime ([-\d.eE+]+) "
                     r"seconds in thread \d+\.\s*$")
_ARG = re.compile(r"^(?:const )?[\w ]+?\s+(\w+)(?:\[(-?\d+)\])?=(.*)$")
_SIZE = re.compile(r"^Datatype (\d+) \(.*\) has size (-?\d+)\s*$")
_INT = re.compile(r"^-?\d+")


def _value(text: str):
    text = text.strip()
    if text.startswith("[") and not text.startswith("[{"):
        inner = text[1:-1].strip() if text.endswith("]") else text[1:]
        if not inner:
            return []
        items = [x.strip() for x in inner.split(",")]
        if all(_INT.match(x) for x in items):
            return [int(_INT.match(x).group(0)) for x in items]
        return [x.strip('"') for x in items]
    m = _INT.match(text)
    return int(m.group(0)) if m else None


def _split_time(text: str):
    """Wall time as (integer seconds, fraction) so that large epochs keep ns precision."""
    whole, _, frac = text.partition(".")
    return int(whole), float("0." + frac) if frac else 0.0


def parse_ascii(path: str):
    """Parse one dumpi2ascii file: (calls, {datatype id: size}).

    Wall times are ``(seconds, fraction)`` pairs; :meth:`DumpiAsciiReader.read` rebases them.
    """
    calls, sizes = [], {}
    cur = None
    with open(path, encoding="utf-8", errors="strict") as f:
        for ln, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            if cur is None:
                m = _ENTER.match(line)
                if m:
                    cur = [ln, m.group(1), {}, _split_time(m.group(2)), None,
                           float(m.group(3)), None]
                    continue
                m = _SIZE.match(line)
                if m:
                    sizes[int(m.group(1))] = int(m.group(2))
                    continue
                if line.startswith("MPI_") and " returning at " in line:
                    raise CcmodInputError("'returning' line without its 'entering' line",
                                          source=path, line=ln)
                continue
            m = _RETURN.match(line)
            if m:
                if m.group(1) != cur[1]:
                    raise CcmodInputError(f"MPI_{cur[1]} (line {cur[0]}) is closed by "
                                          f"MPI_{m.group(1)}", source=path, line=ln)
                cur[4], cur[6] = _split_time(m.group(2)), float(m.group(3))
                calls.append(tuple(cur))
                cur = None
                continue
            if _ENTER.match(line):
                raise CcmodInputError(f"MPI_{cur[1]} (line {cur[0]}) has no 'returning' line",
                                      source=path, line=ln)
            m = _ARG.match(line)
            if m is None:
                raise CcmodInputError(f"cannot parse argument line '{line[:60]}'", source=path,
                                      line=ln)
            v = _value(m.group(3))
            if m.group(2) is None and isinstance(v, list) and len(v) == 1:
                v = v[0]          # scalar handles are printed as [h]
            cur[2][m.group(1)] = v
    if cur is not None:
        raise CcmodInputError(f"MPI_{cur[1]} has no 'returning' line (truncated file?)",
                              source=path, line=cur[0])
    return calls, sizes


@READERS.register()
class DumpiAsciiReader:
    """dumpi2ascii text dumps, one PREFIX-NNNN.txt per rank."""

    name = "dumpi-ascii"
    description = "dumpi2ascii text dump of a DUMPI trace (PREFIX-NNNN.txt per rank, or dir)"
    extensions = ()

    @staticmethod
    def _files(path: str) -> list[str]:
        if os.path.isdir(path):
            txt = sorted(p for p in glob.glob(os.path.join(glob.escape(path), "*.txt"))
                         if _RANK_FILE.match(os.path.basename(p)))
            if not txt:
                raise CcmodInputError("no PREFIX-NNNN.txt files in directory", source=path)
            return _siblings(txt[0], "txt")
        return _siblings(path, "txt")

    @staticmethod
    def sniff(path) -> bool:
        p = os.fspath(path)
        try:
            if os.path.isdir(p):
                if glob.glob(os.path.join(glob.escape(p), "*.meta")):
                    return False      # a binary DUMPI trace folder (dumpi reader)
                files = DumpiAsciiReader._files(p)
                p = files[0]
            if not os.path.isfile(p):
                return False
            with open(p, encoding="utf-8", errors="replace") as f:
                head = f.read(4096)
        except (OSError, CcmodInputError):
            return False
        return bool(re.search(r"^MPI_\w+ entering at walltime ", head, re.M))

    @staticmethod
    def read(path, *, compute_rate=1e9, compute_scale=1.0, collectives=None, **opts):
        p = os.fspath(path)
        reject_options(opts, "dumpi-ascii", p)
        if not os.path.exists(p):
            raise CcmodInputError("DUMPI text dump not found", source=p)
        files = DumpiAsciiReader._files(p)
        per_rank, sizes = [], []
        defaults = False
        for fn in files:
            with input_guard(fn, what="unreadable dumpi2ascii file"):
                calls, sz = parse_ascii(fn)
            per_rank.append(calls)
            if sz:
                tab = [0] * (max(sz) + 1)
                for k, v in sz.items():
                    tab[k] = v
                sizes.append(tab)
            else:
                sizes.append(DEFAULT_TYPE_SIZES)
                defaults = True
        secs = [c[3][0] for calls in per_rank for c in calls]
        base = min(secs) if secs else 0
        per_rank = [[(c[0], c[1], c[2], (c[3][0] - base) + c[3][1], (c[4][0] - base) + c[4][1],
                      c[5], c[6]) for c in calls] for calls in per_rank]
        w = _assemble("dumpi-ascii", per_rank, files, sizes, compute_scale, collectives,
                      dict(clock_resolution_s=1e-9, time_base_s=base))
        if defaults:
            w.meta["notes"].append("the dump has no datatype size table: LP64 sizes of the "
                                   "predefined MPI datatypes were used")
        return w
