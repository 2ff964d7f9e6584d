"""LogGOPSim GOAL schedules (text ``.goal`` / ``.g2``), registered as ``goal``.

A GOAL schedule (T. Hoefler's LogGOPSim, "Group Operation Assembly Language") gives each
rank a small dependency graph of operations::

    num_ranks 2
    rank 0 {
    l1: calc 100                 # local work, in LogGOPSim time units (ns)
    l2: send 8b to 1 tag 5       # non-blocking in the graph: it may start once its deps allow
    l3: recv 8b from 1           # tag optional (0)
    l2 requires l1               # l2 starts after l1 completes
    l3 irequires l2              # l3 starts after l2 starts
    }

ccmod replays a rank's operations one after the other in a topological order of the graph
(ties: declaration order), sends as ``isend`` and receives as ``irecv``; a ``requires``
edge on a send or receive becomes a ``wait`` on it before the dependent operation starts,
an ``irequires`` edge only orders them, and every request still open at the end of a rank
is completed by a final ``waitall``. ``calc`` blocks the rank for ``calc x calc_unit_s``
seconds (default 1 ns: LogGOPSim's unit), times ``compute_scale``. Operations that
LogGOPSim runs concurrently on one rank without dependencies are thus serialised in
declaration order (LogGOPSim also serialises their CPU overhead); ``cpu``/``nic``
modifiers are ignored (counted). Binary GOAL schedules are not read.
"""
from __future__ import annotations

import heapq
import os
import re

from ccmod.errors import CcmodInputError
from ccmod.guard import check_declared_ranks
from ccmod.workloads.base import (OP_COMPUTE, OP_IRECV, OP_ISEND, OP_WAIT, OP_WAITALL,
                                  WorkloadBuilder)
from ccmod.workloads.registry import READERS

_OP = re.compile(r"^(\w+):\s*(calc|send|recv)\s+(.*)$")
_DEP = re.compile(r"^(\w+)\s+(requires|irequires)\s+(\w+)$")
_SIZE = re.compile(r"^(\d+)\s*b?$", re.I)
_TAIL = re.compile(r"^(\d+)b?\s+(to|from)\s+(\d+)(.*)$", re.I)


def _err(what, path, ln, hint=None):
    return CcmodInputError(what, source=path, line=ln, hint=hint)


def parse_goal(path: str):
    """Return (num_ranks, {rank: (ops, deps)}); ops: label -> (kind, args, line)."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except UnicodeDecodeError:
        raise _err("not a GOAL text schedule (binary?)", path, None,
                   "binary GOAL schedules are not read; give the text form") from None
    nranks, ranks, cur, ln = None, {}, None, 0
    for ln, raw in enumerate(lines, 1):
        s = raw.split("//", 1)[0].split("#", 1)[0].strip()
        if not s:
            continue
        if nranks is None:
            m = re.fullmatch(r"num_ranks\s+(\d+)", s)
            if m is None:
                raise _err("a GOAL schedule starts with 'num_ranks N'", path, ln)
            nranks = _int(m.group(1), path, ln)
            check_declared_ranks(nranks, path, "num_ranks declares")
            continue
        m = re.fullmatch(r"rank\s+(\d+)\s*\{", s)
        if m:
            if cur is not None:
                raise _err("'rank' block opened inside another", path, ln)
            r = _int(m.group(1), path, ln)
            if r >= nranks or r in ranks:
                raise _err(f"rank {r} outside 0..{nranks - 1} or given twice", path, ln)
            cur = ranks[r] = ({}, [])
            continue
        if s == "}":
            if cur is None:
                raise _err("'}' without an open rank block", path, ln)
            cur = None
            continue
        if cur is None:
            raise _err(f"unexpected line '{s[:40]}' outside a rank block", path, ln,
                       "lines are 'rank R {', 'LABEL: calc|send|recv ...', 'A requires B', '}'")
        m = _OP.match(s)
        if m:
            label, kind, rest = m.groups()
            if label in cur[0]:
                raise _err(f"label '{label}' defined twice", path, ln)
            cur[0][label] = (kind, _args(kind, rest, nranks, path, ln), ln)
            continue
        m = _DEP.match(s)
        if m:
            cur[1].append((m.group(1), m.group(2), m.group(3), ln))
            continue
        raise _err(f"cannot read '{s[:60]}'", path, ln,
                   "expected 'LABEL: calc N', 'LABEL: send Nb to R [tag T]', "
                   "'LABEL: recv Nb from R [tag T]' or 'A requires|irequires B'")
    if nranks is None:
        raise _err("empty GOAL schedule", path, None)
    if cur is not None:
        raise _err("the last rank block is not closed with '}'", path, ln)
    return nranks, ranks


def _int(text: str, path, ln) -> int:
    """An integer field; beyond 64 bits (or thousands of digits) is an input error."""
    if len(text) > 18:
        raise _err(f"number {text[:20]}... is out of range", path, ln)
    return int(text)


def _args(kind, rest, nranks, path, ln):
    if kind == "calc":
        toks = rest.split()
        try:
            v = float(toks[0])
        except (ValueError, IndexError):
            raise _err(f"bad calc amount '{rest}'", path, ln) from None
        if not v >= 0:
            raise _err("calc amount must be >= 0", path, ln)
        return (v, len(toks) > 1)
    m = _TAIL.match(rest)
    if m is None or (kind == "send") != (m.group(2).lower() == "to"):
        raise _err(f"bad {kind} '{rest}'", path, ln,
                   "send Nb to R [tag T] / recv Nb from R [tag T]")
    size, peer, tail = _int(m.group(1), path, ln), _int(m.group(3), path, ln), m.group(4).split()
    if peer >= nranks:
        raise _err(f"peer rank {peer} outside 0..{nranks - 1}", path, ln)
    tag, extra = 0, False
    i = 0
    while i < len(tail):
        if tail[i] == "tag" and i + 1 < len(tail) and tail[i + 1].lstrip("-").isdigit():
            tag = _int(tail[i + 1], path, ln)
            i += 2
        elif tail[i] in ("cpu", "nic") and i + 1 < len(tail):
            extra = True
            i += 2
        else:
            raise _err(f"unknown modifier '{tail[i]}' in {kind}", path, ln,
                       "valid: tag T, cpu C, nic N")
    return (size, peer, tag, extra)


def _order(ops, deps, path):
    """Topological order (ties: declaration order); cycles and unknown labels are errors."""
    labels = list(ops)
    pos = {lb: i for i, lb in enumerate(labels)}
    indeg = {lb: 0 for lb in labels}
    succ = {lb: [] for lb in labels}
    for a, _kind, b, ln in deps:
        for lb in (a, b):
            if lb not in ops:
                raise _err(f"dependency names unknown label '{lb}'", path, ln)
        succ[b].append(a)
        indeg[a] += 1
    ready = [pos[lb] for lb in labels if indeg[lb] == 0]
    heapq.heapify(ready)
    out = []
    while ready:
        lb = labels[heapq.heappop(ready)]
        out.append(lb)
        for s in succ[lb]:
            indeg[s] -= 1
            if indeg[s] == 0:
                heapq.heappush(ready, pos[s])
    if len(out) != len(labels):
        left = [lb for lb in labels if indeg[lb] > 0]
        raise _err(f"dependency cycle among {', '.join(left[:4])}", path,
                   ops[left[0]][2])
    return out


@READERS.register()
class GoalReader:
    """LogGOPSim GOAL text schedule."""

    name = "goal"
    description = "LogGOPSim GOAL text schedule (.goal, .g2): per-rank dependency graphs"
    extensions = (".goal", ".g2")

    @staticmethod
    def sniff(path) -> bool:
        p = os.fspath(path)
        if not os.path.isfile(p):
            return False
        try:
            with open(p, "rb") as f:
                head = f.read(256).decode("utf-8", "replace")
        except OSError:
            return False
        first = next((ln.strip() for ln in head.splitlines() if ln.strip()), "")
        return re.match(r"num_ranks\s+\d+", first) is not None

    @staticmethod
    def read(path, *, compute_rate=1e9, compute_scale=1.0, collectives=None,
             calc_unit_s: float = 1e-9, **opts):
        """Read a GOAL schedule; ``calc_unit_s`` is the duration of one ``calc`` unit."""
        p = os.fspath(path)
        if opts:
            raise CcmodInputError(f"unknown option(s) for format 'goal': {', '.join(opts)}",
                                  hint="valid: calc_unit_s")
        if not os.path.isfile(p):
            raise CcmodInputError("GOAL schedule not found", source=p)
        try:
            unit = float(calc_unit_s)
        except (TypeError, ValueError):
            unit = -1.0
        if not unit > 0:
            raise CcmodInputError("calc_unit_s must be > 0", source="calc_unit_s")
        nranks, ranks = parse_goal(p)
        b = WorkloadBuilder(nranks)
        fid = b.file(p)
        modifiers = 0
        for r in range(nranks):
            ops, deps = ranks.get(r, ({}, []))
            req_of, waited, nreq = {}, set(), 0
            requires = {}
            for a, kind, bb, _ln in deps:
                if kind == "requires":
                    requires.setdefault(a, []).append(bb)
            for lb in _order(ops, deps, p):
                for d in requires.get(lb, ()):
                    if d in req_of and d not in waited:
                        b.add(r, OP_WAIT, req=req_of[d], line=ops[d][2], file_id=fid)
                        waited.add(d)
                kind, args, ln = ops[lb]
                if kind == "calc":
                    modifiers += args[1]
                    b.add(r, OP_COMPUTE, duration_s=args[0] * unit * compute_scale, line=ln,
                          file_id=fid)
                    continue
                size, peer, tag, extra = args
                modifiers += extra
                req_of[lb] = nreq
                b.add(r, OP_ISEND if kind == "send" else OP_IRECV, peer=peer, tag=tag,
                      nbytes=size, req=nreq, line=ln, file_id=fid)
                nreq += 1
            if len(waited) < len(req_of):
                b.add(r, OP_WAITALL, line=0, file_id=fid)
        w = b.build()
        notes = ["GOAL graphs replayed in topological order (ties: declaration order): "
                 "independent operations of a rank are serialised"]
        if modifiers:
            notes.append(f"{modifiers} cpu/nic modifier(s) ignored")
        w.meta.update({"format": "goal", "calc_unit_s": unit, "notes": notes,
                       "compute_unit": "goal calc units"})
        return w
