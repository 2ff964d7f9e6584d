"""``ccmod:capacity=ratio`` under ``--stream``: the per-resource ratio comes from a pass over
the trace's messages before the run (``ccmod/stream_inputs.py``), and every output is the
in-memory run's bit for bit."""
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import ccmod.engine
from conftest import run_cli
from ccmod.api import load_workload, run
from ccmod.streaming import run_streamed
from ccmod.workloads.base import WorkloadBuilder
from ccmod.workloads.generators import generate
from ccmod.workloads.parquet_stream import ParquetRecordSource
from ccmod.workloads.tabular import write_parquet

ROOT = Path(__file__).resolve().parent.parent
RATIO = "ccmod:latency=unshared,capacity=ratio"
SHARINGS = ("ccmod:capacity=ratio", RATIO)
COST = str(ROOT / "tests" / "data" / "cost_model.json")   # a bandwidth per size range
# a NIC 1.5x a link, intra-node copies through a shared per-node resource (2 ranks a node)
STAR = "star:bandwidth=1e9,latency=1e-6,duplex=1.5,intra=shared,copy_bandwidth=3e9"
# multi-hop routes over links of two capacities
FATTREE = "fattree2:hosts_per_leaf=2,spines=2,bandwidth=4e9,spine_bandwidth=1e9"


def mixed(nranks=8, iterations=8, seed=1):
    """Rings over random permutations with five message sizes (every cost-model range,
    both sides of an eager limit), isend/irecv and waitall, blocking messages, and
    active-message requests (8 iterations: the blocking and active rounds twice each, as
    12 had them three times, a third fewer streamed records per window run)."""
    rng = np.random.default_rng(seed)
    sizes = (16, 300, 4000, 70_000, 1_000_000)
    b = WorkloadBuilder(nranks)
    for it in range(iterations):
        perm = [int(x) for x in rng.permutation(nranks)]
        for r in range(nranks):
            b.compute(r, float(rng.exponential(1e-6)))
        for i in range(nranks):
            b.isend(perm[i], perm[(i + 1) % nranks], sizes[(i + it) % 5], 0, tag=it % 3)
        for i in range(nranks):
            b.irecv(perm[i], perm[i - 1], 1, tag=it % 3)
        for r in range(nranks):
            b.waitall(r)
        if it % 4 == 1:
            for r in range(0, nranks, 2):
                b.send(r, r + 1, sizes[(r + it) % 5], tag=7)    # same node under block:2
                b.recv(r + 1, r, tag=7)
        if it % 4 == 3:
            for r in range(nranks):
                b.amrequest(r, (r + 3) % nranks, sizes[r % 5], 2e-6)
    return b.build()


def _workloads():
    # the default run's time budget: one workload with intra-node, eager and active
    # messages (every ratio path: both rules, both networks, windows of 1 and 3), the real
    # traces with the slow tests (a real trace's collectives stream in the default run in
    # test_stream_io's FT.S.4 case)
    slow = pytest.mark.slow
    for p, marks in ((ROOT / "traces" / "stencil16.ti", slow),
                     (ROOT / "traces" / "alltoall8.ti", slow),
                     (ROOT / "tests" / "data" / "goal" / "binary_tree_32.goal", slow),
                     (ROOT / "tests" / "data" / "smpi-npb" / "FT.S.4", slow)):
        yield pytest.param(p.name, p, marks=marks, id=p.name)
    yield pytest.param("mixed", mixed, id="mixed")
    yield pytest.param("reqreply", "reqreply:nranks=6,requests=5", id="reqreply", marks=slow)


def _load(w):
    if callable(w):
        return w()
    if isinstance(w, str):
        return generate(w, seed=3)
    return load_workload(w)


WORKLOADS = list(_workloads())


def _tables(d):
    out = {n: pd.read_parquet(d / f"{n}.parquet")
           for n in ("messages", "rank_states", "ranks", "links", "resources")}
    out["messages"] = out["messages"].sort_values("msg_id", kind="stable").reset_index(
        drop=True)
    # link_load is not streamed, so neither is the utilisation peak taken from it
    out["links"] = out["links"].drop(columns="utilisation_peak")
    return out


class _Ratios:
    """Keep every ratio the engine computes (capacity_ratio's results)."""

    def __init__(self, monkeypatch):
        self.got = []
        real = ccmod.engine.capacity_ratio

        def keep(*a):
            out = real(*a)
            self.got.append(out)
            return out
        monkeypatch.setattr(ccmod.engine, "capacity_ratio", keep)


@pytest.mark.parametrize("name,w", WORKLOADS)
def test_streamed_capacity_ratio_equals_in_memory(tmp_path, monkeypatch, name, w):
    """Both ratio rules, two networks (a duplex NIC and shared intra-node copies; multi-hop
    routes of two capacities), rendezvous with an eager limit and eager, windows of 1 and
    3 records: the same ratio, makespan, tables and summary as the in-memory run."""
    p = write_parquet(_load(w), tmp_path / "w.parquet", row_group_size=5)
    ratios = _Ratios(monkeypatch)
    cases = [(STAR, SHARINGS[0], "rendezvous", 4096, 1), (STAR, SHARINGS[1], "eager", 0, 3),
             (FATTREE, SHARINGS[1], "rendezvous", 4096, 3)]
    for net, sharing, mode, limit, window in cases:
        kw = dict(sharing=sharing, send_mode=mode, eager_limit_bytes=limit,
                  mapping="block:2", cost=COST)
        ratios.got.clear()
        mem = run(p, net, sinks=["parquet"], out_dir=tmp_path / "mem", **kw)
        st = run_streamed(p, net, window=window, out_dir=tmp_path / "st", **kw)
        what = (name, net, sharing, mode, window)
        a, b = ratios.got
        assert np.array_equal(a, b), what
        assert np.any(a != 1.0), what        # the ratio matters on these networks
        assert st.makespan_s.hex() == mem.makespan_s.hex(), what
        ta, tb = _tables(tmp_path / "mem"), _tables(tmp_path / "st")
        for k in ta:
            pd.testing.assert_frame_equal(ta[k], tb[k], check_exact=True, obj=f"{what} {k}")
        ja, jb = mem.summary(), st.summary()
        for k in ("wall_s", "records_per_s"):
            ja.pop(k), jb.pop(k)
        assert ja == jb, what
    # and the rule changes the result (so the equality above is not the article's rule's)
    plain = run(p, STAR, sharing="ccmod:latency=unshared", mapping="block:2", cost=COST)
    ratio = run(p, STAR, sharing=RATIO, mapping="block:2", cost=COST)
    assert plain.makespan_s != ratio.makespan_s or name == "reqreply"


def test_ratio_pass_reads_the_trace_once_per_run(tmp_path, monkeypatch):
    """The ratio's pass reads op, peer and nbytes batch by batch, once per run, not per
    window refill nor per bound; its batches hold at most one full group's rows (8
    iterations: ~4 groups per rank, ~15 refills of 2 records each)."""
    w = mixed(iterations=8)
    p = write_parquet(w, tmp_path / "m.parquet", row_group_size=8)
    passes = []
    real = ParquetRecordSource._group

    def count(self, i, cols, j=None):
        if tuple(cols) == ("op", "peer", "nbytes"):
            passes.append(i)
        return real(self, i, cols, j)
    monkeypatch.setattr(ParquetRecordSource, "_group", count)
    kw = dict(sharing=RATIO, mapping="block:2", cost=COST, background=0.25, bounds=True)
    mem = run(p, STAR, **kw)
    st = run_streamed(p, STAR, window=2, **kw)
    assert st.makespan_s.hex() == mem.makespan_s.hex()
    assert st.bounds == mem.bounds and st.bounds["best"] < st.bounds["worst"]
    assert passes and passes[0] == 0 and sorted(passes) == sorted(set(passes))
    # without capacity=ratio no such pass
    passes.clear()
    run_streamed(p, STAR, window=2, sharing="ccmod", mapping="block:2", cost=COST)
    assert not passes


@pytest.mark.parametrize("sharing", SHARINGS)
def test_cli_streamed_capacity_ratio_json_and_bounds_equal_in_memory(tmp_path, sharing):
    w = mixed(iterations=8, seed=5)
    p = write_parquet(w, tmp_path / "c.parquet", row_group_size=6)
    common = ["--network", STAR, "--sharing", sharing, "--map", "block:2", "--cost", COST,
              "--eager-limit", "4096", "--background", "0.2", "--bounds", "--json"]
    a = run_cli("run", p, *common)
    b = run_cli("run", p, "--stream", "--window", "2", *common)
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    ja, jb = json.loads(a.stdout), json.loads(b.stdout)
    for j in (ja, jb):
        j.pop("wall_s"), j.pop("records_per_s")
    assert ja == jb
    assert ja["bounds"]["best"] < ja["bounds"]["worst"]
