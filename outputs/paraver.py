"""The ``paraver`` sink: a ``.prv`` trace with its ``.pcf`` and ``.row`` files (BSC Paraver).

Mapping (times in integer nanoseconds, header ``ftime`` suffixed ``_ns``):

* resource model: only the nodes that host ranks, in node order, one CPU per rank on its
  node (``node_of_rank``); one application whose task ``r + 1`` is rank ``r`` with one
  thread; one communicator with every task;
* state records ``1:cpu:1:task:1:begin:end:state`` for every recorded state, gaps filled
  with Idle up to the end of the run. State values follow Paraver's usual numbering so the
  standard configuration files colour them sensibly: 0 Idle, 1 Running (compute),
  3 Waiting a message (recv), 4 Blocking Send (send), 8 Wait/WaitAll (wait),
  13 Group Communication (barrier);
* MPI call events (Extrae's types 50000001-50000003) for every record of the replayed
  workload (``ctx.workload``), built by :mod:`outputs.paraver_calls`, with ccmod's private
  types naming the communication records each call posts/completes and the exact compute,
  so ``ccmod run trace.prv`` reproduces the prediction (docs/outputs.md);
* communication records ``3:cpu:1:task:1:lsend:psend:cpu:1:task:1:lrecv:precv:size:tag``:
  logical send/receive = the send's/receive's post (inside its call), physical send =
  ``t_start_s``, physical receive = when the receiver saw it complete; without the
  workload: logical send = ``t_post_s``, logical = physical receive = ``t_end_s``.

Records are sorted by their first time (states before communications on ties). The header
date is fixed (``SOURCE_DATE_EPOCH`` when set) so the output is reproducible.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from ccmod.atomic import atomic_path, atomic_write_text
from ccmod.outputs.base import (STATE_BARRIER, STATE_COMPUTE, STATE_IDLE, STATE_OVERHEAD,
                                STATE_RECV, STATE_SEND, STATE_WAIT, Sink)
from ccmod.outputs.intervals import fill_idle, sanitize_states
from ccmod.outputs.paraver_calls import call_timeline, pcf_events
from ccmod.workloads.paraver_match import (CCMOD_COMPLETES, CCMOD_COMPUTE,
                                           CCMOD_NATIVE_BARRIER, CCMOD_POSTS, exact_bits)
from ccmod.outputs.sinkdata import message_arrays, nodes_of, state_arrays
from ccmod.outputs.registry import SINKS
from ccmod.outputs.timebase import seconds_to_ns

#: ccmod state code → (Paraver state value, label, RGB)
PRV_STATES = {
    STATE_IDLE: (0, "Idle", (117, 195, 255)),
    STATE_COMPUTE: (1, "Running (compute)", (0, 0, 255)),
    STATE_RECV: (3, "Waiting a message (recv)", (255, 0, 0)),
    STATE_SEND: (4, "Blocking Send (send)", (255, 0, 174)),
    STATE_WAIT: (8, "Wait/WaitAll (wait)", (235, 0, 0)),
    STATE_BARRIER: (13, "Group Communication (barrier)", (255, 144, 26)),
    STATE_OVERHEAD: (15, "Others (overhead)", (147, 120, 96)),
}


def _header_date() -> str:
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    try:
        t = time.gmtime(int(epoch)) if epoch else time.gmtime(0)
    except ValueError:
        t = time.gmtime(0)
    return time.strftime("%d/%m/%Y at %H:%M", t)


@SINKS.register()
class ParaverSink(Sink):
    """Paraver ``.prv``/``.pcf``/``.row`` (states + communications, ns).

    Parameters
    ----------
    out_dir : path, optional
    prefix : str
        Base name of the three files (``trace`` → trace.prv, trace.pcf, trace.row).
    """

    name = "paraver"
    description = "Paraver trace (.prv + .pcf + .row): rank states and communications"
    #: files it writes into the run directory (shown by ``ccmod sinks``)
    files = "trace.prv, trace.pcf, trace.row"

    def __init__(self, out_dir=None, prefix: str = "trace"):
        super().__init__(out_dir)
        self.prefix = prefix

    def write(self, result, ctx=None) -> None:
        d = self.directory(ctx)
        m = message_arrays(result)
        s = state_arrays(result)
        nranks = result.nranks
        makespan = float(result.makespan_s or 0.0)
        t_end = max([makespan] + [float(a.max()) for a in (s["t_end_s"], m["t_end_s"])
                                  if len(a)])
        layout = _Layout(nodes_of(result))
        calls = call_timeline(result, getattr(ctx, "workload", None))
        with atomic_path(d / f"{self.prefix}.prv") as tmp, \
                open(tmp, "w", encoding="ascii") as fh:
            _write_prv(fh, layout, s, m, nranks, t_end, calls)
        atomic_write_text(d / f"{self.prefix}.pcf", pcf_text(calls is not None))
        atomic_write_text(d / f"{self.prefix}.row", layout.row_text())


class _Layout:
    """Paraver resource model: compact used nodes, one CPU per rank."""

    def __init__(self, node_of_rank: np.ndarray):
        self.node_of_rank = node_of_rank
        n = len(node_of_rank)
        self.nodes, node_idx = np.unique(node_of_rank, return_inverse=True)
        self.node_idx = node_idx.reshape(-1) + 1                      # 1-based compact node
        order = np.lexsort((np.arange(n), node_of_rank))
        self.cpu = np.empty(n, np.int64)
        self.cpu[order] = np.arange(1, n + 1)                        # 1-based global CPU
        self.cpus_per_node = np.bincount(self.node_idx - 1, minlength=len(self.nodes))

    def header(self, ftime_ns: int) -> str:
        nranks = len(self.node_of_rank)
        res = f"{len(self.nodes)}({','.join(str(int(c)) for c in self.cpus_per_node)})"
        tasks = ",".join(f"1:{int(k)}" for k in self.node_idx)
        comm = "c:1:1:%d:%s" % (nranks, ":".join(str(t) for t in range(1, nranks + 1)))
        return (f"#Paraver ({_header_date()}):{ftime_ns}_ns:{res}:1:{nranks}({tasks}),1\n"
                f"{comm}\n")

    def row_text(self) -> str:
        nranks = len(self.node_of_rank)
        order = np.argsort(self.cpu)
        lines = [f"LEVEL CPU SIZE {nranks}"]
        lines += [f"{int(self.cpu[r])}.node{int(self.node_of_rank[r])}" for r in order]
        lines += ["", f"LEVEL NODE SIZE {len(self.nodes)}"]
        lines += [f"node{int(n)}" for n in self.nodes]
        lines += ["", f"LEVEL TASK SIZE {nranks}"]
        lines += [f"rank {r}" for r in range(nranks)]
        lines += ["", f"LEVEL THREAD SIZE {nranks}"]
        lines += [f"rank {r}" for r in range(nranks)]
        return "\n".join(lines) + "\n"


def pcf_text(with_calls: bool = False) -> str:
    """The ``.pcf``: display options, the state names/colours used by the records (and the
    MPI call event types when the trace has them)."""
    out = ["DEFAULT_OPTIONS", "", "LEVEL               THREAD", "UNITS               NANOSEC",
           "LOOK_BACK           100", "SPEED               1", "FLAG_ICONS          ENABLED",
           "NUM_OF_STATE_COLORS 1000", "YMAX_SCALE          37", "", "",
           "DEFAULT_SEMANTIC", "", "THREAD_FUNC          State As Is", "", "", "STATES"]
    rows = sorted(PRV_STATES.values())
    out += [f"{v:<5d}{label}" for v, label, _ in rows]
    out += ["", "", "STATES_COLOR"]
    out += [f"{v:<5d}{{{c[0]},{c[1]},{c[2]}}}" for v, _, c in rows]
    out += ["", ""]
    if with_calls:
        out += pcf_events()
    return "\n".join(out) + "\n"


def _write_prv(fh, layout: _Layout, s: dict, m: dict, nranks: int, t_end: float,
               calls=None) -> None:
    rk, st, a, b = sanitize_states(s["rank"], s["state"], s["t_start_s"], s["t_end_s"])
    rk, st, a, b = fill_idle(rk, st, a, b, nranks, t_end)
    a_ns, b_ns = seconds_to_ns(a), seconds_to_ns(b)
    keep = b_ns > a_ns
    rk, st, a_ns, b_ns = rk[keep], st[keep], a_ns[keep], b_ns[keep]
    lut = np.zeros(max(PRV_STATES) + 1, np.int64)
    for code, (v, _, _) in PRV_STATES.items():
        lut[code] = v
    prv_state = lut[np.clip(st, 0, len(lut) - 1)]

    src, dst = m["src"], m["dst"]
    ok = (src >= 0) & (src < nranks) & (dst >= 0) & (dst < nranks)
    src, dst = src[ok], dst[ok]
    if calls is None:
        # logical send = when the send was issued (the engine gives it; else the first post)
        post = seconds_to_ns((m["t_post_send_s"] if "t_post_send_s" in m
                              else m["t_post_s"])[ok])
        start = np.maximum(seconds_to_ns(m["t_start_s"][ok]), post)
        end = np.maximum(seconds_to_ns(m["t_end_s"][ok]), start)
        lrecv = end
    else:
        # the calls' times: send and receive posts, completion seen by the receiver
        events, lsend_s, lrecv_s, precv_s = calls
        post = seconds_to_ns(lsend_s[ok])
        start = np.maximum(seconds_to_ns(m["t_start_s"][ok]), post)
        lrecv = seconds_to_ns(lrecv_s[ok])
        end = np.maximum(seconds_to_ns(precv_s[ok]), lrecv)
    size = np.maximum(m["nbytes"][ok], 0)
    tag = m["tag"][ok]
    msg_order = np.argsort(np.argsort(m["msg_id"][ok], kind="stable"), kind="stable")
    # 1-based index of each message's communication record in the file (sorted below)
    rec_of_row = np.zeros(len(ok), np.int64)
    rec_of_row[np.flatnonzero(ok)] = np.argsort(np.lexsort((msg_order, post))) + 1
    ev = _event_arrays(calls, rec_of_row)

    ftime = int(max([int(seconds_to_ns(t_end))] + [int(x.max()) for x in (b_ns, end, ev[1])
                                                    if len(x)]))
    fh.write(layout.header(ftime))
    ns, ne = len(rk), len(ev[0])
    times = np.concatenate([a_ns, ev[1], post])
    kind = np.concatenate([np.ones(ns, np.int8), np.full(ne, 2, np.int8),
                           np.full(len(src), 3, np.int8)])
    # ties: a rank's calls in their order, messages in msg_id (= channel FIFO) order
    tie = np.concatenate([np.zeros(ns, np.int64), ev[2], msg_order])
    order = np.lexsort((tie, kind, times))
    cpu = layout.cpu
    chunk = 200_000
    for lo in range(0, len(order), chunk):
        idx = order[lo:lo + chunk]
        out = np.empty(len(idx), dtype=object)
        si = idx[idx < ns]
        out[idx < ns] = [f"1:{c}:1:{r + 1}:1:{x}:{y}:{v}" for c, r, x, y, v in zip(
            cpu[rk[si]].tolist(), rk[si].tolist(), a_ns[si].tolist(), b_ns[si].tolist(),
            prv_state[si].tolist())]
        is_ev = (idx >= ns) & (idx < ns + ne)
        ei = idx[is_ev] - ns
        out[is_ev] = [f"2:{c}:1:{r + 1}:1:{t}:{ty}:{v}{x}" for c, r, t, ty, v, x in zip(
            cpu[ev[0][ei]].tolist(), ev[0][ei].tolist(), ev[1][ei].tolist(),
            ev[3][ei].tolist(), ev[4][ei].tolist(), [ev[5][j] for j in ei.tolist()])]
        is_c = idx >= ns + ne
        ci = idx[is_c] - ns - ne
        out[is_c] = [f"3:{cs}:1:{s_ + 1}:1:{p}:{q}:{cr}:1:{d + 1}:1:{lr}:{e}:{n}:{t}"
                     for cs, s_, p, q, cr, d, lr, e, n, t in zip(
                         cpu[src[ci]].tolist(), src[ci].tolist(), post[ci].tolist(),
                         start[ci].tolist(), cpu[dst[ci]].tolist(), dst[ci].tolist(),
                         lrecv[ci].tolist(), end[ci].tolist(), size[ci].tolist(),
                         tag[ci].tolist())]
        fh.write("\n".join(out.tolist()))
        fh.write("\n")


def _event_arrays(calls, rec_of_row):
    """(rank, t_ns, seq, type, value, extra) of the call events (empty without calls);
    ``extra`` names the communication records a call posts/completes (ccmod's types)."""
    if calls is None or not calls[0]:
        z = np.zeros(0, np.int64)
        return z, z, z, z, z, []
    r, t, q, ty, v, posts, done, native, comp = zip(*calls[0])
    extra = [
        "".join(f":{CCMOD_POSTS}:{rec_of_row[i]}" for i in p)
        + "".join(f":{CCMOD_COMPLETES}:{rec_of_row[i]}" for i in d)
        + (f":{CCMOD_NATIVE_BARRIER}:1" if nat else "")
        + "".join(f":{CCMOD_COMPUTE}:{exact_bits(x)}" for x in c)
        for p, d, nat, c in zip(posts, done, native, comp)]
    return (np.asarray(r, np.int64), seconds_to_ns(np.asarray(t, float)),
            np.asarray(q, np.int64), np.asarray(ty, np.int64), np.asarray(v, np.int64),
            extra)


def read_prv_summary(path) -> dict:
    """Parse a ``.prv`` written by this sink (for tests/inspection).

    Returns
    -------
    dict with ``ftime_ns``, ``header``, ``states`` (list of int tuples) and ``comms``.
    """
    lines = Path(path).read_text(encoding="ascii").splitlines()
    header = lines[0]
    ftime = int(header.split("):", 1)[1].split(":", 1)[0].removesuffix("_ns"))
    states, comms, other = [], [], 0
    for ln in lines[1:]:
        if ln.startswith("1:"):
            states.append(tuple(int(x) for x in ln.split(":")[1:]))
        elif ln.startswith("3:"):
            comms.append(tuple(int(x) for x in ln.split(":")[1:]))
        elif ln.startswith(("c:", "2:")) or not ln:
            continue
        else:
            other += 1
    return {"header": header, "ftime_ns": ftime, "states": states, "comms": comms,
            "other": other}
