"""``ccmod sweep-report results.parquet``: one self-contained HTML page about a sweep.

For every swept parameter (a parameter column with more than one value) a figure of the
makespan against it, with a best / average / worst band: at each value of the parameter,
*best* is the smallest makespan among the sweep's rows with that value (over every other
parameter and seed), *avg* their mean and *worst* the largest. When the rows carry
``--bounds`` columns (``bound_best_s``, ``bound_worst_s``) their means are drawn as dashed
lines too. Then the article's Figure 5 view: knee capacity (``knee_pps``: mean packets/s
through the most loaded link) against the background load (a model's mean load for
``exp:``/``file:`` backgrounds), with the same band. Figures are matplotlib SVG inlined in
the page (no network access needed to view it).
"""
from __future__ import annotations

import html
import io
import math
import os
from pathlib import Path

import numpy as np

from ccmod.errors import CcmodInputError


def read_results(path) -> pd.DataFrame:
    """The sweep table from ``.parquet`` or ``.csv``."""
    path = Path(path)
    if not path.exists():
        raise CcmodInputError("sweep results not found", source=os.fspath(path))
    import pandas as pd     # here: a wrong path fails without importing it (~0.7 s)

    from ccmod.sweep import output_kind
    try:
        return pd.read_parquet(path) if output_kind(path) == "parquet" else pd.read_csv(path)
    except CcmodInputError:
        raise
    except Exception as exc:  # noqa: BLE001 - any unreadable file is reported in one line
        raise CcmodInputError(f"cannot read the sweep results: {exc}".replace("\n", " "),
                              source=os.fspath(path)) from None


def _bg_level(v) -> float:
    """A background cell as a load fraction (a model's mean load)."""
    try:
        return float(v)
    except (TypeError, ValueError):
        pass
    try:
        from ccmod.netsys.background import make_background
        bg = make_background(str(v))
        if hasattr(bg, "mean_load"):
            return float(bg.mean_load())
    except CcmodInputError:
        pass
    return math.nan


def _svg(fig) -> str:
    import matplotlib.pyplot as plt
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]


def _band_figure(x_labels, xs, groups, ylabel, title, dashed=None):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    lo = np.array([g.min() for g in groups])
    mean = np.array([g.mean() for g in groups])
    hi = np.array([g.max() for g in groups])
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    ax.fill_between(xs, lo, hi, alpha=0.25, color="#1f77b4", label="best .. worst")
    ax.plot(xs, mean, "o-", color="#1f77b4", label="avg")
    for name, ys, style in (dashed or []):
        ax.plot(xs, ys, style, color="#d62728", label=name)
    ax.set_xticks(xs)
    ax.set_xticklabels(x_labels, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _svg(fig)


def _cell_text(v) -> str:
    import pandas as pd
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def sweep_report(results, out_html) -> Path:
    """Write the HTML report of the sweep table ``results`` to ``out_html`` (atomically)."""
    from ccmod.atomic import atomic_write_text
    df = read_results(results)
    from ccmod.sweep import RESULT_COLUMNS
    if "makespan_s" not in df.columns:
        raise CcmodInputError("not a ccmod sweep table (no makespan_s column)",
                              source=os.fspath(results))
    params = [c for c in df.columns if c not in RESULT_COLUMNS]
    ok = df[df["error"].isna()] if "error" in df.columns else df
    ok = ok[np.isfinite(ok["makespan_s"].to_numpy(float))]
    parts = [f"<h1>ccmod sweep report</h1><p>{html.escape(os.fspath(results))}: "
             f"{len(df)} rows, {len(ok)} without error.</p>",
             "<p>Bands: at each value of a parameter, <b>best</b> is the smallest makespan "
             "among the rows with that value (over every other parameter and seed), "
             "<b>avg</b> their mean, <b>worst</b> the largest.</p>"]
    if len(ok):
        best = ok.loc[ok["makespan_s"].idxmin()]
        cells = "".join(f"<tr><th>{html.escape(c)}</th><td>{html.escape(_cell_text(best[c]))}"
                        f"</td></tr>" for c in params + ["makespan_s"])
        parts.append(f"<h2>Best point</h2><table>{cells}</table>")
    # seeds are what the bands span, not a parameter to plot against
    swept = [c for c in params if c != "seed" and ok[c].astype(str).nunique() > 1] \
        if len(ok) else []
    for c in swept:
        col = ok[c]
        vals = list(dict.fromkeys(col.astype(object).where(col.notna(), None).tolist()))
        numeric = all(isinstance(v, (int, float, np.integer, np.floating)) and v is not None
                      for v in vals)
        if numeric:
            vals = sorted(vals)
        groups = [ok.loc[(col == v) if v is not None else col.isna(), "makespan_s"]
                  .to_numpy(float) for v in vals]
        dashed = []
        for bcol, name, style in (("bound_best_s", "bounds: best (no load)", "--"),
                                  ("bound_worst_s", "bounds: worst (95th pct)", ":")):
            if bcol in ok.columns and ok[bcol].notna().any():
                dashed.append((name, [np.nanmean(ok.loc[(col == v) if v is not None else
                                                         col.isna(), bcol].to_numpy(float))
                                      for v in vals], style))
        xs = np.arange(len(vals))
        parts.append(f"<h2>Makespan vs {html.escape(c)}</h2>" + _band_figure(
            [_cell_text(v) for v in vals], xs, groups, "makespan (s)", f"makespan vs {c}",
            dashed))
    # the article's Figure 5: knee capacity vs background load
    parts.append("<h2>Knee capacity vs background load</h2>")
    if "knee_pps" in ok.columns and ok["knee_pps"].notna().any():
        if "background" in ok.columns:
            level = ok["background"].map(_bg_level)
        else:
            import pandas as pd
            level = pd.Series(0.0, index=ok.index)
        good = ok[np.isfinite(level.to_numpy(float)) & ok["knee_pps"].notna()]
        lv = level[good.index]
        xs_vals = sorted(set(lv.tolist()))
        groups = [good.loc[lv == v, "knee_pps"].to_numpy(float) for v in xs_vals]
        parts.append("<p>Knee capacity: mean packets/s through the most loaded link (most "
                     "bytes) over the run; background as its mean load.</p>")
        parts.append(_band_figure([f"{v:.3g}" for v in xs_vals], np.arange(len(xs_vals)),
                                  groups, "packets/s", "knee capacity vs background load"))
    else:
        parts.append("<p>No knee capacity in this table.</p>")
    page = ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>ccmod sweep report"
            "</title><style>body{font-family:sans-serif;max-width:60em;margin:auto}"
            "table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:2px 6px;"
            "text-align:left}svg{max-width:100%;height:auto}</style></head><body>"
            + "\n".join(parts) + "</body></html>\n")
    out = Path(out_html)
    atomic_write_text(out, page)
    return out
