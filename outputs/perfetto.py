"""The ``perfetto`` sink: Chrome trace-event JSON for ui.perfetto.dev and chrome://tracing.

Layout of ``trace.json`` (JSON object format, ``displayTimeUnit`` ns, ``ts`` in µs with
ns resolution):

* one *process* per rank (``pid = rank + 1``, named ``rank N (node M)``) with one thread
  whose track holds the rank's states as complete events (``ph: "X"``, names compute /
  send / recv / wait / barrier / idle). States are sequential per rank, the gaps filled
  with ``idle`` up to the end of the run, so every instant of a rank is inside a slice;
* one flow per message (``ph: "s"`` on the sender, ``ph: "f"`` with ``bp: "e"`` on the
  receiver, ``cat: "msg"``, ``id`` = message id). The flow start is placed at the message's
  ``t_start_s`` and the end at its ``t_end_s``, moved by at most 1 ns so that each lies
  strictly inside the enclosing state slice (viewers bind flows to the enclosing slice);
  when a run has more than ``max_flows`` messages, an evenly spaced deterministic sample
  (by start time) is drawn and ``metadata.flows_sampled`` says so;
* a process ``network`` (``pid = nranks + 1``) with two counter tracks per busiest link
  (``counters`` links ranked by time-averaged contention): ``<link> contention`` (active
  messages) and ``<link> utilisation`` (fraction of capacity, see ``ccmod.linkrate``).

:func:`validate_trace` is the structural checker used by the tests.
"""
from __future__ import annotations

import bisect
import json
import math
from collections import defaultdict
from pathlib import Path

import numpy as np

from ccmod.atomic import atomic_path
from ccmod.outputs.base import ALL_STATE_NAMES, Sink
from ccmod.outputs.intervals import fill_idle, sanitize_states
from ccmod.outputs.registry import SINKS
from ccmod.outputs.sinkdata import (load_arrays, message_arrays, nodes_of, resource_names,
                                    state_arrays)
from ccmod.outputs.timebase import seconds_to_ns


def _ts(ns: int) -> str:
    """Integer ns → µs literal with 3 decimals (exact, no float rounding)."""
    return f"{ns // 1000}.{ns % 1000:03d}"


@SINKS.register()
class PerfettoSink(Sink):
    """Chrome/Perfetto trace-event JSON: rank tracks, message flows, link counters.

    Parameters
    ----------
    out_dir : path, optional
    file : str
        File name inside the directory (``trace.json``).
    max_flows : int
        Most message flows written (evenly spaced sample beyond; 0 = none).
    counters : int
        Number of busiest links that get contention/utilisation counter tracks.
    """

    name = "perfetto"
    description = "Chrome trace-event JSON (ui.perfetto.dev): rank tracks, message flows, link counters"
    #: files it writes into the run directory (shown by ``ccmod sinks``)
    files = "trace.json"
    wants_link_load = True

    def __init__(self, out_dir=None, file: str = "trace.json", max_flows: int = 200_000,
                 counters: int = 8):
        super().__init__(out_dir)
        self.file = file
        self.max_flows = int(max_flows)
        self.counters = int(counters)

    def write(self, result, ctx=None) -> None:
        d = self.directory(ctx)
        with atomic_path(d / self.file) as tmp, open(tmp, "w", encoding="utf-8") as fh:
            self._write(fh, result)

    # ------------------------------------------------------------------ writing
    def _write(self, fh, result) -> None:
        m = message_arrays(result)
        s = state_arrays(result)
        ld = load_arrays(result)
        nranks = result.nranks
        makespan = float(result.makespan_s or 0.0)
        t_end = max([makespan] + [float(a.max()) for a in (s["t_end_s"], m["t_end_s"],
                                                           ld["t_end_s"]) if len(a)])
        end_ns = int(seconds_to_ns(t_end))
        nodes = nodes_of(result)

        w = fh.write
        w('{"displayTimeUnit":"ns","traceEvents":[\n')
        first = True

        def emit(lines):
            nonlocal first
            if not lines:
                return
            if not first:
                w(",\n")
            w(",\n".join(lines))
            first = False

        # --- process / thread names ------------------------------------------------
        meta = []
        for r in range(nranks):
            node = f" (node {int(nodes[r])})" if nodes is not None and r < len(nodes) else ""
            pname = json.dumps(f"rank {r}{node}")
            meta.append(f'{{"ph":"M","name":"process_name","pid":{r + 1},"tid":1,'
                        f'"args":{{"name":{pname}}}}}')
            meta.append(f'{{"ph":"M","name":"process_sort_index","pid":{r + 1},"tid":1,'
                        f'"args":{{"sort_index":{r}}}}}')
            meta.append(f'{{"ph":"M","name":"thread_name","pid":{r + 1},"tid":1,'
                        f'"args":{{"name":"states"}}}}')
        emit(meta)

        # --- states: sequential, idle-filled, in integer ns ----------------------------
        rk, st, a_ns, b_ns = _state_slices(s, nranks, t_end)
        names = [json.dumps(n) for n in ALL_STATE_NAMES]
        for lo in range(0, len(rk), 200_000):
            hi = min(lo + 200_000, len(rk))
            emit([f'{{"ph":"X","cat":"state","name":{names[c]},"pid":{r + 1},"tid":1,'
                  f'"ts":{_ts(a)},"dur":{_ts(b - a)}}}'
                  for r, c, a, b in zip(rk[lo:hi].tolist(), st[lo:hi].tolist(),
                                        a_ns[lo:hi].tolist(), b_ns[lo:hi].tolist())])

        # --- message flows --------------------------------------------------------------
        sampled = 0
        if len(m["src"]) and self.max_flows > 0 and len(rk):
            sel = _sample(m["t_start_s"], self.max_flows)
            sampled = len(sel)
            src, dst = m["src"][sel], m["dst"][sel]
            fs = _inside(rk, a_ns, b_ns, src, seconds_to_ns(m["t_start_s"][sel]), start=True)
            fe = _inside(rk, a_ns, b_ns, dst, seconds_to_ns(m["t_end_s"][sel]), start=False)
            ids = m["msg_id"][sel]
            nb = m["nbytes"][sel].astype(np.int64)
            lines = []
            for i, s_, d_, t0, t1, b_ in zip(ids.tolist(), src.tolist(), dst.tolist(),
                                             fs.tolist(), fe.tolist(), nb.tolist()):
                lines.append(f'{{"ph":"s","cat":"msg","name":"message","id":{i},'
                             f'"pid":{s_ + 1},"tid":1,"ts":{_ts(t0)},'
                             f'"args":{{"dst":{d_},"nbytes":{b_}}}}}')
                lines.append(f'{{"ph":"f","bp":"e","cat":"msg","name":"message","id":{i},'
                             f'"pid":{d_ + 1},"tid":1,"ts":{_ts(t1)}}}')
                if len(lines) >= 200_000:
                    emit(lines)
                    lines = []
            emit(lines)

        # --- link counters -------------------------------------------------------------
        chosen = self._write_counters(emit, ld, result, nranks)

        w("\n],\n")
        md = {"tool": "ccmod", "ranks": nranks, "messages": int(len(m["src"])),
              "flows": int(sampled), "flows_sampled": bool(sampled < len(m["src"])),
              "counter_links": chosen, "makespan_s": makespan}
        w('"metadata":' + json.dumps(md) + "}\n")

    def _write_counters(self, emit, ld, result, nranks: int) -> list[str]:
        if self.counters <= 0 or len(ld["resource"]) == 0:
            return []
        res = ld["resource"]
        dur = ld["t_end_s"] - ld["t_start_s"]
        weight = np.bincount(res, weights=ld["active"] * dur)
        peak = np.zeros(len(weight))
        np.maximum.at(peak, res, ld["active"].astype(float))
        cand = np.nonzero(weight > 0)[0]
        order = np.lexsort((cand, -peak[cand], -weight[cand]))
        chosen = cand[order][: self.counters]
        names = resource_names(result, chosen)
        pid = nranks + 1
        lines = [f'{{"ph":"M","name":"process_name","pid":{pid},"tid":1,'
                 f'"args":{{"name":"network"}}}}',
                 f'{{"ph":"M","name":"process_sort_index","pid":{pid},"tid":1,'
                 f'"args":{{"sort_index":{nranks}}}}}']
        for res_id, name in zip(chosen.tolist(), names):
            sel = np.nonzero(res == res_id)[0]
            sel = sel[np.argsort(ld["t_start_s"][sel], kind="stable")]
            a = seconds_to_ns(ld["t_start_s"][sel])
            b = seconds_to_ns(ld["t_end_s"][sel])
            act = ld["active"][sel].astype(np.int64)
            u = None
            if ld.get("utilisation") is not None:
                u = ld["utilisation"][sel]
                u = np.clip(np.where(np.isfinite(u), u, 0.0), 0.0, 1.0)
            # a value at each interval start; back to 0 where the next does not follow on
            nxt = np.r_[a[1:], -1]
            gap = nxt != b
            ts = np.concatenate([a, b[gap]])
            val = np.concatenate([act, np.zeros(int(gap.sum()), np.int64)])
            order = np.argsort(ts, kind="stable")
            cname = json.dumps(f"{name} contention")
            lines += [f'{{"ph":"C","name":{cname},"pid":{pid},"tid":1,"ts":{_ts(t)},'
                      f'"args":{{"active":{v}}}}}'
                      for t, v in zip(ts[order].tolist(), val[order].tolist())]
            if u is not None:
                uval = np.concatenate([u, np.zeros(int(gap.sum()))])
                uname = json.dumps(f"{name} utilisation")
                lines += [f'{{"ph":"C","name":{uname},"pid":{pid},"tid":1,"ts":{_ts(t)},'
                          f'"args":{{"utilisation":{v:.6g}}}}}'
                          for t, v in zip(ts[order].tolist(), uval[order].tolist())]
        emit(lines)
        return [str(n) for n in names]


def _state_slices(s: dict, nranks: int, t_end: float):
    """Rank states as sequential, idle-filled slices in integer ns (zero-length dropped)."""
    rk, st, a, b = sanitize_states(s["rank"], s["state"], s["t_start_s"], s["t_end_s"])
    rk, st, a, b = fill_idle(rk, st, a, b, nranks, t_end)
    a_ns, b_ns = seconds_to_ns(a), seconds_to_ns(b)
    # rounding to ns can make neighbours overlap by construction of rint? no: rint is
    # monotone, so sequential stays sequential; only empty slices need dropping
    keep = b_ns > a_ns
    return rk[keep], st[keep], a_ns[keep], b_ns[keep]


def _sample(t_start, limit: int) -> np.ndarray:
    """Indices of at most ``limit`` messages, evenly spaced in start-time order."""
    n = len(t_start)
    order = np.argsort(np.asarray(t_start), kind="stable")
    if n <= limit:
        return order
    pick = np.unique(np.linspace(0, n - 1, limit).round().astype(np.int64))
    return np.sort(order[pick])


def _inside(rk, a_ns, b_ns, rank, t_ns, start: bool) -> np.ndarray:
    """Move each (rank, t) strictly inside the slice that contains it.

    ``start``: the slice with ``a <= t < b`` (flow leaves it); else ``a < t <= b`` (the
    flow arrives in the slice ending at ``t``, e.g. the recv or wait that completes).
    Slices are sorted by (rank, a) and cover each rank completely.
    """
    keys = rk.astype(np.float64) + 1j * a_ns.astype(np.float64)
    q = rank.astype(np.float64) + 1j * t_ns.astype(np.float64)
    j = np.searchsorted(keys, q, side="right" if start else "left") - 1
    j = np.clip(j, 0, len(rk) - 1)
    # first slice of the rank when t precedes it (t <= 0)
    wrong = rk[j] != rank
    if wrong.any():
        j[wrong] = np.searchsorted(keys, rank[wrong].astype(np.float64) + 0j, side="left")
    lo, hi = a_ns[j], b_ns[j]
    inner_lo = np.where(hi - lo >= 2, lo + 1, lo)
    inner_hi = np.where(hi - lo >= 2, hi - 1, lo)
    return np.clip(t_ns, inner_lo, inner_hi)


# ============================================================================ validator
def validate_trace(obj, max_problems: int = 50) -> list[str]:
    """Structural check of a Chrome trace-event object; returns a list of problems.

    Checks: valid top level (list or object with a ``traceEvents`` list); every event an
    object with a known ``ph``; numeric, non-negative, finite ``ts`` (and ``dur`` for
    ``X``); per (pid, tid) track the ``X``/``B``/``E`` spans properly nested (no partial
    overlap, every ``E`` matches an open ``B``, no ``B`` left open); every flow
    (``s``/``t``/``f`` grouped by cat, name and id) has exactly one start and at least one
    end, the end not before the start, and each flow event lies inside a slice of its
    track (else viewers cannot bind the arrow); counters carry numeric args.
    """
    problems: list[str] = []

    def bad(msg):
        problems.append(msg)

    if isinstance(obj, (str, bytes)):
        try:
            obj = json.loads(obj)
        except ValueError as exc:
            return [f"not valid JSON: {exc}"]
    if isinstance(obj, dict):
        events = obj.get("traceEvents")
        if not isinstance(events, list):
            return ["top-level object has no 'traceEvents' list"]
    elif isinstance(obj, list):
        events = obj
    else:
        return ["top level is neither a list nor an object"]

    known = set("BEXiIC" "bne" "stf" "M" "PNODRc" "SFTp" "vV")
    spans = defaultdict(list)      # (pid, tid) -> [(start, end, index)]
    opened = defaultdict(list)     # (pid, tid) -> stack of (ts, index)
    flows = defaultdict(lambda: {"s": [], "t": [], "f": []})
    eps = 1e-6
    for i, ev in enumerate(events):
        if not isinstance(ev, dict):
            bad(f"event {i} is not an object")
            continue
        ph = ev.get("ph")
        if ph not in known:
            bad(f"event {i} has unknown ph {ph!r}")
            continue
        if ph == "M":
            continue
        ts = ev.get("ts")
        if not isinstance(ts, (int, float)) or isinstance(ts, bool) or not math.isfinite(ts):
            bad(f"event {i} ({ph}) has no numeric ts")
            continue
        if ts < 0:
            bad(f"event {i} ({ph}) has negative ts {ts}")
        track = (ev.get("pid"), ev.get("tid"))
        if ph == "X":
            dur = ev.get("dur")
            if not isinstance(dur, (int, float)) or not math.isfinite(dur) or dur < 0:
                bad(f"event {i} (X) has invalid dur {dur!r}")
                continue
            spans[track].append((float(ts), float(ts) + float(dur), i))
        elif ph == "B":
            opened[track].append((float(ts), i))
        elif ph == "E":
            if not opened[track]:
                bad(f"event {i} (E) on track {track} closes no open B")
                continue
            t0, j = opened[track].pop()
            if ts < t0 - eps:
                bad(f"event {i} (E) ends before its B (event {j})")
            spans[track].append((t0, float(ts), j))
        elif ph in "stf":
            if "id" not in ev:
                bad(f"flow event {i} has no id")
                continue
            flows[(ev.get("cat"), ev.get("name"), str(ev["id"]))][ph].append(
                (float(ts), track, i, ev.get("bp")))
        elif ph == "C":
            args = ev.get("args")
            if not isinstance(args, dict) or not args or not all(
                    isinstance(v, (int, float)) and not isinstance(v, bool)
                    for v in args.values()):
                bad(f"counter event {i} needs numeric args")
    for track, stack in opened.items():
        for t0, j in stack:
            bad(f"B event {j} on track {track} is never closed")

    # nesting: sort by start, longer first; a span must end within its open parent
    sorted_spans = {}
    for track, lst in spans.items():
        lst.sort(key=lambda x: (x[0], -x[1], x[2]))
        sorted_spans[track] = lst
        stack: list[tuple[float, float, int]] = []
        for a, b, i in lst:
            while stack and stack[-1][1] <= a + eps:
                stack.pop()
            if stack and b > stack[-1][1] + eps:
                bad(f"span of event {i} [{a}, {b}] on track {track} overlaps event "
                    f"{stack[-1][2]} [{stack[-1][0]}, {stack[-1][1]}] without nesting")
                if len(problems) >= max_problems:
                    break
            stack.append((a, b, i))

    # union of each track's spans, for "is this flow event inside a slice" look-ups
    coverage = {}
    for track, lst in sorted_spans.items():
        merged: list[list[float]] = []
        for a, b, _ in lst:
            if merged and a <= merged[-1][1] + eps:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        coverage[track] = ([m[0] for m in merged], [m[1] for m in merged])

    def enclosed(track, ts, next_slice=False) -> bool:
        starts, ends = coverage.get(track, ([], []))
        k = bisect.bisect_right(starts, ts + eps) - 1
        if next_slice:  # "f" without bp binds to the next slice that starts at/after ts
            return k + 1 < len(starts) or (k >= 0 and ends[k] >= ts - eps)
        return k >= 0 and ends[k] >= ts - eps

    for key, parts in flows.items():
        cat, name, fid = key
        if len(parts["s"]) != 1:
            bad(f"flow id {fid} (cat {cat!r}) has {len(parts['s'])} starts")
        if not parts["f"]:
            bad(f"flow id {fid} (cat {cat!r}) has no end")
        if parts["s"] and parts["f"] and max(p[0] for p in parts["f"]) < \
                min(p[0] for p in parts["s"]) - eps:
            bad(f"flow id {fid} ends before it starts")
        for ph in "stf":
            for ts, track, i, bp in parts[ph]:
                if not enclosed(track, ts, next_slice=(ph == "f" and bp != "e")):
                    bad(f"flow event {i} ({ph}, id {fid}) at ts {ts} is not inside a slice "
                        f"of track {track}")
        if len(problems) >= max_problems:
            break
    if len(problems) > max_problems:
        problems = problems[:max_problems] + [f"... {len(problems) - max_problems} more"]
    return problems


def validate_file(path) -> list[str]:
    """:func:`validate_trace` on a JSON file."""
    try:
        obj = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return [f"cannot read {path}: {exc}"]
    return validate_trace(obj)
