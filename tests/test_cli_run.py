"""`ccmod run` as a user runs it: exit codes, one-line errors, JSON, output files."""
import json

import pandas as pd
import pytest

from conftest import run_cli

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def ccmod(*args, cwd=None):
    """``ccmod ARGS`` run in-process (see conftest.run_cli): exit code, stdout, stderr."""
    return run_cli(*args, cwd=cwd)


def write(tmp_path, text, name="t.ti"):
    p = tmp_path / name
    p.write_text(text)
    return p


GOOD = """# two ranks
0 init
1 init
0 compute 1e6
0 send 1 1000
1 recv 0 1000
1 send 0 0 2000
0 recv 1 0 2000
0 finalize
1 finalize
"""


def one_line_error(res, *needles):
    assert res.returncode == 2, res.stderr + res.stdout
    assert "Traceback" not in res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, res.stderr
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


def test_json_summary(tmp_path):
    p = write(tmp_path, GOOD)
    res = ccmod("run", p, "--network", "star:bandwidth=1e8,latency=1e-6", "--sharing", "maxmin",
                "--json")
    assert res.returncode == 0, res.stderr
    d = json.loads(res.stdout)
    for key in ("makespan_s", "rank_finish_s", "messages", "records", "wall_s", "records_per_s",
                "network", "sharing"):
        assert key in d
    assert d["messages"] == 2 and d["sharing"] == "maxmin" and len(d["rank_finish_s"]) == 2
    # compute 1e6 flops at 1e9 flop/s, then two sequential messages of 2 us + n / 1e8
    want = 1e-3 + (2e-6 + 1000 / 1e8) + (2e-6 + 2000 / 1e8)
    assert d["makespan_s"] == pytest.approx(want, rel=1e-9)


def test_human_summary_and_python_api(tmp_path):
    p = write(tmp_path, GOOD)
    res = ccmod("run", p, "--network", "myrinet16")
    assert res.returncode == 0, res.stderr
    assert "makespan" in res.stdout and "busiest link" in res.stdout
    # the package facade's lazy ``ccmod.run`` (a fresh interpreter's import of it:
    # tests/test_startup_imports.py, test_packaging.py)
    import ccmod as package
    r = package.run(str(p), network="myrinet16")
    assert r.makespan_s > 1e-3


def test_out_dir_tables_and_debug_trace(tmp_path):
    p = write(tmp_path, GOOD)
    out = tmp_path / "run1"
    res = ccmod("run", p, "--network", "bus:nodes=4", "--out", out, "--debug")
    assert res.returncode == 0, res.stderr
    msgs = pd.read_parquet(out / "messages.parquet")
    assert len(msgs) == 2
    for col in ("src", "dst", "nbytes", "t_post_s", "t_start_s", "t_end_s", "quiet_s", "slowdown"):
        assert col in msgs.columns
    ranks = pd.read_parquet(out / "ranks.parquet")
    assert len(ranks) == 2
    debug = [f for f in out.iterdir() if "debug" in f.name]
    assert debug, list(out.iterdir())
    text = debug[0].read_text()
    assert "EVENTHORIZON" in text and "MSGSTART" in text and "MSGEND" in text
    assert not [f for f in out.iterdir() if f.name.endswith((".tmp", ".ccmod-tmp"))]


def test_networks_lists_names():
    res = ccmod("networks")
    assert res.returncode == 0
    for name in ("star", "bus", "fattree2", "myrinet16"):
        assert name in res.stdout


@pytest.mark.parametrize("text,needles", [
    ("0 sned 1 10\n", ["t.ti:1", "sned"]),
    ("0 send 1 ten\n1 recv 0\n", ["t.ti:1"]),
    ("0 send 1 10\n1 compute 5\n", ["t.ti:1", "unmatched send"]),
    ("0 compute 5\n1 recv 0 10\n", ["t.ti:2", "unmatched recv"]),
    ("0 send 1 12\n1 recv 0 10\n", ["t.ti:2", "truncated", "10"]),   # recv smaller than its send
])
def test_bad_trace_one_line_exit_2(tmp_path, text, needles):
    p = write(tmp_path, text)
    one_line_error(ccmod("run", p), *needles)


def test_deadlock_exit_2_lists_blocked_ranks(tmp_path):
    p = write(tmp_path, "0 recv 1 10\n0 send 1 10\n1 recv 0 10\n1 send 0 10\n")
    line = one_line_error(ccmod("run", p), "deadlock")
    assert "rank 0" in line and "rank 1" in line


def test_failed_run_leaves_no_empty_folder_of_its_own(tmp_path):
    p = write(tmp_path, "0 recv 1 10\n0 send 1 10\n1 recv 0 10\n1 send 0 10\n")
    kept = tmp_path / "kept"
    kept.mkdir()
    one_line_error(ccmod("run", p, "--out", tmp_path / "new" / "out"), "deadlock")
    one_line_error(ccmod("run", p, "--report", kept), "deadlock")
    assert not (tmp_path / "new").exists()      # created for the run, removed with its parent
    assert kept.is_dir()                        # the user's own folder stays


@pytest.mark.parametrize("args,needles", [
    (["--network", "nosuch"], ["unknown network", "star"]),
    (["--network", "star:bandwith=1e9"], ["bandwith", "bandwidth"]),
    (["--network", "star:bandwidth=fast"], ["bandwidth"]),
    (["--network", "star:nodes=1"], ["--network"]),
    (["--sharing", "fair"], ["--sharing", "maxmin"]),
    (["--send-mode", "sync"], ["--send-mode"]),
    (["--background", "1.5"], ["--background"]),
    (["--map", "block:0"], ["--map"]),
])
def test_bad_options_one_line_exit_2(tmp_path, args, needles):
    p = write(tmp_path, GOOD)
    one_line_error(ccmod("run", p, *args), *needles)


def test_rank_outside_network(tmp_path):
    text = "".join(f"{r} send {(r + 1) % 20} 10\n{(r + 1) % 20} recv {r} 10\n" for r in range(0, 20, 2))
    p = write(tmp_path, text)
    one_line_error(ccmod("run", p, "--network", "myrinet16"), "--network")


def test_missing_file(tmp_path):
    one_line_error(ccmod("run", tmp_path / "nope.ti"), "nope.ti")


def test_binary_cost_file_is_input_error(tmp_path):
    p = write(tmp_path, GOOD)
    bad = tmp_path / "model.json"
    bad.write_bytes(bytes(range(256)))
    one_line_error(ccmod("run", p, "--cost", bad), "model.json", "not a ccmod cost model")


def test_unwritable_outputs_are_input_errors(tmp_path):
    p = write(tmp_path, GOOD)
    out = tmp_path / "run"
    assert ccmod("run", p, "--out", out).returncode == 0
    one_line_error(ccmod("report", out, "-o", "/proc/nope/r.html"), "/proc/nope")
    one_line_error(ccmod("report", out, "-o", tmp_path), "is a directory")


def test_empty_and_misnamed_traces(tmp_path):
    one_line_error(ccmod("run", write(tmp_path, "", "e.ti")), "e.ti", "empty")
    one_line_error(ccmod("run", write(tmp_path, "hello world\n", "h.ti")), "h.ti:1")


def test_option_combinations(tmp_path):
    p = write(tmp_path, GOOD)
    one_line_error(ccmod("run", p, "--background-levels", "0,0.3"), "--report")
    out = tmp_path / "o"
    res = ccmod("run", p, "--out", out, "--sink", "parquet", "--json")
    assert res.returncode == 0, res.stderr      # --out already implies parquet: no clash
    res = ccmod("run", p, "--send-mode", "eager", "--eager-limit", "100", "--json")
    assert "only matters with --send-mode rendezvous" in json.loads(res.stdout)["notes"][0]


@pytest.mark.slow
def test_report_background_levels_can_be_rebuilt(tmp_path):
    p = write(tmp_path, GOOD)
    rep = tmp_path / "rep"
    assert ccmod("run", p, "--report", rep, "--background-levels", "0,0.3").returncode == 0
    assert (rep / "background-0.3" / "messages.parquet").exists()
    res = ccmod("report", rep, "-o", tmp_path / "again.html", "--background-levels", "0,0.3")
    assert res.returncode == 0, res.stderr
