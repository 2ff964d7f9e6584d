"""Self-contained HTML report of a data-flow run (``ccmod dataflow FILE --report OUT.html``).

Tables of every MMT metric (with 95 % CI half-widths for a simulation and the exact
values when given), inline SVG bars of the utilisation of every processor and link, and
histograms of the simulated response times (actors, communications, iterations).  No
script, no external file: the page opens anywhere.
"""
from __future__ import annotations

import html
import math

import numpy as np

from ccmod.atomic import atomic_write_text

__all__ = ["render", "write"]

_CSS = """body{font-family:sans-serif;margin:1.5em;max-width:1100px}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{padding:2px 8px;text-align:right}
th{border-bottom:1px solid #888}td:first-child,th:first-child{text-align:left}
.hist{display:inline-block;margin:0 1em 1em 0;vertical-align:top}
.note{color:#555;font-size:90%}"""


def _f(x) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{x:.4g}"


def _cell(res, ci, exact, path):
    def get(d):
        for k in path:
            if not isinstance(d, dict) or k not in d:
                return None
            d = d[k]
        return d
    v = get(res)
    s = _f(v)
    if ci is not None:
        h = get(ci)
        if h is not None and not (isinstance(h, float) and math.isnan(h)):
            s += f" ± {_f(h)}"
    if exact is not None:
        s += f" <span class=note>(exact {_f(get(exact))})</span>"
    return s


def _table(title, res, ci, exact, group, cols):
    rows = res.get(group, {})
    if not rows:
        return ""
    h = [f"<h3>{html.escape(title)}</h3><table><tr><th>name</th>"]
    h += [f"<th>{html.escape(c)}</th>" for c in cols]
    h.append("</tr>")
    for name in rows:
        h.append(f"<tr><td>{html.escape(name)}</td>")
        h += [f"<td>{_cell(res, ci, exact, (group, name, c))}</td>" for c in cols]
        h.append("</tr>")
    h.append("</table>")
    return "".join(h)


def _bars(title, items):
    """Horizontal SVG bars for values in [0, 1]."""
    if not items:
        return ""
    w, bh = 520, 18
    hgt = bh * len(items) + 10
    out = [f"<h3>{html.escape(title)}</h3><svg width='{w + 220}' height='{hgt}' "
           f"xmlns='http://www.w3.org/2000/svg' font-size='12'>"]
    for i, (name, v) in enumerate(items):
        y = 5 + i * bh
        vv = 0.0 if v is None or math.isnan(v) else max(0.0, min(1.0, v))
        out.append(f"<text x='0' y='{y + 13}'>{html.escape(name)}</text>"
                   f"<rect x='140' y='{y + 2}' width='{w * vv:.1f}' height='{bh - 5}' "
                   f"fill='#4a7ab5'/><rect x='140' y='{y + 2}' width='{w}' height='{bh - 5}' "
                   f"fill='none' stroke='#bbb'/>"
                   f"<text x='{145 + w}' y='{y + 13}'>{_f(v)}</text>")
    out.append("</svg>")
    return "".join(out)


def _hist(name, xs, bins=30):
    a = np.asarray(xs, float)
    if a.size == 0:
        return ""
    hi = float(np.quantile(a, 0.995)) if a.size > 20 else float(a.max())
    lo = float(a.min())
    if hi <= lo:
        hi = lo + 1.0
    cnt, edges = np.histogram(np.clip(a, lo, hi), bins=bins, range=(lo, hi))
    w, h = 300, 110
    top = max(int(cnt.max()), 1)
    bw = w / bins
    out = [f"<div class=hist><b>{html.escape(name)}</b> <span class=note>n={a.size}, mean "
           f"{_f(float(a.mean()))}, p95 {_f(float(np.quantile(a, 0.95)))}</span><br>"
           f"<svg width='{w}' height='{h + 16}' xmlns='http://www.w3.org/2000/svg' "
           f"font-size='10'>"]
    for i, c in enumerate(cnt):
        bh = h * c / top
        out.append(f"<rect x='{i * bw:.1f}' y='{h - bh:.1f}' width='{bw - 1:.1f}' "
                   f"height='{bh:.1f}' fill='#d08030'/>")
    out.append(f"<text x='0' y='{h + 12}'>{_f(lo)}</text><text x='{w - 40}' y='{h + 12}'>"
               f"{_f(hi)}</text></svg></div>")
    return "".join(out)


def render(result: dict, samples: dict | None = None, exact: dict | None = None) -> str:
    """The report page for a result of ``simulate`` or ``ctmc_dataflow.solve``."""
    ci = result.get("ci95")
    title = f"Data-flow model {result.get('model', '')} ({result.get('method', '')})"
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
             f"</title><style>{_CSS}</style></head><body><h1>{html.escape(title)}</h1>"]
    meta = {k: result[k] for k in ("replications", "seed", "iterations", "warmup", "states")
            if k in result}
    if meta:
        parts.append("<p class=note>" + ", ".join(f"{k} {v}" for k, v in meta.items())
                     + (" — values ± 95 % CI half-width over replications" if ci else "")
                     + "</p>")
    parts.append(_table("Application", {"application": {"iterations": result["application"]}},
                        {"application": {"iterations": ci["application"]}} if ci else None,
                        {"application": {"iterations": exact["application"]}} if exact else None,
                        "application", ["throughput", "response_time"]))
    parts.append(_bars("Processor utilisation",
                       [(n, v["utilization"]) for n, v in result["processors"].items()]))
    parts.append(_bars("Link utilisation",
                       [(n, v["utilization"]) for n, v in result["links"].items()]))
    parts.append(_table("Processors", result, ci, exact, "processors",
                        ["utilization", "throughput", "queue_length", "response_time"]))
    parts.append(_table("Links", result, ci, exact, "links",
                        ["utilization", "queue_length", "throughput"]))
    parts.append(_table("Actors", result, ci, exact, "actors", ["response_time", "throughput"]))
    parts.append(_table("Communications", result, ci, exact, "communications",
                        ["response_time", "throughput"]))
    if samples:
        parts.append("<h2>Response-time distributions (simulated)</h2>")
        for kind in ("application", "actors", "communications"):
            for name, xs in samples.get(kind, {}).items():
                parts.append(_hist(f"{kind[:-1] if kind.endswith('s') else kind} {name}", xs))
    parts.append("<p class=note>Response times of actors: from ready (all inputs, room in "
                 "outputs) to done; of communications: from the item's creation to its "
                 "delivery; all by Little's law in the tables.</p></body></html>")
    return "".join(parts)


def write(path, result: dict, samples: dict | None = None, exact: dict | None = None) -> None:
    atomic_write_text(path, render(result, samples, exact))
