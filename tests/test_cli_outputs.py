"""CLI of the outputs (issue 13): --out with --report, the report path, run.json's trace
path, --version, help text without type noise. In-process (typer), on real runs."""
from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from outputs_runs import TINY, TINY_NET


def _cli(args, capsys) -> tuple[int, str, str]:
    from ccmod.cli import main
    code = 0
    try:
        main([str(a) for a in args])
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_out_and_report_together_write_both(tmp_path, capsys):
    """``run --out --report`` writes both; ``ccmod report DIR`` on the tables then loads the
    RunResult the run reported from memory: the two builds give the same file but for the
    engine's wall time, so the same inputs give the same report (nothing random or
    time-dependent in the HTML). Two Bokeh builds (~1 s each) prove both."""
    out, rep = tmp_path / "tables", tmp_path / "rep"
    code, stdout, _ = _cli(["run", TINY, "-n", TINY_NET, "--out", out, "--report", rep],
                           capsys)
    assert code == 0
    assert len(pd.read_parquet(out / "messages.parquet")) == 4
    assert len(pd.read_parquet(rep / "messages.parquet")) == 4
    assert (rep / "report.html").exists() and not (out / "report.html").exists()
    assert f"report written to {rep / 'report.html'}" in stdout
    assert f"tables written to {out}/" in stdout
    # run.json names the trace the run read (not "<workload>")
    assert json.loads((out / "run.json").read_text())["options"]["trace"] == str(TINY)
    code, stdout, _ = _cli(["report", out, "-o", tmp_path / "cli.html", "--json"], capsys)
    assert code == 0
    assert json.loads(stdout)["report"].endswith("cli.html")
    strip = lambda h: re.sub(r"Engine wall time</td><td>[^<]*", "", h)  # noqa: E731
    a = (rep / "report.html").read_text()
    assert "Engine wall time</td><td>" in a
    assert strip(a) == strip((tmp_path / "cli.html").read_text())


def test_report_path_in_json(tmp_path, capsys, monkeypatch):
    # the path make_report returns, i.e. the file it wrote; the HTML itself (a Bokeh build,
    # ~1 s) is the test above's and tests/test_outputs_report.py's
    from ccmod.outputs import report
    monkeypatch.setattr(report, "build_report",
                        lambda r, out_html, **kw: (out_html.write_text("stub"), out_html)[1])
    code, stdout, _ = _cli(["run", TINY, "-n", TINY_NET, "--report", tmp_path, "--json"],
                           capsys)
    assert code == 0
    assert json.loads(stdout)["report"] == str(tmp_path / "report.html")
    assert (tmp_path / "report.html").read_text() == "stub"


def test_version_and_help(capsys):
    import ccmod
    code, stdout, _ = _cli(["--version"], capsys)
    assert code == 0 and stdout.strip() == f"ccmod {ccmod.__version__}"
    for cmd in (["run", "--help"], ["report", "--help"]):
        code, stdout, _ = _cli(cmd, capsys)
        assert code == 0 and "--json" in stdout
        assert "<bool>" not in stdout


@pytest.mark.slow
def test_report_static_figures(tmp_path, capsys):
    _cli(["run", TINY, "-n", TINY_NET, "--out", tmp_path], capsys)
    code, stdout, _ = _cli(["report", tmp_path, "--static", tmp_path / "figs", "--json"],
                           capsys)
    assert code == 0
    figs = json.loads(stdout)["figures"]
    assert {"space_time.png", "space_time.svg", "comm_matrix.svg"} <= \
        {p.rsplit("/", 1)[-1] for p in figs}
