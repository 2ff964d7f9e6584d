"""A run directory's ``run.json``, read and checked without pandas or pyarrow.

:func:`ccmod.outputs.parquet.load_result` starts with it, and ``ccmod report`` calls it
before importing the table readers (pandas and pyarrow, ~1 s): a wrong folder fails at once.
"""
from __future__ import annotations

import json
from pathlib import Path

from ccmod.errors import CcmodInputError

#: what every error about a run directory suggests
HINT = "write one with: ccmod run TRACE --out DIR"

#: numeric run.json fields the loader uses, and whether they must be whole numbers
_NUMERIC_FIELDS = {"makespan_s": False, "packet_size_bytes": True, "background_level": False,
                   "nranks": True}


def read_run_summary(run_dir) -> dict:
    """The checked ``run.json`` of a run directory written by the parquet sink.

    Raises
    ------
    CcmodInputError
        When the directory is missing, is not a ccmod run directory, or its run.json is bad.
    """
    d = Path(run_dir)
    if not d.is_dir():
        raise CcmodInputError("run directory not found", source=str(d), hint=HINT)
    if not (d / "run.json").exists():
        raise CcmodInputError("not a ccmod run directory (no run.json)", source=str(d),
                              hint=HINT)
    try:
        summary = json.loads((d / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CcmodInputError(f"cannot read run.json: {exc}", source=str(d / "run.json"),
                              hint=HINT) from None
    if not isinstance(summary, dict):
        raise CcmodInputError("run.json is not a JSON object", source=str(d / "run.json"))
    _check_summary(summary, d / "run.json")
    return summary


def _check_summary(summary: dict, path: Path) -> None:
    """Fail with one line on a run.json whose numeric fields are not finite numbers."""
    import numpy as np
    for key, whole in _NUMERIC_FIELDS.items():
        v = summary.get(key)
        if v is None:
            continue
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v) and v >= 0
        if ok and whole:
            ok = float(v).is_integer()
        if not ok:
            raise CcmodInputError(f"field '{key}' is {v!r}, not a finite non-negative "
                                  f"{'whole number' if whole else 'number'}", source=str(path),
                                  hint="re-run with --out DIR to rewrite the run directory")
