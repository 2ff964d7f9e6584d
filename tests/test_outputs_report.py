"""The interactive HTML report on real engine runs: self-contained, escaped, knee, CLI."""
from __future__ import annotations

import json
import re
import shutil

import pytest

from ccmod.errors import CcmodInputError
from ccmod.outputs.knee import knee_dirname, knee_links, knee_series, knee_verdict
from ccmod.outputs.report import build_report, write_static
from outputs_runs import stencil_result, tiny_result

EVIL = "<script>alert('x')</script>"


@pytest.fixture(scope="module")
def evil_report(tmp_path_factory):
    """Tiny run whose trace, network and link names carry markup, and a measured makespan
    (the traced run's, as some traces carry it); report built once."""
    d = tmp_path_factory.mktemp("evil")
    r = tiny_result(sinks=["parquet"], out_dir=d)
    r.measured = {"makespan_s": 1e-5}
    r.options["trace"] = EVIL
    r.network["name"] = EVIL
    r.resources.loc[3, "name"] = EVIL
    r.links.loc[r.links["resource"] == 3, "name"] = EVIL
    out = build_report(r, d / "report.html")
    return out, out.read_text(encoding="utf-8"), r


@pytest.fixture(scope="module")
def stencil():
    """The stencil run, read by several tests (none changes it)."""
    return stencil_result()


def test_report_is_self_contained(evil_report):
    _, html, _ = evil_report
    assert html.startswith("<!DOCTYPE html>")
    # no external reference: no script/stylesheet/image loaded from anywhere but the file
    assert not re.search(r"<script[^>]*\bsrc\s*=", html, flags=re.I)
    # markup outside the inlined scripts (BokehJS's code mentions a MathJax CDN it would
    # only fetch for TeX labels, which the report has none of; the browser test checks
    # that the page makes no request)
    markup = re.sub(r"<script\b[^>]*>.*?</script>", "", html, flags=re.I | re.S)
    assert not re.search(r"<link\b", markup, flags=re.I)
    refs = re.findall(r'\b(?:src|href)\s*=\s*["\']([^"\']*)', markup, flags=re.I)
    assert not [r for r in refs if re.match(r"\s*(https?:)?//", r, flags=re.I)]
    assert not re.search(r"@import|url\(\s*['\"]?https?:", markup, flags=re.I)
    assert "Bokeh" in html and "bokeh-widgets" in html.lower()   # BokehJS inlined


def test_trace_names_are_escaped(evil_report):
    _, html, _ = evil_report
    assert EVIL not in html
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in html


def test_report_sections_and_numbers(evil_report):
    _, html, _ = evil_report
    for anchor in ("summary", "spacetime", "links", "knee", "ranks", "matrix"):
        assert f'id="{anchor}"' in html
    assert "Busiest links" in html and "packets/s" in html
    # makespan 7.5 µs, 4 messages, 3 ranks (tests/outputs_runs.py)
    assert "7.5 µs" in html and "<td>Messages</td><td>4</td>" in html
    # small run: the space-time diagram starts in full detail and says so
    assert "Full detail: every state interval and message" in html
    # no link carried two messages at once at more than one level: no knee, said plainly
    assert "No knee to show" in html


# the build from a run directory (`ccmod report DIR`) equals the in-memory one:
# tests/test_cli_outputs.py (run --out --report, then report DIR)


def _space_time_texts(r, **kw):
    """The space-time diagram's texts as the report writes them (status line shown first,
    the aggregated view's text the view switches to) and its info, built alone (what
    build_report(r, max_lines=...) builds for the diagram, without the other figures)."""
    from ccmod.outputs import interactive as ia
    layout, x_range, info = ia.space_time(r, visible_detail=ia.VISIBLE_DETAIL, **kw)
    status = layout.select_one({"name": "st-status"}).text
    agg = x_range.js_property_callbacks["change:start"][0].args["agg"]
    return status, agg, info


def test_large_run_is_aggregated_and_says_so(stencil):
    r = stencil
    status, agg, info = _space_time_texts(r, max_lines=100)
    assert info["lines"] == 100
    assert f"100 of {r.messages_count:,} messages drawn" in agg
    assert "Aggregated view" in agg and "Zoom in to a window shorter than" in agg


def test_knee_picks_a_link_whose_contention_varies(stencil):
    r = stencil
    links = knee_links(r, top=3)
    assert links
    ld = r.link_load
    for res in links:
        assert ld[ld["resource"] == res]["active"].nunique() >= 2
        assert (ld[ld["resource"] == res]["active"] >= 2).any()
    s = knee_series(r)
    assert s.resource == links[0]
    assert knee_verdict(s).split(" ", 1)[0] in ("Knee", "No")
    assert knee_links(tiny_result()) == []     # never two levels of sharing on one link


@pytest.mark.slow
def test_knee_with_background_runs(tmp_path):
    base = tmp_path / "run"
    r0 = stencil_result(sinks=["parquet"], out_dir=base)
    bg = base / knee_dirname(0.3)
    stencil_result(background=0.3, sinks=["parquet"], out_dir=bg)
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
    r3 = stencil_result(background=0.3)
    html3 = build_report(r0, base / "r3.html", background_levels={0.0: r0, 0.3: r3}).read_text()
    assert "<td>30%</td>" in html3
    with pytest.raises(CcmodInputError, match="no run for background level 0.5"):
        build_report(base, base / "r5.html", background_levels=[0.5])


def test_not_a_run_dir(tmp_path):
    with pytest.raises(CcmodInputError, match="not a ccmod run directory"):
        build_report(tmp_path, tmp_path / "x.html")
    with pytest.raises(CcmodInputError, match="not found"):
        build_report(tmp_path / "nope", tmp_path / "x.html")


def test_report_without_states_or_load(tmp_path):
    r = tiny_result(record=False)
    html = build_report(r, tmp_path / "r.html").read_text()
    assert "No rank states were recorded" in html
    assert "No link load recorded" in html


@pytest.mark.slow
def test_static_figures_once_each(tmp_path):
    r = stencil_result()
    files = write_static(r, tmp_path / "figs")
    names = sorted(p.name for p in files)
    assert "space_time.png" in names and "space_time.svg" in names and "knee.svg" in names
    assert len(names) == len(set(names))
    assert (tmp_path / "figs" / "space_time.png").read_bytes()[:4] == b"\x89PNG"


# ----------------------------------------------------------------------------- CLI
def _cli(args) -> int:
    from ccmod.cli import main
    try:
        main(args)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def test_cli_report_and_sinks(tmp_path, capsys):
    # `ccmod report DIR -o FILE --json` building a report: in
    # test_report_from_directory_equals_in_memory_and_is_reproducible
    tiny_result(sinks=["parquet"], out_dir=tmp_path)
    assert _cli(["sinks", "--json"]) == 0
    names = {r["name"] for r in json.loads(capsys.readouterr().out)}
    assert {"debug", "parquet", "perfetto", "paraver"} <= names
    assert _cli(["report", str(tmp_path), "--background-levels", "0,1.5"]) == 2
    err = capsys.readouterr().err
    assert "background level 1.5" in err and len(err.strip().splitlines()) == 1
    assert _cli(["report", str(tmp_path / "missing")]) == 2
    assert "run directory not found" in capsys.readouterr().err


def test_measured_values_are_shown_beside_the_prediction(evil_report):
    """A RunResult carrying values measured on the traced run gets a comparison table."""
    _, html, _ = evil_report
    sec = html.split('id="measured"', 1)[1].split("</table>", 1)[0]
    # predicted 7.5 µs against a measured 10 µs: -25 %
    assert "<td>makespan_s</td>" in sec and "-25.0%" in sec


def test_detail_window_holds_everything_inside_it(monkeypatch, stencil):
    """Over the file budget, full detail covers a window completely (no sampled holes)."""
    from ccmod.outputs import interactive as ia
    r = stencil
    s, m = r.rank_states, r.messages
    a, b = s["t_start_s"].to_numpy(), s["t_end_s"].to_numpy()
    ts, te = m["t_start_s"].to_numpy(), m["t_end_s"].to_numpy()
    assert ia.detail_window(a, b, ts, te, r.makespan_s, 10**6, 10**6) == (0.0, r.makespan_s)
    w0, w1 = ia.detail_window(a, b, ts, te, r.makespan_s, 200, 100)
    assert 0 < w1 - w0 < r.makespan_s
    assert ((b > w0) & (a < w1)).sum() <= 200 and ((te > w0) & (ts < w1)).sum() <= 100
    monkeypatch.setattr(ia, "DETAIL_STATES", 200)
    monkeypatch.setattr(ia, "DETAIL_MESSAGES", 100)
    status, agg, info = _space_time_texts(r)
    assert info["detail_window_s"] == (w0, w1)
    assert "Full detail is kept for" in agg and status == agg
