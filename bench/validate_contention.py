"""Predict real multi-pair contention measurements and print median |error| per experiment.

Usage::

    PYTHONPATH=. /work/venv/bin/python bench/validate_contention.py [--real DIR] [--md FILE]
        [--sharing "ccmod,ccmod:latency=unshared,capacity=ratio,maxmin"] [--quick]
        [--only saturation,streams,intranode,collectives] [--fabric csd3-ib-ompi,...]

Each result line is printed as it is computed; ``maxmin`` on the 56-pair windows is the
slow part (its cost grows with the square of the messages in flight; the article's rule
takes ~3 s for a fabric's whole streams part since issue 10), so split long runs with
``--only``, ``--fabric`` and ``--sharing``.

For each cluster, one model is fitted from that cluster's own calibration benchmarks only
(ping-pong; osu_bw / osu_mbw_mr / IMB Uniband streams: one pair's rate and the node's;
the intra-node one-pair IMB Uniband table and the node's aggregate copy bandwidth from the intra-node IMB Biband tables; the osu_bibw /
osu_bw ratio for the NIC duplex factor), on one star at the NIC's nominal rate,
and nothing is tuned per experiment. Then every measured experiment is rebuilt from its job
description (ranks, ranks per node, block placement, or the calibration machinefile: one
rank per node) and predicted:

* saturation (SimGrid platform-calibration, 4 MB): send, sendrecv_same, sendrecv_diff per
  number of pairs, alltoall per communicator size; also the contention factor alone
  (each time divided by the same model's / measurement's one-pair send time);
* streams: osu_bw, osu_mbw_mr (P pairs across 2 nodes), IMB Uniband inter-node tables;
* collectives: osu_alltoall / osu_allgather / osu_allreduce, 64 ranks, 32 per node,
  algorithms from the MPI library's preset (``--mpi``);
* intra-node: IMB Uniband tables whose pairs are all inside one node (k pairs share the
  node's copy resource); the one-pair table is the fit input, not a prediction.

Errors are ``predicted time / measured time - 1`` per point; the table gives the median of
``|error|`` per experiment and sharing rule. Deterministic (no randomness).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ccmod.api import run  # noqa: E402
from ccmod.sharing import split_rules  # noqa: E402
from ccmod.netsys.fit_multi import (aggregate_summary, combine, intra_summary,  # noqa: E402
                                    stream_summary)
from ccmod.netsys.fit_report import fit_files  # noqa: E402
from ccmod.netsys.pingpong import ReadOptions  # noqa: E402
from ccmod.workloads import collectives as C  # noqa: E402
import validate_data as V  # noqa: E402

REAL = Path("/work/shared/traces/real")
SAT = "simgrid-platform-calibration"
HPC = "stackhpc-hpc-tests"
NBYTES_SAT = 4_000_000

#: calibration clusters: ping-pong file, ranks, NB_RUNS, nominal NIC rate, MPI library,
#: per-connection resource (a priori: Open MPI's TCP transport progresses both directions of
#: a process pair on one socket; MPICH's nemesis measures no such coupling on miriel)
SAT_CLUSTERS = {
    "taurus": dict(dir="taurus_26_07_2016", pp="taurus_26_07_2016/calibration/"
                   "taurus-2016-06-09--1_PingPong.csv.gz", nranks=12, nb=50, nominal=1.25e9,
                   mpi="openmpi", connection="half"),
    "miriel": dict(dir="miriel_27_06_2016", pp="miriel_27_06_2016/calibration/"
                   "testplatform_PingPong.csv.gz", nranks=16, nb=10, nominal=1.25e9,
                   mpi="mpich", connection="none"),
    "plafrim": dict(dir="plafrim_15_06_16", pp="miriel_27_06_2016/calibration/"
                    "testplatform_PingPong.csv.gz", nranks=4, nb=10, nominal=1.25e9,
                    mpi="mpich", connection="none"),
}

#: stackhpc fabrics: folder, nominal rate (IB EDR/HDR100 100 Gb/s, RoCE 25 / 50 GbE), MPI
FABRICS = {
    "alaska-ib-impi": ("alaska/ib-gcc9-impi-verbs", 12.5e9, "intelmpi"),
    "alaska-ib-ompi": ("alaska/ib-gcc9-openmpi4-ucx", 12.5e9, "openmpi"),
    "alaska-roce-impi": ("alaska/roce-gcc9-impi-verbs", 3.125e9, "intelmpi"),
    "alaska-roce-ompi": ("alaska/roce-gcc9-openmpi4-ucx", 3.125e9, "openmpi"),
    "csd3-ib-ompi": ("csd3/cclake-ib-gcc9-ompi3-ucx", 12.5e9, "openmpi"),
    "csd3-ib-impi": ("csd3/cclake-ib-icc19-impi19-ucx", 12.5e9, "intelmpi"),
    "csd3-roce-ompi": ("csd3/cclake-roce-gcc9-ompi3-ucx", 6.25e9, "openmpi"),
    "csd3-roce-impi": ("csd3/cclake-roce-icc19-impi19-ucx", 6.25e9, "intelmpi"),
}

#: a priori reduction cost (memory-bound float add, ~4 GB/s per core)
REDUCE_S_PER_BYTE = 2.5e-10


def _out(d: Path) -> Path | None:
    f = sorted(d.glob("*.out")) if d.is_dir() else []
    return f[0] if f else None


# ------------------------------------------------------------------------------- models
def fit_sat(real: Path, c: dict):
    """Ping-pong model + the streaming rate and the node's two-way factor (duplex spec).

    The calibration has no stream benchmark, but its ``send`` test is one: k pairs on k
    separate node pairs (no shared resource), NB_RUNS blocking 4 MB sends back to back; the
    median over k is one pair's streaming time (the ping-pong's 0-1 MB fit extrapolated
    gives taurus 5.8 ms where 3.48 ms are measured). Two-way traffic of a node without a
    partner coupling is the crossed Sendrecv (``sendrecv_diff``): duplex = 2 x send /
    crossed time (the analogue of osu_bibw / osu_bw). So ``send`` and ``sendrecv_diff`` are
    fit inputs here; ``sendrecv_same`` (with ``connection=half`` on Open MPI's TCP) and
    ``alltoall`` are predictions.
    """
    rep = fit_files([real / SAT / c["pp"]])
    sizes = np.concatenate([m.nbytes for m in rep.measurements])
    d = real / SAT / c["dir"] / "saturation"
    t_send = float(np.median(list(V.saturation_steps(d / "load_send.csv", "send", c["nranks"],
                                                     c["nb"]).values())))
    t_cross = float(np.median(list(V.saturation_steps(
        d / "load_sendrecv_diff.csv", "sendrecv_diff", c["nranks"], c["nb"]).values())))
    bs = NBYTES_SAT / t_send
    st = {"stream_bandwidth_Bps": bs, "nic_bandwidth_Bps": bs, "gap_s": 0.0, "o_send_s": 0.0,
          "max_bytes": NBYTES_SAT, "notes": []}
    model = combine(rep.model, st, None, (int(sizes.min()), int(sizes.max())))
    duplex = f"{min(2.0, 2.0 * t_send / t_cross):.3f}"
    return model, duplex


def fit_fabric(real: Path, folder: str, jobs: dict) -> tuple[object, str, list[str]]:
    """Model + duplex spec + notes for one stackhpc fabric (its own benchmarks only)."""
    base = real / HPC / folder
    notes = []
    pp = _out(base / "omb/Osu_latency") or _out(base / "imb/IMB_PingPong")
    rep = fit_files([pp])
    # every stream benchmark of the fabric: OSU (osu_bw one pair, osu_mbw_mr 32 / all
    # pairs) and IMB Uniband (one pair; the -npmin 1 run's largest table: all pairs across
    # the two nodes); they disagree on Intel MPI and the fit takes their geometric mean
    streams = [f for f in (_out(base / "omb/Osu_bw"), _out(base / "omb/Osu_mbw_mr__32"),
                           _out(base / "omb/Osu_mbw_mr_1_0"), _out(base / "imb/IMB_Uniband__1"),
                           _out(base / "imb/IMB_Uniband_1_0")) if f]
    st = stream_summary(streams) if streams else None
    if st:
        notes += st["notes"]
    intra_file = _out(base / "imb/IMB_Uniband_0_5")
    it = intra_summary([intra_file], options=ReadOptions(processes=2)) if intra_file else None
    # the node's aggregate copy bandwidth: IMB Biband tables whose pairs all sit in one node
    # (a different benchmark than the Uniband tables predicted below)
    agg = []
    for sub in sorted((base / "imb").glob("IMB_Biband*")):
        f = _out(sub)
        key = f"{folder}/imb/{sub.name}"
        if f is None or key not in jobs:
            continue
        nr, ppn = jobs[key]
        procs = [p for p in V.imb_tables(f, "Biband") if p // 2 <= ppn and
                 all(i // ppn == (i + p // 2) // ppn for i in range(p // 2))]
        if procs:
            agg.append(aggregate_summary([f], procs)["aggregate_bandwidth_Bps"])
    if it is not None and agg:
        it["aggregate_bandwidth_Bps"] = float(np.max(agg))
        notes.append(f"intra aggregate {np.max(agg) / 1e9:.3g} GB/s from IMB Biband")
    sizes = np.concatenate([m.nbytes for m in rep.measurements])
    model = combine(rep.model, st, it, (int(sizes.min()), int(sizes.max())))
    duplex = "full"
    bw, bibw = _out(base / "omb/Osu_bw"), _out(base / "omb/Osu_bibw")
    if bw and bibw:
        a = dict(V.osu_table(bw))
        b = dict(V.osu_table(bibw))
        big = [n for n in a if n >= 1 << 20 and n in b]
        if big:
            factor = float(np.median([b[n][0] / a[n][0] for n in big]))
            duplex = f"{factor:.3f}"
            notes.append(f"duplex {factor:.2f} from osu_bibw/osu_bw")
    return model, duplex, notes


# ------------------------------------------------------------------------------ running
def predict(w, net: str, sharing: str, cost, mapping=None, ranks=None, stat="median") -> float:
    r = run(w, net, sharing=sharing, cost=cost, mapping=mapping, record=False)
    fin = np.asarray(r.rank_finish_s, float)
    if ranks is not None:
        fin = fin[list(ranks)]
    return float(np.median(fin) if stat == "median" else
                 (np.mean(fin) if stat == "mean" else r.makespan_s))


def rel(p, m):
    return p / m - 1.0


def _emit(rows, row):
    """Keep a result row and print it at once (a full run takes tens of minutes)."""
    rows.append(row)
    cl, exp, _, sh, errs, _ = row
    if errs:
        print(f"# {cl} | {exp} | {sh} | median |err| {100 * np.median(np.abs(errs)):.1f}% "
              f"(signed {100 * np.median(errs):+.0f}%, {len(errs)} points)", flush=True)


# ------------------------------------------------------------------------ experiments
def saturation(real: Path, sharings, rows, quick=False):
    for name, c in SAT_CLUSTERS.items():
        model, duplex = fit_sat(real, c)
        net = f"star:bandwidth={c['nominal']:g},latency=0,duplex={duplex}"
        if c["connection"] != "none":
            net += f",connection={c['connection']}"
        d = real / SAT / c["dir"] / "saturation"
        N = c["nranks"]
        ref_meas = V.saturation_steps(d / "load_send.csv", "send", N, c["nb"])[1]
        for sh in sharings:
            w1, act1 = V.saturation_workload("send", N, 1, NBYTES_SAT)
            ref_pred = predict(w1, net, sh, model, ranks=act1)
            for test in ("send", "sendrecv_same", "sendrecv_diff"):
                meas = V.saturation_steps(d / f"load_{test}.csv", test, N, c["nb"])
                errs, ferrs = [], []
                for k, m in meas.items():
                    w, act = V.saturation_workload(test, N, k, NBYTES_SAT)
                    p = predict(w, net, sh, model, ranks=act)
                    errs.append(rel(p, m))
                    ferrs.append(rel(p / ref_pred, m / ref_meas))
                _emit(rows, (name, f"saturation {test}", "saturation", sh, errs, ferrs))
            meas = V.saturation_groups(d / "load_alltoall.csv")
            algs = C.parse_collective_option(f"mpi={c['mpi']}")
            errs, ferrs = [], []
            for k, m in meas.items():
                if k < 2:
                    continue
                p = predict(V.w_collective(k, "alltoall", NBYTES_SAT, algs), net, sh, model)
                errs.append(rel(p, m))
                ferrs.append(rel(p / ref_pred, m / ref_meas))
            _emit(rows, (name, "saturation alltoall", "saturation", sh, errs, ferrs))


def streams(real: Path, sharings, rows, quick=False, parts=("streams", "intranode",
                                                           "collectives"), fabrics=None):
    jobs = V.read_jobs(real / HPC)
    for fab, (folder, nominal, mpi) in FABRICS.items():
        if fabrics and fab not in fabrics:
            continue
        model, duplex, _ = fit_fabric(real, folder, jobs)
        nic = model.nic_bandwidth_Bps or model.stream_bandwidth_Bps or nominal
        net = (f"star:bandwidth={nominal:g},latency=0,duplex={duplex},nic_bandwidth={nic:g},"
               "intra=shared")
        base = real / HPC / folder
        cases = []   # (experiment, category, nranks, ppn, pairs, measured {size: time_s})
        for sub in sorted((base / "omb").glob("Osu_mbw_mr*")) + [base / "omb/Osu_bw"]:
            f = _out(sub)
            key = f"{folder}/omb/{sub.name}"
            if f is None or key not in jobs:
                continue
            nr, ppn = jobs[key]
            P = nr // 2
            meas = {n: P * WINDOWB * n / (v[0] * 1e6) for n, v in V.osu_table(f) if n > 0 and v[0] > 0}
            exp = "osu_bw" if sub.name == "Osu_bw" else f"osu_mbw_mr {P} pairs"
            cases.append((exp, nr, ppn, [(i, i + P) for i in range(P)], meas))
        for sub in sorted((base / "imb").glob("IMB_Uniband*")):
            f = _out(sub)
            key = f"{folder}/imb/{sub.name}"
            if f is None or key not in jobs:
                continue
            nr, ppn = jobs[key]
            for p, tab in V.imb_tables(f, "Uniband").items():
                half = p // 2
                pairs = [(i, i + half) for i in range(half)]
                nodes = {(a // ppn, b // ppn) for a, b in pairs}
                intra = all(x == y for x, y in nodes)
                inter = all(x != y for x, y in nodes)
                if not (intra or inter) or (intra and half == 1):
                    continue      # mixed placement; the one-pair intra table is a fit input
                meas = {n: half * WINDOWB * n / (v[1] * 1e6) for n, v in tab if n > 0 and v[1] > 0}
                exp = f"uniband {'intranode' if intra else 'internode'} {half} pairs"
                cases.append((exp, p, ppn, pairs, meas))
        seen = set()
        for exp, nr, ppn, pairs, meas in cases:
            if (exp, nr) in seen:
                continue
            seen.add((exp, nr))
            cat = "intranode" if "intranode" in exp else "stream"
            if (cat == "intranode" and "intranode" not in parts) or (
                    cat == "stream" and "streams" not in parts):
                continue
            sizes = sorted(meas)
            if quick:
                sizes = sizes[::3]
            for sh in sharings:
                big, small = [], []
                for n in sizes:
                    w = V.w_stream(nr, pairs, n, iters=1)
                    r = run(w, net, sharing=sh, cost=model, mapping=f"block:{ppn}", record=False)
                    # time per window of one pair (the ack is part of the benchmark's loop)
                    p_t = r.makespan_s
                    m_t = meas[n]
                    (big if n >= 65536 else small).append(rel(p_t, m_t))
                _emit(rows, (fab, exp + " >=64KiB", cat, sh, big, None))
                _emit(rows, (fab, exp + " <64KiB", cat, sh, small, None))
        if "collectives" in parts:
            coll(fab, folder, base, jobs, model, net, mpi, sharings, rows, quick)


#: bytes per measured "window" time: osu/IMB report MB/s per pair-window of WINDOW messages
WINDOWB = V.WINDOW


def coll(fab, folder, base, jobs, model, net, mpi, sharings, rows, quick):
    algs = C.parse_collective_option(f"mpi={mpi},reduce_s_per_byte={REDUCE_S_PER_BYTE}")
    for kind in ("alltoall", "allgather", "allreduce"):
        sub = base / f"omb/Osu_{kind}"
        f = _out(sub)
        key = f"{folder}/omb/Osu_{kind}"
        if f is None or key not in jobs:
            continue
        nr, ppn = jobs[key]
        meas = {n: v[0] * 1e-6 for n, v in V.osu_table(f) if n > 0}
        sizes = sorted(meas)
        if quick:
            sizes = sizes[::3]
        for sh in sharings:
            big, small = [], []
            for n in sizes:
                w = V.w_collective(nr, kind, n, algs)
                p = predict(w, net, sh, model, mapping=f"block:{ppn}", stat="mean")
                (big if n >= 65536 else small).append(rel(p, meas[n]))
            _emit(rows, (fab, f"osu_{kind} >=64KiB", "collective", sh, big, None))
            _emit(rows, (fab, f"osu_{kind} <64KiB", "collective", sh, small, None))


TARGETS = {"saturation": 0.25, "stream >=64KiB": 0.10, "stream <64KiB": 0.50,
           "collective >=64KiB": 0.30, "collective <64KiB": 0.50, "intranode": 0.50}


def target(cat, exp):
    if cat in ("stream", "collective"):
        return TARGETS[f"{cat} {'>=64KiB' if '>=64KiB' in exp else '<64KiB'}"]
    return TARGETS[cat]


def table(rows, sharings) -> str:
    """Markdown: one line per (cluster, experiment), median |error| per sharing rule."""
    by = {}
    for cl, exp, cat, sh, errs, ferrs in rows:
        if not errs:
            continue
        d = by.setdefault((cl, exp, cat), {})
        d[sh] = (float(np.median(np.abs(errs))), float(np.median(errs)),
                 None if ferrs is None else float(np.median(np.abs(ferrs))), len(errs))
    head = "| cluster | experiment | points | target | " + " | ".join(
        f"{s} median abs err (signed)" for s in sharings) + " | contention factor only |"
    lines = [head, "|" + "---|" * (5 + len(sharings))]
    for (cl, exp, cat), d in by.items():
        t = target(cat, exp)
        cells = []
        for s in sharings:
            if s not in d:
                cells.append("-")
                continue
            a, sg, _, _ = d[s]
            mark = "" if a <= t else " **miss**"
            cells.append(f"{100 * a:.1f}% ({100 * sg:+.0f}%){mark}")
        fac = " / ".join(f"{100 * d[s][2]:.1f}%" for s in sharings
                         if s in d and d[s][2] is not None) or "-"
        n = next(iter(d.values()))[3]
        lines.append(f"| {cl} | {exp} | {n} | {100 * t:.0f}% | " + " | ".join(cells) + f" | {fac} |")
    return "\n".join(lines)


def default_sharings() -> list[str]:
    from ccmod.errors import CcmodError
    from ccmod.options import RunOptions
    out = ["ccmod"]
    for s in ("ccmod:latency=unshared", "ccmod:latency=unshared,capacity=ratio"):
        try:
            RunOptions(sharing=s)
            out.append(s)
        except CcmodError:
            pass
    return out + ["maxmin"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--real", type=Path, default=REAL)
    ap.add_argument("--sharing", default=None,
                    help="comma list (default: ccmod, ccmod:latency=unshared when the engine "
                         "has it, maxmin)")
    ap.add_argument("--md", type=Path, default=None, help="also write the table here")
    ap.add_argument("--quick", action="store_true", help="every third size only")
    ap.add_argument("--only", default="saturation,streams,intranode,collectives",
                    help="parts to run (comma list): saturation, streams, intranode, "
                         "collectives")
    ap.add_argument("--fabric", default=None,
                    help="comma list of stackhpc fabrics (default all: " + ", ".join(FABRICS) + ")")
    a = ap.parse_args(argv)
    sharings = split_rules(a.sharing) if a.sharing else default_sharings()
    parts = [p.strip() for p in a.only.split(",") if p.strip()]
    fabrics = [f.strip() for f in a.fabric.split(",")] if a.fabric else None
    rows = []
    t0 = time.perf_counter()
    if "saturation" in parts:
        saturation(a.real, sharings, rows, a.quick)
    hpc = [p for p in parts if p in ("streams", "intranode", "collectives")]
    if hpc:
        streams(a.real, sharings, rows, a.quick, hpc, fabrics)
    md = table(rows, sharings)
    print(md)
    print(f"\n({time.perf_counter() - t0:.0f} s)")
    if a.md:
        from ccmod.atomic import atomic_write_text
        atomic_write_text(a.md, md + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
