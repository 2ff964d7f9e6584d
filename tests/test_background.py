"""Background load models (constant, exp = the article's Listing Seven, file), their step
arrays, the engine's reaction to a load step (closed form), --bounds, and the LogGP cost.
"""
from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

import ccmod
from ccmod.errors import CcmodInputError
from ccmod.netsys.background import (ConstantBackground, ExponentialBackground, FileBackground,
                                     make_background)
from ccmod.netsys.cost_loggp import LogGPCost, parse_loggp
from ccmod.netsys.networks import load_cost, make_network

from conftest import ROOT, TRACES


# ------------------------------------------------------------------ exp (Listing Seven)
def test_exp_mean_load_matches_closed_form_over_many_intervals():
    bg = make_background("exp:mean_pps=7000,max_pps=25000,interval=1e-3,seed=1")
    expect = (7000 / 25000) * (1 - math.exp(-0.99 * 25000 / 7000))
    assert bg.mean_load() == pytest.approx(expect)
    assert expect == pytest.approx(0.2718, abs=1e-4)
    net = make_network("star", 8)
    steps = bg.steps(net, np.arange(16), horizon_s=5.0)     # 16 resources x 5001 intervals
    assert len(steps) == 16 * 5001
    assert np.all((steps.load >= 0) & (steps.load < 1)) and steps.load.max() == 0.99
    # standard error of the mean of ~80k draws with sd ~0.2: ~7e-4
    assert steps.load.mean() == pytest.approx(expect, abs=0.005)
    for r in range(16):       # each link direction on its own, ~5000 draws: sd/sqrt(n) ~ 0.003
        assert steps.load[steps.resource == r].mean() == pytest.approx(expect, abs=0.02)
    q95 = np.quantile(steps.load, 0.95)
    assert q95 == pytest.approx(bg.quantile_load(0.95), abs=0.02)
    assert bg.quantile_load(0.95) == pytest.approx(-7000 * math.log(0.05) / 25000)


def test_exp_seeded_reproducible_and_extendable():
    net = make_network("star", 4)
    a = make_background("exp:seed=5,interval=1e-4").steps(net, [0, 3, 5], 0.01)
    b = make_background("exp:seed=5,interval=1e-4").steps(net, [5, 0, 3], 0.01)
    c = make_background("exp:seed=6,interval=1e-4").steps(net, [0, 3, 5], 0.01)
    longer = make_background("exp:seed=5,interval=1e-4").steps(net, [0, 3, 5], 0.5)
    assert np.array_equal(a.load, b.load) and np.array_equal(a.t_s, b.t_s)
    assert not np.array_equal(a.load, c.load)
    # drawing further does not change the start (a run that grows its horizon is consistent)
    assert np.array_equal(longer.load[:len(a)], a.load)
    # the draw of a resource does not depend on which other resources are drawn
    only5 = make_background("exp:seed=5,interval=1e-4").steps(net, [5], 0.01)
    assert np.array_equal(only5.load, a.load[a.resource == 5])
    assert np.all(np.diff(a.t_s) >= 0)


def test_constant_is_one_step_per_resource_at_zero():
    net = make_network("star", 4)
    s = make_background(0.3).steps(net, [1, 2, 2, 7], 1.0)
    assert s.t_s.tolist() == [0, 0, 0] and s.resource.tolist() == [1, 2, 7]
    assert s.load.tolist() == [0.3] * 3


@pytest.mark.parametrize("spec, what", [
    ("1.2", "fraction"), ("exp:mean_pps=-1", "mean_pps"), ("exp:rate=3", "unknown parameter"),
    ("exp:seed=1.5", "integer"), ("gauss:x=1", "unknown background"), ("file:", "path"),
    ("exp:max_load=1", "max_load")])
def test_bad_background_specs(spec, what):
    with pytest.raises(CcmodInputError, match=what) as e:
        make_background(spec)
    assert "\n" not in str(e.value)


# ------------------------------------------------------------------ file
def test_file_background_steps_and_levels(tmp_path):
    p = tmp_path / "loads.csv"
    p.write_text("t_s,link,direction,load\n0,node0,up,0.2\n1,node0,up,0.6\n"
                 "0.5,1,both,0.4\n")
    bg = make_background(f"file:{p}")
    net = make_network("star", 2)
    s = bg.steps(net, range(4), 10.0)
    assert s.t_s.tolist() == [0, 0.5, 0.5, 1]
    assert s.resource.tolist() == [0, 2, 3, 0]
    assert s.load.tolist() == [0.2, 0.4, 0.4, 0.6]
    mean = bg.level(net, "mean")
    # node0/up: 0.2 for [0,1), 0.6 for the last step, counted for the median step (0.5 s)
    assert mean[0] == pytest.approx((0.2 * 1 + 0.6 * 0.5) / 1.5)
    # link 1: 0 for [0, 0.5), 0.4 for [0.5, 1.5)
    assert mean[2] == pytest.approx(0.4 * 1.0 / 1.5)
    assert bg.level(net, 0.95)[0] == 0.6 and bg.level(net, 0.0)[0] == 0.0


@pytest.mark.parametrize("text, what, line", [
    ("t_s,link,direction\n0,node0,up\n", "column 'load'", None),
    ("t_s,link,direction,load\n0,node0,up,1.0\n", "load fraction", 2),
    ("t_s,link,direction,load\n0,node0,up,0.1\n-1,node0,up,0.1\n", "time", 3),
    ("t_s,link,direction,load\n0,nodeX,up,0.1\n", "not a link", 2),
    ("t_s,link,direction,load\n0,node0,sideways,0.1\n", "direction", 2)])
def test_file_background_errors(tmp_path, text, what, line):
    p = tmp_path / "bad.csv"
    p.write_text(text)
    net = make_network("star", 2)
    with pytest.raises(CcmodInputError, match=what) as e:
        make_background(f"file:{p}").steps(net, range(4), 1.0)
    assert "\n" not in str(e.value)
    if line:
        assert f"bad.csv:{line}:" in str(e.value)


# ------------------------------------------------------------------ the engine reacts
ONE_MSG = "0 send 1 1 1000000\n1 recv 0 1 1000000\n"


@pytest.mark.parametrize("sharing", ["ccmod", "maxmin"])
def test_load_step_changes_rate_closed_form(tmp_path, sharing):
    """1 MB on a star (1 GB/s, 1 us per link): the sender's up link gets 50 % background
    at t1 = 0.5 ms. Before: full rate; after: half rate."""
    trace = tmp_path / "one.ti"
    trace.write_text(ONE_MSG)
    loads = tmp_path / "loads.csv"
    t1, p = 5e-4, 0.5
    loads.write_text(f"t_s,link,direction,load\n{t1},node0,up,{p}\n")
    net = "star:bandwidth=1e9,latency=1e-6"
    quiet = ccmod.run(trace, net, sharing=sharing)
    r = ccmod.run(trace, net, sharing=sharing, background=f"file:{loads}")
    lat, nbytes, bw = 2e-6, 1e6, 1e9
    if sharing == "ccmod":
        q = lat + nbytes / bw                  # the whole quiet time is slowed
        expect = t1 + (q - t1) / (1 - p)
    else:
        moved = (t1 - lat) * bw                # latency unshared, then bytes at (1-p) B
        expect = t1 + (nbytes - moved) / (bw * (1 - p))
    assert quiet.makespan_s == pytest.approx(lat + nbytes / bw, rel=1e-12)
    assert r.makespan_s == pytest.approx(expect, rel=1e-9)
    # a step after the message ended changes nothing
    loads.write_text("t_s,link,direction,load\n0.01,node0,up,0.9\n")
    assert ccmod.run(trace, net, sharing=sharing,
                     background=f"file:{loads}").makespan_s == quiet.makespan_s


def test_exp_background_run_reproducible_and_between_bounds():
    spec = "exp:mean_pps=7000,max_pps=25000,interval=1e-4,seed=2"
    a = ccmod.run(TRACES / "alltoall8.ti", "star", background=spec, bounds=True)
    b = ccmod.run(TRACES / "alltoall8.ti", "star", background=spec)
    assert a.makespan_s == b.makespan_s
    bd = a.bounds
    assert bd["best"] <= bd["avg"] <= bd["worst"]
    assert bd["best"] < bd["worst"]
    assert bd["levels"]["avg"] == pytest.approx(make_background(spec).mean_load())
    assert a.options["background_model"]["model"] == "exp"
    assert bd["best"] <= a.makespan_s


def test_bounds_constant_background():
    r = ccmod.run(TRACES / "alltoall8.ti", "fattree2:hosts_per_leaf=2,spines=1",
                  background=0.3, bounds=True)
    bd = r.bounds
    assert bd["best"] < bd["avg"] == bd["worst"] == r.makespan_s
    assert r.summary()["bounds"]["best"] == bd["best"]
    assert "no background load" in bd["definition"]


def test_bounds_run_once_per_distinct_level(monkeypatch):
    """In memory too, --bounds runs the engine once per distinct level: a constant
    background's avg and worst are the main run's level (its makespan reused, as a run
    that does not record gives it bit for bit), best (no load) is one more run; with no
    background, nothing more. Every other bound is a run of its own."""
    from ccmod.engine import Engine
    runs = []
    real_run = Engine.run
    monkeypatch.setattr(Engine, "run", lambda self: runs.append(1) or real_run(self))
    net = "fattree2:hosts_per_leaf=2,spines=1"
    r = ccmod.run(TRACES / "alltoall8.ti", net, background=0.3, bounds=True)
    assert len(runs) == 2
    quiet = ccmod.run(TRACES / "alltoall8.ti", net, record=False)
    loaded = ccmod.run(TRACES / "alltoall8.ti", net, background=0.3, record=False)
    assert r.bounds["best"] == quiet.makespan_s
    assert r.bounds["worst"] == loaded.makespan_s == r.makespan_s
    runs.clear()
    r0 = ccmod.run(TRACES / "alltoall8.ti", net, bounds=True)
    assert len(runs) == 1 and r0.bounds["best"] == r0.bounds["worst"] == quiet.makespan_s


# ------------------------------------------------------------------ LogGP
def test_loggp_formula_and_spec():
    c = parse_loggp("loggp:L=5e-6,o=1e-6,g=3e-6,G=1e-9")
    n = np.array([0, 1, 1024])
    assert c.quiet_s(n).tolist() == pytest.approx([7e-6, 7e-6, 7e-6 + 1023e-9])
    assert c.latency_s(n).tolist() == pytest.approx([7e-6] * 3)
    assert (c.o_send_s, c.o_recv_s, c.gap_s) == (1e-6, 1e-6, 3e-6)
    assert isinstance(load_cost("loggp"), LogGPCost)
    moved = c.bytes_moved(1024, c.quiet_s(1024), 7e-6 + 511.5e-9)
    assert float(moved) == pytest.approx(512, rel=1e-9)
    for bad, what in [("loggp:Q=1", "unknown LogGP"), ("loggp:L=x", "not a number"),
                      ("loggp:G=0", "G"), ("loggp:o=-1", "o=")]:
        with pytest.raises(CcmodInputError, match=what):
            parse_loggp(bad)


def test_loggp_run_pingpong_sums_quiet_times():
    spec = "loggp:L=5e-6,o=1e-6,g=3e-6,G=1e-9"
    r = ccmod.run(TRACES / "pingpong.ti", "star", cost=spec)
    n = r.messages["nbytes"].to_numpy(float)
    expect = (2e-6 + 5e-6 + np.maximum(n - 1, 0) * 1e-9)
    assert r.messages["quiet_s"].to_numpy() == pytest.approx(expect)
    assert r.makespan_s == pytest.approx(expect.sum())    # strictly sequential ping-pong
    assert "loggp" in r.network["cost"]


# ------------------------------------------------------------------ CLI
def _cli(capsys, *args):
    """Run the ccmod command in-process (fast); return (exit code, stdout, stderr)."""
    from ccmod.cli import main
    try:
        main([str(a) for a in args])
        code = 0
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_bounds_json_and_summary(capsys):
    code, out, err = _cli(capsys, "run", TRACES / "alltoall8.ti", "--background",
                          "exp:interval=1e-4,seed=1", "--bounds", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert set(d["bounds"]) >= {"best", "avg", "worst", "spread", "definition"}
    assert d["bounds"]["best"] <= d["bounds"]["avg"] <= d["bounds"]["worst"]
    code, out, err = _cli(capsys, "run", TRACES / "alltoall8.ti", "--background", "0.2",
                          "--bounds")
    assert code == 0 and "bounds" in out and "95th" in out
    code, out, err = _cli(capsys, "run", TRACES / "alltoall8.ti", "--background", "exp:foo=1")
    assert code == 2 and err.count("\n") == 1 and "foo" in err


def test_cli_networks_show(capsys, tmp_path):
    code, out, err = _cli(capsys, "networks", "show", "fattree:k=2,n=2", "--draw",
                          tmp_path / "t.svg")
    assert code == 0, err
    assert "host0" in out and "sw1.0" in out and (tmp_path / "t.svg").stat().st_size > 1000
    code, out, err = _cli(capsys, "networks", "show", "dragonfly:groups=3,routers=2,hosts=1,"
                          "global_links=1", "--json")
    d = json.loads(out)
    assert d["network"]["nodes"] == 6 and len(d["links"]) == 2 * d["network"]["links"]
    code, out, err = _cli(capsys, "networks", "show", "fattree:k=0")
    assert code == 2 and "k=0" in err


# ------------------------------------------------------------------ against a reference
def _reference_ccmod(starts, quiet, routes, steps_t, steps_r, steps_l, nres):
    """Brute-force CCMOD with time-varying background: every event recomputes every rate
    from scratch (BA = min over the route of (1 - load) / contention)."""
    load = np.zeros(nres)
    left = np.array(quiet, float)
    end = np.full(len(quiet), np.inf)
    active = np.zeros(len(quiet), bool)
    started = np.zeros(len(quiet), bool)
    t, k = 0.0, 0
    while not np.all(np.isfinite(end)):
        count = np.zeros(nres)
        for m in np.flatnonzero(active):
            count[routes[m]] += 1
        rate = np.zeros(len(quiet))
        for m in np.flatnonzero(active):
            rate[m] = min((1 - load[r]) / count[r] for r in routes[m])
        with np.errstate(divide="ignore"):
            fin = np.where(active & (rate > 0), t + left / np.where(rate > 0, rate, 1), np.inf)
        nxt_start = min([s for s, st in zip(starts, started) if not st], default=np.inf)
        nxt_step = steps_t[k] if k < len(steps_t) else np.inf
        t_new = min(fin.min(), nxt_start, nxt_step)
        left = np.where(active, left - rate * (t_new - t), left)
        t = t_new
        for m in np.flatnonzero(active & (fin <= t * (1 + 1e-12))):
            active[m], end[m] = False, t
        while k < len(steps_t) and steps_t[k] <= t:
            load[steps_r[k]] = steps_l[k]
            k += 1
        for m in range(len(quiet)):
            if not started[m] and starts[m] <= t:
                started[m], active[m] = True, True
    return end


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_exp_background_matches_brute_force_reference(tmp_path, seed):
    """Four cross-leaf messages sharing spine links, staggered starts, an exp background
    resampled every 20 us: the engine's message end times equal a brute-force simulation."""
    rng = np.random.default_rng(seed)
    lines, starts = [], []
    for i in range(4):
        flops = float(rng.integers(0, 200)) * 1e3          # start at 0..200 us
        starts.append(flops / 1e9)
        nbytes = int(rng.integers(20_000, 120_000))
        lines += [f"{i} compute {flops}", f"{i} send {4 + i} {nbytes}",
                  f"{4 + i} recv {i} {nbytes}"]
    trace = tmp_path / "four.ti"
    trace.write_text("\n".join(lines) + "\n")
    net_spec = "fattree2:hosts_per_leaf=4,spines=1,bandwidth=1e9,latency=1e-6"
    bg = f"exp:interval=2e-5,seed={seed}"
    r = ccmod.run(trace, net_spec, background=bg, eager_limit_bytes=0)
    net = make_network(net_spec, 8)
    m = r.messages.sort_values("src")
    routes = [np.array([2 * lk + d for lk, d in net.route(int(s), int(t))])
              for s, t in zip(m["src"], m["dst"])]
    steps = make_background(bg).steps(net, np.concatenate(routes), 0.01)
    end = _reference_ccmod(starts, m["quiet_s"].to_numpy(), routes, steps.t_s, steps.resource,
                           steps.load, net.nresources)
    assert m["t_start_s"].to_numpy() == pytest.approx(starts, abs=1e-15)
    assert m["t_end_s"].to_numpy() == pytest.approx(end, rel=1e-9)
    # the background did slow them down (the check is not vacuous)
    assert r.makespan_s > 1.05 * ccmod.run(trace, net_spec, eager_limit_bytes=0).makespan_s
