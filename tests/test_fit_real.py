"""ccmod fit on every real ping-pong data set of ../shared/traces/real (skipped without it).

Expected values come from the files themselves (the benchmark's own printed numbers), from
SOURCES.md (counts) or from JOBS.tsv (placement), never from a previous run of the fit.
"""
import csv
import json
import time

import numpy as np
import pytest

from ccmod.errors import CcmodInputError
from ccmod.netsys.fit import PiecewiseLinearFit
from ccmod.netsys.fit_report import fit_files
from ccmod.netsys.pingpong import read_measurements

SH = "stackhpc-hpc-tests"
PINGPONG_GLOBS = {   # glob -> number of files SOURCES.md / the tree implies
    f"{SH}/*/*/imb/IMB_PingPong/*.out": 8,
    f"{SH}/*/*/omb/Osu_latency/*.out": 6,
    f"{SH}/*/*/omb/Osu_bw/*.out": 6,
    f"{SH}/*/*/omb/Osu_bibw/*.out": 6,
    "osu-uibk-lcc3/task02/*/*.log": 9,          # latency + bandwidth + errors (3 each)
    "imb-juno-arm/IMB-MPI1_*.txt": 3,
    "simgrid-platform-calibration/*/calibration/*PingPong.csv.gz": 5,
}


def _files(real_dir, pattern):
    return sorted(real_dir.glob(pattern))


# the SimGrid calibration files are large (about 2 s to fit all) and the six OSU
# bidirectional files (~1.3 s) have the layout of the Osu_bw ones: CI runs them (slow); so
# do the OSU bandwidth files, the uibk logs and StackHPC's IMB files (0.7-0.9 s each set
# here): the default run fits the OSU latency and the Juno IMB layouts
SLOW_GLOBS = ("simgrid-platform-calibration", f"{SH}/*/*/omb/Osu_bibw", f"{SH}/*/*/omb/Osu_bw",
              f"{SH}/*/*/imb/IMB_PingPong", "osu-uibk-lcc3/task02")


@pytest.mark.parametrize("pattern", [pytest.param(p, marks=pytest.mark.slow)
                                     if p.startswith(SLOW_GLOBS) else p
                                     for p in sorted(PINGPONG_GLOBS)])
def test_every_pingpong_file_fits(real_dir, pattern):
    files = _files(real_dir, pattern)
    assert len(files) == PINGPONG_GLOBS[pattern]
    for f in files:
        if "/errors/" in str(f):               # --report-bindings logs: not a benchmark
            with pytest.raises(CcmodInputError, match="no recognisable ping-pong table"):
                fit_files([f])
            continue
        rep = fit_files([f])
        e = rep.estimator
        assert e.n_segments_ >= 1 and np.all(np.diff(e.predicted_s_) >= 0)
        assert np.all(rep.model.seg_latency_s >= 0)


def _table_values(path, col):
    """(bytes, value) rows of an OSU-style two-column file, read here independently."""
    rows = []
    for line in open(path):
        t = line.split()
        if t and t[0].isdigit():
            rows.append((int(t[0]), float(t[col])))
    return np.array(rows)


@pytest.mark.parametrize("sub", ["csd3/cclake-ib-gcc9-ompi3-ucx", "alaska/ib-gcc9-openmpi4-ucx",
                                 "csd3/cclake-roce-gcc9-ompi3-ucx"])
def test_osu_latency_model_predicts_the_measured_times(real_dir, sub):
    f = real_dir / SH / sub / "omb/Osu_latency/rfm_Osu_latency_job.out"
    rep = fit_files([f])
    meas = _table_values(f, 1)                                       # size, latency (us)
    pred = rep.model.quiet_s(meas[:, 0]) * 1e6
    rel = np.abs(pred / meas[:, 1] - 1)
    assert np.median(rel) < 0.03 and rel.max() < 0.15
    # the 0-byte latency the benchmark printed is the first segment's intercept (5 %)
    assert rep.model.seg_latency_s[0] * 1e6 == pytest.approx(meas[0, 1], rel=0.05)
    # large messages: the slope is the file's asymptotic bandwidth n / t (5 %)
    n, t = meas[-1]
    assert rep.model.seg_bandwidth_Bps[-1] == pytest.approx(
        (n - meas[-2, 0]) / ((t - meas[-2, 1]) * 1e-6), rel=0.05)


def test_imb_pingpong_half_round_trip_and_table_choice(real_dir):
    f = real_dir / "imb-juno-arm/IMB-MPI1_internode.txt"
    m = read_measurements(f)
    assert m.format == "imb PingPong" and "#processes = 2" in m.notes[0]
    # first PingPong row of the file: "0 1000 155.82 0.00"
    assert m.nbytes[0] == 0 and m.one_way_s[0] == pytest.approx(155.82e-6)
    assert len(m) == 24       # 0 .. 4 MiB


def test_uniband_table_is_the_full_job(real_dir):
    jobs = {r["test_dir"]: r for r in csv.DictReader(open(real_dir / SH / "JOBS.tsv"),
                                                      delimiter="\t")}
    for f in _files(real_dir, f"{SH}/*/*/imb/IMB_Uniband_*/*.out"):
        key = str(f.parent.relative_to(real_dir / SH))
        m = read_measurements(f)
        # the table used is the full-N one: #processes = ntasks of the Slurm job
        assert f"#processes = {jobs[key]['ntasks']}'" in m.notes[0], key


def test_osu_uibk_ten_runs_pooled(real_dir):
    runs = _files(real_dir, "osu-uibk-lcc3/task03/nodes/latency/*.log")
    assert len(runs) == 10
    rep = fit_files(runs)
    e = rep.estimator
    assert np.all(e.spread_["n"] == 10)
    # the per-size mean is the mean of the 10 printed values (read independently)
    vals = np.stack([_table_values(r, 1)[:, 1] for r in runs])
    assert e.center_s_ * 1e6 == pytest.approx(vals.mean(axis=0), rel=1e-9)
    assert e.spread_["min_s"] * 1e6 == pytest.approx(vals.min(axis=0), rel=1e-12)
    assert not e.poor_fit_


def test_juno_raw_latency_alone_and_pooled(real_dir):
    f = real_dir / "imb-juno-arm/latency_internode.txt"
    m = read_measurements(f)
    assert len(m) == 1000 and set(m.nbytes.tolist()) == {1}
    # the file prints "*** Avg one way latency = 179 microseconds"
    assert np.mean(m.one_way_s) * 1e6 == pytest.approx(179, abs=0.5)
    with pytest.raises(CcmodInputError, match="only one message size"):
        fit_files([f])
    rep = fit_files([f, real_dir / "imb-juno-arm/IMB-MPI1_internode.txt"], robust=True)
    assert rep.estimator.spread_["n"][1] == 1001            # 1 B: 1000 raw + the IMB row


@pytest.mark.slow      # SimGrid calibration files, ~0.8-1 s here: CI runs it
def test_simgrid_calibration_counts_spread_and_speed(real_dir):
    f = real_dir / "simgrid-platform-calibration/sirocco_26_08_2016/calibration/sirocco_PingPong.csv.gz"
    m = read_measurements(f)
    assert len(m) == 33100 and np.unique(m.nbytes).size == 490      # SOURCES.md
    t0 = time.process_time()
    e = PiecewiseLinearFit().fit(m.nbytes, m.one_way_s)
    assert time.process_time() - t0 < 2.0
    assert e.counts_.sum() == 33100 and np.all(e.spread_["p90_s"] >= e.spread_["p10_s"])
    assert not e.poor_fit_


@pytest.mark.slow      # SimGrid calibration files, ~0.8-1 s here: CI runs it
def test_noisy_tcp_calibration_is_flagged_poor(real_dir):
    f = real_dir / "simgrid-platform-calibration/taurus_26_07_2016/calibration/taurus-2016-06-09--1_PingPong.csv.gz"
    rep = fit_files([f])
    assert rep.poor_fit and any("POOR FIT" in w for w in rep.warnings)
    assert rep.to_json()["poor_fit"] is True


def test_nxn_pairs(real_dir):
    for f, pairs in ((f"{SH}/alaska/ib-gcc9-openmpi4-ucx/nxnlatbw/Nxnlatbw/rfm_Nxnlatbw_job.out",
                      240), (f"{SH}/csd3/cclake-ib-gcc9-ompi3-ucx/nxnlatbw/Nxnlatbw/"
                             "rfm_Nxnlatbw_job.out", 3080)):
        rep = fit_files([real_dir / f])
        d = rep.to_json()
        assert d["pairs"]["summary"]["n_pairs"] == pairs               # SOURCES.md
        lat = np.median([p["latency_s"] for p in d["pairs"]["pairs"]])
        assert 0.5e-6 < lat < 2e-6                                     # InfiniBand


def test_dahu_simgrid_json_conversion(real_dir):
    f = real_dir / "simgrid/dahu-calibration-models/pingpong_ckmeans.json"
    d = json.loads(f.read_text())
    rep = fit_files([f])
    prob = np.array([s["prob"] for s in d["seg"]])
    mean = np.array([s["mean"] for s in d["seg"]])
    m = rep.model
    assert m.min_bytes.tolist() == [0]
    assert m.seg_latency_s[0] == pytest.approx(np.sum(prob * mean) / prob.sum())
    assert m.seg_bandwidth_Bps[0] == pytest.approx(1 / d["seg"][0]["coefficient"])
    assert any("63305" in n for n in rep.notes)
    iso = fit_files([f.with_name("isend_ckmeans.json")])
    assert iso.model.min_bytes.size == 6 and any("not monotone" in w for w in iso.warnings)


@pytest.mark.slow      # SimGrid calibration files, ~0.8-1 s here: CI runs it
def test_auto_breakpoints_match_the_upstream_calibration(real_dir):
    """stampede 1 node: the upstream SimGrid calibration chose breakpoints 150, 8192 and
    260000 B by hand (testplatform_breakpoints); BIC + DP finds the same protocol switches."""
    d = real_dir / "simgrid-platform-calibration/stampede_17_06_01-1726_1node/calibration"
    upstream = [int(line.split(",")[0]) for line in (d / "testplatform_breakpoints").read_text()
                .splitlines()[1:] if line.strip()]
    assert upstream == [150, 8192, 260000]
    rep = fit_files([d / "testplatform_PingPong.csv.gz"])
    found = rep.model.min_bytes[1:]
    assert found.size == 3
    assert found == pytest.approx(upstream, rel=0.1)
