"""Workloads (CCMOD's ``workload``): trace readers and statistical generators.

Front-end
---------
:func:`read_workload` reads any registered trace format into a
:class:`~workloads.base.Workload`; :func:`detect_format` sniffs the format of a path;
:func:`list_formats` lists the registered readers. Readers live in their own modules
and register themselves in :data:`workloads.registry.READERS` on import; third-party
readers come through the ``ccmod.readers`` entry-point group.
"""
from __future__ import annotations

import os
import struct
import zlib
from pathlib import Path

from ccmod.errors import CcmodError, CcmodInputError
from ccmod.options import check_option
from ccmod.workloads.base import Workload
from ccmod.workloads.registry import READERS

__all__ = ["read_workload", "detect_format", "list_formats", "Workload"]


def _reader(name: str, source: str | None = None):
    entry = READERS.get(name, source=source)
    f = entry.factory
    return f() if isinstance(f, type) else f


def check_trace_path(path) -> Path:
    """``path`` as a Path when it names something readable, else a one-line input error."""
    if path is None or str(path) == "":
        raise CcmodInputError("no trace file given")
    p = Path(os.fspath(path))
    if not p.exists():
        raise CcmodInputError("no such file or folder", source=str(p))
    if not os.access(p, os.R_OK):
        raise CcmodInputError("permission denied (not readable)", source=str(p))
    return p


def detect_format(path) -> str:
    """Return the name of the registered reader that recognises ``path``.

    Every registered reader's ``sniff`` is asked; readers that fail while sniffing count
    as "no". When several match, the one whose ``extensions`` match the file name wins,
    else the first by name.

    Raises
    ------
    CcmodInputError
        Missing file, or no reader recognises it (the message lists valid formats).
    """
    p = check_trace_path(path)
    matches = []
    for entry in READERS.entries():
        try:
            r = entry.factory() if isinstance(entry.factory, type) else entry.factory
            sniff = getattr(r, "sniff", None)
            if sniff is not None and sniff(p):
                matches.append((entry.name, r))
        except Exception:  # a sniffer must never break detection (third-party plugins)
            continue
    if not matches:
        kind = "folder" if p.is_dir() else "file"
        if p.is_file() and p.stat().st_size == 0:
            raise CcmodInputError("the file is empty", source=str(p),
                                  hint="give a trace with records")
        # a file named like one format's files is read by it, so its parser can say which
        # line is wrong instead of "unknown format"
        if p.is_file():
            name = p.name.lower()
            for entry in READERS.entries():
                r = entry.factory() if isinstance(entry.factory, type) else entry.factory
                own = [e for e in getattr(r, "extensions", ()) if e not in (".txt", ".csv")]
                if any(name.endswith(e) for e in own):
                    return entry.name
        raise CcmodInputError(f"cannot recognise the trace format of this {kind}", source=str(p),
                              hint="give --format; valid formats: " + ", ".join(READERS.names()))
    if len(matches) > 1:
        name = p.name.lower()
        for fmt, r in matches:
            if any(name.endswith(e) for e in getattr(r, "extensions", ())):
                return fmt
    return matches[0][0]


def read_workload(path, fmt: str = "auto", *, compute_rate: float = 1e9,
                  compute_scale: float = 1.0, collectives=None, **opts) -> Workload:
    """Read a trace into a :class:`~workloads.base.Workload`.

    Parameters
    ----------
    path : str or Path
        Trace file (or folder / description file, depending on the format).
    fmt : str
        Reader name (see :func:`list_formats`) or ``"auto"`` to sniff it.
    compute_rate : float or str
        flop/s, for formats that count flops (SimGrid TI): a number or SimGrid's notation
        (``"20kf"``, ``"1Gf"``).
    compute_scale : float
        Multiplies every compute duration (e.g. 0.5 = a CPU twice as fast).
    collectives : dict or str, optional
        Collective kind -> algorithm name, or an option string such as
        ``"allreduce=ring,bcast=binomial"`` (parsed by ``workloads.collectives``).
    **opts
        Reader-specific options (e.g. ``syntax`` / ``elem_bytes`` for ``ti``).

    Raises
    ------
    CcmodInputError
        Missing/unreadable file, unknown format, bad option or bad record (one line,
        naming the file and line).
    """
    p = check_trace_path(path)
    compute_rate = check_option("compute_rate", compute_rate)   # also SimGrid's '20kf', '1Gf'
    compute_scale = check_option("compute_scale", compute_scale)
    if isinstance(collectives, str):
        collectives = _parse_collectives(collectives)
    if fmt in (None, "", "auto"):
        fmt = detect_format(p)
    reader = _reader(fmt, source="--format")
    try:
        w = reader.read(p, compute_rate=float(compute_rate), compute_scale=float(compute_scale),
                        collectives=collectives, **opts)
    except CcmodError:
        raise
    except (OSError, EOFError, UnicodeDecodeError, struct.error, zlib.error) as exc:
        raise CcmodInputError(f"cannot read as '{fmt}': {exc}", source=str(p)) from None
    except MemoryError:
        raise CcmodInputError("not enough memory to read this trace", source=str(p)) from None
    if not isinstance(w, Workload):  # pragma: no cover - plugin contract violation
        raise CcmodInputError(f"reader '{fmt}' returned {type(w).__name__}, not a Workload")
    w.meta.setdefault("format", fmt)
    return w


def _parse_collectives(text: str) -> dict:
    if not text.strip():
        return {}
    from ccmod.workloads.collectives import parse_collective_option
    return parse_collective_option(text)


#: formats :func:`workloads.info.convert` can write
WRITABLE = ("ti", "parquet", "csv")


def list_formats():
    """Registered trace formats as a DataFrame (format, readable, writable, description)."""
    import pandas as pd
    rows = []
    for r in READERS.listing():
        f = READERS.get(r["name"]).factory if r["name"] in READERS else None
        rows.append({**r, "format": r["name"], "writable": r["name"] in WRITABLE,
                     "extensions": " ".join(getattr(f, "extensions", ()))})
    return pd.DataFrame(rows, columns=["name", "description", "params", "origin", "format",
                                       "writable", "extensions"])
