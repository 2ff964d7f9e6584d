"""The RunResult's tables as plain numpy columns, for the writers of text trace formats.

One place turns DataFrames into the arrays the Perfetto and Paraver writers loop over
(state codes included), so every sink reads the result the same way.
"""
from __future__ import annotations

import numpy as np

from ccmod.outputs.intervals import state_codes


def message_arrays(result) -> dict[str, np.ndarray]:
    """Message columns (src, dst, msg_id, tag, nbytes as int64; times as float64)."""
    m = result.messages
    out = {c: m[c].to_numpy() for c in m.columns if c != "bottleneck_name"}
    for c in ("src", "dst", "msg_id", "tag", "nbytes"):
        if c in out:
            out[c] = out[c].astype(np.int64)
    if "msg_id" not in out:
        out["msg_id"] = np.arange(len(m), dtype=np.int64)
    if "tag" not in out:
        out["tag"] = np.zeros(len(m), np.int64)
    return out


def state_arrays(result) -> dict[str, np.ndarray]:
    """Rank-state intervals (rank, state code, t_start_s, t_end_s); empty when not recorded."""
    s = result.rank_states
    if s is None or len(s) == 0:
        return {"rank": np.zeros(0, np.int64), "state": np.zeros(0, np.int64),
                "t_start_s": np.zeros(0), "t_end_s": np.zeros(0)}
    return {"rank": s["rank"].to_numpy().astype(np.int64), "state": state_codes(s["state"]),
            "t_start_s": s["t_start_s"].to_numpy(), "t_end_s": s["t_end_s"].to_numpy()}


def load_arrays(result) -> dict[str, np.ndarray]:
    """Link-load intervals (resource, active as int64; times, background, utilisation)."""
    ld = result.link_load
    if ld is None or len(ld) == 0:
        return {"resource": np.zeros(0, np.int64), "active": np.zeros(0, np.int64),
                "t_start_s": np.zeros(0), "t_end_s": np.zeros(0), "background": np.zeros(0),
                "utilisation": None}
    return {"resource": ld["resource"].to_numpy().astype(np.int64),
            "active": ld["active"].to_numpy().astype(np.int64),
            "t_start_s": ld["t_start_s"].to_numpy(), "t_end_s": ld["t_end_s"].to_numpy(),
            "background": ld["background"].to_numpy() if "background" in ld.columns
            else np.zeros(len(ld)),
            "utilisation": ld["utilisation"].to_numpy() if "utilisation" in ld.columns
            else None}


def nodes_of(result) -> np.ndarray:
    """Node of each rank (the ``node`` column of ``ranks``; one rank per node without it)."""
    n = result.nranks
    r = result.ranks
    if r is not None and "node" in r.columns and len(r) >= n:
        return r["node"].to_numpy().astype(np.int64)[:n]
    return np.arange(n, dtype=np.int64)


def resource_names(result, resources) -> list[str]:
    """Names of resource ids from the link table (``rN`` when unknown)."""
    names: dict[int, str] = {}
    for df in (result.resources, result.links):
        if df is not None and {"resource", "name"} <= set(df.columns):
            names.update(zip(df["resource"].astype(int).tolist(),
                             df["name"].astype(str).tolist()))
    return [names.get(int(r), f"r{int(r)}") for r in np.asarray(resources).tolist()]
