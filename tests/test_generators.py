"""Tests of the statistical generators, the TI writer and ``ccmod generate``.

Engine-free: matching and executability use the helpers of tests/test_collectives.py; the
TI output is checked with a tiny parser written here (independent of the TI reader).
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
import typer
from hypothesis import given, settings, strategies as st
from typer.testing import CliRunner

from ccmod.errors import CcmodInputError
from test_collectives import channel_check, messages, rank_ops, request_check, simulate
from ccmod.workloads import generators as G
from ccmod.workloads.base import (OP_BARRIER, OP_COMPUTE, OP_IRECV, OP_ISEND, OP_RECV, OP_SEND,
                            OP_WAIT, OP_WAITALL)
from ccmod.workloads.registry import GENERATORS
from ccmod.workloads.ti_write import write_ti

#: small instance of every generator (fast to simulate)
SMALL = {
    "alltoall": "alltoall:nranks=5,iterations=3,nbytes=100",
    "uniform": "uniform:nranks=6,iterations=5,fanout=2",
    "client_server": "client_server:servers=2,clients=5,requests=6",
    "workpile": "workpile:nranks=8,servers=2,chunks=5",
    "reqreply": "reqreply:nranks=7,requests=5",
    "wavefront": "wavefront:px=3,py=2,kblocks=3,dist=exponential",
    "halo2d": "halo2d:px=3,py=2,iterations=3,dist=uniform",
    "halo3d": "halo3d:px=2,py=2,pz=3,iterations=2,dist=exponential",
    "snakes": "snakes:nranks=8,snakes=3,hops=4,handler_dist=exponential",
    "hotspot": "hotspot:nranks=8,per_rank=3,hops=4",
    "ring": "ring:nranks=5,iterations=3",
}
RANDOM = ["uniform", "client_server", "workpile", "reqreply", "wavefront", "halo2d", "halo3d",
          "snakes", "hotspot"]
COLS = ("rank_ptr", "op", "peer", "tag", "nbytes", "duration_s", "req")


def test_every_registered_generator_has_a_small_case():
    assert set(SMALL) <= set(GENERATORS.names())


@pytest.mark.parametrize("name", sorted(SMALL))
def test_matching_requests_and_executable(name):
    w = G.generate(SMALL[name], seed=1)
    channel_check(w)
    request_check(w)
    assert simulate(w), f"{name} deadlocks"
    assert w.meta["generator"] == name and w.meta["seed"] == 1
    assert (w.duration_s[w.op == OP_COMPUTE] >= 0).all()
    assert not (w.op == OP_WAITALL).any()
    msg = np.isin(w.op, (OP_SEND, OP_ISEND, OP_RECV, OP_IRECV))
    assert (w.tag[msg] >= 0).all()  # never collide with collective tags
    rank = np.repeat(np.arange(w.nranks), np.diff(w.rank_ptr))
    assert (w.peer[msg] != rank[msg]).all()  # no message to self


@pytest.mark.parametrize("name", sorted(SMALL))
def test_determinism(name):
    a, b = G.generate(SMALL[name], seed=7), G.generate(SMALL[name], seed=7)
    for c in COLS:
        assert np.array_equal(getattr(a, c), getattr(b, c)), c
    if name in RANDOM:
        c = G.generate(SMALL[name], seed=8)
        assert any(getattr(a, k).shape != getattr(c, k).shape
                   or not np.array_equal(getattr(a, k), getattr(c, k)) for k in COLS)


def n_sends(w):
    return messages(w)


def sent_bytes(w):
    return int(w.nbytes[np.isin(w.op, (OP_SEND, OP_ISEND))].sum())


def test_counts_follow_parameters():
    w = G.generate("alltoall:nranks=6,iterations=4,nbytes=1000,algorithm=pairwise")
    assert n_sends(w) == 4 * 6 * 5 and sent_bytes(w) == 4 * 6 * 5 * 1000

    w = G.generate("uniform:nranks=7,iterations=9,fanout=3,nbytes=10")
    assert n_sends(w) == 9 * 7 * 3 and sent_bytes(w) == 9 * 7 * 3 * 10

    for mode in ("shift", "token"):
        w = G.generate(f"ring:nranks=6,iterations=4,mode={mode},nbytes=5")
        assert n_sends(w) == 24 and sent_bytes(w) == 120

    px, py, pz, it = 4, 3, 2, 2
    w = G.generate(f"halo2d:px={px},py={py},iterations={it}")
    assert n_sends(w) == it * px * py * 4
    w = G.generate(f"halo2d:px={px},py={py},iterations={it},periodic=false")
    assert n_sends(w) == it * 2 * ((px - 1) * py + px * (py - 1))
    w = G.generate(f"halo3d:px={px},py={py},pz={pz},iterations={it},periodic=false")
    edges = (px - 1) * py * pz + px * (py - 1) * pz + px * py * (pz - 1)
    assert n_sends(w) == it * 2 * edges
    # periodic pz=2: both z neighbours are the same rank (two messages, distinct tags)
    w = G.generate(f"halo3d:px={px},py={py},pz={pz},iterations={it}")
    assert n_sends(w) == it * px * py * pz * 6

    w = G.generate("wavefront:px=4,py=3,kblocks=5,angle_blocks=2,octants=8,iterations=2")
    blocks = 8 * 2 * 5 * 2
    assert n_sends(w) == blocks * ((4 - 1) * 3 + 4 * (3 - 1))
    assert (w.op == OP_COMPUTE).sum() == blocks * 12

    w = G.generate("client_server:servers=3,clients=9,requests=11,request_bytes=10,"
                   "reply_bytes=100")
    assert n_sends(w) == 2 * 9 * 11 and sent_bytes(w) == 9 * 11 * 110

    w = G.generate("workpile:nranks=10,servers=3,chunks=4")
    assert n_sends(w) == 2 * 7 * 4
    for r in range(3):  # servers never initiate: only blocking recv/compute/send
        assert {op for op, *_ in rank_ops(w, r)} <= {OP_RECV, OP_COMPUTE, OP_SEND}

    w = G.generate("reqreply:nranks=9,requests=6")
    assert n_sends(w) == 2 * 9 * 6

    n, m, hops = 10, 3, 5
    w = G.generate(f"snakes:nranks={n},snakes={m},hops={hops}")
    assert n_sends(w) == n * m * hops
    assert (w.op == OP_COMPUTE).sum() == n * m * (hops + 1)
    assert (w.op == OP_BARRIER).sum() == n


def test_hot_spot_share():
    """Destinations: the hot rank weighs B, every other rank 1, the source itself 0."""
    n, b = 10, 3.0
    w = G.generate(f"hotspot:nranks={n},imbalance={b},hot_rank=4,per_rank=40,hops=20", seed=5)
    sends = np.isin(w.op, (OP_SEND, OP_ISEND))
    src = np.repeat(np.arange(n), np.diff(w.rank_ptr))[sends]
    dst = w.peer[sends]
    # a move from a cold rank picks the hot rank with probability B / (B + N - 2)
    p_hot = (dst[src != 4] == 4).mean()
    assert abs(p_hot - b / (b + n - 2)) < 0.03  # ~6000 moves: standard error ~0.006
    w = G.generate(f"hotspot:pattern=reqreply,nranks={n},imbalance={b},hot_rank=2,per_rank=400",
                   seed=5)
    cnt = np.bincount(w.peer[w.op == OP_ISEND], minlength=n)
    # every rank issues the same number of requests: expected count ratio hot / cold
    expect = ((n - 1) * b / (b + n - 2)) / (1 / (n - 1) + (n - 2) / (b + n - 2))
    assert abs(cnt[2] / np.delete(cnt, 2).mean() - expect) < 0.1 * expect


def test_exponential_means():
    w = G.generate("client_server:servers=1,clients=4,requests=2000,think_s=1e-3,"
                   "service_s=1e-4", seed=3)
    comp = w.duration_s[w.op == OP_COMPUTE]
    rank = np.repeat(np.arange(w.nranks), np.diff(w.rank_ptr))[w.op == OP_COMPUTE]
    think, service = comp[rank > 0], comp[rank == 0]
    assert len(think) == 8000 and len(service) == 8000
    # mean of 8000 exponentials: relative standard error 1/sqrt(8000) ~ 1.1 %
    assert abs(think.mean() / 1e-3 - 1) < 0.05 and abs(service.mean() / 1e-4 - 1) < 0.05
    assert abs(think.std() / think.mean() - 1) < 0.05  # CV = 1


# ---------------------------------------------------------------------------------------
# TI writer, checked with an independent tiny parser


def parse_ti(path, rate):
    """Return {rank: [(action, args...)]} and check init/finalize and request pairing."""
    per = {}
    for ln in open(path).read().splitlines():
        tok = ln.split()
        per.setdefault(int(tok[0]), []).append(tok[1:])
    out = {}
    for r, acts in per.items():
        assert acts[0] == ["init"] and acts[-1] == ["finalize"]
        outstanding, ops = [], []
        for a in acts[1:-1]:
            name = a[0]
            if name == "compute":
                ops.append((OP_COMPUTE, float(a[1]) / rate))
            elif name in ("send", "recv", "isend", "irecv"):
                code = {"send": OP_SEND, "recv": OP_RECV, "isend": OP_ISEND,
                        "irecv": OP_IRECV}[name]
                peer, tag, nb = int(a[1]), int(a[2]), int(a[3])
                ops.append((code, peer, tag, nb))
                if name in ("isend", "irecv"):
                    outstanding.append((r, peer, tag) if name == "isend" else (peer, r, tag))
            elif name == "wait":
                key = (int(a[1]), int(a[2]), int(a[3]))
                outstanding.remove(key)  # raises if the wait matches nothing
                ops.append((OP_WAIT,))
            else:
                ops.append(({"waitall": OP_WAITALL, "barrier": OP_BARRIER}[name],))
        assert not outstanding
        out[r] = ops
    return out


@pytest.mark.parametrize("name", ["halo2d", "snakes", "workpile", "alltoall", "ring"])
def test_ti_writer_round_trip(tmp_path, name):
    w = G.generate(SMALL[name], seed=2)
    path = tmp_path / "t.txt"
    nlines = write_ti(w, path, compute_rate=2e9)
    assert nlines == w.nrecords + 2 * w.nranks
    got = parse_ti(path, 2e9)
    assert sorted(got) == list(range(w.nranks))
    for r in range(w.nranks):
        exp = []
        for i in range(int(w.rank_ptr[r]), int(w.rank_ptr[r + 1])):
            o = int(w.op[i])
            if o == OP_COMPUTE:
                exp.append((o, float(w.duration_s[i])))
            elif o in (OP_SEND, OP_RECV, OP_ISEND, OP_IRECV):
                exp.append((o, int(w.peer[i]), int(w.tag[i]), int(w.nbytes[i])))
            else:
                exp.append((o,))
        assert len(got[r]) == len(exp)
        for g_, e in zip(got[r], exp):
            if g_[0] == OP_COMPUTE:
                assert math.isclose(g_[1], e[1], rel_tol=1e-12)
            else:
                assert g_ == e


def test_ti_writer_fills_unknown_recv_sizes_and_is_atomic(tmp_path):
    from ccmod.workloads.base import WorkloadBuilder
    b = WorkloadBuilder(2)
    b.send(0, 1, 77, tag=3)
    b.irecv(1, 0, req=5, nbytes=-1, tag=3)
    w = b.build()  # rank 1 never waits: the writer closes with waitall
    path = tmp_path / "u.txt"
    write_ti(w, path)
    text = path.read_text()
    assert "1 irecv 0 3 77" in text and "1 waitall" in text
    assert [p.name for p in tmp_path.iterdir()] == ["u.txt"]


def test_ti_output_readable_by_ti_reader(tmp_path):
    """When the project's TI reader is present, it reads our output back exactly."""
    from ccmod.workloads import ti
    w = G.generate(SMALL["workpile"], seed=4)
    write_ti(w, tmp_path / "w.txt")
    w2 = ti.TIReader().read(tmp_path / "w.txt")
    for c in ("rank_ptr", "op", "peer", "tag", "nbytes"):
        assert np.array_equal(getattr(w, c), getattr(w2, c)), c


# ---------------------------------------------------------------------------------------
# spec parsing and the command line


def test_spec_errors():
    with pytest.raises(CcmodInputError, match="valid: alltoall"):
        G.generate("halo4d")
    with pytest.raises(CcmodInputError, match="unknown parameter 'nrank'.*valid: nranks"):
        G.generate("uniform:nrank=4")
    with pytest.raises(CcmodInputError, match="iterations='x'"):
        G.generate("ring:iterations=x")
    with pytest.raises(CcmodInputError, match="not a valid int"):
        G.generate("ring:iterations=2.5")
    with pytest.raises(CcmodInputError, match="periodic"):
        G.generate("halo2d:periodic=maybe")
    with pytest.raises(CcmodInputError, match="servers"):
        G.generate("workpile:nranks=4,servers=4")
    w = G.generate("halo2d:px=1e1,py=1,periodic=no,iterations=1")
    assert w.nranks == 10 and w.meta["params"]["periodic"] is False


def _app():
    from ccmod.cli_generate import register
    app = typer.Typer()

    @app.callback()
    def _cb():
        pass

    register(app)
    return app


def test_cli_generate(tmp_path):
    out = tmp_path / "g.txt"
    res = CliRunner().invoke(_app(), ["generate", "ring:nranks=4", "-p", "iterations=2",
                                      "-o", str(out), "--seed", "3", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    assert d == {"kind": "ring", "ranks": 4, "records": 4 * 2 * 4, "messages": 8,
                 "bytes": 8 * (1 << 20), "output": str(out)}
    assert len(out.read_text().splitlines()) == d["records"] + 2 * 4
    res = CliRunner().invoke(_app(), ["generate", "snakes:nranks=4,snakes=1,hops=2"])
    assert res.exit_code == 0 and "4 ranks" in res.output and "8 messages" in res.output
    res = CliRunner().invoke(_app(), ["generate", "--list"])
    assert res.exit_code == 0 and "wavefront" in res.output and "kblocks=10" in res.output
    res = CliRunner().invoke(_app(), ["generate", "ring", "-p", "nranks"])
    assert isinstance(res.exception, CcmodInputError)
    res = CliRunner().invoke(_app(), ["generate", "ring:nranks=3", "-p", "nranks=4"])
    assert isinstance(res.exception, CcmodInputError) and "twice" in str(res.exception)


@settings(max_examples=15, deadline=None)
@given(name=st.sampled_from(["client_server", "workpile", "reqreply", "snakes", "uniform"]),
       n=st.integers(2, 7), k=st.integers(0, 4), seed=st.integers(0, 2**32 - 1))
def test_random_parameters_execute(name, n, k, seed):
    spec = {"client_server": f"client_server:servers={max(1, n // 3)},clients={n},requests={k}",
            "workpile": f"workpile:nranks={n},servers={max(1, n // 3)},chunks={k}",
            "reqreply": f"reqreply:nranks={n},requests={k},work_dist=deterministic",
            "snakes": f"snakes:nranks={n},snakes={k},hops={k},latency_s=1e-6",
            "uniform": f"uniform:nranks={n},iterations={k},fanout={k}"}[name]
    w = G.generate(spec, seed=seed)
    channel_check(w)
    request_check(w)
    assert simulate(w)
