"""RunOptions: one frozen, validated set of run options shared by the API and commands."""
import dataclasses

import numpy as np
import pytest

from ccmod.api import load_network, run
from ccmod.errors import CcmodInputError
from ccmod.netsys.networks import make_network
from ccmod.options import RunOptions, check_option
from ccmod.workloads.base import WorkloadBuilder


def _pingpong():
    b = WorkloadBuilder(2)
    b.send(0, 1, 1000)
    b.recv(1, 0, 1000)
    return b.build()


def test_defaults_are_valid_and_frozen():
    o = RunOptions()
    assert o.sharing == "ccmod" and o.send_mode == "rendezvous" and o.background == 0.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        o.sharing = "maxmin"
    assert o.replace(sharing="maxmin").sharing == "maxmin" and o.sharing == "ccmod"


@pytest.mark.parametrize("kw, flag", [
    ({"sharing": "fair"}, "--sharing: unknown sharing rule 'fair'"),
    ({"send_mode": "sync"}, "--send-mode"),
    ({"eager_limit_bytes": -1}, "--eager-limit"),
    ({"eager_limit_bytes": 2.5}, "--eager-limit"),
    ({"compute_rate": 0}, "--compute-rate"),
    ({"compute_scale": float("nan")}, "--compute-scale"),
    ({"background": 1.0}, "--background"),
    ({"background": True}, "--background"),
    ({"intra_latency_s": -1e-9}, "--intra-latency"),
    ({"intra_bandwidth_Bps": 0}, "--intra-bandwidth"),
])
def test_bad_values_name_their_option(kw, flag):
    with pytest.raises(CcmodInputError) as ei:
        RunOptions(**kw)
    assert flag in str(ei.value) and "\n" not in str(ei.value)


def test_normalisation():
    o = RunOptions(background=None, cost="none", mapping="default", eager_limit_bytes=65536.0)
    assert o.background == 0.0 and o.cost is None and o.mapping is None
    assert o.eager_limit_bytes == 65536 and isinstance(o.eager_limit_bytes, int)
    assert check_option("fmt", "") == "auto"
    with pytest.raises(CcmodInputError, match="unknown run option 'sharng'.*valid: sharing"):
        RunOptions.make(sharng="maxmin")


def test_run_takes_options_or_keywords_alike():
    w = _pingpong()
    a = run(w, "star", RunOptions(sharing="maxmin", background=0.5))
    b = run(w, "star", sharing="maxmin", background=0.5)
    c = run(w, "star", RunOptions(sharing="maxmin"), background=0.5)   # keywords override
    assert a.makespan_s == b.makespan_s == c.makespan_s
    assert a.makespan_s > run(w, "star").makespan_s
    with pytest.raises(CcmodInputError, match="--background"):
        run(w, "star", background=2)


def test_load_network_does_not_mutate_the_callers_network():
    net = make_network("star", 2)
    cost_before, bg_before = net.cost, net.background
    got = load_network(net, 2, cost="physical", background=0.25)
    assert net.cost is cost_before and net.background is bg_before
    assert got is not net and np.all(got.background == 0.25)
    # run() with a Network object leaves it as it was, and uses the options
    r = run(_pingpong(), net, background=0.5)
    assert net.background is bg_before and r.makespan_s > run(_pingpong(), net).makespan_s
    assert load_network(net, 2) is net          # nothing to apply: no copy needed


def test_run_options_exported_lazily_from_the_package():
    import ccmod
    assert ccmod.RunOptions is RunOptions and "RunOptions" in ccmod.__all__
