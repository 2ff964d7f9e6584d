"""Convert an already fitted SimGrid segmented-regression JSON into a ccmod cost model.

The SimGrid network-calibration tutorial (docs/source/tuto_network_calibration, Grid'5000
*dahu*) stores, per size range ``[min_x, max_x)``, a slope ``coefficient`` (``coeff`` in the
``dhist`` files) in s/byte and a noise model of the intercept: a normal mixture
(``mean``/``sd``/``prob``, *ckmeans*) or a histogram (``xbr`` breaks, ``height``, of the
log of the time when ``log`` is true, *dhist*). SimGrid samples that noise per message;
ccmod is deterministic, so the intercept becomes the mixture's (histogram's) **mean**:

    T(n) = E[noise] + coefficient * n          for min_x <= n < max_x

Below the first ``min_x`` (63305 B in ``pingpong_*.json``: SimGrid does not calibrate small
messages there) the first segment is extended down to 0 B, and the output says so.
"""
from __future__ import annotations

import json
import math

import numpy as np

from ccmod.errors import CcmodInputError
from ccmod.netsys.cost import PiecewiseLinearCost
from ccmod.netsys.pingpong import read_text

#: bandwidth used for a segment whose slope is 0 (SimGrid allows flat segments)
FLAT_BANDWIDTH_BPS = 1e30


def _histogram_mean(seg: dict, src: str) -> float:
    try:
        br = np.asarray(seg["xbr"], float)
        h = np.asarray(seg["height"], float)
    except (KeyError, TypeError, ValueError) as exc:
        raise CcmodInputError(f"dhist segment needs numeric 'xbr' and 'height': {exc}", source=src)
    if br.size != h.size + 1 or h.size == 0 or np.any(np.diff(br) <= 0) or np.any(h < 0):
        raise CcmodInputError("dhist segment: 'xbr' must increase and have one more entry than "
                              "'height' (>= 0)", source=src)
    width = np.diff(br)
    p = h * width
    if not p.sum() > 0:
        raise CcmodInputError("dhist segment histogram has no mass", source=src)
    p = p / p.sum()
    if seg.get("log", True):
        # value = exp(u), u uniform in each bin: E = (e^hi - e^lo) / (hi - lo)
        means = (np.exp(br[1:]) - np.exp(br[:-1])) / width
    else:
        means = (br[1:] + br[:-1]) / 2.0
    return float(np.sum(p * means))


def read_simgrid_json(path) -> tuple[PiecewiseLinearCost, list[str], list[str]]:
    """Convert a SimGrid ``*_ckmeans.json`` / ``*_dhist.json`` model.

    Returns
    -------
    model : PiecewiseLinearCost
    notes : list of str
        How it was converted.
    warnings : list of str
        E.g. a model that drops at a segment boundary (not monotone).
    """
    src = str(path)
    text = read_text(path)
    def finite(tok: str) -> float:
        v = float(tok)
        if not np.isfinite(v):
            raise ValueError(tok)
        return v

    try:
        d = json.loads(text, parse_float=finite, parse_constant=lambda tok: finite(tok))
    except json.JSONDecodeError as exc:
        raise CcmodInputError(f"not valid JSON: {exc.msg}", source=src, line=exc.lineno) from None
    except ValueError as exc:
        raise CcmodInputError(f"non-finite number {exc} in the model", source=src,
                              hint="every coefficient must be a finite number") from None
    if isinstance(d, dict) and d.get("format") == "ccmod-cost-model":
        raise CcmodInputError("already a ccmod cost model: use it directly with --cost", source=src)
    if not isinstance(d, dict) or not isinstance(d.get("seg"), list) or not d["seg"]:
        raise CcmodInputError("not a SimGrid segmented-regression model (no 'seg' list)",
                              source=src, hint="expected the tutorial's *_ckmeans.json/*_dhist.json")
    groups: dict[tuple[float, float], list[dict]] = {}
    kind = None
    for i, seg in enumerate(d["seg"]):
        if not isinstance(seg, dict):
            raise CcmodInputError(f"seg[{i}] is not an object", source=src)
        try:
            key = (float(seg["min_x"]), float(seg["max_x"]))
        except (KeyError, TypeError, ValueError):
            raise CcmodInputError(f"seg[{i}] needs numeric min_x and max_x", source=src) from None
        kind = "dhist" if "xbr" in seg else "ckmeans"
        groups.setdefault(key, []).append(seg)
    rows = []
    for (lo, hi), segs in sorted(groups.items()):
        try:
            if kind == "dhist":
                intercept = float(np.mean([_histogram_mean(s, src) for s in segs]))
                coef = float(np.mean([float(s["coeff"]) for s in segs]))
            else:
                prob = np.array([float(s["prob"]) for s in segs])
                mean = np.array([float(s["mean"]) for s in segs])
                cf = np.array([float(s["coefficient"]) for s in segs])
                if not prob.sum() > 0:
                    raise ValueError("mixture probabilities sum to 0")
                intercept = float(np.sum(prob * mean) / prob.sum())
                coef = float(np.sum(prob * cf) / prob.sum())
        except (KeyError, TypeError, ValueError) as exc:
            raise CcmodInputError(f"segment [{lo:g}, {hi:g}): bad or missing field {exc}",
                                  source=src) from None
        if not (math.isfinite(intercept) and math.isfinite(coef)):
            raise CcmodInputError(f"segment [{lo:g}, {hi:g}) is not finite", source=src)
        rows.append((lo, hi, intercept, coef))
    notes = [f"SimGrid {kind} model, {len(rows)} segment(s): intercept = mean of the "
             f"{'normal mixture' if kind == 'ckmeans' else 'histogram'}, bandwidth = 1/coefficient"]
    warnings = []
    for (lo0, hi0, _, _), (lo1, _, _, _) in zip(rows, rows[1:]):
        if lo1 != hi0:
            notes.append(f"gap/overlap between {hi0:g} and {lo1:g} B: each segment starts at its min_x")
    mins = [int(math.ceil(r[0])) for r in rows]
    if mins[0] > 0:
        notes.append(f"sizes below {mins[0]} B are outside the SimGrid model: its first segment "
                     "is extended down to 0 B")
        mins[0] = 0
    lat, bw = [], []
    for lo, hi, intercept, coef in rows:
        if intercept < 0:
            warnings.append(f"segment [{lo:g}, ...) has a negative intercept {intercept:.3g} s, "
                            "set to 0")
            intercept = 0.0
        if coef <= 0:
            warnings.append(f"segment [{lo:g}, ...) has slope {coef:.3g} s/B <= 0: made flat")
            b = FLAT_BANDWIDTH_BPS
        else:
            b = min(1.0 / coef, FLAT_BANDWIDTH_BPS)
        lat.append(intercept)
        bw.append(b)
    monotone = True
    for k in range(1, len(mins)):
        left = lat[k - 1] + mins[k] / bw[k - 1]
        right = lat[k] + mins[k] / bw[k]
        if right < left * (1 - 1e-12):
            monotone = False
            warnings.append(f"the SimGrid model drops from {left * 1e6:.3g} us to "
                            f"{right * 1e6:.3g} us at {mins[k]} B: not monotone in size (kept as "
                            "is; the engine's inverse works per segment)")
    extra = {"simgrid": {"file": src, "kind": kind, "segments_in_file": len(rows),
                         "calibrated_from_bytes": float(rows[0][0]),
                         "bandwidth_base": d.get("bandwidth_base"),
                         "latency_base": d.get("latency_base")},
             "fit": {"method": f"converted from a SimGrid {kind} segmented regression (noise "
                               "replaced by its mean)", "monotone": monotone,
                     "n_segments": len(rows)}}
    model = PiecewiseLinearCost(mins, lat, bw, ref_hops=2, per_hop_latency_s=0.0, source=src,
                                extra=extra)
    return model, notes, warnings
