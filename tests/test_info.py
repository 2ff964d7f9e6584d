"""``workloads.info`` (info, convert) and the ``ccmod info/convert/formats`` commands."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from ccmod.cli import main
from ccmod.errors import CcmodInputError
from ccmod.workloads import list_formats, read_workload
from ccmod.workloads.info import convert, info, output_format

SIZES = (1, 1024, 65536, 1048576, 4194304)


def test_info_of_pingpong_is_hand_derivable(traces_dir):
    d = info(read_workload(traces_dir / "pingpong.ti"))
    # 5 sizes x 2 round trips x (ping + pong)
    assert d["nranks"] == 2 and d["messages"] == 20
    assert d["total_bytes"] == 4 * sum(SIZES)
    assert d["records_by_op"] == {"send": 20, "recv": 20}
    # every size is a power of two: its bin starts at the size, 4 messages each
    assert [(b["lo"], b["messages"], b["bytes"]) for b in d["size_histogram"]] == \
        [(s, 4, 4 * s) for s in SIZES]
    assert [(p["src"], p["dst"]) for p in d["top_pairs"]] == [(0, 1), (1, 0)]
    assert d["top_pairs"][0]["bytes"] == 2 * sum(SIZES)
    assert d["compute_s"] == 0.0


def test_info_compute_and_zero_byte_bin(traces_dir, tmp_path):
    d = info(read_workload(traces_dir / "ring16.ti"))
    assert d["duration_estimate_s"] == pytest.approx(4 * 1e7 / 1e9)    # 4 x 1e7 flops
    assert d["compute_s"] == pytest.approx(16 * 4 * 1e7 / 1e9)
    assert d["messages"] == 16 * 4 and d["total_bytes"] == 16 * 4 * 65536
    p = tmp_path / "z.ti"
    p.write_text("0 send 1 0 0\n1 recv 0 0 0\n0 send 1 0 3\n1 recv 0 0 3\n")
    h = info(read_workload(p))["size_histogram"]
    assert h == [{"lo": 0, "hi": 0, "messages": 1, "bytes": 0},
                 {"lo": 2, "hi": 3, "messages": 1, "bytes": 3}]


@pytest.mark.parametrize("name", ["pingpong.ti", "ring16.ti", "stencil16.ti", "alltoall8.ti",
                                  "simgrid-actions_with_isend.txt"])
def test_convert_round_trips(traces_dir, tmp_path, name):
    src = traces_dir / name
    w = read_workload(src)
    for out in ("a.parquet", "a.csv", "a.ti", "perrank"):
        res = convert(src, tmp_path / out)
        assert res["records"] == w.nrecords
        back = read_workload(tmp_path / out)
        for k in ("rank_ptr", "op", "peer", "nbytes"):
            np.testing.assert_array_equal(getattr(back, k), getattr(w, k), err_msg=f"{out} {k}")
        np.testing.assert_allclose(back.duration_s, w.duration_s, rtol=1e-12)
    assert (tmp_path / "perrank" / "smpi_replay.txt").read_text().count("\n") == w.nranks
    assert read_workload(tmp_path / "perrank" / "smpi_replay.txt").nranks == w.nranks


def test_output_format_guess_and_errors(tmp_path):
    assert output_format("x.parquet") == "parquet" and output_format("x.CSV") == "csv"
    assert output_format("x.txt") == "ti" and output_format(tmp_path) == "ti"
    with pytest.raises(CcmodInputError, match="cannot guess the output format"):
        output_format("x.json")
    with pytest.raises(CcmodInputError, match="cannot write format 'otf2'"):
        output_format("x.ti", "otf2")
    p = tmp_path / "same.ti"
    p.write_text("0 compute 1\n")
    with pytest.raises(CcmodInputError, match="overwrite the input"):
        convert(p, p)


def test_list_formats_has_the_writable_ones():
    df = list_formats()
    assert {"ti", "parquet", "csv"} <= set(df.format)
    assert set(df[df.writable].format) == {"ti", "parquet", "csv"}


# ------------------------------------------------------------------ CLI
def _cli(args, capsys):
    try:
        main(args)
        code = 0
    except SystemExit as exc:
        code = exc.code or 0
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_info_json_formats_convert(traces_dir, tmp_path, capsys):
    code, out, err = _cli(["info", str(traces_dir / "stencil16.ti"), "--json"], capsys)
    assert code == 0
    d = json.loads(out)
    assert d["nranks"] == 16 and d["action_counts"]["isend"] == 2 * 24 * 3
    # 4x4 grid without wrap-around: 24 neighbour pairs, both directions, 3 iterations
    code, out, _ = _cli(["info", str(traces_dir / "alltoall8.ti")], capsys)
    assert code == 0 and "records by op" in out and "top communicating pairs" in out
    code, out, _ = _cli(["formats", "--json"], capsys)
    assert {f["format"] for f in json.loads(out)["formats"]} >= {"ti", "parquet", "csv"}
    code, out, _ = _cli(["convert", str(traces_dir / "ring16.ti"), str(tmp_path / "r.pq"),
                         "--json"], capsys)
    assert code == 0 and json.loads(out)["to"] == "parquet"


@pytest.mark.parametrize("args,what", [
    (["info", "nope.ti"], "no such file"),
    (["info", "BAD", "--format", "nope"], "unknown trace format 'nope'"),
    (["info", "BAD"], "BAD:2: unknown action 'sned'"),
    (["convert", "BAD", "out.json"], "cannot guess the output format"),
    (["info", "BAD", "--collective", "allreduce=nope"], "unknown allreduce algorithm"),
])
def test_cli_errors_are_one_line_exit_2(tmp_path, capsys, args, what):
    bad = tmp_path / "bad.ti"
    bad.write_text("0 compute 1\n0 sned 1 0 4\n")
    args = [str(bad) if a == "BAD" else a for a in args]
    code, out, err = _cli(args, capsys)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("ccmod: error: ")
    assert what.replace("BAD", str(bad)) in err and "Traceback" not in err


def test_cli_subprocess_error_has_no_traceback(tmp_path):
    bad = tmp_path / "bad.ti"
    bad.write_text("0 isend 1 0 8\n0 wait 0 1 5\n1 irecv 0 0 8\n")
    r = subprocess.run([sys.executable, "-m", "ccmod", "info", str(bad)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert f"{bad}:2: unmatched wait" in r.stderr


# the folder by default; its replay list and description file (~0.5 s each here) and the
# full 2014 trace with the slow tests, which CI runs
@pytest.mark.parametrize("rel", ["ti_traces_32_1",
                                 *(pytest.param(r, marks=pytest.mark.slow) for r in (
                                     "ti_traces_32_1/smpi_replay.txt",
                                     "ti_traces_32_1/description_file",
                                     "ti_traces_32_1_full_2014"))])
def test_cli_info_on_real_32_rank_traces(real_dir, capsys, rel):
    path = real_dir / "simgrid" / rel
    code, out, err = _cli(["info", str(path), "--json"], capsys)
    assert code == 0, err
    d = json.loads(out)
    w = read_workload(path)
    assert d["nranks"] == w.nranks == (64 if rel.endswith("description_file") else 32)
    assert d["messages"] == int(np.isin(w.op, (1, 3)).sum())
    assert d["total_bytes"] == int(w.nbytes[np.isin(w.op, (1, 3))].sum())
