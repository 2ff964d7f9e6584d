"""ccmod fit: the estimator (closed forms, monotonicity, inverse, save/load, hops) and the
input parsers on format fixtures whose numbers come from a hand-written closed-form model."""
import gzip
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from conftest import examples
from sklearn.base import clone
from sklearn.model_selection import cross_val_score

from ccmod.errors import CcmodInputError
from ccmod.netsys.cost import PiecewiseLinearCost
from ccmod.netsys.fit import PiecewiseLinearFit
from ccmod.netsys.pingpong import ReadOptions, read_measurements

SIZES = np.array([0] + [2 ** k for k in range(23)], float)       # 0, 1 .. 4 MiB (OSU grid)


def two_lines(n):
    """Hand-written model: 1 us + n / 1 GB/s up to 4096 B, 5 us + n / 10 GB/s above.

    At the break 4097 B: 1e-6 + 4.097e-6 = 5.097 us < 5e-6 + 0.41 us = 5.41 us (monotone).
    """
    n = np.asarray(n, float)
    return np.where(n <= 4096, 1e-6 + n / 1e9, 5e-6 + n / 1e10)


# ----------------------------------------------------------------------------- estimator
def test_packet_size_split_recovers_the_two_lines():
    e = PiecewiseLinearFit(packet_size=4096).fit(SIZES, two_lines(SIZES))
    assert e.min_bytes_.tolist() == [0, 4097]          # n <= packet size in segment 0
    assert e.latency_s_ == pytest.approx([1e-6, 5e-6], rel=1e-9)
    assert e.bandwidth_Bps_ == pytest.approx([1e9, 1e10], rel=1e-9)
    assert e.max_rel_err_ < 1e-9 and e.r2_ == pytest.approx(1.0)
    assert not e.poor_fit_


def test_auto_breakpoints_find_the_split_at_a_measured_size():
    e = PiecewiseLinearFit().fit(SIZES, two_lines(SIZES))
    # the split falls between the measured 4096 and 8192: the new segment starts 1 byte
    # after the last size of the previous one; noiseless -> BIC keeps 2 segments
    assert e.min_bytes_.tolist() == [0, 4097]
    assert e.latency_s_ == pytest.approx([1e-6, 5e-6], rel=1e-9)
    assert e.bandwidth_Bps_ == pytest.approx([1e9, 1e10], rel=1e-9)
    assert e.n_segments_ == 2


def test_a_single_line_gets_one_segment_and_explicit_breakpoints_are_kept():
    y = 2e-6 + SIZES / 5e9
    e = PiecewiseLinearFit().fit(SIZES, y)
    assert e.n_segments_ == 1
    assert e.latency_s_[0] == pytest.approx(2e-6, rel=1e-9)
    e2 = PiecewiseLinearFit(breakpoints=[1024, 65536]).fit(SIZES, y)
    assert e2.min_bytes_.tolist() == [0, 1024, 65536]
    assert e2.predict(SIZES) == pytest.approx(y, rel=1e-9)


def test_repetitions_do_not_change_the_weight_of_a_size():
    y = two_lines(SIZES) * (1 + 0.03 * np.sin(SIZES))          # deterministic wiggle
    e1 = PiecewiseLinearFit(packet_size=4096).fit(SIZES, y)
    x2 = np.concatenate([SIZES, np.full(50, SIZES[5])])
    y2 = np.concatenate([y, np.full(50, y[5])])
    e2 = PiecewiseLinearFit(packet_size=4096).fit(x2, y2)
    assert e2.latency_s_ == pytest.approx(e1.latency_s_, rel=1e-9)
    assert e2.bandwidth_Bps_ == pytest.approx(e1.bandwidth_Bps_, rel=1e-9)
    assert e2.spread_["n"][5] == 51


def test_robust_ignores_an_outlier():
    y = two_lines(SIZES)
    y_bad = y.copy()
    y_bad[9] *= 5.0                                              # 256 B: 5x spike
    plain = PiecewiseLinearFit(packet_size=4096).fit(SIZES, y_bad)
    robust = PiecewiseLinearFit(packet_size=4096, robust=True).fit(SIZES, y_bad)
    ok = np.arange(SIZES.size) != 9
    err_r = np.abs(robust.predict(SIZES[ok]) / y[ok] - 1).max()
    err_p = np.abs(plain.predict(SIZES[ok]) / y[ok] - 1).max()
    assert err_r < 1e-3 < err_p


def test_sklearn_api():
    e = PiecewiseLinearFit(max_segments=3, robust=True)
    p = e.get_params()
    assert p["max_segments"] == 3 and p["robust"] is True
    e.set_params(max_segments=2)
    c = clone(e)
    assert c.get_params()["max_segments"] == 2 and not hasattr(c, "cost_")
    X = SIZES.reshape(-1, 1)
    scores = cross_val_score(PiecewiseLinearFit(packet_size=4096), X, two_lines(SIZES), cv=3)
    assert np.all(np.isfinite(scores))
    fitted = PiecewiseLinearFit().fit(X, two_lines(SIZES))
    assert fitted.score(X, two_lines(SIZES)) == pytest.approx(1.0)
    assert fitted.n_features_in_ == 1


def test_per_hop_latency_is_fitted_from_two_hop_counts():
    base = two_lines(SIZES)
    x = np.concatenate([SIZES, SIZES])
    y = np.concatenate([base, base + 2 * 1e-7])                 # 4 hops = 2 more than ref
    hops = np.r_[np.full(SIZES.size, 2), np.full(SIZES.size, 4)]
    e = PiecewiseLinearFit(packet_size=4096).fit(x, y, hops=hops)
    assert e.per_hop_latency_s_ == pytest.approx(1e-7, rel=1e-6)
    assert e.predict(SIZES) == pytest.approx(base, rel=1e-6)
    assert e.predict(SIZES, hops=4) == pytest.approx(base + 2e-7, rel=1e-6)
    with pytest.raises(CcmodInputError, match="two hop counts"):
        PiecewiseLinearFit().fit(SIZES, base, hops=np.r_[np.full(12, 2), np.full(12, 4)])


@pytest.mark.parametrize("x,y,match", [
    (np.full(5, 8.0), np.full(5, 1e-6), "only one message size"),
    (SIZES, -two_lines(SIZES), "finite and > 0"),
    (-SIZES - 1, two_lines(SIZES), ">= 0 bytes"),
    (SIZES, 1e-3 - SIZES * 1e-12, "do not grow"),
])
def test_bad_data_is_a_clear_error(x, y, match):
    with pytest.raises(CcmodInputError, match=match):
        PiecewiseLinearFit().fit(x, y)


def test_fewer_points_than_parameters():
    with pytest.raises(CcmodInputError, match="fewer points than parameters"):
        PiecewiseLinearFit(packet_size=2 ** 21).fit(SIZES, two_lines(SIZES))   # 1 size above


_NOISE = st.lists(st.floats(0.2, 5.0), min_size=12, max_size=12)


@settings(max_examples=examples(25), deadline=None)
@given(_NOISE, st.integers(1, 2), st.booleans())
def test_fit_is_monotone_and_valid_for_any_data(noise, kmax, robust):
    # up to two segments here (~0.02-0.05 s a fit); three and four (~0.1 s a fit) with the
    # slow tests below: the default run's time budget
    _check_monotone_and_valid(noise, kmax, robust)


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(_NOISE, st.integers(3, 4), st.booleans())
def test_fit_with_more_segments_is_monotone_and_valid_for_any_data(noise, kmax, robust):
    _check_monotone_and_valid(noise, kmax, robust)


def _check_monotone_and_valid(noise, kmax, robust):
    x = np.array([0, 1, 8, 64, 100, 512, 1000, 4096, 10_000, 65536, 100_000, 1 << 20], float)
    y = (1e-6 + x / 1e9) * np.asarray(noise)                   # arbitrary, non-monotone data
    try:
        e = PiecewiseLinearFit(max_segments=kmax, robust=robust).fit(x, y)
    except CcmodInputError as exc:                              # only "do not grow" is allowed
        assert "do not grow" in str(exc)
        return
    grid = np.unique(np.concatenate([np.linspace(0, 2e6, 4001), e.min_bytes_,
                                     e.min_bytes_[1:] - 1, e.min_bytes_[1:] - 1e-6]))
    t = e.predict(grid)
    assert np.all(np.diff(t) >= 0)
    assert np.all(e.latency_s_ >= 0) and np.all(np.isfinite(e.bandwidth_Bps_))
    assert np.all(e.bandwidth_Bps_ > 0)
    # the inverse is sup{n: T(n) <= t}: non-decreasing, T just below it is <= t, and
    # inverse(T(g)) >= g (to within 1 byte: near-flat segments have huge bandwidths)
    n = e.predict_inverse(t)
    assert np.all(np.diff(n) >= 0)
    assert np.all(e.predict(n * (1 - 1e-12)) <= t * (1 + 1e-9))
    assert np.all(n >= grid * (1 - 1e-9) - 1.0)


def test_inverse_and_bytes_moved():
    e = PiecewiseLinearFit(packet_size=4096).fit(SIZES, two_lines(SIZES))
    assert e.predict_inverse(two_lines(100_000.0)) == pytest.approx(100_000, rel=1e-9)
    assert e.predict_inverse(0.5e-6) == 0.0                     # below the latency
    n = 10_000.0
    tq = float(e.predict([n])[0])
    assert float(e.bytes_moved(n, tq, tq)) == pytest.approx(n)
    assert float(e.bytes_moved(n, tq, 5e-6)) == 0.0              # still in the latency part
    assert float(e.bytes_moved(n, tq, 5e-6 + 0.5 * n / 1e10)) == pytest.approx(n / 2)


def test_save_load_round_trip(tmp_path):
    e = PiecewiseLinearFit(robust=True).fit(SIZES, two_lines(SIZES) * (1 + 0.02 * np.cos(SIZES)))
    p = tmp_path / "m.json"
    e.save(p, source="fixture")
    d = json.loads(p.read_text())
    assert d["format"] == "ccmod-cost-model" and d["kind"] == "piecewise-linear"
    assert d["segments"][0]["min_bytes"] == 0 and d["fit"]["monotone"] is True
    grid = np.geomspace(1, 1e7, 300)
    back = PiecewiseLinearFit.load(p)
    assert np.array_equal(back.predict(grid), e.predict(grid))
    assert back.get_params() == e.get_params()
    assert back.median_rel_err_ == pytest.approx(e.median_rel_err_)
    cost = PiecewiseLinearCost.load(p)                          # what the engine uses
    assert np.array_equal(cost.quiet_s(grid), e.predict(grid))
    assert cost.extra["fit"]["n_segments"] == e.n_segments_


# ----------------------------------------------------------------------------- parsers
OSU_LAT = """# OSU MPI Latency Test v7.1
# Datatype: MPI_CHAR.
# Size       Latency (us)
{rows}
"""


def model_us(n):
    """Fixture values: 1 us + n / 1000 B/us (i.e. 1 GB/s), exact in decimal."""
    return 1.0 + n / 1000.0


def test_osu_latency_with_datatype_line(tmp_path):
    sizes = [0, 10, 1000, 2000, 4000]
    f = tmp_path / "lat.out"
    f.write_text(OSU_LAT.format(rows="\n".join(f"{n:<10d}{model_us(n):.2f}" for n in sizes)))
    m = read_measurements(f)
    assert m.format == "osu_latency" and m.kind == "latency"
    assert m.one_way_s == pytest.approx([model_us(n) * 1e-6 for n in sizes])
    e = PiecewiseLinearFit(breakpoints="none").fit(m.nbytes, m.one_way_s)
    assert e.latency_s_[0] == pytest.approx(1e-6) and e.bandwidth_Bps_[0] == pytest.approx(1e9)


@pytest.mark.parametrize("title,factor", [("Bandwidth", 1), ("Bi-Directional Bandwidth", 2)])
def test_osu_bandwidth_to_time(tmp_path, title, factor):
    f = tmp_path / "bw.out"
    f.write_text(f"# OSU MPI {title} Test v5.6.3\n# Size      Bandwidth (MB/s)\n"
                 "1                       8.00\n1000000              4000.00\n")
    m = read_measurements(f)
    # t = factor * n / (MB/s * 1e6): 1 B at 8 MB/s = 0.125 us; 1 MB at 4000 MB/s = 250 us
    assert m.one_way_s == pytest.approx([factor * 0.125e-6, factor * 250e-6])
    assert m.kind == "throughput"


IMB = """#------------------------------------------------------------
#    Intel(R) MPI Benchmarks 2019 Update 6, MPI-1 part
#------------------------------------------------------------
# List of Benchmarks to run:

# PingPong
# PingPing

#---------------------------------------------------
# Benchmarking PingPong 
# #processes = 2 
#---------------------------------------------------
       #bytes #repetitions      t[usec]   Mbytes/sec
            0         1000         1.00         0.00
         1000         1000         2.00       500.00
         2000         1000         3.00       666.67

#---------------------------------------------------
# Benchmarking PingPing 
# #processes = 2 
#---------------------------------------------------
       #bytes #repetitions      t[usec]   Mbytes/sec
            0         1000         9.00         0.00
         1000         1000         9.50       105.26


# All processes entering MPI_Finalize
"""


def test_imb_pingpong_is_chosen_and_said(tmp_path):
    f = tmp_path / "IMB-MPI1.out"
    f.write_text(IMB)
    m = read_measurements(f)
    assert m.format == "imb PingPong"
    assert m.one_way_s == pytest.approx([1e-6, 2e-6, 3e-6])
    assert any("#processes = 2" in n for n in m.notes)
    m2 = read_measurements(f, options=ReadOptions(benchmark="PingPing"))
    assert m2.one_way_s == pytest.approx([9e-6, 9.5e-6])


def test_imb_uniband_takes_the_largest_table(tmp_path):
    def table(p, rate):
        return (f"# Benchmarking Uniband \n# #processes = {p} \n#---\n"
                "       #bytes #repetitions   Mbytes/sec      Msg/sec\n"
                f"            0         1000         0.00      {rate}\n"
                f"         1000         1000       {rate / 1000:.2f}      {rate}\n\n")
    f = tmp_path / "uni.out"
    f.write_text("# Intel(R) MPI Benchmarks 2019\n" + table(2, 1000000) + table(4, 500000))
    m = read_measurements(f)
    assert "#processes = 4" in m.notes[0]
    assert m.one_way_s == pytest.approx([2e-6, 2e-6])           # 1 / 500000 msg/s
    m2 = read_measurements(f, options=ReadOptions(processes=2))
    assert m2.one_way_s == pytest.approx([1e-6, 1e-6])


def test_csv_named_columns_units_round_trip(tmp_path):
    f = tmp_path / "pingpong.csv"
    f.write_text("bytes,usec,comment\n0,2.0,a\n1000,4.0,b\n1000,4.4,c\n2000,6.0,d\n")
    opts = ReadOptions(size_col="bytes", time_col="usec", time_unit="us", round_trip=True)
    m = read_measurements(f, options=opts)
    assert m.one_way_s == pytest.approx([1e-6, 2e-6, 2.2e-6, 3e-6]) and m.raw
    f2 = tmp_path / "t.tsv"
    f2.write_text("size\tlatency_ns\n8\t1500\n16\t1600\n")
    assert read_measurements(f2).one_way_s == pytest.approx([1.5e-6, 1.6e-6])   # unit from name


def test_simgrid_calibration_pairs_and_gzip(tmp_path):
    f = tmp_path / "x_PingPong.csv.gz"
    f.write_bytes(gzip.compress(b"MPI_Send,10,1.0,1e-06\nMPI_Recv,10,1.0,3e-06\n"
                                b"MPI_Send,20,2.0,2e-06\nMPI_Recv,20,2.0,4e-06\n"))
    m = read_measurements(f)
    assert m.format == "simgrid-calib" and m.raw
    assert m.one_way_s == pytest.approx([2e-6, 3e-6])          # (send + recv) / 2
    bad = tmp_path / "bad_PingPong.csv"
    bad.write_text("MPI_Send,10,1.0,1e-06\nMPI_Send,10,1.0,1e-06\n")
    with pytest.raises(CcmodInputError, match=r"bad_PingPong.csv:1: MPI_Send not followed"):
        read_measurements(bad)


def test_raw_latency_and_nxn(tmp_path):
    f = tmp_path / "latency.txt"
    f.write_text("task 0 has started...\nRep#       T1               T2            deltaT\n"
                 "task 1 has started...\n   1  10.0  10.0004  0.00040000\n"
                 "   2  11.0  11.0002  0.00020000\n\n*** Avg round trip time = 300 microseconds\n")
    m = read_measurements(f)
    assert m.nbytes.tolist() == [1, 1] and m.one_way_s == pytest.approx([2e-4, 1e-4])
    g = tmp_path / "nxn.out"
    g.write_text("0,1,2.00,1000.0\nsrc,dst,lat(us),bandwidth((Mbytes/sec)\n1,0,4.00,500.0\n")
    m = read_measurements(g)
    assert m.format == "nxn" and len(m.pairs) == 2
    assert m.one_way_s[:2] == pytest.approx([2e-6, 2e-6 + 4194304 / 1e9])


@pytest.mark.parametrize("text,match", [
    ("", "empty file"),
    ("hello world\nthis is not a benchmark\n", "no recognisable ping-pong table"),
    ("# OSU MPI Latency Test v5.8\n# Size  Latency (us)\n0  1.0\n1  abc\n",
     r"x.out:4: non-numeric value 'abc'"),
    ("# OSU MPI Latency Test v5.8\n# Size  Latency (us)\n8  1.0\n4  1.1\n",
     r"x.out:4: message sizes must increase"),
    ("# OSU MPI Latency Test v5.8\n# Size  Latency (us)\n-8  1.0\n",
     r"x.out:3: message size must be >= 0"),
    ("# OSU MPI Latency Test v5.8\n# Size  Latency (us)\n8  0\n", r"x.out:3: time must be"),
    ("# OSU MPI Allreduce Latency Test v5.6.3\n# Size       Avg Latency(us)\n4  3.0\n",
     "not a point-to-point ping-pong"),
    ("bytes,usec\n8,1.0\nx,2.0\n", r"x.out:3: non-numeric message size 'x'"),
    ("bytes,duration\n8,1.0\n", "give --time-unit"),
])
def test_bad_input_files(tmp_path, text, match):
    f = tmp_path / "x.out"
    f.write_text(text)
    with pytest.raises(CcmodInputError, match=match):
        read_measurements(f)


def test_binary_and_missing_files(tmp_path):
    f = tmp_path / "b.bin"
    f.write_bytes(b"\x00\x01\x02" * 100)
    with pytest.raises(CcmodInputError, match="binary file"):
        read_measurements(f)
    with pytest.raises(CcmodInputError, match="cannot read file"):
        read_measurements(tmp_path / "missing.out")
