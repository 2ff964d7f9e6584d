"""The HTML report: self-contained, escaped, figures present; knee runs; CLI (issue 5)."""
from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from ccmod.errors import CcmodInputError
from ccmod.outputs.knee import knee_dirname
from ccmod.outputs.report import build_report
from ccmod.outputs.sinks import make_sinks
from ccmod.outputs.synthetic import synthetic_run, tiny_run

EVIL = "<script>alert('x')</script>"


@pytest.fixture(scope="module")
def evil_report(tmp_path_factory):
    """Tiny run whose link names carry markup; report built once for several tests."""
    d = tmp_path_factory.mktemp("evil")
    run = tiny_run(link_names=[EVIL, "l1", "l2"])
    run.result.options["trace"] = EVIL  # a trace-supplied string in run.json
    run.result.network["name"] = EVIL
    run.feed(make_sinks("parquet", d))
    out = build_report(d, d / "report.html")
    return out, out.read_text(encoding="utf-8")


def test_report_is_self_contained(evil_report):
    _, html = evil_report
    assert html.startswith("<!DOCTYPE html>")
    refs = re.findall(r'(?:src|href)\s*=\s*["\']([^"\']*)', html, flags=re.I)
    assert refs, "figures must be referenced"
    assert not [r for r in refs if re.match(r"\s*(https?:)?//", r, flags=re.I)]
    assert not re.search(r"<link\b|<script\b|@import|url\(\s*['\"]?https?:", html, flags=re.I)
    # every figure is embedded, the space-time diagram also as inline SVG
    imgs = re.findall(r'<img [^>]*src="data:image/png;base64,', html)
    assert len(imgs) >= 6
    assert html.count("<svg") >= 1


def test_trace_names_are_escaped(evil_report):
    _, html = evil_report
    assert EVIL not in html
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in html
    assert "<script" not in html.lower()


def test_report_sections(evil_report):
    _, html = evil_report
    for anchor in ("summary", "spacetime", "links", "knee", "ranks", "matrix", "slowdown"):
        assert f'id="{anchor}"' in html
    assert "Busiest links" in html and "packets/s" in html
    # makespan 8 µs, 4 messages, 3 ranks (tiny_run)
    assert "8 µs" in html and "<td>Messages</td><td>4</td>" in html


def test_report_is_reproducible(evil_report, tmp_path):
    path, html = evil_report
    again = build_report(path.parent, tmp_path / "again.html").read_text(encoding="utf-8")
    assert again == html


@pytest.mark.slow
def test_large_run_is_sampled_and_says_so(tmp_path):
    run = synthetic_run(40, 30, seed=4)          # 1200 messages, 40 ranks
    run.feed(make_sinks("parquet", tmp_path))
    html = build_report(tmp_path, tmp_path / "r.html", max_lines=100).read_text()
    assert "100 of 1,200 messages drawn" in html
    assert "Close-up on" in html


@pytest.mark.slow
def test_knee_with_background_runs(tmp_path):
    base = tmp_path / "run"
    synthetic_run(6, 8, seed=2).feed(make_sinks("parquet", base))
    bg = base / knee_dirname(0.3)
    synthetic_run(6, 8, seed=2, background=0.3).feed(make_sinks("parquet", bg))
    html = build_report(base, base / "r.html", background_levels=[0, 0.3]).read_text()
    knee = html.split('id="knee"', 1)[1].split("<h2", 1)[0]
    assert "<td>0%</td>" in knee and "<td>30%</td>" in knee
    # explicit directories and in-memory RunResults work as well
    other = tmp_path / "elsewhere"
    shutil.copytree(bg, other)
    shutil.rmtree(bg)
    html2 = build_report(base, base / "r2.html", background_levels=[0.3],
                         knee_runs={0.3: other}).read_text()
    assert "<td>30%</td>" in html2
    syn = synthetic_run(6, 8, seed=2, background=0.3)
    html3 = build_report(base, base / "r3.html", background_levels={0.0: base, 0.3: syn.result},
                         network=syn.ctx.network).read_text()
    assert "<td>30%</td>" in html3
    # without the network (this synthetic one cannot be rebuilt by name) the level is listed
    html4 = build_report(base, base / "r4.html",
                         background_levels={0.0: base, 0.3: syn.result}).read_text()
    assert "No link utilisation for background 30%" in html4
    with pytest.raises(CcmodInputError, match="no run for background level 0.5"):
        build_report(base, base / "r5.html", background_levels=[0.5])


def test_not_a_run_dir(tmp_path):
    with pytest.raises(CcmodInputError, match="not a ccmod run directory"):
        build_report(tmp_path, tmp_path / "x.html")
    with pytest.raises(CcmodInputError, match="not found"):
        build_report(tmp_path / "nope", tmp_path / "x.html")


def test_report_without_states_or_load(tmp_path):
    """A run recorded without states/link load still gives a report that says so."""
    run = tiny_run()
    run.result.rank_states = run.result.link_load = None   # recording was off
    sinks = make_sinks("parquet", tmp_path)
    for s in sinks:
        s.open(run.ctx)
        s.on_messages(run.messages)
        s.close(run.result)
    html = build_report(tmp_path, tmp_path / "r.html").read_text()
    assert "No rank states were recorded" in html
    assert "No link load recorded" in html


# ----------------------------------------------------------------------------- CLI
def _cli(args) -> int:
    from ccmod.cli import main
    try:
        main(args)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def test_cli_report_and_sinks(tmp_path, capsys):
    run = tiny_run()
    run.feed(make_sinks("parquet", tmp_path))
    assert _cli(["report", str(tmp_path), "-o", str(tmp_path / "cli.html"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["report"].endswith("cli.html") and (tmp_path / "cli.html").exists()
    assert _cli(["sinks", "--json"]) == 0
    names = {r["name"] for r in json.loads(capsys.readouterr().out)}
    assert {"debug", "parquet", "perfetto", "paraver"} <= names
    assert _cli(["report", str(tmp_path), "--background-levels", "0,1.5"]) == 2
    err = capsys.readouterr().err
    assert "background level 1.5" in err and len(err.strip().splitlines()) == 1
    assert _cli(["report", str(tmp_path / "missing")]) == 2
    assert "run directory not found" in capsys.readouterr().err


# ----------------------------------------------------------------------------- Chromium
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
def test_report_renders_in_headless_chromium(evil_report, tmp_path):
    path, _ = evil_report
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
           "--no-first-run", "--disable-background-networking", "--disable-component-update",
           "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
           path.resolve().as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    dom = proc.stdout
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert len(re.findall(r"<img [^>]*src=\"data:image/png;base64,", dom)) >= 6
    assert "<svg" in dom
    assert "Space-time diagram" in dom
    assert "<script>alert" not in dom       # the name stayed text
