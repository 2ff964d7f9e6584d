"""The report in a real browser: headless Chromium driven by playwright (issue 13).

Loads report.html from disk (file://), with background networking off, and checks: no
console error, no request leaves the file, every figure drew something, and zooming the
space-time diagram with the mouse wheel narrows its time range and switches it from the
aggregated view to full detail. Skips cleanly when chromium or playwright is absent.
"""
from __future__ import annotations

import os
import shutil

import pytest

from ccmod.outputs.report import build_report
from outputs_runs import stencil_result

sync_api = pytest.importorskip("playwright.sync_api")
CHROMIUM = next((p for p in (os.environ.get("CCMOD_CHROMIUM"), "/usr/bin/chromium",
                             shutil.which("chromium"), shutil.which("chromium-browser"))
                 if p and os.path.exists(p)), None)
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")]

#: every canvas in the page, shadow roots included (BokehJS draws inside shadow DOM);
#: for each: its size and how many distinct colours a sample of its pixels has
_CANVASES = """() => {
  const out = [];
  const walk = (root) => {
    for (const el of root.querySelectorAll('*')) {
      if (el.tagName === 'CANVAS' && el.width > 0 && el.height > 0) {
        const ctx = el.getContext('2d');
        const d = ctx.getImageData(0, 0, el.width, el.height).data;
        const seen = new Set();
        const step = Math.max(4, 4 * Math.floor(d.length / 4 / 4000));
        for (let i = 0; i < d.length; i += step) seen.add(d[i] + ',' + d[i+1] + ',' + d[i+2] + ',' + d[i+3]);
        out.push({w: el.width, h: el.height, colours: seen.size});
      }
      if (el.shadowRoot) walk(el.shadowRoot);
    }
  };
  walk(document);
  return out;
}"""

_STATE = """() => {
  const doc = Bokeh.documents[0];
  const xr = doc.get_model_by_name('time');
  let status = null;
  for (const m of doc.all_models) if (m.name === 'st-status') status = m.text;
  return {start: xr.start, end: xr.end, status: status};
}"""


def test_report_loads_renders_and_zooms(tmp_path):
    r = stencil_result()
    # a small detail budget so that this small run opens aggregated (as a big one does)
    path = build_report(r, tmp_path / "report.html", visible_detail=200)
    errors, requests = [], []
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=[
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run"])
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("request", lambda q: requests.append(q.url))
            page.goto(path.resolve().as_uri())
            page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0",
                                   timeout=30_000)
            page.wait_for_timeout(500)
            canv = page.evaluate(_CANVASES)
            before = page.evaluate(_STATE)
            box = page.evaluate("""() => {
              const find = (root) => { for (const el of root.querySelectorAll('*')) {
                  if (el.tagName === 'CANVAS') return el;
                  if (el.shadowRoot) { const c = find(el.shadowRoot); if (c) return c; } }
                return null; };
              const c = find(document); c.scrollIntoView({block: 'center'});
              const b = c.getBoundingClientRect();
              return {x: b.x + b.width / 2, y: b.y + b.height / 2}; }""")
            page.mouse.move(box["x"], box["y"])
            for _ in range(25):
                page.mouse.wheel(0, -400)
                page.wait_for_timeout(40)
            page.wait_for_timeout(300)
            after = page.evaluate(_STATE)
        finally:
            browser.close()
    assert errors == []
    assert all(u.startswith(("file:", "data:", "blob:", "about:")) for u in requests), requests
    # 7 figures: space-time, link load, knee (2), per-rank bars, matrix, slowdown; each
    # drew more than a blank background
    drawn = [c for c in canv if c["colours"] > 2]
    assert len(drawn) >= 7, canv
    assert after["end"] - after["start"] < 0.5 * (before["end"] - before["start"])
    assert before["status"].startswith("Aggregated view")
    assert after["status"].startswith("Full detail")
