"""The cost-vs-link note fires exactly when the quiet cost's bandwidth exceeds the route's
bottleneck capacity, under both sharing rules (issue 12)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ccmod.api import run

TRACES = Path(__file__).resolve().parent.parent / "traces"
NET = "star:bandwidth=1e8,latency=1e-6"


def _model(tmp_path, bandwidth):
    p = tmp_path / "m.json"
    p.write_text(json.dumps({"format": "ccmod-cost-model", "version": 1,
                             "kind": "piecewise-linear",
                             "segments": [{"min_bytes": 0, "latency_s": 1e-6,
                                           "bandwidth_Bps": bandwidth}]}))
    return p


def _notes(**kw):
    r = run(TRACES / "stencil16.ti", NET, **kw)
    return [n for n in r.summary()["notes"] if "exceeds the route's bottleneck" in n]


@pytest.mark.parametrize("sharing", ["ccmod", "maxmin"])
def test_no_note_with_the_physical_cost(sharing):
    assert _notes(sharing=sharing) == []


@pytest.mark.parametrize("sharing", ["ccmod", "maxmin"])
def test_note_when_the_model_is_faster_than_the_links(tmp_path, sharing):
    notes = _notes(sharing=sharing, cost=_model(tmp_path, 1e10))
    assert len(notes) == 1 and "1e+10" in notes[0] and sharing in notes[0]


@pytest.mark.parametrize("sharing", ["ccmod", "maxmin"])
def test_no_note_when_the_model_is_slower_than_the_links(tmp_path, sharing):
    assert _notes(sharing=sharing, cost=_model(tmp_path, 5e7)) == []
