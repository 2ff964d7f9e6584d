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
                options=None) -> Path:
    """Write ``report_dir/report.html`` from the tables the parquet sink wrote there.

    With ``background_levels`` the engine runs once more per level (same trace and
    network, the other :class:`~ccmod.options.RunOptions` of ``options`` unchanged) and writes that run's tables into
    ``report_dir/background-<level>/``, so the report can show knee capacity with and
    without background load and ``ccmod report DIR --background-levels ...`` can rebuild it.
    """
    from ccmod.outputs.knee import knee_dirname
    from ccmod.outputs.report import build_report
    levels = parse_levels(background_levels) if isinstance(background_levels, str) \
        else background_levels
    if levels:
        from ccmod.api import run
        main_bg = float(result.options.get("background", 0.0) or 0.0)
        for lv in levels:
            if lv == main_bg:
                continue  # the main run is this level
            run(workload, network, options, background=lv, sinks=["parquet"],
                out_dir=Path(report_dir) / knee_dirname(lv))
    return build_report(Path(report_dir), Path(report_dir) / "report.html",
                        background_levels=levels)
