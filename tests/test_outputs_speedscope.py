"""The perfetto sink's JSON read by an independent consumer: speedscope's importer.

speedscope (npm package ``speedscope``, a maintained profile viewer) imports Chrome
trace-event JSON with its own parser (``importFromChromeTrace``). Its release bundle runs
offline from a file:// URL; headless Chromium (playwright, Debian's chromium) loads it with
our ``trace.json`` the way its command-line tool does (``#localProfilePath=`` a script
calling ``speedscope.loadFileFromBase64``). The test asserts that speedscope accepted the
file (no alert, no error, the document title names the profile) and built one profile per
rank from our process names. A corrupt file is rejected (the negative control), so a pass
means something. Skips without chromium, playwright or the speedscope bundle
(``CCMOD_SPEEDSCOPE`` = path of ``dist/release/index.html``; .ci/run installs it).
"""
from __future__ import annotations

import base64
import os
import shutil
from pathlib import Path

import pytest

from outputs_runs import ROOT, stencil_result

sync_api = pytest.importorskip("playwright.sync_api")
CHROMIUM = next((p for p in (os.environ.get("CCMOD_CHROMIUM"), "/usr/bin/chromium",
                             shutil.which("chromium"), shutil.which("chromium-browser"))
                 if p and os.path.exists(p)), None)
SPEEDSCOPE = next((Path(p) for p in (
    os.environ.get("CCMOD_SPEEDSCOPE"),
    ROOT / ".ci-npm" / "node_modules" / "speedscope" / "dist" / "release" / "index.html")
    if p and Path(p).exists()), None)
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed"),
              pytest.mark.skipif(SPEEDSCOPE is None, reason="speedscope bundle not installed "
                                 "(npm install speedscope; set CCMOD_SPEEDSCOPE)")]


def _open_in_speedscope(tmp_path, name: str, data: bytes) -> dict:
    loader = tmp_path / f"{name}.js"
    loader.write_text(f"speedscope.loadFileFromBase64({name!r}, "
                      f"{base64.b64encode(data).decode()!r})")
    alerts, errors = [], []
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=[
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--allow-file-access-from-files"])
        try:
            page = browser.new_page()
            page.on("dialog", lambda d: (alerts.append(d.message), d.dismiss()))
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(SPEEDSCOPE.resolve().as_uri() + f"#localProfilePath={loader.resolve()}")
            try:
                page.wait_for_function("() => document.title.endsWith(' - speedscope')",
                                       timeout=15_000)
            except sync_api.TimeoutError:
                pass
            page.wait_for_timeout(300)
            title, text = page.title(), page.inner_text("body")
        finally:
            browser.close()
    return {"alerts": alerts, "errors": errors, "title": title, "text": text}


def test_speedscope_imports_the_perfetto_json(tmp_path):
    r = stencil_result(sinks=["perfetto"], out_dir=tmp_path)
    got = _open_in_speedscope(tmp_path, "trace.json", (tmp_path / "trace.json").read_bytes())
    assert got["alerts"] == [] and got["errors"] == []
    assert got["title"] == "trace.json - speedscope"
    # one profile per rank (thread "states" of process "rank N (node M)"); the toolbar
    # shows the first of them and how many there are
    assert "rank 0 (node 0)" in got["text"]
    assert f"1/{r.nranks}" in got["text"].replace(" ", "")


def test_speedscope_rejects_a_corrupt_file(tmp_path):
    got = _open_in_speedscope(tmp_path, "trace.json", b'{"traceEvents": [{"ph": "X", ')
    assert got["alerts"] or "went wrong" in got["text"].lower() or \
        got["title"] != "trace.json - speedscope"
