"""``ccmod lopc``, ``ccmod mva`` and ``ccmod overflow``: thin wrappers, JSON output, errors."""
from __future__ import annotations

import json

import pytest

from ccmod.analytic import lopc, mva, overflow
from ccmod.cli import main


def run(capsys, *argv):
    main(list(argv))
    return capsys.readouterr().out


def test_lopc_all_to_all_json(capsys):
    out = run(capsys, "lopc", "all-to-all", "--W", "1000", "--So", "200", "--Sl", "10",
              "--P", "32", "--Co2", "0", "--n", "100", "--json")
    d = json.loads(out)
    want = lopc.all_to_all(1000, 200, 10, 32, Co2=0)
    assert d["R"] == pytest.approx(want.R)
    assert d["contention"] == pytest.approx(want.contention)
    assert d["bounds_Co2_0"] == [1420.0, 1712.0]
    assert d["runtime"] == pytest.approx(100 * want.R)
    for key in ("Rw", "Rq", "Ry", "Qq", "Qy", "Uq", "Uy", "X"):
        assert key in d


def test_lopc_text_and_client_server(capsys):
    out = run(capsys, "lopc", "all-to-all", "--W", "100", "--So", "50", "--Sl", "5", "--P", "8")
    assert "cycle time R" in out and "contention" in out
    d = json.loads(run(capsys, "lopc", "client-server", "--P", "32", "--W", "1000", "--So",
                       "100", "--Sl", "50", "--json"))
    assert d["optimal_servers"] == pytest.approx(4.0)        # hand-derived in test_analytic_lopc
    assert d["best_servers"] == lopc.best_servers(32, 1000, 100, 50)
    assert d["Ps"] == d["best_servers"]
    d = json.loads(run(capsys, "lopc", "client-server", "--P", "32", "--W", "1000", "--So",
                       "100", "--Sl", "50", "--Ps", "6", "--json"))
    assert d["X"] == pytest.approx(lopc.client_server(32, 6, 1000, 100, 50).X)


def test_mva_json_single_and_multiclass(capsys):
    d = json.loads(run(capsys, "mva", "--demands", "1,2", "--population", "2", "--json"))
    assert d["throughput"] == pytest.approx(3 / 7)           # hand-derived 2-station network
    assert d["queue_length"] == pytest.approx([4 / 7, 10 / 7])
    d = json.loads(run(capsys, "mva", "--demands", "0.1,0.2;0.3,0.1", "--population", "5,5",
                       "--think", "1,2", "--method", "schweitzer", "--json"))
    want = mva.solve([[0.1, 0.2], [0.3, 0.1]], (5, 5), think_time=[1, 2], method="schweitzer")
    assert d["throughput"] == pytest.approx(want.throughput.tolist())
    assert len(d["residence_time"]) == 2 and len(d["residence_time"][0]) == 2
    out = run(capsys, "mva", "--demands", "0.1,0.2", "--population", "10", "--think", "1.0",
              "--servers", "1,2")
    assert "throughput" in out and "utilization" in out


def test_overflow_json(capsys):
    d = json.loads(run(capsys, "overflow", "--N", "512", "--K", "3072", "--Q", "64", "--B",
                       "1.1", "--json"))
    assert d["p_no_overflow"] == pytest.approx(overflow.p_no_overflow(512, 3072, 64))
    assert d["imbalance_threshold"] == pytest.approx(1 + 512 / 3072)
    assert d["bottleneck_residency"] == pytest.approx(overflow.bottleneck_residency(512, 3072, 64, 1.1))


@pytest.mark.parametrize("argv, fragment", [
    (["mva", "--demands", "0.1,-0.2", "--population", "3"], "demands must be >= 0"),
    (["mva", "--demands", "0.1,abc", "--population", "3"], "--demands"),
    (["mva", "--demands", "0.1;0.2,0.3", "--population", "3"], "same number of stations"),
    (["mva", "--demands", "0.1,0.2;0.3,0.1", "--population", "3"], "class"),
    (["lopc", "all-to-all", "--W", "-1", "--So", "1", "--Sl", "1", "--P", "4"], "W must be >= 0"),
    (["lopc", "client-server", "--P", "8", "--W", "1", "--So", "1", "--Sl", "1", "--Ps", "9"],
     "Ps"),
    (["overflow", "--N", "0", "--K", "3", "--Q", "1"], "N must be >= 1"),
])
def test_bad_options_exit_2_with_one_line(capsys, argv, fragment):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and fragment in err
