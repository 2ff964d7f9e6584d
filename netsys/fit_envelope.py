"""Fit the quiet-network cost from a trace's own message times: the lower envelope.

Most messages of a real run also waited (a late receiver, a rendezvous, a shared link), so
their measured times lie *above* the quiet cost ``T(n)``. :func:`lower_envelope` groups the
per-message times by size (log-spaced bins, narrow enough that a bin normally holds one
message size) and keeps a low quantile of each bin (quantile regression per bin): the
time that only the least disturbed messages of that size achieved. :func:`fit_envelope`
fits the usual monotone piecewise-linear model (:class:`netsys.fit.PiecewiseLinearFit`,
every kept bin one point, equally weighted in relative terms) and reports how many
messages and message sizes support each segment. What a "measured time" of a message is,
and which messages are used, is decided by the caller (``workloads.msgtimes``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ccmod.errors import CcmodInputError
from ccmod.netsys.pingpong import Measurements
from ccmod.units import fmt_time

#: default low quantile of each size bin
QUANTILE = 0.1
#: default fewest messages a size bin needs to be used
MIN_MESSAGES = 2
#: default size bins per decade (x1.12 wide: powers of two fall into separate bins)
BINS_PER_DECADE = 20
#: a bin with fewer messages than this gives a quantile close to its minimum (noted)
FEW_MESSAGES = 10


@dataclass
class EnvelopeBins:
    """Per size bin: the messages in it and their low quantile (the lower envelope).

    Attributes
    ----------
    lo_bytes, hi_bytes : int64[b]
        Smallest and largest message size in the bin.
    nbytes : int64[b]
        Representative size (median size of the bin's messages, rounded).
    n_messages, n_sizes : int64[b]
        Messages and distinct sizes in the bin.
    quantile_s, median_s, min_s : float64[b]
        Low quantile, median and minimum of the bin's times.
    kept : bool[b]
        Bin has at least ``min_messages`` messages (only kept bins are fitted).
    quantile, min_messages, bins_per_decade : the parameters used.
    counts : dict
        Message counts given by the caller (how many were used, why others were not).
    compare : dict or None
        Set by :func:`compare`.
    sample_nbytes, sample_s : ndarray
        Every message's size and time (sorted by bin, then time).
    """

    lo_bytes: np.ndarray
    hi_bytes: np.ndarray
    nbytes: np.ndarray
    n_messages: np.ndarray
    n_sizes: np.ndarray
    quantile_s: np.ndarray
    median_s: np.ndarray
    min_s: np.ndarray
    kept: np.ndarray
    quantile: float = QUANTILE
    min_messages: int = MIN_MESSAGES
    bins_per_decade: int = BINS_PER_DECADE
    counts: dict = field(default_factory=dict)
    compare: dict | None = None
    #: every message's size and time (for the plot)
    sample_nbytes: np.ndarray | None = None
    sample_s: np.ndarray | None = None

    def rows(self, predicted_s=None, segment=None) -> list[dict]:
        out = []
        for i in range(self.nbytes.size):
            d = {"nbytes": int(self.nbytes[i]), "lo_bytes": int(self.lo_bytes[i]),
                 "hi_bytes": int(self.hi_bytes[i]), "n_messages": int(self.n_messages[i]),
                 "n_sizes": int(self.n_sizes[i]), "quantile_s": float(self.quantile_s[i]),
                 "median_s": float(self.median_s[i]), "min_s": float(self.min_s[i]),
                 "kept": bool(self.kept[i])}
            if predicted_s is not None:
                d["predicted_s"] = float(predicted_s[i])
                d["segment"] = None if segment is None or segment[i] < 0 else int(segment[i])
            out.append(d)
        return out


def check_envelope_options(quantile, min_messages, bins_per_decade):
    """Fail with one line on an envelope option out of range (the fit and ``ccmod fit`` call it
    before reading the inputs)."""
    if not 0.0 <= float(quantile) < 1.0:
        raise CcmodInputError(f"quantile must be in [0, 1), got {quantile}", source="--quantile",
                              hint="a low quantile such as 0.05 or 0.1")
    if int(min_messages) < 1:
        raise CcmodInputError(f"min messages must be >= 1, got {min_messages}",
                              source="--min-messages")
    if int(bins_per_decade) < 1:
        raise CcmodInputError(f"bins per decade must be >= 1, got {bins_per_decade}",
                              source="--bins-per-decade")


def lower_envelope(nbytes, time_s, *, quantile: float = QUANTILE,
                   min_messages: int = MIN_MESSAGES,
                   bins_per_decade: int = BINS_PER_DECADE) -> EnvelopeBins:
    """Low quantile of the message times per log-spaced size bin.

    Parameters
    ----------
    nbytes : array-like of int
        Message sizes (bytes, >= 0).
    time_s : array-like of float
        Measured time of each message (seconds, > 0).
    quantile : float
        Quantile of each bin's times (0 = the minimum; numpy's linear interpolation).
    min_messages : int
        Bins with fewer messages are not used (reported with ``kept=False``).
    bins_per_decade : int
        Size bins per factor 10 of the size; 0-byte messages have their own bin.

    Returns
    -------
    EnvelopeBins
    """
    check_envelope_options(quantile, min_messages, bins_per_decade)
    x = np.asarray(nbytes, dtype=np.int64).ravel()
    t = np.asarray(time_s, dtype=float).ravel()
    if x.size != t.size:
        raise CcmodInputError(f"{x.size} sizes but {t.size} times")
    with np.errstate(divide="ignore"):
        key = np.where(x > 0, 1 + np.floor(bins_per_decade * np.log10(np.maximum(x, 1)) + 1e-9),
                       0).astype(np.int64)
    order = np.lexsort((t, key))
    x, t, key = x[order], t[order], key[order]
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if x.size else np.zeros(0, int)
    ends = np.r_[starts[1:], x.size].astype(int)
    cols = {k: [] for k in ("lo", "hi", "rep", "n", "nsz", "q", "med", "min")}
    for a, b in zip(starts, ends):
        xs, ts = x[a:b], t[a:b]
        cols["lo"].append(int(xs.min())); cols["hi"].append(int(xs.max()))
        cols["rep"].append(int(round(float(np.median(xs)))))
        cols["n"].append(b - a); cols["nsz"].append(int(np.unique(xs).size))
        cols["q"].append(float(np.quantile(ts, quantile, method="inverted_cdf"))); cols["med"].append(float(np.median(ts)))
        cols["min"].append(float(ts[0]))
    n = np.asarray(cols["n"], np.int64)
    return EnvelopeBins(np.asarray(cols["lo"], np.int64), np.asarray(cols["hi"], np.int64),
                        np.asarray(cols["rep"], np.int64), n, np.asarray(cols["nsz"], np.int64),
                        np.asarray(cols["q"]), np.asarray(cols["med"]), np.asarray(cols["min"]),
                        n >= int(min_messages), float(quantile), int(min_messages),
                        int(bins_per_decade), sample_nbytes=x, sample_s=t)


def fit_envelope(nbytes, time_s, *, source: str, label: str, notes=(), counts=None,
                 quantile: float = QUANTILE, min_messages: int = MIN_MESSAGES,
                 bins_per_decade: int = BINS_PER_DECADE, **fit_kw):
    """Fit the monotone piecewise-linear quiet cost to the lower envelope of message times.

    Parameters
    ----------
    nbytes, time_s : array-like
        One measured time per message (see :func:`lower_envelope`).
    source : str
        The trace(s), named in the model file.
    label : str
        How the times were obtained (shown as the input's format).
    notes : sequence of str
        Notes about the input (which messages were used).
    counts : dict, optional
        Message counts to report (e.g. ``MessageTimes.quiet_samples`` counts).
    quantile, min_messages, bins_per_decade
        See :func:`lower_envelope`.
    **fit_kw
        ``breakpoints``, ``packet_size``, ``max_segments``, ``robust``, ``ref_hops``,
        ``per_hop_latency_s`` as for :func:`netsys.fit_report.fit_measurements`.

    Returns
    -------
    FitReport
        With ``envelope`` set (bins, parameters, per-segment support).
    """
    from ccmod.netsys.fit_report import fit_measurements
    env = lower_envelope(nbytes, time_s, quantile=quantile, min_messages=min_messages,
                         bins_per_decade=bins_per_decade)
    env.counts = dict(counts or {})
    k = env.kept
    if int(np.sum(k)) < 2:
        have = (f"{int(np.sum(k))} message size(s)" if env.nbytes.size else "no message")
        raise CcmodInputError(
            f"{have} with at least {env.min_messages} usable message(s) (of "
            f"{int(np.sum(env.n_messages))} usable messages in {env.nbytes.size} size bin(s)): "
            "a latency + bandwidth line needs at least 2 sizes",
            hint="lower --min-messages, or use a trace with messages of several sizes (or "
                 "fit ping-pong output instead)")
    if np.any(env.quantile_s[k] <= 0):
        raise CcmodInputError("message times must be > 0 seconds")
    ms = Measurements(source=source, format=label, nbytes=env.nbytes[k].copy(),
                      one_way_s=env.quantile_s[k].copy(), kind="latency", raw=False,
                      notes=list(notes))
    ref_hops = int(fit_kw.get("ref_hops", 2))
    try:
        rep = fit_measurements([ms], [ref_hops], source, **fit_kw)
    except CcmodInputError as exc:
        if "do not grow" not in exc.what:
            raise
        sizes = ", ".join(f"{int(n)} B: {fmt_time(q)}" for n, q in
                          zip(env.nbytes[k][:6], env.quantile_s[k][:6]))
        raise CcmodInputError(
            f"the lower envelope of the message times does not grow with the size ({sizes}): "
            "no bandwidth can be fitted", hint="too few or too disturbed messages per size; "
            "see the bins with --min-messages 1 --json, or fit ping-pong output") from None
    rep.envelope = env
    few = int(np.median(env.n_messages[k]))
    if few < FEW_MESSAGES:
        rep.notes.append(f"median {few} message(s) per size bin: each bin's {quantile:g} "
                         "quantile is close to its fastest message, so one disturbed or "
                         "mistimed message moves it")
    dropped = env.nbytes.size - int(np.sum(k))
    if dropped:
        rep.notes.append(f"{dropped} size bin(s) with fewer than {env.min_messages} message(s) "
                         f"({int(np.sum(env.n_messages[~k]))} messages) were not fitted")
    return rep


def segment_support(rep) -> list[dict]:
    """Per model segment: kept bins, messages and distinct message sizes that support it."""
    env = rep.envelope
    seg = envelope_segments(rep)
    out = []
    for s in range(rep.model.min_bytes.size):
        m = (seg == s) & env.kept
        out.append({"segment": s, "n_bins": int(np.sum(m)),
                    "n_messages": int(np.sum(env.n_messages[m])),
                    "n_message_sizes": int(np.sum(env.n_sizes[m]))})
    return out


def envelope_segments(rep) -> np.ndarray:
    """Segment of each bin (-1 for a bin not fitted)."""
    env = rep.envelope
    seg = np.searchsorted(rep.model.min_bytes, env.nbytes, side="right") - 1
    return np.where(env.kept, seg, -1)


def compare(rep, other, name: str) -> dict:
    """The envelope and the fitted model next to another cost model (e.g. a ping-pong fit).

    Per fitted size bin: the other model's time; ratios envelope / other and fitted /
    other (median, min, max over the bins). Stored in ``rep.envelope.compare``.
    """
    env = rep.envelope
    k = env.kept
    sizes = env.nbytes[k].astype(float)
    other_s = np.asarray(other.quiet_s(sizes), float)
    r_env = env.quantile_s[k] / other_s
    r_fit = np.asarray(rep.model.quiet_s(sizes), float) / other_s

    def stats(r):
        return {"median": float(np.median(r)), "min": float(np.min(r)), "max": float(np.max(r))}

    out = {"model": name, "nbytes": env.nbytes[k].astype(int).tolist(),
           "other_s": other_s.tolist(), "envelope_over_other": stats(r_env),
           "fitted_over_other": stats(r_fit)}
    env.compare = out
    return out


def envelope_json(rep) -> dict:
    env = rep.envelope
    pred = rep.model.quiet_s(env.nbytes.astype(float))
    d = {"quantile": env.quantile, "min_messages": env.min_messages,
         "bins_per_decade": env.bins_per_decade, "messages": env.counts,
         "bins": env.rows(pred, envelope_segments(rep)),
         "segment_support": segment_support(rep)}
    if env.compare is not None:
        d["compare"] = env.compare
    return d


def envelope_text(rep) -> list[str]:
    """Lines of the text report about the envelope (replace the per-size table)."""
    env = rep.envelope
    c = env.counts
    lines = []
    if c:
        why = ", ".join(f"{c[k]} {k.replace('_', ' ')}" for k in
                        ("self_messages", "no_completion", "receiver_late", "nonpositive")
                        if c.get(k))
        lines.append(f"messages: {c.get('used', 0)} of {c.get('messages', 0)} used"
                     + (f" (left out: {why})" if why else ""))
    lines.append(f"lower envelope: {env.quantile:g} quantile per size bin "
                 f"({env.bins_per_decade} bins per decade, at least {env.min_messages} "
                 "messages per bin)")
    lines.append(f"  {'seg':>3} {'bins':>5} {'messages':>9} {'sizes':>6}")
    for s in segment_support(rep):
        lines.append(f"  {s['segment']:>3} {s['n_bins']:>5} {s['n_messages']:>9} "
                     f"{s['n_message_sizes']:>6}")
    pred = rep.model.quiet_s(env.nbytes.astype(float))
    lines.append(f"  {'bytes':>9} {'messages':>9} {'q' + format(env.quantile, 'g'):>10} "
                 f"{'median':>10} {'min':>10} {'predicted':>10} {'rel err':>8}")
    rows = range(env.nbytes.size)
    if env.nbytes.size > 40:
        rows = [i for i in rows if env.kept[i]][:40]
    for i in rows:
        rel = (pred[i] - env.quantile_s[i]) / env.quantile_s[i]
        size = (f"{env.nbytes[i]}" if env.n_sizes[i] == 1
                else f"~{env.nbytes[i]}")
        lines.append(f"  {size:>9} {env.n_messages[i]:>9} {fmt_time(env.quantile_s[i]):>10} "
                     f"{fmt_time(env.median_s[i]):>10} {fmt_time(env.min_s[i]):>10} "
                     f"{fmt_time(pred[i]):>10} "
                     + (f"{rel:>+8.2%}" if env.kept[i] else "  (not fitted)"))
    if env.nbytes.size > len(rows):
        lines.append(f"  ({env.nbytes.size} size bins: the first 40 fitted ones shown; all in --json)")
    c = env.compare
    if c is not None:
        e, f = c["envelope_over_other"], c["fitted_over_other"]
        lines.append(f"compared with {c['model']} at the {len(c['nbytes'])} fitted sizes: "
                     f"envelope / that model median {e['median']:.3g}x ({e['min']:.3g}x .. "
                     f"{e['max']:.3g}x), fitted / that model median {f['median']:.3g}x "
                     f"({f['min']:.3g}x .. {f['max']:.3g}x)")
    return lines


__all__ = ["EnvelopeBins", "lower_envelope", "fit_envelope", "segment_support", "compare",
           "envelope_json", "envelope_text"]
