"""Measured contention experiments from ../shared/traces/real, and the workloads that rebuild them.

Used by bench/validate_contention.py. Every parser here reads the files as SOURCES.md
describes them; every workload builder reproduces the benchmark's communication pattern
(placement from the job's ``ntasks`` / ``ntasks_per_node`` in JOBS.tsv, block placement, or
the SimGrid calibration machinefile: one rank per node).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ccmod.workloads import collectives as C
from ccmod.workloads.base import WorkloadBuilder

WINDOW = 64          # osu_bw / osu_mbw_mr / IMB Uniband messages per window
ACK_BYTES = 4


@dataclass
class Experiment:
    """One measured curve: what was run, where, and what was measured per point."""

    cluster: str
    name: str            # e.g. "saturation send", "osu_bw", "intranode uniband"
    category: str        # saturation | stream | collective | intranode
    points: list = field(default_factory=list)   # dicts: size/k, measured_s, build()
    note: str = ""


# ----------------------------------------------------------------------------- parsers
def read_jobs(root: Path) -> dict[str, tuple[int, int]]:
    """``test_dir -> (ntasks, ntasks_per_node)`` from stackhpc JOBS.tsv."""
    out = {}
    for line in (root / "JOBS.tsv").read_text().splitlines()[1:]:
        f = line.split("\t")
        if len(f) >= 3 and f[1].isdigit() and f[2].isdigit():
            out[f[0]] = (int(f[1]), int(f[2]))
    return out


def osu_table(path: Path) -> list[tuple[int, list[float]]]:
    """Rows ``(size, [values...])`` of an OSU output (first table)."""
    rows = []
    for line in path.read_text(errors="replace").splitlines():
        t = line.split()
        if len(t) >= 2 and t[0].isdigit():
            try:
                rows.append((int(t[0]), [float(v) for v in t[1:]]))
            except ValueError:
                continue
    return rows


def imb_tables(path: Path, bench: str) -> dict[int, list[tuple[int, list[float]]]]:
    """``#processes -> rows (bytes, [reps, Mbytes/sec, Msg/sec or t...])`` of one IMB benchmark."""
    out: dict[int, list] = {}
    cur = None
    active = False
    for line in path.read_text(errors="replace").splitlines():
        s = line.strip()
        m = re.match(r"#\s*Benchmarking\s+(\S+)", s)
        if m:
            active = m.group(1).lower() == bench.lower()
            cur = None
            continue
        m = re.match(r"#\s*#processes\s*=\s*(\d+)", s)
        if m and active:
            cur = out.setdefault(int(m.group(1)), [])
            continue
        t = s.split()
        if cur is not None and len(t) >= 3 and t[0].isdigit():
            try:
                cur.append((int(t[0]), [float(v) for v in t[1:]]))
            except ValueError:
                pass
    return out


def saturation_groups(path: Path) -> dict[int, float]:
    """``participants -> median op duration (s)`` of a SimGrid calibration saturation CSV.

    Records of one step run concurrently; a sweep over start times splits them into calls
    (a call ends when no record is still running), and a call's size is its record count.
    """
    a = np.genfromtxt(path, delimiter=",", dtype=None, encoding=None,
                      names=("rank", "op", "n", "t", "dur"))
    t0 = a["t"] * 1e-3
    t1 = t0 + a["dur"] * 1e-3
    order = np.argsort(t0, kind="stable")
    groups, cur, end = [], [], -np.inf
    for i in order:
        if cur and t0[i] > end:
            groups.append(cur)
            cur, end = [], -np.inf
        cur.append(i)
        end = max(end, t1[i])
    if cur:
        groups.append(cur)
    by_size: dict[int, list[float]] = {}
    for g in groups:
        by_size.setdefault(len(g), []).append(float(np.median(a["dur"][g] * 1e-3)))
    return {k: float(np.median(v)) for k, v in sorted(by_size.items())}


# ----------------------------------------------------------------------------- workloads
def w_send(nranks: int, pairs: list[tuple[int, int]], nbytes: int):
    b = WorkloadBuilder(nranks)
    for s, d in pairs:
        b.send(s, d, nbytes)
        b.recv(d, s, nbytes)
    return b.build()


def w_sendrecv(nranks: int, partners: dict[int, tuple[int, int]], nbytes: int):
    """``partners[r] = (dst, src)``: every rank posts irecv+isend then waits (a Sendrecv)."""
    b = WorkloadBuilder(nranks)
    for r, (dst, src) in partners.items():
        b.irecv(r, src, 0, nbytes=nbytes)
        b.isend(r, dst, nbytes, 1)
        b.waitall(r)
    return b.build()


def w_collective(nranks: int, kind: str, nbytes: int, algs: dict, compute=None):
    b = WorkloadBuilder(nranks)
    for r in range(nranks):
        C.expand(b, r, nranks, kind, 0, nbytes=nbytes, algorithm=algs.get(kind))
    return b.build()


def w_stream(nranks: int, pairs: list[tuple[int, int]], nbytes: int, iters: int = 2):
    """osu_bw / osu_mbw_mr / IMB Uniband: windows of WINDOW isends, waitall, a small ack."""
    b = WorkloadBuilder(nranks)
    for s, d in pairs:
        req = 0
        for _ in range(iters):
            for _ in range(WINDOW):
                b.isend(s, d, nbytes, req); req += 1
            b.waitall(s)
            b.recv(s, d, ACK_BYTES, tag=1)
            for _ in range(WINDOW):
                b.irecv(d, s, req, nbytes=nbytes); req += 1
            b.waitall(d)
            b.send(d, s, ACK_BYTES, tag=1)
    return b.build()


def saturation_steps(path: Path, test: str, nranks: int, nb_runs: int) -> dict[int, float]:
    """``pairs -> median op duration (s)`` of a point-to-point saturation test.

    Step s of the test activates more ranks; rank r's records are in program order, so a
    record's step is the rank's first step plus its ordinal // NB_RUNS. send / sendrecv_same:
    step k uses senders 0..k-1 (k pairs); sendrecv_diff: step s uses ranks 0..2s-1 and their
    partners (2s pairs, two nodes added per step).
    """
    a = np.genfromtxt(path, delimiter=",", dtype=None, encoding=None,
                      names=("rank", "op", "n", "t", "dur"))
    half = nranks // 2
    by_step: dict[int, list[float]] = {}
    for r in np.unique(a["rank"]):
        sel = np.flatnonzero(a["rank"] == r)
        sel = sel[np.argsort(a["t"][sel], kind="stable")]
        low = int(r) % half
        first = low + 1 if test != "sendrecv_diff" else low // 2 + 1
        for j, i in enumerate(sel):
            by_step.setdefault(first + j // nb_runs, []).append(float(a["dur"][i]) * 1e-3)
    out = {}
    for step, v in sorted(by_step.items()):
        pairs = step if test != "sendrecv_diff" else 2 * step
        out[pairs] = float(np.median(v))
    return out


def saturation_workload(test: str, nranks: int, pairs: int, nbytes: int):
    """The calibration's saturation step with ``pairs`` pairs (one rank per node)."""
    half = nranks // 2
    if test == "send":
        return w_send(nranks, [(i, i + half) for i in range(pairs)], nbytes), \
            [i for i in range(pairs)] + [i + half for i in range(pairs)]
    if test == "sendrecv_same":
        part = {}
        for i in range(pairs):
            part[i] = (i + half, i + half)
            part[i + half] = (i, i)
        return w_sendrecv(nranks, part, nbytes), sorted(part)
    # sendrecv_diff: lower i sends to half+(i^1), receives from half+i (crossed pairs)
    part = {}
    for i in range(pairs):
        part[i] = (half + (i ^ 1), half + i)
        part[half + i] = (i, i ^ 1)
    return w_sendrecv(nranks, part, nbytes), sorted(part)
