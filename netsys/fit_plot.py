"""``ccmod fit --plot``: measurements, fitted model and relative residuals on log axes.

matplotlib is imported here only (lazily, by the CLI when ``--plot`` is given) and used
through the object API with the Agg canvas: no pyplot, no global backend change.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ccmod.errors import CcmodInputError

PLOT_FORMATS = ("png", "svg", "pdf")
#: raw samples drawn at most (every k-th sample beyond that; deterministic)
MAX_POINTS = 20000


def model_curve(model, max_bytes: float, npts: int = 60):
    """Points of the model per segment (NaN between segments so jumps are drawn as gaps)."""
    mins = model.min_bytes.astype(float)
    top = max(float(max_bytes), float(mins[-1]) * 2, 1.0)
    xs, ys = [], []
    for k, lo in enumerate(mins):
        hi = mins[k + 1] if k + 1 < mins.size else top
        if hi <= lo:
            continue
        x = np.unique(np.concatenate(([lo], np.geomspace(max(lo, 1.0), hi, npts))))
        x = x[x < hi] if k + 1 < mins.size else x
        xs.append(np.append(x, np.nan))
        ys.append(np.append(model.quiet_s(x), np.nan))
    return np.concatenate(xs), np.concatenate(ys)


def plot_fit(report, path) -> None:
    """Write the plot of a :class:`netsys.fit_report.FitReport` to ``path`` (png/svg/pdf)."""
    ext = Path(path).suffix.lower().lstrip(".")
    if ext not in PLOT_FORMATS:
        raise CcmodInputError(f"plot file must end in .png, .svg or .pdf, got '{path}'",
                              source="--plot")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from ccmod.atomic import atomic_path

    e = report.estimator
    fig = Figure(figsize=(8, 7.5 if e is not None else 5), layout="constrained")
    FigureCanvasAgg(fig)
    if e is not None:
        ax, axr = fig.subplots(2, 1, sharex=True, height_ratios=[2.2, 1])
    else:
        ax, axr = fig.subplots(1, 1), None
    model = report.model
    max_bytes = float(e.sizes_.max()) if e is not None else float(model.min_bytes[-1]) * 4 + 1e6
    if e is not None:
        x = np.concatenate([m.nbytes for m in report.measurements]).astype(float)
        y = np.concatenate([m.one_way_s for m in report.measurements])
        env = getattr(report, "envelope", None)
        if env is not None:     # a trace: every used message behind its bin's quantile
            x, y = env.sample_nbytes.astype(float), env.sample_s
        if np.any(e.counts_ > 1) or env is not None:
            step = max(1, x.size // MAX_POINTS)
            ax.scatter(x[::step], y[::step], s=4, alpha=0.15, color="0.5", lw=0,
                       label=("messages" if env is not None else "samples")
                       + (f" (1 in {step})" if step > 1 else ""))
        ax.plot(e.sizes_, e.center_s_, "o", ms=4, color="C0",
                label="measured (per size)" if env is None else
                f"lower envelope ({env.quantile:g} quantile per size bin)")
    cx, cy = model_curve(model, max_bytes)
    ax.plot(cx, cy, "-", color="C3", lw=1.6, label="model")
    for b in model.min_bytes[1:]:
        ax.axvline(b, color="C3", ls=":", lw=0.8)
        if axr is not None:
            axr.axvline(b, color="C3", ls=":", lw=0.8)
    ax.set_xscale("symlog", linthresh=1.0, linscale=0.4)
    ax.set_yscale("log")
    ax.set_ylabel("one-way time (s)")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    title = str(model.source or "model")
    if len(title) > 90:
        title = "..." + title[-87:]
    ax.set_title(title, fontsize=9)
    if axr is not None:
        axr.axhline(0, color="0.3", lw=0.8)
        axr.axhspan(-10, 10, color="C2", alpha=0.08, lw=0)
        axr.plot(e.sizes_, 100 * e.rel_err_, "o", ms=4, color="C0", label="fit")
        axr.plot(e.sizes_, 100 * e.loo_rel_err_, "o", ms=5, mfc="none", color="C1",
                 label="leave-one-size-out")
        axr.set_xscale("symlog", linthresh=1.0, linscale=0.4)
        axr.set_ylabel("relative error (%)")
        axr.set_xlabel("message size (bytes)")
        axr.grid(True, alpha=0.3)
        axr.legend(loc="best", fontsize=8)
        axr.set_title(f"median |rel err| {e.median_rel_err_:.1%}, max {e.max_rel_err_:.1%}"
                      + ("  POOR FIT" if e.poor_fit_ else ""), fontsize=9)
    else:
        ax.set_xlabel("message size (bytes)")
    try:
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=ext, dpi=120)
    except OSError as exc:
        raise CcmodInputError(f"cannot write plot: {exc.strerror or exc}", source=str(path)) from None
