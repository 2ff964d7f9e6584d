"""One self-contained HTML report of a run directory (``ccmod report RUN_DIR -o FILE``).

The report embeds every figure (base64 PNG, and the space-time diagram also as inline
SVG), uses no script and no external resource, and escapes every trace-supplied name.
Sections: summary, space-time diagram, link load (heatmaps + busiest-links table), knee
capacity, time per rank, communication matrix, message slowdown. Large runs are
aggregated before plotting (see :mod:`outputs.figures`) and the report says how.

Knee capacity with background load: pass ``background_levels`` (e.g. ``[0, 0.3]``); the
run of each level is taken from ``knee_runs[level]``, else ``RUN_DIR/background-<level>/``
(:func:`outputs.knee.knee_dirname`), else the main run when its background equals the
level. ``ccmod run --report DIR --background-levels 0,0.3`` is expected to run the
engine once per level with the parquet sink into those sub-directories, then call
:func:`build_report`.
"""
from __future__ import annotations

import html
from pathlib import Path

from ccmod.atomic import atomic_write_text
from ccmod.outputs.figures import (comm_matrix_figure, detail_window, link_heatmap_figure,
                             rank_breakdown_figure, slowdown_figure, space_time_figure,
                             to_png_b64, to_svg)
from ccmod.outputs.knee import knee_figure, knee_series, resolve_knee_runs
from ccmod.outputs.rundata import RunData, load_run
from ccmod.units import fmt_bytes, fmt_num, fmt_pct, fmt_s

_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0 auto;
max-width:1150px;padding:0 1.2em 3em;color:#222;line-height:1.4}
h1{font-size:1.5em;margin:.8em 0 .2em}h2{font-size:1.2em;margin-top:1.8em;
border-bottom:1px solid #ddd;padding-bottom:.2em}
table{border-collapse:collapse;font-size:.86em;margin:.6em 0}
th,td{border:1px solid #ddd;padding:.25em .6em;text-align:left}
td:first-child{white-space:nowrap}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}th{background:#f4f4f4}
figure{margin:.6em 0}figure img{max-width:100%;height:auto;border:1px solid #eee}
figcaption,.note{font-size:.85em;color:#555}details{margin:.4em 0}
.svgbox svg{max-width:100%;height:auto}ul.notes{font-size:.88em;color:#444}
nav a{margin-right:1em;font-size:.9em}
"""


# ----------------------------------------------------------------------------- format
def _esc(x) -> str:
    return html.escape(str(x), quote=True)


def _table(headers, rows, numeric=()) -> str:
    head = "".join(f"<th>{_esc(h)}</th>" for h in headers)
    body = []
    for r in rows:
        cells = "".join(f'<td class="n">{_esc(v)}</td>' if i in numeric else f"<td>{_esc(v)}</td>"
                        for i, v in enumerate(r))
        body.append(f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _img(fig, alt: str, caption: str = "") -> str:
    b64 = to_png_b64(fig)
    cap = f"<figcaption>{_esc(caption)}</figcaption>" if caption else ""
    return (f'<figure><img alt="{_esc(alt)}" src="data:image/png;base64,{b64}">{cap}'
            f"</figure>")


# ----------------------------------------------------------------------------- sections
def _summary_section(data: RunData, extra: dict) -> str:
    s = data.summary
    net = s.get("network") or {}
    net_txt = net.get("name", "?") if isinstance(net, dict) else str(net)
    if isinstance(net, dict) and net.get("params"):
        net_txt += " (" + ", ".join(f"{k}={v}" for k, v in net["params"].items()) + ")"
    busiest = s.get("busiest_link") or {}
    rows = [
        ("Makespan (predicted run time)", fmt_s(data.makespan_s)),
        ("Ranks", fmt_num(data.nranks)),
        ("Messages", fmt_num(s.get("messages", len(data.messages)))),
        ("Bytes sent", fmt_bytes(s.get("bytes", float(data.messages["nbytes"].sum())
                                        if len(data.messages) else 0))),
        ("Trace records", fmt_num(s.get("records"))),
        ("Engine events", fmt_num(s.get("events"))),
        ("Engine wall time", fmt_s(s.get("wall_s"))),
        ("Network", net_txt),
        ("Bandwidth sharing", s.get("sharing", "–")),
        ("Send mode", s.get("send_mode", "–")),
        ("Background load", fmt_pct(data.background_level)),
        ("Packet size", f"{data.packet_size} B"
         + (" (default)" if s.get("packet_size_source") == "default" else "")),
        ("Busiest link (peak contention)",
         f"{busiest.get('name')} — peak {busiest.get('peak_active')}, mean "
         f"{fmt_num(busiest.get('mean_active'), 3)}" if busiest else "–"),
    ]
    if "median" in extra:
        rows.append(("Message slowdown (median / p90 / max)",
                     f"{extra['median']:.3g} / {extra['p90']:.3g} / {extra['max']:.3g}"))
    return '<h2 id="summary">Summary</h2>' + _table(("quantity", "value"), rows)


def _links_table(data: RunData, top: int = 15) -> str:
    links = data.links
    if links is None or len(links) == 0:
        return '<p class="note">No link statistics (links.parquet missing or empty).</p>'
    df = links.copy()
    keys = [c for c in ("peak_active", "bytes") if c in df.columns]
    if keys:
        df = df.sort_values(keys + ["resource"], ascending=[False] * len(keys) + [True],
                            kind="mergesort")
    df = df.head(top)
    ms = data.makespan_s
    rows = []
    for r in df.to_dict("records"):
        cap = r.get("capacity_Bps", float("nan"))
        um = r.get("utilisation_mean", float("nan"))
        pps = um * cap / data.packet_size if cap == cap and um == um else float("nan")
        rows.append((r.get("name", f"r{r.get('resource')}"), fmt_num(r.get("messages")),
                     fmt_bytes(r.get("bytes")), fmt_num(r.get("peak_active")),
                     fmt_num(r.get("mean_active"), 3),
                     fmt_pct(r["busy_s"] / ms) if "busy_s" in r and ms > 0 else "–",
                     fmt_pct(um), fmt_pct(r.get("utilisation_peak", float("nan"))),
                     fmt_num(pps, 4), fmt_num(r.get("background"), 3)))
    hdr = ("link", "messages", "bytes", "peak contention", "mean contention", "busy",
           "mean utilisation", "peak utilisation", "mean packets/s", "background")
    return (f"<h3>Busiest links (top {len(rows)} of {len(links)}, by peak contention then "
            f"bytes)</h3>" + _table(hdr, rows, numeric=set(range(1, len(hdr)))))


def _knee_section(data: RunData, run_dir, background_levels, knee_runs, network) -> str:
    out = ['<h2 id="knee">Knee capacity</h2>']
    runs = [(data.background_level, data)]
    if background_levels:
        runs = resolve_knee_runs(run_dir, data, background_levels, knee_runs, network)
    series = []
    first_res = None
    missing = []
    for level, d in runs:
        s = knee_series(d, resource=first_res)
        if s is None and first_res is not None:
            s = knee_series(d)  # the link is absent from this run: use its own busiest
        if s is None:
            missing.append(level)
            continue
        s.level = float(level)
        first_res = s.resource if first_res is None else first_res
        series.append(s)
    if not series:
        out.append('<p class="note">Not available: the run has no link load with '
                   "utilisation (record link load with the parquet sink and a network with "
                   "known capacities).</p>")
        return "".join(out)
    out.append(_img(knee_figure(series), "knee capacity",
                    "Throughput in packets/s of the most loaded link; right: mean "
                    "throughput against the number of messages sharing the link."))
    rows = [(f"{s.level:.0%}", s.link, fmt_s(s.makespan_s), fmt_num(s.mean_pps),
             fmt_num(s.peak_pps), fmt_num(s.capacity_pps),
             fmt_num(s.capacity_pps * (1 - s.level))) for s in series]
    out.append(_table(("background", "link", "makespan", "mean packets/s", "peak packets/s",
                       "capacity packets/s", "left by background"), rows,
                      numeric={2, 3, 4, 5, 6}))
    if missing and series:
        out.append('<p class="note">No link utilisation for background '
                   + ", ".join(f"{lv:.0%}" for lv in missing)
                   + " (link load not recorded, or the network could not be rebuilt).</p>")
    return "".join(out)


def build_report(run_dir, out_html, background_levels=None, knee_runs=None,
                 max_lines: int = 2000, title: str | None = None, network=None) -> Path:
    """Write the HTML report of ``run_dir`` (a directory written by the parquet sink).

    Parameters
    ----------
    run_dir : path
        Run directory (messages.parquet, rank_states.parquet, link_load.parquet,
        ranks.parquet, links.parquet, run.json).
    out_html : path
        Output file, written atomically.
    background_levels : sequence of float, or mapping float → run, optional
        Background levels of the knee figure (see the module doc for where their runs
        are found); a mapping gives each level's run directly (a run directory, a
        ``RunResult`` or a ``RunData``). Default: only the run itself.
    knee_runs : mapping float → path, optional
        Explicit run directory per background level.
    max_lines : int
        Most message lines drawn in the space-time diagram.
    title : str, optional
    network : netsys.base.Network, optional
        Network of ``RunResult`` knee runs (link routes and capacities for utilisation);
        rebuilt from ``RunResult.network`` when omitted.

    Returns
    -------
    Path of the written file.
    """
    data = load_run(run_dir)
    notes = list(data.notes)
    parts: list[str] = []

    fig, st = space_time_figure(data, max_lines=max_lines)
    if st["rank_group"] > 1:
        notes.append(f"Space-time diagram: {st['ranks']:,} ranks drawn as "
                     f"{-(-st['ranks'] // st['rank_group'])} rows of {st['rank_group']} "
                     "consecutive ranks.")
    if st["lines"] < st["messages"]:
        notes.append(f"Space-time diagram: {st['lines']:,} of {st['messages']:,} messages "
                     "drawn as lines (evenly spaced in start-time order).")
    if not st["states"]:
        notes.append("No rank states were recorded (run with recording on): the space-time "
                     "diagram shows only the messages.")
    notes.append("Space-time diagram: states are rasterised per pixel column; each pixel "
                 "shows the state that took most of its time (of all ranks in the row).")
    parts.append('<h2 id="spacetime">Space-time diagram</h2>')
    parts.append(_img(fig, "space-time diagram",
                      "One row per rank: compute, send, recv, wait, barrier, idle; a line per "
                      "message from its sender (transfer start) to its receiver (end)."))
    parts.append('<details><summary>SVG version</summary><div class="svgbox">'
                 f"{to_svg(fig)}</div></details>")
    win = detail_window(data)
    if win is not None:
        zfig, zinfo = space_time_figure(data, max_lines=max_lines, window=win)
        parts.append(_img(zfig, "space-time diagram detail",
                          f"Close-up on {zinfo['lines']:,} messages around the middle of the "
                          "run (every message starting in the window is drawn, up to the "
                          "line limit)."))

    parts.append('<h2 id="links">Link load</h2>')
    hfig, hinfo = link_heatmap_figure(data)
    if hfig is None:
        parts.append('<p class="note">No link load recorded (only intra-node messages, or '
                     "recording was off).</p>")
    else:
        if hinfo["links_shown"] < hinfo["links_total"]:
            notes.append(f"Link-load heatmap: the {hinfo['links_shown']} busiest of "
                         f"{hinfo['links_total']} loaded links (time-averaged contention).")
        parts.append(_img(hfig, "link load heatmap",
                          "Peak contention and utilisation in each time bin of the busiest "
                          "links."))
    parts.append(_links_table(data))
    notes.append("Utilisation spreads each message's bytes uniformly over its transfer "
                 "interval on every link of its route (background excluded).")

    parts.append(_knee_section(data, run_dir, background_levels, knee_runs, network))
    if data.summary.get("packet_size_source") == "default":
        notes.append(f"Packets/s use a default packet size of {data.packet_size} bytes "
                     "(the network defines none).")

    parts.append('<h2 id="ranks">Time per rank</h2>')
    bfig, binfo = rank_breakdown_figure(data)
    if binfo["rank_group"] > 1:
        notes.append(f"Time per rank: bars are means over groups of {binfo['rank_group']} "
                     "ranks.")
    parts.append(_img(bfig, "time per rank", "Time each rank spent in each state."))

    parts.append('<h2 id="matrix">Communication matrix</h2>')
    cfig, cinfo = comm_matrix_figure(data)
    parts.append(_img(cfig, "communication matrix", "Bytes sent from row rank to column rank "
                      "(log colour scale; white: none)."))

    parts.append('<h2 id="slowdown">Message slowdown</h2>')
    sfig, sinfo = slowdown_figure(data)
    parts.append(_img(sfig, "slowdown histogram",
                      "Actual transfer time over the time the same message takes on a quiet "
                      "network; 1 = no contention."))
    if "slowed" in sinfo:
        parts.append(f'<p class="note">{sinfo["slowed"]:.1%} of the messages were slowed by '
                     "contention or background load.</p>")

    title = title or f"ccmod report: {Path(run_dir).resolve().name}"
    nav = "".join(f'<a href="#{a}">{t}</a>' for a, t in (
        ("summary", "Summary"), ("spacetime", "Space-time"), ("links", "Link load"),
        ("knee", "Knee capacity"), ("ranks", "Per rank"), ("matrix", "Matrix"),
        ("slowdown", "Slowdown")))
    doc = (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{_esc(title)}</title><meta name=\"viewport\" "
        "content=\"width=device-width,initial-scale=1\">"
        f"<style>{_CSS}</style></head><body>"
        f"<h1>{_esc(title)}</h1><nav>{nav}</nav>"
        + _summary_section(data, sinfo)
        + "<h3>How to read this report</h3><ul class=\"notes\">"
        + "".join(f"<li>{_esc(n)}</li>" for n in notes) + "</ul>"
        + "".join(parts)
        + "<p class=\"note\">Generated by ccmod from "
        + _esc(str(Path(run_dir))) + ".</p></body></html>\n")
    out = Path(out_html)
    atomic_write_text(out, doc)
    return out
