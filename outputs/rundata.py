"""Reading a run directory written by the ``parquet`` sink (what reports consume)."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ccmod.errors import CcmodInputError
from ccmod.outputs.common import ALL_STATE_NAMES

_MSG_COLS = ["src", "dst", "nbytes", "t_start_s", "t_end_s", "quiet_s", "slowdown"]


@dataclass
class RunData:
    """Tables of one run directory, as numpy-friendly pandas frames.

    ``rank_states.state`` is converted to integer codes indexing
    :data:`outputs.common.ALL_STATE_NAMES` (idle = last code).
    """

    run_dir: Path
    summary: dict
    messages: pd.DataFrame
    rank_states: pd.DataFrame | None
    link_load: pd.DataFrame | None
    ranks: pd.DataFrame | None
    links: pd.DataFrame | None
    notes: list[str] = field(default_factory=list)

    @property
    def makespan_s(self) -> float:
        m = self.summary.get("makespan_s")
        if m is not None:
            return float(m)
        cands = [0.0]
        if len(self.messages):
            cands.append(float(self.messages["t_end_s"].max()))
        if self.rank_states is not None and len(self.rank_states):
            cands.append(float(self.rank_states["t_end_s"].max()))
        return max(cands)

    @property
    def nranks(self) -> int:
        n = self.summary.get("nranks")
        if n:
            return int(n)
        cands = [0]
        if self.ranks is not None and len(self.ranks):
            cands.append(len(self.ranks))
        if len(self.messages):
            cands.append(int(max(self.messages["src"].max(), self.messages["dst"].max())) + 1)
        if self.rank_states is not None and len(self.rank_states):
            cands.append(int(self.rank_states["rank"].max()) + 1)
        return max(cands)

    @property
    def packet_size(self) -> int:
        return int(self.summary.get("packet_size_bytes") or 1500)

    @property
    def background_level(self) -> float:
        bg = self.summary.get("background_level")
        if bg is not None:
            return float(bg)
        if self.links is not None and "background" in self.links.columns and len(self.links):
            return float(self.links["background"].max())
        return 0.0


#: numeric run.json fields the report uses, and whether they must be whole numbers
_NUMERIC_FIELDS = {"makespan_s": False, "packet_size_bytes": True, "background_level": False,
                   "nranks": True}


def _check_summary(summary: dict, path: Path) -> None:
    """Fail with one line on a run.json whose numeric fields are not finite numbers."""
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


def _read(path: Path, columns=None) -> pd.DataFrame | None:
    if not path.exists():
        return None
    try:
        import pyarrow.parquet as pq
        if columns is not None:
            have = set(pq.read_schema(str(path)).names)
            columns = [c for c in columns if c in have]
        return pd.read_parquet(path, columns=columns)
    except (OSError, ValueError) as exc:
        raise CcmodInputError(f"cannot read Parquet table: {exc}", source=str(path)) from None
    except Exception as exc:  # pyarrow raises its own ArrowInvalid on corrupt files
        raise CcmodInputError(f"cannot read Parquet table: {exc}", source=str(path),
                              hint="re-run with --sink parquet to rewrite it") from None


def load_run(run_dir) -> RunData:
    """Load a run directory (``messages.parquet`` + ``run.json`` at least).

    Raises
    ------
    CcmodInputError
        When the directory is missing or is not a ccmod run directory.
    """
    d = Path(run_dir)
    if not d.is_dir():
        raise CcmodInputError("run directory not found", source=str(d),
                              hint="write one with: ccmod run TRACE --out DIR --sink parquet")
    if not (d / "messages.parquet").exists() and not (d / "run.json").exists():
        raise CcmodInputError("not a ccmod run directory (no messages.parquet, no run.json)",
                              source=str(d),
                              hint="write one with: ccmod run TRACE --out DIR --sink parquet")
    summary: dict = {}
    if (d / "run.json").exists():
        try:
            summary = json.loads((d / "run.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise CcmodInputError(f"cannot read run.json: {exc}", source=str(d / "run.json"))
        if not isinstance(summary, dict):
            raise CcmodInputError("run.json is not a JSON object", source=str(d / "run.json"))
        _check_summary(summary, d / "run.json")
    notes: list[str] = []
    msgs = _read(d / "messages.parquet", _MSG_COLS + ["bottleneck", "bottleneck_name"])
    if msgs is None:
        notes.append("messages.parquet is missing: message figures are empty.")
        msgs = pd.DataFrame({c: np.zeros(0) for c in _MSG_COLS})
    states = _read(d / "rank_states.parquet")
    for name, table, cols in (("messages.parquet", msgs, ("src", "dst", "t_start_s", "t_end_s")),
                              ("rank_states.parquet", states,
                               ("rank", "state", "t_start_s", "t_end_s"))):
        if table is not None and not set(cols) <= set(table.columns):
            missing = sorted(set(cols) - set(table.columns))
            raise CcmodInputError(f"table lacks column(s) {', '.join(missing)}",
                                  source=str(d / name),
                                  hint="re-run with --out DIR to rewrite the run directory")
    if states is not None:
        st = states["state"]
        if isinstance(st.dtype, pd.CategoricalDtype):
            lut = np.array([ALL_STATE_NAMES.index(c) if c in ALL_STATE_NAMES else -1
                            for c in st.cat.categories], np.int64)
            codes = st.cat.codes.to_numpy()
            states["state"] = np.where(codes >= 0, lut[np.maximum(codes, 0)], -1)
        elif st.dtype.kind not in "iu":
            lut = {n: i for i, n in enumerate(ALL_STATE_NAMES)}
            states["state"] = st.map(lambda x: lut.get(str(x), -1)).astype(np.int64)
        if (states["state"] < 0).any():
            notes.append("rank_states.parquet has unknown state names; they are ignored.")
            states = states[states["state"] >= 0]
        if len(states) == 0:
            states = None
    # link names stay categorical (cheap for millions of rows)
    load = _read(d / "link_load.parquet")
    return RunData(run_dir=d, summary=summary, messages=msgs, rank_states=states,
                   link_load=load if load is not None and len(load) else None,
                   ranks=_read(d / "ranks.parquet"), links=_read(d / "links.parquet"),
                   notes=notes)
