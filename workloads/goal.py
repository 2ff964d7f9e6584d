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

Text follows LogGOPSim's ``txt2bin`` grammar (labels optional, ``//`` and ``/* */``
comments, ``calc N [cpu C]``, ``send|recv Nb to|from R [tag T] [cpu C] [nic N]``); the
binary form ``txt2bin`` writes is read too (:mod:`ccmod.workloads.goal_binary`).
Wildcard receives (``from -1``, ``tag -1``) are refused: ccmod matches per (source, tag).

Each rank's graph becomes a sequence of ``isend``/``irecv``/``compute``/``wait`` by the
list scheduling of :func:`ccmod.workloads.goal_schedule.linearise`: sends and receives
are posted as soon as their dependencies allow, so independent ones overlap; ``calc``
blocks the rank for ``calc x calc_unit_s`` seconds (default 1 ns: LogGOPSim's unit), times
``compute_scale``; ready calcs on different CPUs run as one block lasting the longest;
``nic`` is ignored (noted).
"""
from __future__ import annotations

import os
import re

from ccmod.errors import CcmodInputError
from ccmod.guard import check_declared_ranks
from ccmod.workloads.base import (OP_COMPUTE, OP_IRECV, OP_ISEND, OP_WAIT, OP_WAITALL,
                                  WorkloadBuilder, file_head)
from ccmod.workloads.goal_binary import is_binary_goal, parse_goal_binary
from ccmod.workloads.goal_schedule import CALC, RECV, SEND, linearise
from ccmod.workloads.registry import READERS

_OP = re.compile(r"^(?:(\w+)\s*:\s*)?(calc|send|recv)\b\s*(.*)$")
_DEP = re.compile(r"^(\w+)\s+(requires|irequires)\s+(\w+)$")
_TAIL = re.compile(r"^(\d+)\s*b\s+(to|from)\s+(-?\d+)(.*)$", re.I)
_CALC = re.compile(r"^(\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)(?:\s+cpu\s+(\d+))?$")
_BLOCK = re.compile(r"/\*.*?\*/", re.S)


def _err(what, path, ln, hint=None):
    return CcmodInputError(what, source=path, line=ln, hint=hint)


class RankGraph:
    """One rank's GOAL graph as parallel lists (index = declaration order)."""

    def __init__(self):
        self.kinds, self.amount, self.peer, self.tag = [], [], [], []
        self.cpu, self.nic, self.line, self.labels = [], [], [], {}
        self.deps = []          # (a, start_only, b, line)

    def add(self, kind, amount, peer=-1, tag=0, cpu=0, nic=0, line=0):
        self.kinds.append(kind)
        self.amount.append(amount)
        self.peer.append(peer)
        self.tag.append(tag)
        self.cpu.append(cpu)
        self.nic.append(nic)
        self.line.append(line)
        return len(self.kinds) - 1


def parse_goal(path: str):
    """Return (num_ranks, {rank: RankGraph}) of a text GOAL schedule."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except UnicodeDecodeError:
        raise _err("not a GOAL text schedule and no binary GOAL magic number", path, None,
                   "give a text .goal or a schedule written by LogGOPSim's txt2bin") from None
    # block comments may span lines: keep their newlines so line numbers stay right
    text = _BLOCK.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    nranks, ranks, cur, ln = None, {}, None, 0
    for ln, raw in enumerate(text.splitlines(), 1):
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
            cur = ranks[r] = RankGraph()
            continue
        if s == "}":
            if cur is None:
                raise _err("'}' without an open rank block", path, ln)
            cur = None
            continue
        if cur is None:
            raise _err(f"unexpected line '{s[:40]}' outside a rank block", path, ln,
                       "lines are 'rank R {', 'LABEL: calc|send|recv ...', 'A requires B', '}'")
        m = _DEP.match(s)
        if m:
            a, kind, b = m.groups()
            for lb in (a, b):
                if lb not in cur.labels:
                    raise _err(f"dependency names unknown label '{lb}'", path, ln,
                               "define an operation before the edges that name it")
            cur.deps.append((cur.labels[a], kind == "irequires", cur.labels[b], ln))
            continue
        m = _OP.match(s)
        if m:
            label, kind, rest = m.groups()
            if label is not None and label in cur.labels:
                raise _err(f"label '{label}' defined twice", path, ln)
            i = _op(cur, kind, rest, nranks, path, ln)
            if label is not None:
                cur.labels[label] = i
            continue
        raise _err(f"cannot read '{s[:60]}'", path, ln,
                   "expected 'LABEL: calc N [cpu C]', 'LABEL: send Nb to R [tag T] [cpu C] "
                   "[nic N]', 'LABEL: recv Nb from R [tag T] [cpu C] [nic N]' or "
                   "'A requires|irequires B'")
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


def _op(g, kind, rest, nranks, path, ln):
    """Parse one calc/send/recv (txt2bin's grammar) into ``g``; return its index."""
    if kind == "calc":
        m = _CALC.match(rest)
        if m is None:
            raise _err(f"bad calc '{rest}'", path, ln, "calc N [cpu C]")
        cpu = _int(m.group(2), path, ln) if m.group(2) else 0
        return g.add(CALC, float(m.group(1)), cpu=cpu, line=ln)
    m = _TAIL.match(rest)
    if m is None or (kind == "send") != (m.group(2).lower() == "to"):
        raise _err(f"bad {kind} '{rest}'", path, ln,
                   "send Nb to R [tag T] [cpu C] [nic N] / recv Nb from R [tag T] ...")
    if m.group(3) == "-1":
        raise _err("wildcard receive (from -1, LogGOPSim's ANY_SOURCE) is not supported",
                   path, ln, "ccmod matches messages per (source, tag): name the source")
    size, peer = _int(m.group(1), path, ln), _int(m.group(3), path, ln)
    if peer >= nranks:
        raise _err(f"peer rank {peer} outside 0..{nranks - 1}", path, ln)
    mods = {"tag": 0, "cpu": 0, "nic": 0}
    tail = m.group(4).split()
    if len(tail) % 2:
        raise _err(f"modifier '{tail[-1]}' in {kind} has no value", path, ln,
                   "valid: tag T, cpu C, nic N")
    for key, val in zip(tail[::2], tail[1::2]):
        if key not in mods:
            raise _err(f"unknown modifier '{key}' in {kind}", path, ln,
                       "valid: tag T, cpu C, nic N")
        if val == "-1" and key == "tag":
            raise _err("wildcard tag (tag -1, LogGOPSim's ANY_TAG) is not supported",
                       path, ln, "give the tag the matching send uses")
        if not val.isdigit():
            raise _err(f"{key} must be a non-negative integer, got '{val}'", path, ln)
        mods[key] = _int(val, path, ln)
    return g.add(SEND if kind == "send" else RECV, size, peer, mods["tag"], mods["cpu"],
                 mods["nic"], ln)


def replay_arrays(nranks, ranks, path, unit_s, compute_scale, fmt):
    """Build the workload of GOAL graphs (text or binary) through :func:`linearise`."""
    b = WorkloadBuilder(nranks)
    fid = b.file(path)
    counts = {"merged_calc": 0, "nics": set(), "cpus": set()}
    for r in range(nranks):
        g = ranks.get(r)
        if g is None:
            continue
        try:
            order = linearise(g.kinds, g.cpu, [(a, s, b_) for a, s, b_, _ in g.deps])
        except ValueError as e:
            names = {i: lb for lb, i in g.labels.items()}
            left = [names.get(i, f"#{i}") for i in e.args[0]]
            raise _err(f"dependency cycle among {', '.join(left)} (rank {r})", path,
                       g.line[e.args[0][0]]) from None
        counts["cpus"].update(g.cpu)
        counts["nics"].update(g.nic)
        open_reqs = set()
        for what, i in order:
            if what == "calc":
                counts["merged_calc"] += len(i) > 1
                dur = max(g.amount[j] for j in i) * unit_s * compute_scale
                b.add(r, OP_COMPUTE, duration_s=dur, line=g.line[i[0]], file_id=fid)
            elif what == "post":
                op = OP_ISEND if g.kinds[i] == SEND else OP_IRECV
                b.add(r, op, peer=g.peer[i], tag=g.tag[i], nbytes=int(g.amount[i]), req=i,
                      line=g.line[i], file_id=fid)
                open_reqs.add(i)
            else:
                b.add(r, OP_WAIT, req=i, line=g.line[i], file_id=fid)
                open_reqs.discard(i)
        if open_reqs:
            b.add(r, OP_WAITALL, line=0, file_id=fid)
    w = b.build()
    notes = ["GOAL graphs replayed by list scheduling: send/receive posted as soon as their "
             "dependencies allow, calc in between, a wait where a 'requires' edge needs a "
             "send/receive finished (earliest posted first)"]
    if counts["merged_calc"]:
        notes.append(f"{counts['merged_calc']} group(s) of calc on different CPUs run as one "
                     "compute lasting the longest (concurrent in LogGOPSim)")
    if len(counts["nics"]) > 1:
        notes.append(f"nic modifiers ignored: {len(counts['nics'])} NICs named, ccmod gives "
                     "each rank the network's one NIC")
    w.meta.update({"format": "goal", "goal_form": fmt, "calc_unit_s": unit_s,
                   "notes": notes, "compute_unit": "goal calc units",
                   "goal_cpus": len(counts["cpus"]) or 1,
                   "goal_nics": len(counts["nics"]) or 1})
    return w


@READERS.register()
class GoalReader:
    """LogGOPSim GOAL schedule, text or binary (txt2bin)."""

    name = "goal"
    description = ("LogGOPSim GOAL schedule (.goal, .g2 text; txt2bin binary): per-rank "
                   "dependency graphs")
    extensions = (".goal", ".g2")

    @staticmethod
    def sniff(path) -> bool:
        raw = file_head(path, 256)
        if raw is None:
            return False
        if is_binary_goal(raw):
            return True
        head = _BLOCK.sub("", raw.decode("utf-8", "replace"))
        first = next((ln.split("//", 1)[0].strip() for ln in head.splitlines()
                      if ln.split("//", 1)[0].strip()), "")
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
        with open(p, "rb") as f:
            binary = is_binary_goal(f.read(8))
        if binary:
            nranks, ranks = parse_goal_binary(p, RankGraph)
        else:
            nranks, ranks = parse_goal(p)
        return replay_arrays(nranks, ranks, p, unit, compute_scale,
                             "binary" if binary else "text")
