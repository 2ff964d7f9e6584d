"""SimGrid ``replay_multiple`` description files: several TI traces side by side.

Each line is ``<instance_id> <replay_file> <instance_size> <delay_flops>``: instance
``k`` replays ``replay_file`` (a one-file trace or a per-rank description file) with
``instance_size`` ranks, every rank first computing ``delay_flops`` flops. ccmod places
the instances one after the other: instance ``k``'s rank ``i`` becomes global rank
``offset_k + i`` and its peers are shifted the same way. Instances share nothing but the
network, so each instance's barriers are decomposed into point-to-point messages inside
the instance (a global OP_BARRIER would wrongly synchronise all instances).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ccmod.errors import CcmodInputError
from ccmod.guard import excerpt
from ccmod.workloads.base import OP_COMPUTE, SEND_OPS, RECV_OPS, Workload


def read_replay_multiple(reader, desc: Path, lines, opts: dict) -> Workload:
    """Read a replay_multiple description into one Workload (see module doc)."""
    from ccmod.workloads.ti import resolve_listed  # circular at import time

    parts = []
    for ln, raw in enumerate(lines, 1):
        toks = raw.split("#", 1)[0].split()
        if not toks:
            continue
        if len(toks) != 4:
            raise CcmodInputError("replay_multiple lines are '<instance_id> <replay_file> "
                                  "<instance_size> <delay_flops>'", source=str(desc), line=ln)
        try:
            size = int(toks[2])
            delay = float(toks[3])
        except ValueError:
            raise CcmodInputError("bad instance size or delay", source=str(desc), line=ln,
                                  hint="size is an integer, delay a number of flops") from None
        if size <= 0 or not 0 <= delay < 9e18:
            raise CcmodInputError("instance size must be > 0 and delay >= 0", source=str(desc),
                                  line=ln)
        found = resolve_listed(desc, toks[1], strict=True)
        if found is None:
            raise CcmodInputError(f"replay file '{excerpt(toks[1], 80)}' not found", source=str(desc),
                                  line=ln, hint="paths are relative to the description "
                                                "file's folder (or a parent folder)")
        parts.append((toks[0], found, size, delay, ln))
    if not parts:
        raise CcmodInputError("empty replay_multiple description", source=str(desc))
    sub_opts = dict(opts)
    coll = dict(opts.get("collectives") or {})
    coll.setdefault("barrier", "dissemination")
    sub_opts["collectives"] = coll
    cache: dict[Path, Workload] = {}
    pieces, instances, offset = [], [], 0
    for inst, path, size, delay, ln in parts:
        if path.resolve() == desc.resolve():
            raise CcmodInputError("a replay_multiple description cannot list itself",
                                  source=str(desc), line=ln)
        w = cache.get(path)
        if w is None:
            if _is_multi(path):
                raise CcmodInputError("nested replay_multiple descriptions are not supported",
                                      source=str(desc), line=ln,
                                      hint="list a trace file or a per-rank description")
            w = cache[path] = reader.read(path, **sub_opts)
        if w.nranks != size:
            raise CcmodInputError(f"instance '{inst}' declares {size} ranks but "
                                  f"{path.name} has {w.nranks}", source=str(desc), line=ln)
        pieces.append((w, offset, delay / opts["compute_rate"] * opts["compute_scale"]))
        instances.append({"id": inst, "file": str(path), "nranks": size,
                          "delay_flops": delay, "first_rank": offset})
        offset += size
    out = _concat(pieces)
    out.meta.update({"format": "ti", "layout": "replay_multiple", "source": str(desc),
                     "instances": instances, "compute_rate": opts["compute_rate"],
                     "compute_unit": "flops",
                     "compute_scale": opts["compute_scale"],
                     "notes": [f"{len(instances)} instances placed side by side; barriers "
                               "decomposed inside each instance"]})
    return out


def _is_multi(path: Path) -> bool:
    from ccmod.workloads.ti import _first_tokens, _head_lines, _is_action_line, _is_number
    toks, _ = _first_tokens(_head_lines(path))
    return len(toks) == 4 and _is_number(toks[2]) and _is_number(toks[3]) \
        and not _is_action_line(toks)


def _concat(pieces) -> Workload:
    cols = {k: [] for k in ("op", "peer", "tag", "nbytes", "duration_s", "req", "line",
                            "file_id")}
    ptrs, files, base = [np.zeros(1, np.int64)], [], 0
    for w, off, delay_s in pieces:
        op, peer = w.op, w.peer.copy()
        p2p = np.isin(op, SEND_OPS + RECV_OPS)
        peer[p2p] += off
        arrs = {"op": op, "peer": peer, "tag": w.tag, "nbytes": w.nbytes,
                "duration_s": w.duration_s, "req": w.req, "line": w.line,
                "file_id": w.file_id + len(files)}
        ptr = w.rank_ptr
        if delay_s > 0:
            at = ptr[:-1]
            fill = {"op": OP_COMPUTE, "peer": -1, "tag": 0, "nbytes": 0,
                    "duration_s": delay_s, "req": -1, "line": 0, "file_id": len(files)}
            arrs = {k: np.insert(v, at, fill[k]) for k, v in arrs.items()}
            ptr = ptr + np.arange(ptr.shape[0])
        for k, v in arrs.items():
            cols[k].append(v)
        ptrs.append(ptr[1:] + base)
        base += int(ptr[-1])
        files.extend(w.files)
    dt = {"op": np.int8, "peer": np.int32, "tag": np.int32, "nbytes": np.int64,
          "duration_s": np.float64, "req": np.int64, "line": np.int64, "file_id": np.int32}
    rank_ptr = np.concatenate(ptrs).astype(np.int64)
    return Workload(nranks=rank_ptr.shape[0] - 1, rank_ptr=rank_ptr,
                    **{k: np.concatenate(v).astype(dt[k]) for k, v in cols.items()},
                    files=files, meta={})
