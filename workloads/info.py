"""Trace statistics (``ccmod info``) and format conversion (``ccmod convert``)."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ccmod.errors import CcmodInputError
from ccmod.workloads.base import OP_COMPUTE, OP_NAMES, SEND_OPS, Workload
from ccmod.workloads.ti_write import write_ti, write_ti_folder

#: output extension -> format written by :func:`convert`
OUT_EXTENSIONS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".ti": "ti",
                  ".txt": "ti"}
from ccmod.workloads import WRITABLE  # noqa: E402  (single definition of the writable formats)


def info(workload: Workload, top: int = 10) -> dict:
    """Summarise a workload.

    Returns
    -------
    dict
        ``nranks``, ``records``, ``records_by_op`` (op name -> count), ``messages``
        (point-to-point sends, including those from decomposed collectives),
        ``total_bytes``, ``size_histogram`` (list of ``{lo, hi, messages, bytes}``, power-of-
        two bins: ``[0, 0]``, ``[1, 1]``, ``[2, 3]``, ``[4, 7]`` ...), ``top_pairs`` (the
        ``top`` (src, dst) pairs by bytes), ``compute_s`` (total), ``compute_s_max_rank``
        and ``duration_estimate_s`` (= largest per-rank compute: a lower bound of the
        makespan), ``format``, ``files``, ``notes``.
    """
    w = workload
    rank = np.repeat(np.arange(w.nranks, dtype=np.int64), np.diff(w.rank_ptr))
    ops = np.bincount(w.op.astype(np.int64), minlength=len(OP_NAMES))
    sends = np.isin(w.op, SEND_OPS)
    nb = w.nbytes[sends]
    src, dst = rank[sends], w.peer[sends].astype(np.int64)
    hist = []
    if nb.size:
        bins = np.zeros(nb.shape, np.int64)
        pos = nb > 0
        bins[pos] = np.floor(np.log2(nb[pos])).astype(np.int64) + 1
        cnt = np.bincount(bins)
        byt = np.bincount(bins, weights=nb.astype(np.float64))
        for k in np.flatnonzero(cnt):
            lo = 0 if k == 0 else 1 << int(k - 1)
            hi = 0 if k == 0 else (1 << int(k)) - 1
            hist.append({"lo": lo, "hi": hi, "messages": int(cnt[k]), "bytes": int(byt[k])})
    pairs = []
    if nb.size:
        key = src * max(w.nranks, 1) + dst
        uk, inv = np.unique(key, return_inverse=True)
        pb = np.bincount(inv, weights=nb.astype(np.float64))
        pm = np.bincount(inv)
        order = np.lexsort((uk, -pb))[:top]
        for j in order:
            pairs.append({"src": int(uk[j] // max(w.nranks, 1)),
                          "dst": int(uk[j] % max(w.nranks, 1)),
                          "messages": int(pm[j]), "bytes": int(pb[j])})
    comp = w.op == OP_COMPUTE
    per_rank = np.bincount(rank[comp], weights=w.duration_s[comp], minlength=w.nranks)
    return {
        "format": w.meta.get("format"),
        "files": len(w.files),
        "nranks": int(w.nranks),
        "records": int(w.nrecords),
        "records_by_op": {OP_NAMES[i]: int(ops[i]) for i in range(len(OP_NAMES)) if ops[i]},
        "messages": int(sends.sum()),
        "total_bytes": int(nb.sum()),
        "size_histogram": hist,
        "top_pairs": pairs,
        "compute_s": float(w.duration_s[comp].sum()),
        "compute_s_max_rank": float(per_rank.max()) if per_rank.size else 0.0,
        "duration_estimate_s": float(per_rank.max()) if per_rank.size else 0.0,
        "action_counts": dict(w.meta.get("action_counts", {})),
        "notes": list(w.meta.get("notes", [])),
        "compute_rate_flops": (float(w.meta["compute_rate"])
                               if w.meta.get("compute_unit") == "flops" else None),
        "wait_ids": w.meta.get("wait_ids"),
    }


def output_format(out_path, out_fmt: str | None = None) -> str:
    """Format to write: ``out_fmt`` or guessed from ``out_path`` (folder -> per-rank TI)."""
    if out_fmt:
        if out_fmt not in WRITABLE:
            raise CcmodInputError(f"cannot write format '{out_fmt}'", source="--to",
                                  hint="writable: " + ", ".join(WRITABLE))
        return out_fmt
    p = Path(out_path)
    if p.is_dir() or str(out_path).endswith(os.sep) or p.suffix == "":
        return "ti"
    fmt = OUT_EXTENSIONS.get(p.suffix.lower())
    if fmt is None:
        raise CcmodInputError(f"cannot guess the output format from '{p.suffix}'",
                              source=str(out_path),
                              hint="use --to (" + ", ".join(WRITABLE) + ") or an extension: "
                                   + ", ".join(OUT_EXTENSIONS))
    return fmt


def write_workload(w: Workload, out_path, out_fmt: str | None = None,
                   compute_rate: float = 1e9) -> str:
    """Write ``w`` to ``out_path`` in ``out_fmt`` (guessed from the path when None)."""
    fmt = output_format(out_path, out_fmt)
    out = Path(out_path)
    try:
        if fmt == "parquet":
            from ccmod.workloads.tabular import write_parquet
            write_parquet(w, out)
        elif fmt == "csv":
            from ccmod.workloads.tabular import write_csv
            write_csv(w, out)
        elif out.is_dir() or str(out_path).endswith(os.sep) or out.suffix == "":
            write_ti_folder(w, out, compute_rate)
        else:
            write_ti(w, out, compute_rate)
    except OSError as exc:
        raise CcmodInputError(f"cannot write: {exc.strerror or exc}", source=str(out)) from None
    return fmt


def convert(in_path, out_path, in_fmt: str = "auto", out_fmt: str | None = None, *,
            compute_rate: float = 1e9, **read_opts) -> dict:
    """Read ``in_path`` and write it to ``out_path``.

    Writable formats: ``ti`` (one file with every rank; or, when ``out_path`` is a folder
    or has no extension, one file per rank plus the description file
    ``smpi_replay.txt``), ``parquet`` and ``csv`` (ccmod's record layouts, lossless).
    ``compute_rate`` converts compute seconds to TI flops (and TI flops to seconds).

    Returns
    -------
    dict
        ``input``, ``output``, ``from``, ``to``, ``nranks``, ``records``.
    """
    from ccmod.workloads import read_workload
    fmt = output_format(out_path, out_fmt)  # fail before the (maybe long) read
    try:
        same = Path(in_path).resolve() == Path(out_path).resolve()
    except OSError:
        same = False
    if same:
        raise CcmodInputError("output would overwrite the input", source=str(out_path))
    w = read_workload(in_path, in_fmt, compute_rate=compute_rate, **read_opts)
    write_workload(w, out_path, fmt, compute_rate=compute_rate)
    return {"input": str(in_path), "output": str(out_path), "from": w.meta.get("format"),
            "to": fmt, "nranks": int(w.nranks), "records": int(w.nrecords)}
