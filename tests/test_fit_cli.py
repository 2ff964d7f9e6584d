"""`ccmod fit` through the real entry point: outputs, --json, bad input (one line, exit 2),
and the fitted model driving `ccmod run` (a 2-rank message on `star` costs T(n) exactly)."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ccmod.cli import main
from ccmod.netsys.cost import PiecewiseLinearCost

SIZES = [0] + [2 ** k for k in range(23)]


def osu_text(model_us):
    rows = "\n".join(f"{n:<10d}{model_us(n):.4f}" for n in SIZES)
    return f"# OSU MPI Latency Test v5.6.3\n# Size          Latency (us)\n{rows}\n"


def lines_us(n):
    """Fixture: 1.5 us + n / 2 GB/s up to 8 KiB, 6 us + n / 10 GB/s above.

    Monotone: at 8192 B 1.5 + 4.096 = 5.596 us, just above 6 + 0.8193 = 6.8193 us.
    """
    return 1.5 + n / 2000.0 if n <= 8192 else 6.0 + n / 10000.0


@pytest.fixture
def osu_file(tmp_path):
    f = tmp_path / "osu_latency.out"
    f.write_text(osu_text(lines_us))
    return f


def run_cli(argv, capsys):
    try:
        main(argv)
        code = 0
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def test_fit_writes_model_and_plot(osu_file, tmp_path, capsys):
    out, png = tmp_path / "ib.json", tmp_path / "ib.png"
    code, stdout, err = run_cli(["fit", str(osu_file), "-o", str(out), "--plot", str(png)], capsys)
    assert code == 0, err
    assert "wrote" in stdout and "R2" in stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    m = PiecewiseLinearCost.load(out)
    n = np.array(SIZES, float)
    want = np.array([lines_us(v) for v in SIZES]) * 1e-6
    assert m.quiet_s(n) == pytest.approx(want, rel=1e-6)


def test_packet_size_and_json(osu_file, tmp_path, capsys):
    code, stdout, _ = run_cli(["fit", str(osu_file), "--packet-size", "8192", "--json"], capsys)
    assert code == 0
    d = json.loads(stdout)
    assert [s["min_bytes"] for s in d["model"]["segments"]] == [0, 8193]
    assert d["segments"][0]["latency_s"] == pytest.approx(1.5e-6, rel=1e-6)
    assert d["segments"][1]["bandwidth_Bps"] == pytest.approx(1e10, rel=1e-6)
    assert len(d["per_size"]) == 24 and d["poor_fit"] is False
    assert d["metrics"]["median_rel_err"] < 1e-6


def test_csv_round_trip_options(tmp_path, capsys):
    f = tmp_path / "pingpong.csv"
    f.write_text("bytes,usec\n" + "".join(f"{n},{2 * lines_us(n):.4f}\n" for n in SIZES))
    out = tmp_path / "m.json"
    code, _, err = run_cli(["fit", str(f), "--size-col", "bytes", "--time-col", "usec",
                            "--time-unit", "us", "--round-trip", "-o", str(out)], capsys)
    assert code == 0, err
    assert PiecewiseLinearCost.load(out).quiet_s(1 << 20) == pytest.approx(
        lines_us(1 << 20) * 1e-6, rel=1e-6)


def test_two_files_auto_breakpoints_json(tmp_path, capsys):
    a, b = tmp_path / "a.out", tmp_path / "b.out"
    a.write_text(osu_text(lines_us))
    b.write_text(osu_text(lambda n: lines_us(n) * 1.02))          # a second, 2 % slower run
    code, stdout, _ = run_cli(["fit", str(a), str(b), "--breakpoints", "auto",
                               "--max-segments", "4", "--json"], capsys)
    assert code == 0
    d = json.loads(stdout)
    assert len(d["inputs"]) == 2 and d["per_size"][3]["n"] == 2
    assert d["per_size"][3]["max_s"] == pytest.approx(1.02 * d["per_size"][3]["min_s"], rel=1e-3)
    assert {"r2", "median_rel_err", "max_rel_err", "cv_median_rel_err"} <= set(d["metrics"])


def test_hops_fit_per_hop_latency(tmp_path, capsys):
    a, b = tmp_path / "two.out", tmp_path / "four.out"
    a.write_text(osu_text(lines_us))
    b.write_text(osu_text(lambda n: lines_us(n) + 0.2))        # +2 hops = +0.2 us
    code, stdout, _ = run_cli(["fit", str(a), str(b), "--hops", "2,4", "--json"], capsys)
    assert code == 0
    d = json.loads(stdout)
    assert d["model"]["per_hop_latency_s"] == pytest.approx(1e-7, rel=1e-3)
    assert d["metrics"]["per_hop_latency_fitted"] is True


def test_poor_fit_is_said_plainly(tmp_path, capsys):
    f = tmp_path / "zigzag.out"
    f.write_text(osu_text(lambda n: lines_us(n) * (3.0 if SIZES.index(n) % 2 else 1.0)))
    code, stdout, _ = run_cli(["fit", str(f)], capsys)
    assert code == 0 and "warning: POOR FIT" in stdout


BAD = {
    "empty.out": ("", "empty file"),
    "notable.out": ("just some text\nwithout a table\n", "no recognisable ping-pong table"),
    "nonnum.out": ("# OSU MPI Latency Test v5.6.3\n# Size  Latency (us)\n1  1.0\n2  x\n",
                   "nonnum.out:4: non-numeric"),
    "neg.csv": ("bytes,usec\n-4,1.0\n8,2.0\n", "neg.csv:2: message size must be >= 0"),
    "decr.out": ("# OSU MPI Latency Test v5.6.3\n# Size  Latency (us)\n8  1.0\n2  1.1\n",
                 "decr.out:4: message sizes must increase"),
    "few.out": ("# OSU MPI Latency Test v5.6.3\n# Size  Latency (us)\n8  1.0\n", "only one message size"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_one_line_exit_2(tmp_path, capsys, name):
    text, match = BAD[name]
    f = tmp_path / name
    f.write_text(text)
    code, stdout, err = run_cli(["fit", str(f)], capsys)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("ccmod: error: ") and match in err
    assert "Traceback" not in err + stdout


@pytest.mark.parametrize("args,match", [
    (["--packet-size", "100000000"], "fewer points than parameters"),
    (["--format", "nope"], "unknown input format"),
    (["--breakpoints", "a,b"], "breakpoints must be"),
    (["--hops", "2,4"], "2 hop counts for 1 input files"),
    (["--plot", "x.gif"], "plot file must end in"),
    (["--time-unit", "h"], "unknown time unit"),
])
def test_bad_options_exit_2(osu_file, capsys, args, match):
    code, _, err = run_cli(["fit", str(osu_file), *args], capsys)
    assert code == 2 and match in err and err.count("\n") == 1


def test_installed_command_no_traceback(tmp_path):
    exe = Path(sys.executable).with_name("ccmod")
    if not exe.exists():
        pytest.skip("ccmod console script not installed next to this python")
    f = tmp_path / "bad.out"
    f.write_text("# OSU MPI Latency Test v5.6.3\n# Size  Latency (us)\n1  1.0\n2  oops\n")
    r = subprocess.run([str(exe), "fit", str(f)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip() == f"ccmod: error: {f}:4: non-numeric value 'oops'"


def test_model_drives_ccmod_run(osu_file, tmp_path, capsys):
    from ccmod import api
    from ccmod.workloads.base import WorkloadBuilder
    out = tmp_path / "ib.json"
    assert run_cli(["fit", str(osu_file), "-o", str(out)], capsys)[0] == 0
    model = PiecewiseLinearCost.load(out)
    for n in (0, 1, 4096, 8192, 8193, 100_000, 1 << 22):
        b = WorkloadBuilder(2)
        b.send(0, 1, n)
        b.recv(1, 0, n)
        r = api.run(b.build(), "star", cost=str(out))
        assert r.makespan_s == pytest.approx(float(model.quiet_s(n)), rel=1e-12)
        assert r.makespan_s == pytest.approx(lines_us(n) * 1e-6, rel=1e-6)
