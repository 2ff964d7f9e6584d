"""The HTML report: one self-contained interactive file built from an in-memory RunResult.

:func:`build_report` takes a :class:`ccmod.result.RunResult` (``ccmod run --report``) or a
run directory (``ccmod report DIR``, loaded with :func:`ccmod.outputs.parquet.load_result`
into the same RunResult) and writes ``report.html``: Bokeh figures with their JavaScript
inlined (works offline, from a file:// URL, no remote reference), tables in plain HTML.
Why Bokeh, and how the space-time diagram switches levels of detail:
:mod:`ccmod.outputs.interactive`. :func:`write_static` draws the same figures once each
with matplotlib as PNG and SVG (``ccmod report --static``).

Knee capacity at several background levels: ``background_levels`` maps each level to its
run (a RunResult or a run directory); plain levels are found in ``RUN_DIR/background-<L>/``
(what ``ccmod run --report DIR --background-levels`` writes next to the main run).
"""
from __future__ import annotations

import html
import math
import re
from pathlib import Path

from ccmod.atomic import atomic_write_text, ensure_dir, refuse_directory
from ccmod.outputs.knee import knee_series, knee_verdict, resolve_knee_runs
from ccmod.units import fmt_bytes, fmt_num, fmt_pct, fmt_s

_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0 auto;
max-width:1200px;padding:0 1.2em 3em;color:#222;line-height:1.4}
h1{font-size:1.45em;margin:.8em 0 .2em}h2{font-size:1.2em;margin-top:1.8em;
border-bottom:1px solid #ddd;padding-bottom:.2em}
table{border-collapse:collapse;font-size:.86em;margin:.6em 0}
th,td{border:1px solid #ddd;padding:.25em .6em;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}th{background:#f4f4f4}
.note{font-size:.85em;color:#555}ul.notes{font-size:.88em;color:#444}
nav a{margin-right:1em;font-size:.9em}.row{display:flex;flex-wrap:wrap;gap:1.5em}
"""


# ----------------------------------------------------------------------------- format
def _esc(x) -> str:
    return html.escape(str(x), quote=True)


def _table(headers, rows, numeric=()) -> str:
    head = "".join(f"<th>{_esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(
        f'<td class="n">{_esc(v)}</td>' if i in numeric else f"<td>{_esc(v)}</td>"
        for i, v in enumerate(r)) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


# ----------------------------------------------------------------------------- sections
def network_text(result) -> str:
    net = result.network or {}
    txt = str(net.get("name", "?")) if isinstance(net, dict) else str(net)
    if isinstance(net, dict) and net.get("params"):
        txt += " (" + ", ".join(f"{k}={v}" for k, v in net["params"].items()) + ")"
    return txt


def _summary(result, sd: dict) -> str:
    s = result.summary()
    busiest = s.get("busiest_link") or {}
    rows = [
        ("Trace", result.options.get("trace", "–")),
        ("Makespan (predicted run time)", fmt_s(result.makespan_s)),
        ("Ranks", fmt_num(result.nranks)),
        ("Messages", fmt_num(s["messages"])), ("Bytes sent", fmt_bytes(s["bytes"])),
        ("Trace records", fmt_num(s["records"])), ("Engine events", fmt_num(s["events"])),
        ("Engine wall time", fmt_s(s["wall_s"])), ("Network", network_text(result)),
        ("Bandwidth sharing", result.sharing), ("Send mode", result.send_mode),
        ("Background load", fmt_pct(result.background_level)),
        ("Packet size", f"{result.packet_size} B" + (
            " (default)" if result.meta.get("packet_size_source") == "default" else "")),
        ("Busiest link (peak contention)",
         f"{busiest.get('name')} — peak {busiest.get('peak_active')}, mean "
         f"{fmt_num(busiest.get('mean_active'), 3)}" if busiest else "–"),
    ]
    if "median" in sd:
        rows.append(("Message slowdown (median / p90 / max)",
                     f"{sd['median']:.3g} / {sd['p90']:.3g} / {sd['max']:.3g}"))
    out = '<h2 id="summary">Summary</h2>' + _table(("quantity", "value"), rows)
    out += _measured(result)
    return out


def _measured(result) -> str:
    """Measured values of the traced run beside the prediction (when the trace has them)."""
    meas = result.measured
    if not meas:
        return ""
    rows = []
    for key, val in meas.items():
        pred = result.makespan_s if key in ("makespan_s", "wall_s", "time_s") else None
        err = (f"{(pred - float(val)) / float(val):+.1%}" if pred is not None and
               isinstance(val, (int, float)) and val else "–")
        rows.append((key, fmt_num(val, 6), fmt_num(pred, 6) if pred is not None else "–", err))
    return ('<h3 id="measured">Measured vs predicted</h3>'
            + _table(("quantity", "measured", "predicted", "error"), rows, numeric={1, 2, 3}))


def _links_table(result, top: int = 15) -> str:
    links = result.links
    if links is None or len(links) == 0:
        return '<p class="note">No link statistics (no message used the network).</p>'
    df = links.sort_values(["peak_active", "bytes", "resource"],
                           ascending=[False, False, True], kind="mergesort").head(top)
    ms = result.makespan_s
    rows = []
    for r in df.to_dict("records"):
        cap, um = r.get("capacity_Bps", math.nan), r.get("utilisation_mean", math.nan)
        pps = um * cap / result.packet_size if cap == cap and um == um else math.nan
        rows.append((r["name"], fmt_num(r["messages"]), fmt_bytes(r["bytes"]),
                     fmt_num(r["peak_active"]), fmt_num(r["mean_active"], 3),
                     fmt_pct(r["busy_s"] / ms) if ms > 0 else "–", fmt_pct(um),
                     fmt_pct(r.get("utilisation_peak", math.nan)), fmt_num(pps, 4),
                     fmt_num(r.get("background"), 3)))
    hdr = ("link", "messages", "bytes", "peak contention", "mean contention", "busy",
           "mean utilisation", "peak utilisation", "mean packets/s", "background")
    return (f"<h3>Busiest links (top {len(rows)} of {len(links)}, by peak contention then "
            f"bytes)</h3>" + _table(hdr, rows, numeric=set(range(1, len(hdr)))))


def knee_runs_series(result, run_dir, background_levels, knee_runs):
    """Knee series of every level on the same link (the first run's choice)."""
    runs = [(result.background_level, result)]
    if background_levels:
        runs = resolve_knee_runs(run_dir, result, background_levels, knee_runs)
    series, missing, first = [], [], None
    for level, r in runs:
        s = knee_series(r, resource=first)
        if s is None and first is not None:
            s = knee_series(r)
        if s is None:
            missing.append(level)
            continue
        s.level = float(level)
        first = s.resource if first is None else first
        series.append(s)
    return series, missing


def _knee_section(series, missing, x_range, models) -> str:
    from ccmod.outputs.interactive import knee_plots
    out = ['<h2 id="knee">Knee capacity</h2>']
    if not series:
        out.append('<p class="note">No knee to show: no link ever carried two messages at '
                   "once (or link load was not recorded), so a link's throughput is that of "
                   "one message at a time.</p>")
        return "".join(out)
    out.append(f'<p>{_esc(knee_verdict(series[0]))}</p>')
    models["knee"] = knee_plots(series, x_range)
    out.append("{{knee}}")
    rows = [(f"{s.level:.0%}", s.link, fmt_s(s.makespan_s), fmt_num(s.mean_pps),
             fmt_num(s.peak_pps), fmt_num(s.capacity_pps),
             fmt_num(s.capacity_pps * (1 - s.level))) for s in series]
    out.append(_table(("background", "link", "makespan", "mean packets/s", "peak packets/s",
                       "capacity packets/s", "left by background"), rows,
                      numeric={2, 3, 4, 5, 6}))
    if missing:
        out.append('<p class="note">No link load for background '
                   + ", ".join(f"{lv:.0%}" for lv in missing) + ".</p>")
    return "".join(out)


def report_title(result) -> str:
    """"ccmod: TRACE on NETWORK" (the network's parameters are in the summary)."""
    net = result.network or {}
    name = net.get("name", "?") if isinstance(net, dict) else str(net)
    return f"ccmod: {result.trace_name} on {name}"


def build_report(run, out_html, background_levels=None, knee_runs=None,
                 max_lines: int = 2000, title: str | None = None, run_dir=None,
                 visible_detail: int | None = None) -> Path:
    """Write the interactive HTML report of a run.

    Parameters
    ----------
    run : RunResult or path
        The in-memory result, or a run directory written by the parquet sink.
    out_html : path
        Output file, written atomically.
    background_levels : sequence of float, or mapping float → run, optional
        Levels of the knee figure (module doc); default: only the run itself.
    knee_runs : mapping float → path, optional
        Explicit run directory per background level.
    max_lines : int
        Message lines drawn in the aggregated view of the space-time diagram.
    title : str, optional
        Default: "ccmod: TRACE on NETWORK".
    run_dir : path, optional
        Where the background-level runs are (default: ``run`` when it is a directory).
    visible_detail : int, optional
        Intervals visible at once before the space-time diagram switches to full detail
        (default :data:`ccmod.outputs.interactive.VISIBLE_DETAIL`).

    Returns
    -------
    Path of the written file.
    """
    from bokeh.embed import components
    from bokeh.resources import Resources

    from ccmod.outputs import interactive as ia
    from ccmod.outputs.parquet import load_result
    if isinstance(run, (str, Path)):
        run_dir = Path(run)
        result = load_result(run_dir)
    else:
        result = run
    out = _writable(Path(out_html))
    models: dict = {}
    notes: list[str] = []
    parts: list[str] = []

    st_layout, x_range, st = ia.space_time(
        result, max_lines=max_lines, visible_detail=visible_detail or ia.VISIBLE_DETAIL)
    models["legend"] = ia.state_legend()
    models["spacetime"] = st_layout
    if not st["states"]:
        notes.append("No rank states were recorded (run with recording on): the space-time "
                     "diagram shows only the messages.")
    notes.append("All time axes are linked: zoom (mouse wheel, box zoom) or pan one and the "
                 "others follow; the per-rank bars then count only the visible window.")
    parts += ['<h2 id="spacetime">Space-time diagram</h2>',
              '<p class="note">One row per rank: compute, send, recv, wait, barrier, idle; a '
              "line per message from its sender (transfer start) to its receiver (end).</p>",
              "{{legend}}", "{{spacetime}}"]

    parts.append('<h2 id="links">Link load</h2>')
    heat, hinfo = ia.link_heatmap(result, x_range)
    if heat is None:
        parts.append('<p class="note">No link load recorded (only intra-node messages, or '
                     "recording was off).</p>")
    else:
        models["heatmap"] = heat
        parts.append("{{heatmap}}")
        if hinfo["links_shown"] < hinfo["links_total"]:
            notes.append(f"Link-load heatmap: the {hinfo['links_shown']} busiest of "
                         f"{hinfo['links_total']} loaded links (time-averaged contention).")
    parts.append(_links_table(result))
    notes.append("Utilisation spreads each message's bytes uniformly over its transfer "
                 "interval on every link of its route (background excluded).")

    series, missing = knee_runs_series(result, run_dir, background_levels, knee_runs)
    parts.append(_knee_section(series, missing, x_range, models))

    parts.append('<h2 id="ranks">Time per rank</h2>')
    models["ranks"], binfo = ia.rank_bars(result, x_range)
    parts.append("{{ranks}}")
    if binfo["rank_group"] > 1:
        notes.append(f"Time per rank: bars are means over groups of {binfo['rank_group']} "
                     "ranks.")

    parts.append('<h2 id="matrix">Communication matrix and message slowdown</h2>')
    models["matrix"] = ia.comm_matrix(result)
    models["slowdown"], sinfo = ia.slowdown_hist(result)
    parts.append('<div class="row">{{matrix}}{{slowdown}}</div>')
    if "slowed" in sinfo:
        parts.append(f'<p class="note">{sinfo["slowed"]:.1%} of the messages were slowed by '
                     "contention or background load (slowdown = actual transfer time over "
                     "the quiet-network time; 1 = no contention).</p>")

    # BokehJS core and widgets (the Divs), inlined: no CDN, works from file:// offline
    _JS = Resources(mode="inline", components=["bokeh", "bokeh-widgets"])
    script, divs = components(models)
    # Bokeh's random ids made stable here (not in the inlined BokehJS: nothing to renumber)
    marker = "\x00ccmod-split\x00"
    script, *div_texts = stable_ids(marker.join([script] + list(divs.values()))).split(marker)
    divs = dict(zip(divs.keys(), div_texts))
    body = "".join(parts)
    for key, div in divs.items():
        body = body.replace("{{" + key + "}}", div)
    title = title or report_title(result)
    nav = "".join(f'<a href="#{a}">{t}</a>' for a, t in (
        ("summary", "Summary"), ("spacetime", "Space-time"), ("links", "Link load"),
        ("knee", "Knee capacity"), ("ranks", "Per rank"), ("matrix", "Matrix")))
    doc = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
           f"<title>{_esc(title)}</title><meta name=\"viewport\" "
           "content=\"width=device-width,initial-scale=1\">"
           f"<style>{_CSS}</style>{_JS.render()}</head><body>"
           f"<h1>{_esc(title)}</h1><nav>{nav}</nav>" + _summary(result, sinfo)
           + "<h3>How to read this report</h3><ul class=\"notes\">"
           + "".join(f"<li>{_esc(n)}</li>" for n in notes) + "</ul>" + body
           + f"<p class=\"note\">Generated by ccmod from {_esc(result.options.get('trace', ''))}"
           + ".</p>" + script + "</body></html>\n")
    atomic_write_text(out, doc)
    return out


def _writable(out: Path) -> Path:
    """``out``, once its folder exists (made if needed) and it is not a folder itself: a bad
    output path fails in one line before the report is built (seconds for a large run),
    with the messages the atomic write would give."""
    ensure_dir(out.parent)
    return refuse_directory(out)


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_MODEL_ID = re.compile(r'(?<=["\'])p\d{4,}(?=["\'])')


def stable_ids(doc: str) -> str:
    """Replace Bokeh's random document ids and per-process model ids by stable ones.

    Same inputs must give the same bytes (project rule); Bokeh draws uuid4 document ids
    and numbers models with a process-wide counter. Ids are renumbered in order of first
    appearance.
    """
    uu: dict[str, str] = {}
    doc = _UUID.sub(lambda m: uu.setdefault(
        m.group(0), f"00000000-0000-4000-8000-{len(uu):012d}"), doc)
    ids: dict[str, str] = {}
    return _MODEL_ID.sub(lambda m: ids.setdefault(m.group(0), f"p{1000 + len(ids)}"), doc)


def write_static(run, out_dir, formats=("png", "svg"), background_levels=None,
                 knee_runs=None, run_dir=None) -> list[Path]:
    """Draw each report figure once (matplotlib) and save it in every format asked for."""
    from ccmod.outputs import figures as fg
    from ccmod.outputs.parquet import load_result
    if isinstance(run, (str, Path)):
        run_dir = Path(run)
    result = load_result(run_dir) if isinstance(run, (str, Path)) else run
    d = ensure_dir(Path(out_dir), "figure directory")
    title = report_title(result)
    figs = {"space_time": fg.space_time_figure(result)[0],
            "link_load": fg.link_heatmap_figure(result)[0],
            "time_per_rank": fg.rank_breakdown_figure(result)[0],
            "comm_matrix": fg.comm_matrix_figure(result)[0],
            "slowdown": fg.slowdown_figure(result)[0]}
    series, _ = knee_runs_series(result, run_dir, background_levels, knee_runs)
    if series:
        figs["knee"] = fg.knee_figure(series)
    written = []
    for name, fig in figs.items():
        if fig is None:
            continue
        fig.suptitle(title, fontsize=9)
        for fmt in formats:
            path = d / f"{name}.{fmt}"
            fg.save(fig, path, fmt)
            written.append(path)
    return written
