"""pipit-style event CSV (hpcgroup/pipit's ``Trace`` export) -> Workload.

Columns: ``Timestamp (ns)`` (or ``(us)``, ``(ms)``, ``(s)``), ``Event Type``
(``Enter`` / ``Leave`` / ``Instant``), ``Name``, ``Thread``, ``Process`` (= MPI rank) and
``Attributes`` (a Python dict literal). Mapping, per process in timestamp order:

* an ``Enter``/``Leave`` pair of a region named ``MPI_*`` is one MPI call; the time
  between the end of one MPI call and the start of the next is OP_COMPUTE (so time
  before the first call (MPI_Init) and after the last (MPI_Finalize) is not counted);
* ``Instant`` events inside the call give the messages (OTF2 event names, attributes
  ``receiver``/``sender``, ``msg_tag``, ``msg_length``, ``request_id``):
  ``MpiSend`` -> OP_SEND, ``MpiRecv`` -> OP_RECV, ``MpiIsend`` -> OP_ISEND,
  ``MpiIrecvRequest`` -> OP_IRECV (source, tag and size are taken from the matching
  ``MpiIrecv`` completion), ``MpiIsendComplete`` / ``MpiIrecv`` -> OP_WAIT;
  ``MPI_Sendrecv`` becomes isend + irecv + two waits (blocking send then recv could
  deadlock under rendezvous); ``MPI_Barrier`` -> OP_BARRIER; an ``MPI_Waitall`` without
  completion events -> OP_WAITALL;
* other collectives are not supported in this format (their sizes are not in the
  CSV export): read the OTF2 trace instead.
"""
from __future__ import annotations

import ast
from pathlib import Path

import numpy as np

from ccmod.errors import CcmodInputError
from ccmod.guard import excerpt
from ccmod.workloads.measured import TracedTime
from ccmod.workloads.base import (OP_BARRIER, OP_COMPUTE, OP_IRECV, OP_ISEND, OP_RECV, OP_SEND,
                            OP_WAIT, OP_WAITALL, WorkloadBuilder)

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0}
_COLLECTIVES = ("MPI_Bcast", "MPI_Reduce", "MPI_Allreduce", "MPI_Alltoall", "MPI_Alltoallv",
                "MPI_Gather", "MPI_Gatherv", "MPI_Allgather", "MPI_Allgatherv", "MPI_Scatter",
                "MPI_Scatterv", "MPI_Reduce_scatter", "MPI_Scan", "MPI_Exscan",
                "MPI_Ibarrier", "MPI_Ibcast", "MPI_Iallreduce")
#: blocking message event -> (peer attribute, op, non-blocking op used inside MPI_Sendrecv)
_BLOCKING = {"MpiSend": ("receiver", OP_SEND, OP_ISEND), "MpiRecv": ("sender", OP_RECV, OP_IRECV)}
_REQUEST = ("request_id", "request")


def _attrs(text, src, row) -> dict:
    if not isinstance(text, str) or not text.strip():
        return {}
    try:
        v = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise CcmodInputError("unreadable Attributes (expect a dict literal)", source=src,
                              line=row) from None
    return v if isinstance(v, dict) else {}


def _get(a: dict, names, src, row, what):
    for n in names:
        if n in a:
            try:
                v = int(a[n])
            except (TypeError, ValueError, OverflowError):
                break
            if -2 ** 62 <= v <= 2 ** 62:
                return v
            break
    raise CcmodInputError(f"missing or bad '{names[0]}' attribute for {what}", source=src,
                          line=row)


def _message(a: dict, peer_attr: str, src, row, what) -> tuple[int, int, int]:
    """(peer, tag, nbytes) of a message event; ``peer_attr``: ``receiver`` or ``sender``."""
    return (_get(a, (peer_attr,), src, row, what), _get(a, ("msg_tag", "tag"), src, row, what),
            _get(a, ("msg_length", "length", "size"), src, row, what))


def read_pipit_csv(path: Path, compute_scale: float = 1.0, **unknown):
    """Read a pipit event CSV (see module doc) into a Workload."""
    import pandas as pd
    src = str(path)
    if unknown:
        raise CcmodInputError(f"unknown option(s) for pipit CSV: {', '.join(unknown)}")
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
    except UnicodeDecodeError as exc:
        from ccmod.workloads.tabular import _line_of_byte
        raise CcmodInputError("not UTF-8 text", source=src, line=_line_of_byte(path, exc.start),
                              hint="the CSV must be UTF-8; is the file corrupt?") from None
    except (ValueError, pd.errors.ParserError, OSError) as exc:
        raise CcmodInputError(f"cannot parse CSV: {excerpt(str(exc).splitlines()[0], 120)}",
                              source=src) from None
    cols = {c.strip().lower(): c for c in df.columns}
    tcol = next((c for k, c in cols.items() if k.startswith("timestamp")), None)
    need = ("event type", "name", "process")
    if tcol is None or any(k not in cols for k in need):
        raise CcmodInputError("pipit CSV needs columns Timestamp (ns), Event Type, Name, "
                              "Process[, Thread, Attributes]", source=src)
    unit = tcol[tcol.find("(") + 1:tcol.find(")")].strip().lower() if "(" in tcol else "ns"
    if unit not in _UNITS:
        raise CcmodInputError(f"unknown timestamp unit '{unit}'", source=src, line=1,
                              hint="valid: " + ", ".join(_UNITS))
    ts = pd.to_numeric(df[tcol], errors="coerce").to_numpy(float) * _UNITS[unit]
    proc = pd.to_numeric(df[cols["process"]], errors="coerce").to_numpy(float)
    for arr, name in ((ts, "timestamp"), (proc, "process")):
        bad = np.flatnonzero(~np.isfinite(arr))
        if bad.size:
            raise CcmodInputError(f"bad {name} value", source=src, line=int(bad[0]) + 2)
    bad = (proc < 0) | (proc != np.round(proc)) | (proc >= 2 ** 31)
    if bad.any():
        row = int(np.flatnonzero(bad)[0]) + 2
        raise CcmodInputError("process must be a non-negative integer (the MPI rank)",
                              source=src, line=row)
    proc = proc.astype(np.int64)
    present = np.unique(proc)
    nranks = int(present[-1]) + 1 if present.size else 0
    if nranks == 0:
        raise CcmodInputError("no events", source=src)
    if present.size != nranks:
        # the first gap, without materialising range(nranks) (a corrupt row may say 2^31)
        first = int(np.flatnonzero(present != np.arange(present.size))[0])
        raise CcmodInputError(f"processes must be numbered 0..N-1: process {first} is "
                              f"missing (the largest is {nranks - 1})", source=src)
    etype = df[cols["event type"]].to_numpy(object)
    names = df[cols["name"]].to_numpy(object)
    attrs = df[cols["attributes"]].to_numpy(object) if "attributes" in cols else None
    order = np.lexsort((np.arange(len(ts)), ts, proc))
    b = WorkloadBuilder(nranks)
    fid = b.file(src)
    unsupported = []
    traced = TracedTime(nranks)
    traced.bounds(float(ts.min()), float(ts.max()))
    for r in range(nranks):
        rows = order[proc[order] == r]
        _rank_events(b, r, rows, ts, etype, names, attrs, src, fid, compute_scale, unsupported,
                     traced)
    w = b.build()
    w.meta.update({"format": "csv", "csv_kind": "pipit", "time_unit": unit,
                   "notes": ["compute = time between MPI calls of each process"]})
    measured = traced.summary()
    if measured is not None:
        w.meta["measured"] = measured
    return w


def _rank_events(b, r, rows, ts, etype, names, attrs, src, fid, scale, unsupported, traced):
    depth, call, call_row, events = 0, None, 0, []
    last_leave = None
    next_req = 0
    live: dict = {}          # OTF2 request id -> (our req, record index or None)
    pending_irecv: dict = {}  # our req -> index into the builder columns
    cols = b._cols
    for i in rows:
        row = int(i) + 2
        et, name, t = etype[i], names[i], ts[i]
        if et == "Enter" and isinstance(name, str) and name.startswith("MPI_"):
            if depth == 0:
                if last_leave is not None and t > last_leave:
                    b.add(r, OP_COMPUTE, duration_s=(t - last_leave) * scale, line=row,
                          file_id=fid)
                call, call_row, events = name, row, []
                traced.enter(r, t, name)
            depth += 1
        elif et == "Leave" and isinstance(name, str) and name.startswith("MPI_"):
            if depth == 0:
                raise CcmodInputError(f"Leave of {name} without Enter", source=src, line=row)
            depth -= 1
            if depth == 0:
                next_req = _emit(b, r, call, call_row, events, live, pending_irecv,
                                 next_req, src, fid, cols)
                last_leave = t
                traced.leave(r, t)
        elif et == "Instant" and depth > 0:
            events.append((name, _attrs(attrs[i], src, row) if attrs is not None else {}, row))
    if depth:
        raise CcmodInputError(f"process {r}: {call} never left (truncated trace?)",
                              source=src, line=call_row)
    if pending_irecv:
        raise CcmodInputError(f"process {r}: an MPI_Irecv was never completed, its source "
                              "is unknown", source=src)
    if live:
        b.add(r, OP_WAITALL, line=0, file_id=fid)


def _emit(b, r, call, row, events, live, pending_irecv, next_req, src, fid, cols):
    if call in _COLLECTIVES:
        raise CcmodInputError(f"collective {call} is not supported in pipit CSV",
                              source=src, line=row,
                              hint="read the OTF2 trace the CSV came from instead")
    if call == "MPI_Barrier":
        b.add(r, OP_BARRIER, line=row, file_id=fid)
        return next_req
    sendrecv = call.startswith("MPI_Sendrecv")
    waits, completions = [], 0
    for name, a, erow in events:
        if name in _BLOCKING:
            peer_attr, op, nonblocking_op = _BLOCKING[name]
            peer, tag, nb = _message(a, peer_attr, src, erow, name)
            if sendrecv:
                b.add(r, nonblocking_op, peer=peer, tag=tag, nbytes=nb, req=next_req,
                      line=erow, file_id=fid)
                waits.append(next_req)
                next_req += 1
            else:
                b.add(r, op, peer=peer, tag=tag, nbytes=nb, line=erow, file_id=fid)
        elif name == "MpiIsend":
            dst, tag, nb = _message(a, "receiver", src, erow, name)
            rid = _get(a, _REQUEST, src, erow, name)
            b.add(r, OP_ISEND, peer=dst, tag=tag, nbytes=nb, req=next_req, line=erow,
                  file_id=fid)
            live[rid] = next_req
            next_req += 1
        elif name == "MpiIrecvRequest":
            rid = _get(a, _REQUEST, src, erow, name)
            pending_irecv[next_req] = len(cols["op"])
            b.add(r, OP_IRECV, peer=0, tag=0, nbytes=-1, req=next_req, line=erow, file_id=fid)
            live[rid] = next_req
            next_req += 1
        elif name in ("MpiIsendComplete", "MpiIrecv"):
            rid = _get(a, _REQUEST, src, erow, name)
            req = live.pop(rid, None)
            if req is None:
                raise CcmodInputError(f"{name} for unknown request {rid}", source=src,
                                      line=erow)
            if name == "MpiIrecv":
                k = pending_irecv.pop(req, None)
                if k is not None:
                    cols["peer"][k], cols["tag"][k], cols["nbytes"][k] = _message(
                        a, "sender", src, erow, name)
            b.add(r, OP_WAIT, req=req, line=erow, file_id=fid)
            completions += 1
    for q in waits:
        b.add(r, OP_WAIT, req=q, line=row, file_id=fid)
    if call == "MPI_Waitall" and completions == 0 and live:
        b.add(r, OP_WAITALL, line=row, file_id=fid)
        live.clear()
        pending_irecv.clear()
    return next_req
