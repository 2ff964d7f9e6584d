"""Human-readable ``ccmod fit`` report (the CLI prints it; ``--json`` prints data instead)."""
from __future__ import annotations

import numpy as np

from ccmod.units import fmt_bw, fmt_time

#: print the per-size table in the text report up to this many sizes (always in --json)
TEXT_TABLE_MAX_SIZES = 40


def _pct(v) -> str:
    return "-" if v is None else f"{v:.2%}"


def format_report(rep) -> str:
    """Text of a :class:`netsys.fit_report.FitReport`."""
    lines = []
    if rep.measurements:
        lines.append("inputs:")
        for d in rep.inputs():
            lines.append(f"  {d['file']}: {d['format']}, {d['rows']} rows, {d['sizes']} sizes, "
                         f"hops {d['hops']}")
            lines += [f"    - {n}" for n in d["notes"]]
    m = rep.model
    e = rep.estimator
    head = f"model: {m.min_bytes.size} segment(s)"
    if e is not None:
        p = e.get_params()
        if p["packet_size"] is not None:
            head += f" split at packet size {p['packet_size']} B"
        elif p["breakpoints"] == "auto":
            head += f" (BIC over 1..{max(e.bic_by_segments_)})"
    head += f"; ref_hops {m.ref_hops}, per-hop latency {fmt_time(m.per_hop_latency_s)}"
    lines.append(head)
    lines.append(f"  {'seg':>3}  {'sizes [B)':<22} {'latency':>11} {'bandwidth':>13}"
                 + ("   measured sizes       n" if e is not None else ""))
    for s in rep.segments():
        rng = f"[{s['min_bytes']}, {'inf' if s['max_bytes'] is None else s['max_bytes']})"
        row = f"  {s['segment']:>3}  {rng:<22} {fmt_time(s['latency_s']):>11} " \
              f"{fmt_bw(s['bandwidth_Bps']):>13}"
        if e is not None:
            row += f"   {s['measured_min_bytes']:>8} .. {s['measured_max_bytes']:<8} " \
                   f"{s['n_sizes']:>3}"
        lines.append(row)
    for n in rep.notes:
        lines.append(f"note: {n}")
    if e is not None:
        mt = rep.metrics()
        r2 = "-" if mt["r2"] is None else f"{mt['r2']:.5f}"
        lines.append(f"fit: R2 {r2}, median |rel err| {mt['median_rel_err']:.2%}, max "
                     f"{mt['max_rel_err']:.2%} (at {mt['max_rel_err_at_bytes']} B); leave-one-size-"
                     f"out median {_pct(mt['cv_median_rel_err'])}, max {_pct(mt['cv_max_rel_err'])}; "
                     f"{mt['n_sizes']} sizes, {mt['n_samples']} samples")
        tab = rep.table()
        if getattr(rep, "envelope", None) is not None:
            from ccmod.netsys.fit_envelope import envelope_text
            lines += envelope_text(rep)
        elif len(tab) <= TEXT_TABLE_MAX_SIZES:
            raw = bool(np.any(tab["n"] > 1))
            lines.append(f"  {'bytes':>9} {'measured':>11} {'predicted':>11} {'rel err':>8}"
                         + (f" {'n':>5} {'p10':>10} {'p90':>10}" if raw else ""))
            for r in tab.itertuples():
                row = f"  {r.nbytes:>9} {fmt_time(r.measured_s):>11} {fmt_time(r.predicted_s):>11} " \
                      f"{r.rel_err:>+8.2%}"
                if raw:
                    row += f" {r.n:>5} {fmt_time(r.p10_s):>10} {fmt_time(r.p90_s):>10}"
                lines.append(row)
        else:
            lines.append(f"  (per-size table of {len(tab)} sizes: use --json)")
    pairs = [p for ms in rep.measurements if ms.pairs for p in ms.pairs]
    if pairs:
        from ccmod.netsys.fit_report import pair_summary
        s = pair_summary(pairs)
        lines.append(f"node pairs: {s['n_pairs']}; latency median {fmt_time(s['latency_s']['median'])}"
                     f" (min {fmt_time(s['latency_s']['min'])}, max {fmt_time(s['latency_s']['max'])});"
                     f" bandwidth median {fmt_bw(s['bandwidth_Bps']['median'])} (min "
                     f"{fmt_bw(s['bandwidth_Bps']['min'])}); {s['pairs_latency_over_1.5x_median']} "
                     f"pairs > 1.5x median latency, {s['pairs_bandwidth_under_0.67x_median']} < "
                     "median/1.5 bandwidth")
    for w in rep.warnings:
        lines.append(f"warning: {w}")
    return "\n".join(lines)
