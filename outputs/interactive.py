"""Interactive report figures (Bokeh), built from an in-memory :class:`RunResult`.

Why Bokeh: it writes one self-contained HTML file with its JavaScript inlined (no server,
no CDN, opens from a file:// URL offline), ships numpy columns as binary base64 (compact
for millions of points), has linked ranges (every time axis zooms together) and hover
tools out of the box, and its CustomJS callbacks let the page switch between precomputed
levels of detail without a Python process behind it (pipit's report makes the same
choice). Plotly would inline ~3.5 MB of JavaScript and has no cheap level-of-detail hook;
Vega-Lite needs its runtime from a CDN or inlined as well and handles large tables poorly.

Level of detail of the space-time diagram: zoomed out, it shows an aggregated raster (each
pixel column holds the state that took most of its time) and an evenly spaced sample of
message lines; once the visible window is short enough to hold a few tens of thousands of
intervals, a CustomJS callback on the x range switches to the full-detail glyphs (every
state interval and every message, with hover). A line above the plot says which level is
shown.
"""
from __future__ import annotations

import numpy as np

from ccmod.outputs.base import ALL_STATE_NAMES, STATE_IDLE
from ccmod.outputs.raster import even_sample, group_rows, interval_coverage
from ccmod.outputs.sinkdata import resource_names, state_arrays

#: colours of compute, send, recv, wait, barrier, overhead, idle (index = state code)
STATE_COLORS = ("#4C72B0", "#55A868", "#C44E52", "#DD8452", "#8172B3", "#937860", "#E6E6E6")
#: most state intervals / messages shipped as full-detail glyphs (keeps the file < 20 MB)
DETAIL_STATES = 250_000
DETAIL_MESSAGES = 120_000
#: the detail level is switched on when about this many intervals are visible
VISIBLE_DETAIL = 30_000
_TOOLS = "xpan,xwheel_zoom,box_zoom,reset,save"


def _rgba(hexes) -> np.ndarray:
    return np.array([[int(h[i:i + 2], 16) for i in (1, 3, 5)] + [255] for h in hexes], np.uint8)


def space_time(result, ncols: int = 1200, max_rows: int = 128, max_lines: int = 2000,
               visible_detail: int = VISIBLE_DETAIL):
    """Space-time diagram with two levels of detail; returns (layout, x_range, info)."""
    from bokeh.layouts import column
    from bokeh.models import (ColumnDataSource, CustomJS, CustomJSHover, Div, HoverTool,
                              LinearColorMapper, Range1d)
    from bokeh.plotting import figure

    t_end = max(float(result.makespan_s), 1e-12)
    n = max(result.nranks, 1)
    s = state_arrays(result)
    rk, st, a, b = s["rank"], s["state"], s["t_start_s"], s["t_end_s"]
    m = result.messages
    info = {"ranks": n, "states": len(rk), "messages": len(m), "rank_group": 1}
    x_range = Range1d(0, t_end, bounds=(0, t_end), min_interval=t_end * 1e-9, name="time")
    p = figure(height=min(620, 140 + 9 * min(n, max_rows)), sizing_mode="stretch_width",
               x_range=x_range, y_range=Range1d(n, 0), tools=_TOOLS,
               active_scroll="xwheel_zoom", title="Space-time diagram",
               x_axis_label="time (s)", y_axis_label="rank", name="spacetime")
    # ---- aggregated level: raster image of states + sampled message lines
    rows, nrows, gsize = group_rows(np.arange(n), n, max_rows)
    info["rank_group"] = gsize
    cov = interval_coverage(rows[np.clip(rk, 0, n - 1)], st, a, b, nrows, len(STATE_COLORS),
                            ncols, t_end)
    covered = cov.sum(axis=1)
    # time of a pixel no recorded state covers is idle (as in the article's diagram)
    cov[:, STATE_IDLE, :] += np.maximum(gsize * 1.0 - covered, 0.0)
    img = _rgba(STATE_COLORS)[np.argmax(cov, axis=1)]            # (nrows, ncols, 4)
    # image row 0 sits at y = 0, which the flipped rank axis shows at the top: rank 0
    img32 = np.ascontiguousarray(img.view(np.uint32).reshape(nrows, ncols))
    ov_img = p.image_rgba(image=[img32], x=0, y=0, dw=t_end, dh=n)
    ts = m["t_start_s"].to_numpy()
    pick = even_sample(len(m), max_lines, ts)
    ov_src = ColumnDataSource({"x0": ts[pick], "x1": m["t_end_s"].to_numpy()[pick],
                               "y0": m["src"].to_numpy()[pick] + 0.5,
                               "y1": m["dst"].to_numpy()[pick] + 0.5})
    ov_lines = p.segment("x0", "y0", "x1", "y1", source=ov_src, color="black",
                         alpha=0.5 if len(pick) > 200 else 0.9, line_width=0.7)
    info["lines"] = int(len(pick))
    # ---- full-detail level: every state interval and message of a time window (the
    # whole run when it fits the file budget; else a window around the middle of the run,
    # complete inside: sampling would leave holes that look like data)
    w0, w1 = detail_window(a, b, ts, m["t_end_s"].to_numpy(), t_end, DETAIL_STATES,
                           DETAIL_MESSAGES)
    whole = w0 <= 0.0 and w1 >= t_end
    ks = np.nonzero((b > w0) & (a < w1))[0]
    km = np.nonzero((m["t_end_s"].to_numpy() > w0) & (ts < w1))[0]
    st_src = ColumnDataSource({"left": a[ks], "right": b[ks],
                               "bottom": rk[ks].astype(np.float32) + np.float32(0.05),
                               "top": rk[ks].astype(np.float32) + np.float32(0.95),
                               "code": st[ks].astype(np.int8)})
    cmap = LinearColorMapper(palette=list(STATE_COLORS), low=-0.5, high=len(STATE_COLORS) - 0.5)
    det_states = p.quad(left="left", right="right", bottom="bottom", top="top",
                        source=st_src, fill_color={"field": "code", "transform": cmap},
                        line_color=None, visible=False)
    msg_src = ColumnDataSource({
        "x0": ts[km], "x1": m["t_end_s"].to_numpy()[km],
        "y0": m["src"].to_numpy()[km].astype(np.float32) + np.float32(0.5),
        "y1": m["dst"].to_numpy()[km].astype(np.float32) + np.float32(0.5),
        "src": m["src"].to_numpy()[km].astype(np.int32),
        "dst": m["dst"].to_numpy()[km].astype(np.int32),
        "nbytes": m["nbytes"].to_numpy()[km].astype(np.float64),
        "slowdown": m["slowdown"].to_numpy()[km].astype(np.float32)})
    det_msgs = p.segment("x0", "y0", "x1", "y1", source=msg_src, color="black", alpha=0.8,
                         line_width=1.2, visible=False)
    p.add_tools(HoverTool(renderers=[det_msgs], tooltips=[
        ("message", "rank @src → rank @dst"), ("bytes", "@nbytes{0,0}"),
        ("start", "@x0{0.000000000} s"), ("end", "@x1{0.000000000} s"),
        ("slowdown", "@slowdown{0.00}×")], line_policy="interp"))
    state_name = CustomJSHover(args=dict(names=list(ALL_STATE_NAMES)),
                               code="return names[value] ?? String(value)")
    p.add_tools(HoverTool(renderers=[det_states], tooltips=[
        ("state", "@code{custom}"), ("rank", "@bottom{0}"), ("from", "@left{0.000000000} s"),
        ("to", "@right{0.000000000} s")], formatters={"@code": state_name}))
    info["detail_states"], info["detail_messages"] = int(len(ks)), int(len(km))
    info["detail_window_s"] = (w0, w1)
    # switch when the visible window would hold about `visible_detail` intervals
    items = max(len(ks) + len(km), 1)
    span = max(min(w1, t_end) - max(w0, 0.0), 1e-300)
    thr = t_end if whole and items <= visible_detail else \
        min(span, span * visible_detail / items)
    info["detail_span_s"] = thr
    where = "" if whole else (
        f" Full detail is kept for {max(w0, 0.0):.6g} s to {min(w1, t_end):.6g} s only "
        f"({len(ks):,} of {len(rk):,} state intervals, {len(km):,} of {len(m):,} messages: "
        "the whole run would exceed the file's size budget); elsewhere the view stays "
        "aggregated.")
    agg_text = (f"Aggregated view: each pixel column shows the state that took most of its "
                f"time{'' if gsize == 1 else f' in groups of {gsize} ranks'}; "
                f"{len(pick):,} of {len(m):,} messages drawn. Zoom in to a window shorter "
                f"than {thr:.3g} s for full detail.{where}")
    det_text = ("Full detail: every state interval and message in view; hover for numbers."
                + ("" if whole else f" (Kept for {max(w0, 0.0):.6g} s to "
                   f"{min(w1, t_end):.6g} s only.)"))
    status = Div(text=det_text if thr >= t_end else agg_text, name="st-status",
                 styles={"font-size": "0.85em", "color": "#444"})
    cb = CustomJS(args=dict(xr=x_range, thr=thr, w0=w0, w1=w1, ov=[ov_img, ov_lines],
                            det=[det_states, det_msgs], status=status, agg=agg_text,
                            det_text=det_text), code="""
const eps = 1e-9 * (w1 - w0);
const detail = (xr.end - xr.start) <= thr * 1.0000001 &&
               xr.start >= w0 - eps && xr.end <= w1 + eps;
for (const r of ov) r.visible = !detail;
for (const r of det) r.visible = detail;
status.text = detail ? det_text : agg;
""")
    x_range.js_on_change("start", cb)
    x_range.js_on_change("end", cb)
    if thr >= t_end:
        ov_img.visible = ov_lines.visible = False
        det_states.visible = det_msgs.visible = True
    p.ygrid.grid_line_color = None
    return column(status, p, sizing_mode="stretch_width"), x_range, info


def detail_window(a, b, ts, te, t_end: float, max_states: int, max_msgs: int):
    """Time window whose every state interval and message fit the detail budget.

    The whole run when it fits; else the widest window centred on the median state start
    that holds at most ``max_states`` intervals and ``max_msgs`` messages (bisection on its
    half-width; counts by binary search on sorted bounds).
    """
    if len(a) <= max_states and len(ts) <= max_msgs:
        return 0.0, t_end
    sa, sb = np.sort(a), np.sort(b)
    sts, ste = np.sort(ts), np.sort(te)
    mid = float(np.median(a)) if len(a) else float(np.median(ts))

    def count(sl, sr, lo, hi):  # intervals with right > lo and left < hi
        return int(np.searchsorted(sl, hi, "left") - np.searchsorted(sr, lo, "right"))

    lo_w, hi_w = 0.0, t_end
    for _ in range(60):
        w = 0.5 * (lo_w + hi_w)
        if count(sa, sb, mid - w, mid + w) <= max_states and \
                count(sts, ste, mid - w, mid + w) <= max_msgs:
            lo_w = w
        else:
            hi_w = w
    return mid - lo_w, mid + lo_w


def _legend_div(codes) -> str:
    return "".join(f'<span style="display:inline-block;margin-right:1em">'
                   f'<span style="display:inline-block;width:0.9em;height:0.9em;'
                   f'background:{STATE_COLORS[c]};border:1px solid #999;'
                   f'vertical-align:middle"></span> {ALL_STATE_NAMES[c]}</span>'
                   for c in codes)


def state_legend():
    from bokeh.models import Div
    return Div(text=_legend_div(range(len(STATE_COLORS))), styles={"font-size": "0.85em"})


def busiest_links(result, top: int) -> np.ndarray:
    """Resource ids of the ``top`` busiest links: time-averaged contention, then peak."""
    load = result.link_load
    if load is None or len(load) == 0:
        return np.zeros(0, np.int64)
    res = load["resource"].to_numpy().astype(np.int64)
    dur = (load["t_end_s"] - load["t_start_s"]).to_numpy()
    act = load["active"].to_numpy().astype(np.float64)
    size = int(res.max()) + 1
    weight = np.bincount(res, weights=act * dur, minlength=size)
    peak = np.zeros(size)
    np.maximum.at(peak, res, act)
    cand = np.nonzero((weight > 0) | (peak > 0))[0]
    order = np.lexsort((cand, -peak[cand], -weight[cand]))
    return cand[order][:top]


def link_heatmap(result, x_range, top: int = 30, ncols: int = 300):
    """Links × time cells (peak contention per bin, hover: utilisation); None when no load."""
    from bokeh.models import ColorBar, ColumnDataSource, FactorRange, HoverTool, LinearColorMapper
    from bokeh.palettes import Viridis256
    from bokeh.plotting import figure
    chosen = busiest_links(result, top)
    if len(chosen) == 0 or result.makespan_s <= 0:
        return None, {"links_shown": 0, "links_total": 0}
    load = result.link_load
    t_end = float(result.makespan_s)
    res = load["resource"].to_numpy().astype(np.int64)
    lut = np.full(int(res.max()) + 1, -1)
    lut[chosen] = np.arange(len(chosen))
    row = lut[res]
    sel = row >= 0
    t0, t1 = load["t_start_s"].to_numpy()[sel], load["t_end_s"].to_numpy()[sel]
    zero = np.zeros(int(sel.sum()), np.int64)
    act = interval_coverage(row[sel], zero, t0, t1, len(chosen), 1, ncols, t_end,
                            weight=load["active"].to_numpy()[sel].astype(float),
                            mode="max")[:, 0, :]
    util = np.zeros_like(act)
    if "utilisation" in load.columns:
        u = np.nan_to_num(load["utilisation"].to_numpy()[sel].astype(float))
        util = interval_coverage(row[sel], zero, t0, t1, len(chosen), 1, ncols, t_end,
                                 weight=u, mode="max")[:, 0, :]
    names = resource_names(result, chosen)
    names = [f"{nm} [{r}]" if names.count(nm) > 1 else nm for nm, r in zip(names, chosen)]
    li, ci = np.nonzero(act > 0)
    w = t_end / ncols
    src = ColumnDataSource({"x": (ci + 0.5) * w, "link": [names[i] for i in li.tolist()],
                            "active": act[li, ci], "util": util[li, ci] * 100,
                            "t0": ci * w, "t1": (ci + 1) * w})
    cmap = LinearColorMapper(palette=Viridis256, low=0, high=max(float(act.max()), 1.0))
    p = figure(height=min(520, 120 + 16 * len(chosen)), sizing_mode="stretch_width",
               x_range=x_range, y_range=FactorRange(*reversed(names)), tools=_TOOLS,
               active_scroll="xwheel_zoom", x_axis_label="time (s)",
               title=f"Link load: peak contention per time bin, {len(chosen)} busiest links")
    p.rect(x="x", y="link", width=w, height=0.95, source=src,
           fill_color={"field": "active", "transform": cmap}, line_color=None)
    p.add_tools(HoverTool(tooltips=[("link", "@link"), ("time", "@t0{0.000000} – @t1{0.000000} s"),
                                    ("peak contention", "@active{0}"),
                                    ("peak utilisation", "@util{0.0} %")]))
    p.add_layout(ColorBar(color_mapper=cmap, title="messages", width=10), "right")
    return p, {"links_shown": int(len(chosen)), "links_total": int(np.unique(res).size)}


def rank_bars(result, x_range, nbins: int = 400, max_bars: int = 128):
    """Stacked per-rank time by state in the visible time window (follows the x range)."""
    from bokeh.models import (ColumnDataSource, CustomJS, CustomJSHover, HoverTool,
                              LinearColorMapper)
    from bokeh.plotting import figure
    n = max(result.nranks, 1)
    t_end = max(float(result.makespan_s), 1e-12)
    s = state_arrays(result)
    rows, nrows, gsize = group_rows(np.arange(n), n, max_bars)
    ncat = len(STATE_COLORS)
    grid = interval_coverage(rows[np.clip(s["rank"], 0, n - 1)], s["state"], s["t_start_s"],
                             s["t_end_s"], nrows, ncat, nbins, t_end) * (t_end / nbins)
    counts = np.bincount(rows, minlength=nrows).astype(float)
    grid[:, STATE_IDLE, :] += np.maximum(counts[:, None] * t_end / nbins
                                         - grid.sum(axis=1), 0.0)
    grid /= np.maximum(counts, 1)[:, None, None]              # mean over a rank group
    names = list(ALL_STATE_NAMES)
    # one quad per (rank row, state), stacked: one renderer instead of six
    whole = grid.sum(axis=2)                                    # (nrows, ncat)
    top = np.cumsum(whole, axis=1)
    x = np.repeat(np.arange(nrows) * gsize, ncat).astype(float)
    half = 0.425 * gsize
    src = ColumnDataSource({"left": x - half, "right": x + half,
                            "bottom": (top - whole).reshape(-1), "top": top.reshape(-1),
                            "secs": whole.reshape(-1),
                            "state": np.tile(np.arange(ncat, dtype=np.int8), nrows),
                            "rank": x})
    flat = np.ascontiguousarray(grid.astype(np.float64).reshape(-1))
    cmap = LinearColorMapper(palette=list(STATE_COLORS), low=-0.5, high=ncat - 0.5)
    p = figure(height=300, sizing_mode="stretch_width", tools="xpan,xwheel_zoom,reset",
               title="Time per rank by state (whole run; follows the zoom of the time axes)",
               x_axis_label="rank" if gsize == 1 else f"rank (mean over groups of {gsize})",
               y_axis_label="time (s)")
    p.quad(left="left", right="right", bottom="bottom", top="top", source=src,
           fill_color={"field": "state", "transform": cmap}, line_color=None)
    state_name = CustomJSHover(args=dict(names=names), code="return names[value]")
    p.add_tools(HoverTool(tooltips=[("rank", "@rank{0}"), ("state", "@state{custom}"),
                                    ("time", "@secs{0.000000000} s")],
                          formatters={"@state": state_name}))
    cb = CustomJS(args=dict(xr=x_range, src=src, grid=flat, nrows=nrows, ncat=ncat,
                            nbins=nbins, t_end=t_end, title=p.title), code="""
const w = t_end / nbins, a = Math.max(xr.start, 0), b = Math.min(xr.end, t_end);
const lo = Math.floor(a / w), hi = Math.min(Math.ceil(b / w), nbins);
const d = src.data, n = nrows * ncat;
const bottom = new Float64Array(n), top = new Float64Array(n), secs = new Float64Array(n);
for (let r = 0; r < nrows; r++) {
  let acc = 0;
  for (let c = 0; c < ncat; c++) {
    let s = 0;
    const base = (r * ncat + c) * nbins;
    for (let k = lo; k < hi; k++) {
      const k0 = Math.max(a, k * w), k1 = Math.min(b, (k + 1) * w);
      if (k1 > k0) s += grid[base + k] * (k1 - k0) / w;
    }
    const i = r * ncat + c;
    bottom[i] = acc; acc += s; top[i] = acc; secs[i] = s;
  }
}
d.bottom = bottom; d.top = top; d.secs = secs;
src.change.emit();
title.text = "Time per rank by state in the visible window " + a.toPrecision(4) + " – " +
             b.toPrecision(4) + " s (follows the zoom of the time axes)";
""")
    x_range.js_on_change("start", cb)
    x_range.js_on_change("end", cb)
    return p, {"rank_group": gsize}


def knee_plots(series, x_range):
    """Packets/s over time (linked to the time axis) and against contention (the knee)."""
    from bokeh.layouts import row
    from bokeh.models import HoverTool, Legend, Span
    from bokeh.plotting import figure
    palette = ("#4C72B0", "#C44E52", "#55A868", "#DD8452", "#8172B3", "#937860")
    p1 = figure(height=300, sizing_mode="stretch_width", x_range=x_range, tools=_TOOLS,
                x_axis_label="time (s)", y_axis_label="packets/s",
                title=f"Throughput of {series[0].link}")
    p2 = figure(height=300, sizing_mode="stretch_width", tools="pan,wheel_zoom,reset,save",
                x_axis_label="contention (messages sharing the link)",
                y_axis_label="mean packets/s", title="Knee capacity (dotted: capacity left "
                                                     "by the background)")
    items1, items2 = [], []
    for i, s in enumerate(series):
        c = palette[i % len(palette)]
        lbl = f"background {s.level:.0%}"
        items1.append((lbl, [p1.line(s.t_s, s.pps, color=c, line_width=1.2)]))
        r = p2.line(s.active, s.active_pps, color=c)
        items2.append((lbl, [r, p2.scatter(s.active, s.active_pps, color=c, size=6)]))
        if np.isfinite(s.capacity_pps):
            p2.add_layout(Span(location=s.capacity_pps * (1 - s.level), dimension="width",
                               line_color=c, line_dash="dotted"))
    p2.add_tools(HoverTool(tooltips=[("contention", "@x{0}"), ("packets/s", "@y{0,0}")]))
    for p, items in ((p1, items1), (p2, items2)):
        p.add_layout(Legend(items=items, label_text_font_size="8pt"), "below")
    p2.y_range.start = 0
    return row(p1, p2, sizing_mode="stretch_width")


def comm_matrix(result, max_cells: int = 256):
    """Bytes from each rank (rows) to each rank (columns), log colour, hover."""
    from bokeh.models import ColorBar, HoverTool, LogColorMapper, NumeralTickFormatter
    from bokeh.palettes import Viridis256
    from bokeh.plotting import figure
    n = max(result.nranks, 1)
    m = result.messages
    rows, nrows, gsize = group_rows(np.arange(n), n, max_cells)
    src = m["src"].to_numpy().astype(np.int64)
    dst = m["dst"].to_numpy().astype(np.int64)
    mat = np.bincount(rows[src] * nrows + rows[dst],
                      weights=m["nbytes"].to_numpy().astype(np.float64),
                      minlength=nrows * nrows).reshape(nrows, nrows)
    img = np.where(mat > 0, mat, np.nan)
    hi = float(np.nanmax(img)) if (mat > 0).any() else 1.0
    lo = float(np.nanmin(img)) if (mat > 0).any() else 0.1
    cmap = LogColorMapper(palette=Viridis256, low=max(lo, 1.0), high=max(hi, lo * 1.01, 1.01),
                          nan_color="white")
    p = figure(width=480, height=430, x_range=(0, n), y_range=(n, 0), tools="pan,wheel_zoom,reset,save",
               x_axis_label="destination rank", y_axis_label="source rank",
               title="Bytes sent" + ("" if gsize == 1 else f" (blocks of {gsize} ranks)"))
    p.image(image=[np.ascontiguousarray(img)], x=0, y=0, dw=n, dh=n, color_mapper=cmap)
    p.add_tools(HoverTool(tooltips=[("bytes", "@image{0,0}")]))
    # plain numbers on the log colour bar (10,000 rather than 10^4)
    p.add_layout(ColorBar(color_mapper=cmap, title="bytes", width=10,
                          formatter=NumeralTickFormatter(format="0,0")), "right")
    return p


def slowdown_hist(result):
    """Histogram of message slowdown (log x when it spans more than 1.5×); also stats."""
    from bokeh.models import ColumnDataSource, HoverTool, NumeralTickFormatter, Span
    from bokeh.plotting import figure
    sd = result.messages["slowdown"].to_numpy().astype(np.float64)
    sd = sd[np.isfinite(sd) & (sd > 0)]
    info: dict = {"messages": int(len(sd))}
    logx = len(sd) > 0 and sd.max() / max(sd.min(), 1e-3) > 1.5
    p = figure(width=520, height=330, tools="pan,wheel_zoom,reset,save",
               x_axis_type="log" if logx else "linear", y_axis_label="messages",
               x_axis_label="slowdown (actual / quiet-network transfer time)",
               title="Message slowdown")
    p.xaxis.formatter = NumeralTickFormatter(format="0,0.[00]")   # plain numbers, also on log
    if len(sd):
        lo, hi = max(sd.min(), 1e-3), max(sd.max(), 1.0001)
        bins = np.geomspace(lo, hi * 1.0001, 40) if logx else np.linspace(lo, hi * 1.0001, 40)
        counts, edges = np.histogram(np.clip(sd, lo, None), bins=bins)
        src = ColumnDataSource({"l": edges[:-1], "r": edges[1:], "n": counts})
        p.quad(left="l", right="r", bottom=0, top="n", source=src, color="#4C72B0")
        p.add_tools(HoverTool(tooltips=[("slowdown", "@l{0.00} – @r{0.00}"),
                                        ("messages", "@n")]))
        q = np.percentile(sd, [50, 90, 99])
        info.update({"median": float(q[0]), "p90": float(q[1]), "p99": float(q[2]),
                     "max": float(sd.max()), "slowed": float((sd > 1.0 + 1e-9).mean())})
        for v in q:
            p.add_layout(Span(location=float(v), dimension="height", line_color="#C44E52",
                              line_dash="dashed"))
    return p, info
