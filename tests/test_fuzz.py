"""Property/fuzz suite of the command line (issue 14: hardening).

Every reader, option family and generator gets mutated real samples (``tests/fuzzkit.py``)
and must answer with exit 0, or exit 2 and exactly one stderr line that names what the user
gave: no internal error, no control characters, nothing from a file the user did not name,
no temp file left behind. The default suite runs a few derandomised examples per family
in-process; ``bench/fuzz_campaign.py`` runs the long campaign. Declared sizes and
decompression are checked under a memory cap (``RLIMIT_AS``) in a subprocess.
"""
from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
import textwrap

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import fuzzkit
from fuzzkit import DATA, DUMPI_ASCII, ROOT, SECRET_MARK, TRACES, run_cli, verdict

FAMILIES = fuzzkit.families()
OPS = st.lists(st.tuples(st.integers(0, 63), st.integers(0, 10 ** 6),
                         st.integers(0, 10 ** 6)), min_size=1, max_size=3)


@pytest.mark.parametrize("family", sorted(FAMILIES))
@settings(max_examples=2, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(ops=OPS)
def test_mutated_inputs_fail_in_one_honest_line(family, ops, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fuzz")
    v, argv, err = fuzzkit.fuzz_one(FAMILIES[family], ops, tmp, timeout_s=120)
    assert v in ("ok", "clean"), (v, [str(a) for a in argv], ops)


def one_error(argv, *needles, env=None):
    code, out, err = run_cli(argv, timeout_s=120, env=env)
    assert verdict(code, out, err, [n for n in needles[:1]]) == "clean", (code, err)
    for n in needles:
        assert str(n) in err, err
    return err


# -- the defects the issue lists, one by one ------------------------------------------------
@pytest.mark.parametrize("value", ["9223372036854775808", "99999999999999999999999"])
def test_huge_counts_in_dumpi_ascii_are_file_line_errors(tmp_path, value):
    d = tmp_path / "dumpi"
    fuzzkit._copy(DUMPI_ASCII, d)
    f = d / "testtrace-0000.txt"
    f.write_text(f.read_text().replace("count=1", f"count={value}", 1))
    err = one_error(["info", d], f, "out of range")
    assert f"{f}:" in err  # file:line


@pytest.mark.parametrize("value", ["1e400", "18446744073709551616"])
def test_huge_values_in_liballprof_and_pipit(tmp_path, value):
    d = tmp_path / "lap"
    fuzzkit._copy(DATA / "liballprof", d)
    f = d / "mini-rank-0.dat"
    f.write_text(f.read_text().replace(":256:", f":{value}:", 1))
    code, out, err = run_cli(["info", d])
    assert verdict(code, out, err, [d]) in ("ok", "clean"), err
    csv = tmp_path / "p.csv"
    text = (DATA / "pipit-ping-pong.csv").read_text()
    csv.write_text(re.sub(r"'msg_length': \d+", f"'msg_length': {value}", text, count=1))
    code, out, err = run_cli(["info", csv])
    assert verdict(code, out, err, [csv]) in ("ok", "clean"), err


@pytest.mark.parametrize("key,value", [("ccmod.meta", "5"), ("ccmod.files", "null"),
                                       ("ccmod.files", '{"a": 1}'), ("ccmod.meta", "[1]"),
                                       ("ccmod.nranks", "[]"), ("ccmod.nranks", "100000000")])
def test_parquet_metadata_of_the_wrong_type_or_size(tmp_path, key, value):
    import pyarrow.parquet as pq
    f = tmp_path / "w.parquet"
    assert run_cli(["convert", TRACES / "pingpong.ti", f])[0] == 0
    t = pq.read_table(f)
    md = dict(t.schema.metadata)
    md[key.encode()] = value.encode()
    pq.write_table(t.replace_schema_metadata(md), f)
    one_error(["info", f], f)


def test_errors_on_parquet_name_the_file_given_not_the_original(tmp_path):
    import pyarrow.parquet as pq
    f = tmp_path / "copy.parquet"
    assert run_cli(["convert", TRACES / "pingpong.ti", f])[0] == 0
    t = pq.read_table(f)
    keep = t.column("op").to_pylist()
    rows = [i for i, op in enumerate(keep) if op in ("recv", 2)]
    t = t.take([i for i in range(t.num_rows) if i != rows[0]])  # an unmatched send
    pq.write_table(t, f)
    code, out, err = run_cli(["run", f])
    assert code == 2 and str(f) in err, err


def test_description_file_cannot_leave_its_folder(tmp_path):
    d = fuzzkit._copy(DATA / "ti-desc", tmp_path / "in")
    secret = fuzzkit._secret(tmp_path)
    for entry in (str(secret), "../outside/secret.txt"):
        (d / "desc.txt").write_text(f"rank0.ti\n{entry}\n")
        err = one_error(["info", d / "desc.txt"], d / "desc.txt", "outside")
        assert SECRET_MARK not in err and "--allow-outside-paths" in err
    # the option lets it through: the file is then read (and fails as a TI trace)
    code, out, err = run_cli(["info", d / "desc.txt", "--allow-outside-paths"])
    assert code == 2 and "secret.txt" in err and "outside the desc" not in err, err


@pytest.mark.parametrize("opt", ["--map", "--network"])
def test_named_non_input_files_are_not_quoted(tmp_path, opt):
    secret = fuzzkit._secret(tmp_path)
    for target in (secret, "/proc/self/environ"):
        val = target if opt == "--map" else f"topology:file={target}"
        err = one_error(["run", TRACES / "alltoall8.ti", opt, val], str(target))
        assert SECRET_MARK not in err and "PATH=" not in err, err


def test_control_characters_are_never_echoed(tmp_path):
    f = tmp_path / "t.ti"
    f.write_text("0 init\n0 \x1b[31mred\x1b]0;title\x07 1 2\n")
    err = one_error(["info", f], f)
    assert "\x1b" not in err and "\\x1b" in err


def test_long_quotes_are_cut(tmp_path):
    f = tmp_path / "t.ti"
    f.write_text("0 init\n0 " + "x" * 5000 + " 1\n")
    err = one_error(["info", f], f)
    assert len(err) < 1000


def test_wrapped_python_texts_are_replaced(tmp_path):
    f = tmp_path / "w.csv"
    assert run_cli(["convert", TRACES / "pingpong.ti", f])[0] == 0
    data = f.read_bytes().replace(b",send,", b",s\xffnd,", 1)
    f.write_bytes(data)
    err = one_error(["info", f], f, "UTF-8")
    assert "position" not in err and "codec" not in err
    d = tmp_path / "d"
    fuzzkit._copy(DUMPI_ASCII, d)
    (d / "testtrace-0001.txt").write_bytes(b"\xff\xfe" + (d / "testtrace-0001.txt").read_bytes())
    err = one_error(["info", d], d, "UTF-8")
    assert "position" not in err


def test_cost_file_errors_blame_the_cost_file(tmp_path):
    c = tmp_path / "cost.json"
    c.write_text(json.dumps({"format": "ccmod-cost-model", "segments": [
        {"min_bytes": 0, "latency_s": 1e-6, "bandwidth_Bps": "1" * 5000}]}))
    one_error(["run", TRACES / "pingpong.ti", "--cost", c], c)
    c.write_text('{"format": "ccmod-cost-model", "ref_hops": ' + "1" * 5000 + "}")
    err = one_error(["run", TRACES / "pingpong.ti", "--cost", c], c)
    assert "set_int_max_str_digits" not in err


def test_fit_errors_name_the_file(tmp_path, monkeypatch):
    from ccmod.errors import CcmodInputError
    from ccmod.netsys import fit_report
    f = tmp_path / "osu.txt"
    f.write_text((DATA / "osu_latency.txt").read_text())

    def whole_data_fails(*a, **k):  # e.g. "the measured times do not grow with the size"
        raise CcmodInputError("the measured times do not grow with the message size")

    monkeypatch.setattr(fit_report, "fit_files", whole_data_fails)
    one_error(["fit", f], f, "do not grow")


@pytest.mark.parametrize("spec", ["mesh:dims=256x4096", "star:nodes=1048576",
                                  "torus:dims=1024x1024", "fattree2:leaves=100000"])
def test_networks_far_larger_than_the_run_are_refused_up_front(spec):
    one_error(["run", TRACES / "alltoall8.ti", "--network", spec], "--network", "unused")


def test_map_file_with_a_huge_node_number(tmp_path):
    m = tmp_path / "map.txt"
    m.write_text("0\n1\n100000000\n1\n")
    one_error(["run", DUMPI_ASCII, "--map", m], m, "far beyond")


@pytest.mark.parametrize("spec", ["halo2d:px=1000,py=1000,iterations=1000",
                                  "alltoall:nranks=100000", "snakes:hops=100000000"])
def test_generators_refuse_huge_work_with_the_estimate(tmp_path, spec):
    one_error(["generate", spec, "-o", tmp_path / "g.ti"], "generator", "records (limit")
    assert not (tmp_path / "g.ti").exists()


def test_temp_names_are_fixed_so_reruns_replace_them(tmp_path):
    from ccmod.atomic import atomic_path, temp_path
    target = tmp_path / "out.txt"
    stale = tmp_path / ".out.txt.ccmod-tmp"
    stale.write_text("left by a killed run")
    with atomic_path(target) as tmp:
        assert tmp == stale
        tmp.write_text("new")
    assert target.read_text() == "new" and not stale.exists()
    assert temp_path(target).name == ".out.txt.ccmod-tmp"


def test_disk_full_names_the_path(tmp_path):
    import errno

    from ccmod.errors import CcmodInputError
    from ccmod.atomic import atomic_path
    target = tmp_path / "table.parquet"
    with pytest.raises(CcmodInputError) as ei:
        with atomic_path(target):
            raise OSError(errno.ENOSPC, "No space left on device")
    assert str(target) in str(ei.value) and "space" in str(ei.value)


# -- declared sizes and decompression under a memory cap ---------------------------------
_CAPPED = textwrap.dedent("""
    import resource, sys
    sys.path.insert(0, {root!r})
    resource.setrlimit(resource.RLIMIT_AS, ({cap} << 20, {cap} << 20))
    import io, contextlib
    from ccmod.cli import main
    for argv in {cases!r}:
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                main(argv)
                code = 0
            except SystemExit as e:
                code = e.code
        print(code, err.getvalue().strip().replace(chr(10), " | "))
""")


def test_declared_sizes_and_decompression_refused_in_process(tmp_path):
    bomb = tmp_path / "bomb.ti.gz"
    bomb.write_bytes(gzip.compress(b"0 compute 1e6\n" * 75000, compresslevel=9) * 70)
    one_error(["info", bomb], bomb, "gzip bomb")
    prv = tmp_path / "tasks.prv"
    prv.write_text("#Paraver (26/01/04 at 16:35):260199:1:1:1000000000(1:1)\n")
    one_error(["info", prv], prv, "declares 1,000,000,000 ranks")


@pytest.mark.slow
def test_declared_sizes_and_decompression_bounded_under_a_memory_cap(tmp_path):
    # a gzip bomb: 1 MB of TI text compresses to ~2 KB; 150 members expand to 158 MB
    member = gzip.compress(b"0 compute 1e6\n" * 75000, compresslevel=9)
    bomb = tmp_path / "bomb.ti.gz"
    bomb.write_bytes(member * 150)
    prv = tmp_path / "tasks.prv"
    prv.write_text("#Paraver (26/01/04 at 16:35):260199:1:1:1000000000(1:1)\n"
                   "1:1:1:1:1:0:5374:2\n")
    pq_file = tmp_path / "ranks.parquet"
    assert run_cli(["convert", TRACES / "pingpong.ti", pq_file])[0] == 0
    import pyarrow.parquet as pq
    t = pq.read_table(pq_file)
    md = dict(t.schema.metadata)
    md[b"ccmod.nranks"] = b"100000000"
    pq.write_table(t.replace_schema_metadata(md), pq_file)
    cases = [["info", str(bomb)], ["info", str(prv)], ["info", str(pq_file)]]
    script = _CAPPED.format(root=str(ROOT), cap=700, cases=cases)
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=300)
    lines = res.stdout.splitlines()
    assert res.returncode == 0 and len(lines) == 3, res.stderr[-2000:]
    for (code, msg), f, needle in zip((ln.split(" ", 1) for ln in lines),
                                      (bomb, prv, pq_file), ("gzip bomb", "declares", "declares")):
        assert code == "2" and str(f) in msg and needle in msg and "|" not in msg, msg


def test_disk_full_in_a_streaming_writer_names_the_output(tmp_path, monkeypatch):
    import errno

    from ccmod.atomic import discard, temp_path
    target = tmp_path / "debug.txt"
    tmp = temp_path(target)    # a streaming writer's temp file is open ...
    try:
        def full(*a, **k):     # ... when the disk fills (an OSError without a file name)
            raise OSError(errno.ENOSPC, "No space left on device")
        from ccmod import api
        monkeypatch.setattr(api, "run", full)
        code, out, err = run_cli(["run", TRACES / "pingpong.ti"])
        assert code == 2 and str(target) in err and "No space" in err, err
    finally:
        discard(tmp)
