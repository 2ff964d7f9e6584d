"""``ccmod run --report DIR``: tables + one HTML report (knee capacity at background levels)."""
from __future__ import annotations

from pathlib import Path

from ccmod.errors import CcmodInputError


def parse_levels(text: str | None) -> list[float] | None:
    """Parse ``"0,0.3"`` into background fractions in [0, 1) (None when none is given)."""
    if not text:
        return None
    out = []
    for tok in text.split(","):
        tok = tok.strip()
        if not tok:
            continue
        try:
            v = float(tok)
        except ValueError:
            raise CcmodInputError(f"background level '{tok}' is not a number",
                                  source="--background-levels", hint="e.g. 0,0.3") from None
        if not 0.0 <= v < 1.0:
            raise CcmodInputError(f"background level {tok} is not a fraction in [0, 1)",
                                  source="--background-levels")
        out.append(v)
    return out or None


def make_report(result, workload, report_dir, *, network, background_levels=None,
                options=None, static: bool = False) -> Path:
    """Write ``report_dir/report.html`` from the in-memory ``result``.

    With ``background_levels`` the engine runs once more per level (same workload and
    network, the other :class:`~ccmod.options.RunOptions` of ``options`` unchanged); those
    results go to the knee figure directly (in memory) and their tables are written into
    ``report_dir/background-<level>/`` so that ``ccmod report DIR --background-levels ...``
    can rebuild the same report later.
    """
    from ccmod.outputs.knee import knee_dirname
    from ccmod.outputs.report import build_report, write_static
    levels = parse_levels(background_levels) if isinstance(background_levels, str) \
        else background_levels
    runs = None
    if levels:
        from ccmod.api import run
        runs = {}
        for lv in levels:
            if lv == result.background_level:
                runs[lv] = result          # the main run is this level
                continue
            runs[lv] = run(workload, network, options, background=lv, sinks=["parquet"],
                           out_dir=Path(report_dir) / knee_dirname(lv))
            runs[lv].options["trace"] = result.options.get("trace", runs[lv].options["trace"])
    if static:
        write_static(result, Path(report_dir) / "figures", background_levels=runs)
    return build_report(result, Path(report_dir) / "report.html", background_levels=runs)
