"""Data-flow (MMT) models: format, exact CTMC against closed forms and MVA, simulation."""
from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pytest

from ccmod.analytic import ctmc_dataflow, mva
from ccmod import dataflow_sim
from ccmod.errors import CcmodInputError
from ccmod.workloads import dataflow as df
from ccmod.workloads import dataflow_examples as ex

ROOT = Path(__file__).resolve().parents[1]
FORKJOIN = ROOT / "traces" / "forkjoin.dataflow.json"


def _loop(tA, tB, N, link=None, amount=0.0, disc="FCFS"):
    """Source A on P1 -> data D -> sink B on P2, closed with N iterations."""
    d = {"name": "loop", "closed": N,
         "processors": [{"name": "P1", "discipline": disc}, {"name": "P2", "discipline": disc}],
         "links": [],
         "actors": [{"name": "A", "processor": "P1", "mean": tA},
                    {"name": "B", "processor": "P2", "mean": tB}],
         "data": [{"name": "D", "processor": "P1"}],
         "edges": [{"from": "A", "to": "D", "amount": 0},
                   {"from": "D", "to": "B", "amount": amount}]}
    if link:
        d["links"] = [{"name": "L", "endpoints": ["P1", "P2"], "rate": 1.0, "type": link}]
    return d


def test_forkjoin_ctmc_reproduces_table1_within_10pct():
    m = df.load(FORKJOIN)
    r = ctmc_dataflow.solve(m)
    ref = m.meta["reference"]
    for group in ("processors", "links"):
        for name, vals in ref[group].items():
            got, want = r[group][name]["utilization"], vals["utilization"]
            assert abs(got - want) <= 0.10 * want, (group, name, got, want)
    # Little's law on the paper's link queue lengths gives the same transfer times
    X = ref["processors"]["P4"]["utilization"] / 8.0
    for name, comms in (("link_1_2", ("D1->A2", "D1->A3")), ("link_2_3", ("D1->A3", "D2->A4")),
                        ("link_3_4", ("D2->A4", "D3->A4"))):
        ours = sum(r["communications"][c]["response_time"] for c in comms)
        assert ours == pytest.approx(ref["links"][name]["queue_length"] / X, rel=0.02)


def test_forkjoin_simulation_close_to_exact():
    m = df.load(FORKJOIN)
    ex_ = ctmc_dataflow.solve(m)
    s = dataflow_sim.simulate(m, replications=3, seed=1, iterations=250)
    for name, v in s["links"].items():
        assert v["utilization"] == pytest.approx(ex_["links"][name]["utilization"], rel=0.06)
    assert s["application"]["throughput"] == pytest.approx(ex_["application"]["throughput"],
                                                           rel=0.06)
    assert set(s) - {"ci95", "replications", "seed", "iterations", "warmup"} == \
        set(ex_) - {"states", "transitions"}


@pytest.mark.slow
def test_forkjoin_exact_inside_simulation_ci():
    m = df.load(FORKJOIN)
    ex_ = ctmc_dataflow.solve(m)
    s = dataflow_sim.simulate(m, replications=10, seed=0, iterations=2000)
    for g in ("processors", "links"):
        for name, v in s[g].items():
            assert abs(v["utilization"] - ex_[g][name]["utilization"]) <= \
                s["ci95"][g][name]["utilization"]


@pytest.mark.parametrize("N", [1, 2, 4])
def test_ctmc_mm1_like_loop_closed_form(N):
    """Two exponential single servers in a loop with N customers: p_k ~ rho^k at B."""
    tA, tB = 2.0, 1.5
    r = ctmc_dataflow.solve(df.from_dict(_loop(tA, tB, N)))
    rho = tB / tA                    # lambda / mu at station B
    p0 = (1 - rho) / (1 - rho ** (N + 1))
    UB = 1 - p0
    assert r["processors"]["P2"]["utilization"] == pytest.approx(UB, rel=1e-9)
    assert r["application"]["throughput"] == pytest.approx(UB / tB, rel=1e-9)
    pN = p0 * rho ** N               # A is idle only when all N are at B
    assert r["processors"]["P1"]["utilization"] == pytest.approx(1 - pN, rel=1e-9)


@pytest.mark.parametrize("link", ["virtual_circuit", "store_and_forward"])
@pytest.mark.parametrize("N", [1, 3])
def test_ctmc_cyclic_network_matches_mva(link, N):
    """A (P1) -> link -> B (P2), closed: a 3-station cyclic product-form network."""
    tA, tL, tB = 1.0, 2.5, 0.7
    r = ctmc_dataflow.solve(df.from_dict(_loop(tA, tB, N, link=link, amount=tL)))
    mv = mva.solve([tA, tL, tB], N)
    assert r["application"]["throughput"] == pytest.approx(mv.throughput, rel=1e-9)
    assert r["processors"]["P1"]["utilization"] == pytest.approx(mv.utilization[0], rel=1e-9)
    assert r["links"]["L"]["utilization"] == pytest.approx(mv.utilization[1], rel=1e-9)
    assert r["links"]["L"]["queue_length"] == pytest.approx(mv.queue_length[1], rel=1e-9)
    assert r["processors"]["P2"]["utilization"] == pytest.approx(mv.utilization[2], rel=1e-9)


def test_ethernet_is_processor_shared():
    """Two actors each sending over one ethernet: PS-shared medium, sim agrees with CTMC."""
    d = {"name": "eth", "closed": 1,
         "processors": [{"name": f"P{i}"} for i in range(3)],
         "links": [{"name": "bus", "endpoints": ["P0", "P1", "P2"], "rate": 2.0,
                    "type": "ethernet"}],
         "actors": [{"name": "S", "processor": "P0", "mean": 1.0},
                    {"name": "X", "processor": "P1", "mean": 1.0},
                    {"name": "Y", "processor": "P2", "mean": 1.0}],
         "data": [{"name": "D", "processor": "P0"}],
         "edges": [{"from": "S", "to": "D", "amount": 1},
                   {"from": "D", "to": "X", "amount": 4}, {"from": "D", "to": "Y", "amount": 4}]}
    m = df.from_dict(d)
    r = ctmc_dataflow.solve(m)
    # both reads start together and share the bus at half its rate each
    s = dataflow_sim.simulate(m, replications=3, seed=3, iterations=600)
    assert s["links"]["bus"]["utilization"] == pytest.approx(r["links"]["bus"]["utilization"],
                                                             rel=0.06)
    assert s["application"]["response_time"] == pytest.approx(
        r["application"]["response_time"], rel=0.06)


def test_store_forward_single_hop_equals_circuit():
    a = ctmc_dataflow.solve(df.from_dict(_loop(1.0, 1.0, 2, link="virtual_circuit", amount=3)))
    b = ctmc_dataflow.solve(df.from_dict(_loop(1.0, 1.0, 2, link="store_and_forward",
                                               amount=3)))
    assert a["application"]["throughput"] == pytest.approx(b["application"]["throughput"])


def test_store_forward_vs_circuit_on_two_hops():
    d = json.loads(FORKJOIN.read_text())
    d2 = copy.deepcopy(d)
    for lk in d2["links"]:
        lk["type"] = "store_and_forward"
    vc = ctmc_dataflow.solve(df.from_dict(d))
    sf = ctmc_dataflow.solve(df.from_dict(d2))
    # a two-hop message holds one link at a time but takes two transfer times
    assert sf["communications"]["D1->A3"]["response_time"] > \
        vc["communications"]["D1->A3"]["response_time"]
    assert sf["links"]["link_1_2"]["utilization"] > 0


def test_simulation_reproducible_and_kernel_equals_local_sharing():
    m = df.load(FORKJOIN)
    a = dataflow_sim.simulate(m, replications=2, seed=7, iterations=100)
    b = dataflow_sim.simulate(m, replications=2, seed=7, iterations=100)
    c = dataflow_sim.simulate(m, replications=2, seed=7, iterations=100,
                              sharing_cls=dataflow_sim._LocalSharing)
    assert json.dumps(a) == json.dumps(b)
    assert c["application"]["throughput"] == pytest.approx(a["application"]["throughput"],
                                                           rel=1e-9)


def test_constant_service_times_faster_than_exponential_section_4_3():
    """MMT section 4.3: exponential actor times over-predict the fork-join response time."""
    # 100 iterations: the ratio is 0.57-0.60 with seeds 0-2 (as with 200), far below 0.9
    exp_ = dataflow_sim.simulate(df.from_dict(ex.image_processing(4, 128)), replications=2,
                                 seed=0, iterations=100)
    const = dataflow_sim.simulate(df.from_dict(ex.image_processing(4, 128, "constant")),
                                  replications=2, seed=0, iterations=100)
    assert const["application"]["response_time"] < 0.9 * exp_["application"]["response_time"]


def test_once_mode_makespan():
    d = _loop(2.0, 3.0, 1)
    del d["closed"]
    d["once"] = True
    for a in d["actors"]:
        a["distribution"] = "constant"
    s = dataflow_sim.simulate(df.from_dict(d), replications=2, seed=0)
    assert s["application"]["response_time"] == pytest.approx(5.0)


def test_ctmc_refuses_large_and_non_exponential():
    m = df.load(FORKJOIN)
    with pytest.raises(CcmodInputError, match="more than 5 reachable states"):
        ctmc_dataflow.solve(m, max_states=5)
    d = json.loads(FORKJOIN.read_text())
    d["actors"][0]["distribution"] = "constant"
    with pytest.raises(CcmodInputError, match="exponential"):
        ctmc_dataflow.solve(df.from_dict(d))


@pytest.mark.parametrize("edit, msg", [
    (lambda d: d["actors"][0].update(processor="P9"), "unknown processor 'P9'"),
    (lambda d: d["links"][0].update(type="token_ring"), "unknown type"),
    (lambda d: d["actors"][0].update(mean=-1), "mean must be > 0"),
    (lambda d: d["actors"][0].update(distribution="erlang:x"), "erlang:K"),
    (lambda d: d["edges"].append({"from": "D3", "to": "A1", "amount": 1}), "cycle"),
    (lambda d: d["routes"][0].update(links=["link_3_4"]), "do not lead from"),
    (lambda d: d.update(closed=0), "'closed' must be"),
    (lambda d: d["data"].append({"name": "D9", "processor": "P1"}), "never written"),
    (lambda d: d.update(closd=2), "unknown key 'closd'"),
])
def test_bad_models_one_line_errors(edit, msg):
    d = json.loads(FORKJOIN.read_text())
    edit(d)
    with pytest.raises(CcmodInputError, match=msg) as e:
        df.from_dict(d, source="x.dataflow.json")
    assert "\n" not in str(e.value) and str(e.value).startswith("x.dataflow.json: ")


def test_cli_dataflow_json_keys_and_outputs(tmp_path, capsys):
    from ccmod.cli import main
    main(["dataflow", str(FORKJOIN), "--solve", "ctmc", "--json"])
    ctmc = json.loads(capsys.readouterr().out)
    main(["dataflow", str(FORKJOIN), "--replications", "2", "--iterations", "100", "--json",
          "--report", str(tmp_path / "r.html")])
    sim = json.loads(capsys.readouterr().out)
    assert ctmc["processors"].keys() == sim["processors"].keys()
    assert ctmc["links"]["link_1_2"].keys() == sim["links"]["link_1_2"].keys()
    html = (tmp_path / "r.html").read_text()
    assert "Link utilisation" in html and "<svg" in html and "link_1_2" in html
    main(["dataflow", str(FORKJOIN), "--to-trace", str(tmp_path / "fj.ti")])
    capsys.readouterr()
    main(["run", str(tmp_path / "fj.ti"), "--json"])
    run = json.loads(capsys.readouterr().out)
    assert run["makespan_s"] > 13.0 - 1e-6


def test_cli_bad_file_exit_2(tmp_path, capsys):
    from ccmod.cli import main
    bad = tmp_path / "bad.dataflow.json"
    bad.write_text('{"processors": [], "actors": []')
    with pytest.raises(SystemExit) as e:
        main(["dataflow", str(bad)])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bad.dataflow.json" in err


def test_crosscheck_cli_on_dataflow(capsys):
    from ccmod.cli import main
    main(["crosscheck", str(FORKJOIN), "--replications", "2", "--iterations", "200", "--json"])
    rep = json.loads(capsys.readouterr().out)
    assert rep["exact"]["states"] == 18
    paper = [r for r in rep["rows"] if r["paper"] is not None and r["metric"] == "utilization"]
    assert len(paper) == 7
    assert all(math.isfinite(r["exact"]) for r in rep["rows"] if r["exact"] is not None)


def test_link_rules_listed(capsys):
    from ccmod.cli import main
    main(["link-rules", "--json"])
    rows = json.loads(capsys.readouterr().out)
    assert {r["name"] for r in rows} >= {"circuit", "store_forward", "ethernet"}


def test_unread_output_data_and_capacity():
    """A sink writing a data node nobody reads keeps the chain finite; capacity 1 on the
    data between two stages with 3 iterations in flight blocks the writer."""
    d = _loop(1.0, 2.0, 3)
    d["data"].append({"name": "OUT", "processor": "P2"})
    d["edges"].append({"from": "B", "to": "OUT", "amount": 5})
    r = ctmc_dataflow.solve(df.from_dict(d))
    assert r["states"] < 50
    d["data"][0]["capacity"] = 1
    r1 = ctmc_dataflow.solve(df.from_dict(d))
    assert r1["application"]["throughput"] < r["application"]["throughput"]
    s = dataflow_sim.simulate(df.from_dict(d), replications=2, seed=0, iterations=300)
    assert s["application"]["throughput"] == pytest.approx(r1["application"]["throughput"],
                                                           rel=0.1)
