"""Static figures for papers (matplotlib, imported lazily, object API on the Agg canvas).

``ccmod report --static`` draws each once and saves it as PNG and SVG. Every function
takes a :class:`ccmod.result.RunResult`, aggregates with numpy first and returns
``(figure, info)``, where ``info`` says what was aggregated or sampled.
"""
from __future__ import annotations

import base64
import io

import numpy as np

from ccmod.outputs.base import ALL_STATE_NAMES, STATE_IDLE
from ccmod.outputs.interactive import busiest_links
from ccmod.outputs.raster import even_sample, group_rows, interval_coverage
from ccmod.outputs.sinkdata import resource_names, state_arrays

#: colours of compute, send, recv, wait, barrier, idle (index = state code)
# compute, send, recv, wait, barrier, overhead, idle
STATE_COLORS = ("#4C72B0", "#55A868", "#C44E52", "#DD8452", "#8172B3", "#937860", "#E6E6E6")
_RC = {"svg.hashsalt": "ccmod", "svg.fonttype": "path", "font.size": 9,
       "axes.titlesize": 10, "figure.dpi": 100}


def _figure(w_in: float, h_in: float):
    from matplotlib.figure import Figure  # lazy: importing ccmod must not load matplotlib
    return Figure(figsize=(w_in, h_in), dpi=100, layout="constrained")


def save(fig, path, fmt: str) -> None:
    """Write ``fig`` as ``fmt`` (png or svg) to ``path``, reproducibly (no dates, fixed ids)."""
    import matplotlib
    meta = {"Software": None} if fmt == "png" else {"Date": None, "Creator": None}
    with matplotlib.rc_context(_RC):
        fig.savefig(path, format=fmt, dpi=100, metadata=meta)


def time_unit(t_end: float) -> tuple[float, str]:
    """(divisor, label) making ``t_end`` read between 1 and 1000."""
    for div, name in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")):
        if t_end >= div or div == 1e-9:
            return div, name
    return 1.0, "s"  # pragma: no cover


def _legend(fig, codes):
    """State legend below the axes (outside the data area, so it covers nothing)."""
    from matplotlib.patches import Patch
    fig.legend(handles=[Patch(facecolor=STATE_COLORS[c], edgecolor="#999999",
                              label=ALL_STATE_NAMES[c]) for c in codes],
               loc="outside lower center", fontsize=7, ncols=len(codes), frameon=False)


# ============================================================================ space-time
def space_time_figure(data, ncols: int = 1000, max_rows: int = 128, max_lines: int = 2000,
                      window: tuple[float, float] | None = None):
    """Timeline per rank (states as colours) with one line per (sampled) message.

    States are rasterised per pixel column (each pixel shows the state that took most of
    its time); more than ``max_rows`` ranks are grouped into consecutive blocks;
    at most ``max_lines`` messages are drawn, evenly spaced in start-time order.
    ``window=(t0, t1)`` draws only that time range (messages starting in it).
    """
    lo, hi = window if window is not None else (0.0, data.makespan_s)
    span = hi - lo
    n = data.nranks
    div, unit = time_unit(hi if window is None else span)
    info = {"ranks": n, "rank_group": 1, "messages": 0, "lines": 0,
            "states": data.rank_states is not None, "window": (lo, hi)}
    rows_of_rank, nrows, gsize = group_rows(np.arange(max(n, 1)), max(n, 1), max_rows)
    info["rank_group"] = gsize
    fig = _figure(11, min(9.0, 1.6 + 0.16 * nrows + 0.4))
    ax = fig.add_subplot()
    colors = np.array([[int(c[i:i + 2], 16) / 255 for i in (1, 3, 5)] for c in STATE_COLORS])
    # a close-up is labelled relative to its start (absolute µs of a long run are unreadable)
    origin = lo if window is not None else 0.0
    x_lo, x_hi = (lo - origin) / div, (hi - origin) / div
    if data.rank_states is not None and span > 0:
        s = state_arrays(data)
        rk = s["rank"]
        cov = interval_coverage(np.where(rk < n, rows_of_rank[np.clip(rk, 0, n - 1)], -1),
                                s["state"], s["t_start_s"] - lo, s["t_end_s"] - lo, nrows,
                                len(STATE_COLORS), ncols, span) / gsize
        cov[:, STATE_IDLE, :] += np.maximum(1.0 - cov.sum(axis=1), 0.0)  # idle is derived
        # each pixel shows the state that took most of its time (mixing colours would turn
        # fast send/recv alternation into an unreadable grey); no state at all → white
        covered = cov.sum(axis=1) > 0                        # (nrows, ncols)
        rgb = colors[np.argmax(cov, axis=1)]                 # (nrows, ncols, 3)
        rgb[~covered] = 1.0
        ax.imshow(rgb, aspect="auto", interpolation="nearest", extent=(x_lo, x_hi, nrows, 0))
        present = [c for c in range(len(STATE_COLORS)) if cov[:, c, :].sum() > 0]
        _legend(fig, present)
    m = data.messages
    if len(m) and span > 0:
        from matplotlib.collections import LineCollection
        ts = m["t_start_s"].to_numpy()
        idx = np.nonzero((ts >= lo) & (ts <= hi))[0] if window is not None else np.arange(len(m))
        info["messages"] = int(len(idx))
        sel = idx[even_sample(len(idx), max_lines, ts[idx])]
        src = m["src"].to_numpy()[sel].astype(np.int64)
        dst = m["dst"].to_numpy()[sel].astype(np.int64)
        ok = (src >= 0) & (src < n) & (dst >= 0) & (dst < n)
        sel, src, dst = sel[ok], src[ok], dst[ok]
        t0 = (ts[sel] - origin) / div
        t1 = (m["t_end_s"].to_numpy()[sel] - origin) / div
        seg = np.stack([np.stack([t0, rows_of_rank[src] + 0.5], 1),
                        np.stack([t1, rows_of_rank[dst] + 0.5], 1)], 1)
        ax.add_collection(LineCollection(seg, colors="black", linewidths=0.6,
                                         alpha=0.55 if len(sel) > 200 else 0.9))
        info["lines"] = int(len(sel))
    ax.set_xlim(x_lo, x_hi if x_hi > x_lo else x_lo + 1)
    ax.set_ylim(nrows, 0)
    ax.set_xlabel(f"time ({unit})" if window is None else
                  f"time ({unit}) after t = {lo:.9g} s")
    ax.set_ylabel("rank" if gsize == 1 else f"rank (groups of {gsize})")
    if nrows <= 32:
        ax.set_yticks(np.arange(nrows) + 0.5)
        ax.set_yticklabels([str(i * gsize) for i in range(nrows)])
    ax.set_title("Space-time diagram" if window is None else
                 f"Space-time diagram, detail of {span / div:.4g} {unit}")
    return fig, info


def detail_window(data, messages: int = 150, ncols: int = 1000):
    """A time window around the middle of the run holding about ``messages`` transfers.

    Returns None when the full diagram is readable already: every message drawn and the
    typical transfer at least a few pixel columns wide.
    """
    m = data.messages
    t_end = data.makespan_s
    if len(m) == 0 or t_end <= 0:
        return None
    ts = m["t_start_s"].to_numpy()
    te = m["t_end_s"].to_numpy()
    if len(m) <= messages and np.median(te - ts) >= 3 * t_end / ncols:
        return None
    order = np.argsort(ts, kind="stable")
    st = ts[order]
    # communication often comes in bursts separated by compute: stay inside the burst of
    # the median message (bursts split where starts are > 2 % of the run apart)
    mid = len(st) // 2
    cut = np.nonzero(np.diff(st) > 0.02 * t_end)[0] + 1
    lo_i = int(cut[cut <= mid].max()) if (cut <= mid).any() else 0
    hi_i = int(cut[cut > mid].min()) if (cut > mid).any() else len(st)
    a = max(lo_i, min(mid - messages // 2, hi_i - messages))
    pick = order[a:min(a + messages, hi_i)]
    lo, hi = float(ts[pick].min()), float(te[pick].max())
    if hi <= lo:
        return None
    pad = 0.05 * (hi - lo)
    lo, hi = max(0.0, lo - pad), min(t_end, hi + pad)
    if hi - lo > 0.5 * t_end:
        return None  # a close-up would not be much closer
    return lo, hi


# ============================================================================ link load
def link_heatmap_figure(data, top: int = 30, ncols: int = 400):
    """Links × time heatmaps of contention and (when known) utilisation."""
    chosen = busiest_links(data, top)
    info = {"links_total": 0, "links_shown": int(len(chosen))}
    if len(chosen) == 0 or data.makespan_s <= 0:
        return None, info
    load = data.link_load
    info["links_total"] = int(load["resource"].nunique())
    t_end = data.makespan_s
    div, unit = time_unit(t_end)
    res = load["resource"].to_numpy().astype(np.int64)
    lut = np.full(int(res.max()) + 1, -1)
    lut[chosen] = np.arange(len(chosen))
    row = lut[res]
    sel = row >= 0
    t0 = load["t_start_s"].to_numpy()[sel]
    t1 = load["t_end_s"].to_numpy()[sel]
    panels = [("contention (active messages)", load["active"].to_numpy()[sel], "viridis")]
    if "utilisation" in load.columns:
        u = load["utilisation"].to_numpy()[sel]
        if np.isfinite(u).any():
            panels.append(("utilisation (% of capacity)", np.nan_to_num(u) * 100, "magma"))
    # the peak per time bin (not the mean) keeps short communication bursts visible
    names = resource_names(data, chosen)
    h = min(9.0, 1.2 + 0.16 * len(chosen)) * len(panels)
    fig = _figure(11, h)
    axes = fig.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
    for ax, (label, w, cmap) in zip(axes, panels):
        grid = interval_coverage(row[sel], np.zeros(len(t0), np.int64), t0, t1, len(chosen), 1,
                                 ncols, t_end, weight=w, mode="max")[:, 0, :]
        im = ax.imshow(grid, aspect="auto", interpolation="nearest", cmap=cmap,
                       extent=(0, t_end / div, len(chosen), 0))
        fig.colorbar(im, ax=ax, label=label, shrink=0.9)
        if len(chosen) <= 40:
            ax.set_yticks(np.arange(len(chosen)) + 0.5)
            ax.set_yticklabels([n if len(n) <= 28 else n[:26] + "…" for n in names],
                               fontsize=7)
        ax.set_title(f"Link load: peak {label} per time bin, {len(chosen)} busiest links")
    axes[-1].set_xlabel(f"time ({unit})")
    return fig, info


# ============================================================================ per rank
def rank_breakdown_figure(data, max_bars: int = 256):
    """Stacked bars of the time each rank spent per state (idle up to the makespan)."""
    n = data.nranks
    t_end = data.makespan_s
    secs = np.zeros((max(n, 1), len(STATE_COLORS)))
    src = "states"
    if data.rank_states is not None:
        s = state_arrays(data)
        rk, st = s["rank"], s["state"]
        ok = (rk >= 0) & (rk < n)
        dur = s["t_end_s"] - s["t_start_s"]
        np.add.at(secs, (rk[ok], st[ok]), dur[ok])
    elif data.ranks is not None and len(data.ranks):
        src = "ranks"
        r = data.ranks
        for code, col in enumerate(("compute_s", "send_s", "recv_s", "wait_s", "barrier_s")):
            if col in r.columns:
                idx = r["rank"].to_numpy().astype(np.int64) if "rank" in r.columns \
                    else np.arange(len(r))
                ok = (idx >= 0) & (idx < n)
                secs[idx[ok], code] = r[col].to_numpy()[ok]
    if src == "ranks" or secs[:, STATE_IDLE].sum() == 0:
        secs[:, STATE_IDLE] = np.maximum(t_end - secs[:, :STATE_IDLE].sum(axis=1), 0)
    rows, nrows, gsize = group_rows(np.arange(len(secs)), len(secs), max_bars)
    grouped = np.zeros((nrows, secs.shape[1]))
    np.add.at(grouped, rows, secs)
    counts = np.bincount(rows, minlength=nrows)[:, None]
    grouped /= np.maximum(counts, 1)
    div, unit = time_unit(max(t_end, grouped.sum(axis=1).max(initial=0)))
    fig = _figure(11, 3.6)
    ax = fig.add_subplot()
    x = np.arange(nrows) * gsize
    bottom = np.zeros(nrows)
    for code in range(secs.shape[1]):
        v = grouped[:, code] / div
        if v.sum() > 0:
            ax.bar(x, v, width=gsize * (0.85 if nrows <= 64 else 1.0), bottom=bottom,
                   color=STATE_COLORS[code], label=ALL_STATE_NAMES[code],
                   align="center" if gsize == 1 else "edge", linewidth=0)
            bottom += v
    ax.set_xlabel("rank" if gsize == 1 else f"rank (mean over groups of {gsize})")
    ax.set_ylabel(f"time ({unit})")
    ax.set_title("Time per rank by state")
    fig.legend(loc="outside lower center", fontsize=7, ncols=6, frameon=False)
    return fig, {"rank_group": gsize, "source": src}


def comm_matrix_figure(data, max_cells: int = 256):
    """Heatmap of bytes sent from each rank (rows) to each rank (columns), log colour."""
    from matplotlib.colors import LogNorm
    n = max(data.nranks, 1)
    m = data.messages
    rows, nrows, gsize = group_rows(np.arange(n), n, max_cells)
    src = m["src"].to_numpy().astype(np.int64)
    dst = m["dst"].to_numpy().astype(np.int64)
    ok = (src >= 0) & (src < n) & (dst >= 0) & (dst < n)
    mat = np.bincount(rows[src[ok]] * nrows + rows[dst[ok]],
                      weights=m["nbytes"].to_numpy()[ok].astype(np.float64),
                      minlength=nrows * nrows).reshape(nrows, nrows)
    fig = _figure(6.2, 5.2)
    ax = fig.add_subplot()
    if mat.max() > 0:
        masked = np.ma.masked_where(mat <= 0, mat)
        im = ax.imshow(masked, cmap="viridis", interpolation="nearest",
                       norm=LogNorm(vmin=max(mat[mat > 0].min(), 1), vmax=mat.max()),
                       extent=(0, n, n, 0))
        cb = fig.colorbar(im, ax=ax, label="bytes")
        _plain_log(cb.ax.yaxis)
    ax.set_xlabel("destination rank")
    ax.set_ylabel("source rank")
    ax.set_title("Communication matrix" + ("" if gsize == 1 else f" (blocks of {gsize} ranks)"))
    return fig, {"rank_group": gsize, "pairs": int((mat > 0).sum())}


def slowdown_figure(data):
    """Histogram of message slowdown (actual transfer time / quiet-network time)."""
    m = data.messages
    sd = m["slowdown"].to_numpy().astype(np.float64) if "slowdown" in m.columns else np.zeros(0)
    sd = sd[np.isfinite(sd) & (sd > 0)]
    info = {"messages": int(len(sd))}
    fig = _figure(6.2, 3.6)
    ax = fig.add_subplot()
    if len(sd):
        lo, hi = max(sd.min(), 1e-3), max(sd.max(), 1.0001)
        if hi / lo > 1.5:
            bins = np.geomspace(lo, hi * 1.0001, 50)
            ax.set_xscale("log")
            _plain_log(ax.xaxis)
        else:
            bins = np.linspace(lo, hi * 1.0001, 50)
        counts, edges = np.histogram(np.clip(sd, lo, None), bins=bins)
        ax.stairs(counts, edges, fill=True, color="#4C72B0")
        q = np.percentile(sd, [50, 90, 99])
        info.update({"median": float(q[0]), "p90": float(q[1]), "p99": float(q[2]),
                     "max": float(sd.max()), "slowed": float((sd > 1.0 + 1e-9).mean())})
        for v, lbl in zip(q, ("median", "p90", "p99")):
            ax.axvline(v, color="#C44E52", lw=0.8, ls="--")
            ax.text(v, ax.get_ylim()[1] * 0.95, f" {lbl}", fontsize=7, va="top")
    ax.set_xlabel("slowdown (actual / quiet transfer time)")
    ax.set_ylabel("messages")
    ax.set_title("Message slowdown")
    return fig, info


def _plain_log(axis) -> None:
    """Label a log axis with plain numbers (0.5, 1, 2, 10, 1000) instead of 10^x."""
    from matplotlib.ticker import FuncFormatter
    fmt = FuncFormatter(lambda v, _: f"{v:,.6g}")
    axis.set_major_formatter(fmt)
    axis.set_minor_formatter(FuncFormatter(lambda v, _: ""))


def knee_figure(series: list[KneeSeries]):
    """Two panels: packets/s over time per level, and against contention (the knee)."""
    fig = _figure(11, 3.8)
    ax1, ax2 = fig.subplots(1, 2)
    palette = ("#4C72B0", "#C44E52", "#55A868", "#DD8452", "#8172B3", "#937860")
    t_max = max(s.makespan_s for s in series)
    div, unit = time_unit(t_max)
    for i, s in enumerate(series):
        c = palette[i % len(palette)]
        lbl = f"background {s.level:.0%}"
        ax1.plot(s.t_s / div, s.pps, color=c, lw=1, label=lbl)
        ax2.plot(s.active, s.active_pps, "o-", color=c, ms=4, label=lbl)
        if np.isfinite(s.capacity_pps):
            eff = s.capacity_pps * (1 - s.level)
            ax2.axhline(eff, color=c, ls=":", lw=0.8)
    ax2.set_ylim(bottom=0)
    ax2.set_xlim(left=0)
    ax1.set_xlabel(f"time ({unit})")
    ax1.set_ylabel("packets/s")
    ax1.set_title(f"Throughput of {series[0].link}", fontsize=9)
    ax2.set_xlabel("contention (messages sharing the link)")
    ax2.set_ylabel("mean packets/s")
    ax2.set_title("Knee capacity (dotted: capacity left by the background)", fontsize=9)
    fig.legend(*ax1.get_legend_handles_labels(), loc="outside lower center", fontsize=7,
               ncols=len(series), frameon=False)
    return fig
