"""``ccmod fit`` as a Python function: read benchmark files, fit, report.

:func:`fit_files` returns a :class:`FitReport` (the cost model, the estimator, the per-size
table, warnings); the CLI only formats it (:meth:`FitReport.text` / :meth:`FitReport.to_json`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ccmod.errors import CcmodInputError
from ccmod.jsonio import jsonable
from ccmod.netsys.cost import PiecewiseLinearCost
from ccmod.netsys.fit_math import check_params
from ccmod.netsys.pingpong import Measurements, ReadOptions, detect_format, read_measurements, read_text

if TYPE_CHECKING:   # scikit-learn (~1-2 s to import) only once the inputs are read and checked
    from ccmod.netsys.fit import PiecewiseLinearFit


@dataclass
class FitReport:
    """Result of :func:`fit_files`.

    Attributes
    ----------
    model : PiecewiseLinearCost
        What ``-o`` writes and ``ccmod run --cost`` reads.
    estimator : PiecewiseLinearFit or None
        None for a converted SimGrid model (nothing was fitted).
    measurements : list of Measurements
    hops : list of int
        Route length of each input.
    notes, warnings : list of str
    envelope : netsys.fit_envelope.EnvelopeBins or None
        Set when the model was fitted to a trace's lower envelope (``ccmod fit TRACE``).
    """

    model: PiecewiseLinearCost
    estimator: PiecewiseLinearFit | None
    measurements: list[Measurements] = field(default_factory=list)
    hops: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    envelope: object = None

    @property
    def poor_fit(self) -> bool:
        return bool(self.estimator is not None and self.estimator.poor_fit_)

    def table(self):
        """Per measured size: samples, spread, fitted centre, prediction, errors (DataFrame)."""
        import pandas as pd
        e = self.estimator
        if e is None:
            return pd.DataFrame()
        sp = e.spread_
        return pd.DataFrame({
            "nbytes": e.sizes_.astype(np.int64), "n": sp["n"], "measured_s": e.center_s_,
            "median_s": sp["median_s"], "min_s": sp["min_s"], "p10_s": sp["p10_s"],
            "p90_s": sp["p90_s"], "max_s": sp["max_s"], "std_s": sp["std_s"],
            "predicted_s": e.predicted_s_, "rel_err": e.rel_err_, "loo_rel_err": e.loo_rel_err_,
            "segment": e.segment_of_size_})

    def segments(self) -> list[dict]:
        m = self.model
        out = []
        for k in range(m.min_bytes.size):
            d = {"segment": k, "min_bytes": int(m.min_bytes[k]),
                 "max_bytes": None if k + 1 == m.min_bytes.size else int(m.min_bytes[k + 1]),
                 "latency_s": float(m.seg_latency_s[k]), "bandwidth_Bps": float(m.seg_bandwidth_Bps[k])}
            if self.estimator is not None:
                lo, hi, nsz, nsamp = self.estimator.segment_sizes_[k]
                d.update(measured_min_bytes=lo, measured_max_bytes=hi, n_sizes=nsz, n_samples=nsamp)
            out.append(d)
        if self.envelope is not None:
            from ccmod.netsys.fit_envelope import segment_support
            for d, sup in zip(out, segment_support(self)):
                d.update(n_messages=sup["n_messages"], n_message_sizes=sup["n_message_sizes"])
        return out

    def metrics(self) -> dict:
        e = self.estimator
        if e is None:
            return {}
        i = int(np.argmax(np.abs(e.rel_err_)))
        return {"r2": _finite(e.r2_), "median_rel_err": e.median_rel_err_,
                "max_rel_err": e.max_rel_err_, "max_rel_err_at_bytes": int(e.sizes_[i]),
                "cv": "leave-one-size-out", "cv_median_rel_err": _finite(e.cv_median_rel_err_),
                "cv_max_rel_err": _finite(e.cv_max_rel_err_), "n_segments": e.n_segments_,
                "bic": _finite(e.bic_), "bic_by_segments": {str(k): v for k, v in
                                                           e.bic_by_segments_.items()},
                "n_sizes": int(e.sizes_.size), "n_samples": int(np.sum(e.counts_)),
                "per_hop_latency_s": e.per_hop_latency_s_,
                "per_hop_latency_fitted": bool(e.per_hop_fitted_)}

    def inputs(self) -> list[dict]:
        out = []
        for m, h in zip(self.measurements, self.hops):
            out.append({"file": m.source, "format": m.format, "rows": len(m),
                        "sizes": int(np.unique(m.nbytes).size), "raw_samples": bool(m.raw),
                        "kind": m.kind, "hops": h, "notes": m.notes})
        return out

    def to_json(self) -> dict:
        """One JSON-ready object: inputs, model, segments, metrics, per-size table, warnings."""
        d = {"inputs": self.inputs(), "model": self.model.to_dict(), "segments": self.segments(),
             "metrics": self.metrics(), "poor_fit": self.poor_fit, "notes": self.notes,
             "warnings": self.warnings}
        tab = self.table()
        d["per_size"] = [jsonable(row) for row in tab.to_dict(orient="records")]
        pairs = [p for m in self.measurements if m.pairs for p in m.pairs]
        if pairs:
            d["pairs"] = {"summary": pair_summary(pairs), "pairs": pairs}
        if self.envelope is not None:
            from ccmod.netsys.fit_envelope import envelope_json
            d["envelope"] = envelope_json(self)
        return d

    def text(self) -> str:
        """The human report of ``ccmod fit``."""
        from ccmod.netsys.fit_text import format_report
        return format_report(self)


def _finite(v):
    return None if v is None or not math.isfinite(v) else float(v)


def pair_summary(pairs: list[dict]) -> dict:
    """Median/min/max latency and bandwidth over node pairs, and the outliers."""
    lat = np.array([p["latency_s"] for p in pairs])
    bw = np.array([p["bandwidth_Bps"] for p in pairs])
    slow_lat = [pairs[i] for i in np.argsort(-lat)[:5]]
    slow_bw = [pairs[i] for i in np.argsort(bw)[:5]]
    return {"n_pairs": len(pairs),
            "latency_s": {"median": float(np.median(lat)), "min": float(lat.min()),
                          "max": float(lat.max())},
            "bandwidth_Bps": {"median": float(np.median(bw)), "min": float(bw.min()),
                              "max": float(bw.max())},
            "pairs_latency_over_1.5x_median": int(np.sum(lat > 1.5 * np.median(lat))),
            "pairs_bandwidth_under_0.67x_median": int(np.sum(bw < np.median(bw) / 1.5)),
            "highest_latency": slow_lat, "lowest_bandwidth": slow_bw}


def parse_hops(text: str | None, nfiles: int) -> list[int] | None:
    """``--hops 2,4``: one route length per input file (one value applies to all)."""
    if text is None or str(text).strip() == "":
        return None
    try:
        vals = [int(t) for t in str(text).split(",") if t.strip() != ""]
    except ValueError:
        raise CcmodInputError(f"hops must be integers separated by commas, got '{text}'",
                              source="--hops") from None
    if any(v < 0 for v in vals) or not vals:
        raise CcmodInputError(f"hops must be >= 0, got '{text}'", source="--hops")
    if len(vals) == 1:
        return vals * nfiles
    if len(vals) != nfiles:
        raise CcmodInputError(f"{len(vals)} hop counts for {nfiles} input files", source="--hops",
                              hint="give one per file, in the same order")
    return vals


def parse_breakpoints(text):
    """``--breakpoints auto|none|4096,65536`` -> "auto", "none" or a list of sizes."""
    if text is None:
        return "auto"
    if not isinstance(text, str):
        return list(text)
    s = text.strip().lower()
    if s in ("auto", "none"):
        return s
    try:
        vals = [int(float(t)) for t in s.split(",") if t.strip()]
    except ValueError:
        raise CcmodInputError(f"breakpoints must be 'auto', 'none' or sizes like 4096,65536, "
                              f"got '{text}'", source="--breakpoints") from None
    if not vals or any(v < 0 for v in vals):
        raise CcmodInputError(f"breakpoints must be sizes >= 0, got '{text}'", source="--breakpoints")
    return vals


#: a segment holding fewer than this fraction of the measured sizes (and at least 3), or this
#: fast (B/s, "flat"), is degenerate
DEGENERATE_MIN_FRACTION = 0.03
DEGENERATE_MAX_BANDWIDTH_BPS = 1e13


def degenerate_segments(est) -> list[int]:
    """Segments (never the first) that fit a handful of sizes or are flat (huge bandwidth)."""
    out = []
    need = max(3, int(np.ceil(DEGENERATE_MIN_FRACTION * est.sizes_.size)))
    for k in range(1, est.latency_s_.size):
        nsz = est.segment_sizes_[k][2] if getattr(est, "segment_sizes_", None) else need
        if nsz < need or est.bandwidth_Bps_[k] > DEGENERATE_MAX_BANDWIDTH_BPS:
            out.append(k)
    return out


def merge_degenerate(est, x, y, hops=None):
    """Refit without the breakpoints of degenerate segments (merged into the one before).

    A breakpoint search over noisy data can isolate a few sizes around a protocol switch
    into a segment with an absurd slope (taurus: 5 sizes from 1317 to 1382 B at 6e15 B/s);
    such a segment predicts nothing outside those sizes. Returns ``(estimator, notes)``.
    """
    bad = degenerate_segments(est)
    if not bad:
        return est, []
    keep = [int(m) for k, m in enumerate(est.min_bytes_) if k > 0 and k not in bad]
    notes = [f"merged degenerate segment [{int(est.min_bytes_[k])}, "
             f"{int(est.min_bytes_[k + 1]) if k + 1 < est.min_bytes_.size else 'inf'}) B "
             f"({est.segment_sizes_[k][2] if getattr(est, 'segment_sizes_', None) else '?'} sizes, "
             f"{est.bandwidth_Bps_[k]:.3g} B/s) into its neighbour" for k in bad]
    params = est.get_params()
    params["breakpoints"] = keep if keep else "none"
    new = type(est)(**params)
    try:
        new.fit(x, y, hops=hops)
    except CcmodInputError:
        return est, []
    return new, notes


def fit_files(paths, fmt: str = "auto", options: ReadOptions | None = None, *,
              breakpoints="auto", packet_size: int | None = None, max_segments: int = 4,
              robust: bool = False, hops=None, per_hop_latency_s: float = 0.0,
              ref_hops: int = 2) -> FitReport:
    """Read ping-pong measurements and fit a piecewise-linear quiet-cost model.

    Parameters
    ----------
    paths : sequence of path-like
        Benchmark outputs (pooled: repeated runs give per-size spread).
    fmt : str
        Input format of every file (``"auto"`` detects each).
    options : ReadOptions, optional
        CSV columns/units, IMB table choice, raw-latency size.
    breakpoints, packet_size, max_segments, robust, per_hop_latency_s, ref_hops
        See :class:`netsys.fit.PiecewiseLinearFit`.
    hops : str or sequence of int, optional
        Route length (resources) of each file; default ``ref_hops`` for all.

    Returns
    -------
    FitReport
    """
    paths = [str(p) for p in paths]
    if not paths:
        raise CcmodInputError("no input file given", hint="ccmod fit osu_latency.out -o model.json")
    opts = options or ReadOptions()
    fmts = [fmt] * len(paths)
    if fmt in ("auto", "simgrid-json"):
        fmts = [fmt if fmt != "auto" else detect_format(read_text(p), p) for p in paths]
    if "simgrid-json" in fmts:
        if len(paths) > 1:
            raise CcmodInputError("a SimGrid JSON model is converted on its own, not pooled with "
                                  "other inputs", source=paths[fmts.index("simgrid-json")])
        from ccmod.netsys.pp_simgrid import read_simgrid_json
        model, notes, warnings = read_simgrid_json(paths[0])
        return FitReport(model, None, [], [], notes, warnings)
    hop_list = parse_hops(hops, len(paths)) if isinstance(hops, (str, type(None))) else \
        parse_hops(",".join(map(str, hops)), len(paths))
    ms = [read_measurements(p, f, opts) for p, f in zip(paths, fmts)]
    hop_list = hop_list or [int(ref_hops)] * len(ms)
    src = paths[0] if len(paths) == 1 else ", ".join(Path(p).name for p in paths)
    return fit_measurements(ms, hop_list, src, breakpoints=breakpoints, packet_size=packet_size,
                            max_segments=max_segments, robust=robust,
                            per_hop_latency_s=per_hop_latency_s, ref_hops=ref_hops)


def fit_measurements(ms, hop_list, src: str, *, breakpoints="auto", packet_size=None,
                     max_segments: int = 4, robust: bool = False, per_hop_latency_s: float = 0.0,
                     ref_hops: int = 2) -> FitReport:
    """Fit already read :class:`Measurements` (one route length each in ``hop_list``).

    What :func:`fit_files` does after reading; also the last step of fitting a trace's
    lower envelope (``netsys.fit_envelope``). ``src`` names the data in the model file.
    """
    x = np.concatenate([m.nbytes for m in ms]).astype(float)
    y = np.concatenate([m.one_way_s for m in ms])
    h = np.concatenate([np.full(len(m), hh, float) for m, hh in zip(ms, hop_list)])
    warnings, notes = [], []
    kinds = {m.kind for m in ms}
    if "throughput" in kinds:
        warnings.append("bandwidth-test input: times are n / bandwidth of a stream of messages, "
                        "so the fitted 'latency' is the per-message gap, not the one-way latency "
                        "(fit osu_latency / IMB PingPong output for the quiet cost)")
    if len(kinds) > 1:
        warnings.append("inputs mix ping-pong latencies and bandwidth-test times: they measure "
                        "different things")
    bps = parse_breakpoints(breakpoints)
    check_params(max_segments, packet_size, per_hop_latency_s)
    from ccmod.netsys.fit import PiecewiseLinearFit
    est = PiecewiseLinearFit(breakpoints=bps, packet_size=packet_size, max_segments=max_segments,
                             robust=robust, ref_hops=ref_hops, per_hop_latency_s=per_hop_latency_s)
    hops_arg = h if len(set(hop_list)) > 1 or hop_list[0] != ref_hops else None
    est.fit(x, y, hops=hops_arg)
    if breakpoints in ("auto", None) and packet_size is None:
        est, merged = merge_degenerate(est, x, y, hops_arg)
        notes.extend(merged)
    if len(set(hop_list)) > 1:
        if est.per_hop_raw_s_ < 0:
            warnings.append(f"fitted per-hop latency {est.per_hop_raw_s_ * 1e9:.3g} ns < 0 "
                            "(longer routes measured faster): set to 0")
        notes.append(f"per-hop latency fitted from hop counts {sorted(set(hop_list))}: "
                     f"{est.per_hop_latency_s_ * 1e9:.4g} ns per route resource")
    elif hop_list[0] != ref_hops:
        notes.append(f"measured on {hop_list[0]} hops, referred to {ref_hops} with "
                     f"--per-hop-latency {per_hop_latency_s:g} s")
    if est.poor_fit_:
        warnings.append(f"POOR FIT: median relative error {est.median_rel_err_:.1%} > "
                        f"{est.poor_fit_threshold:.0%}: a piecewise-linear model does not describe "
                        "these measurements well (noisy or non-monotone data? try --robust, more "
                        "--max-segments, or separate the protocols/placements)")
    extra = {"inputs": [{"file": m.source, "format": m.format, "hops": hh}
                        for m, hh in zip(ms, hop_list)]}
    model = est.to_cost_model(source=src, extra=extra)
    return FitReport(model, est, ms, hop_list, notes, warnings)
