"""Strict JSON for run.json and --json (numpy scalars converted, NaN → null)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def json_default(obj):
    """``json.dumps`` fallback for numpy scalars/arrays and paths."""
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    return str(obj)


def jsonable(obj):
    """Recursively replace non-finite floats by None (strict JSON has no NaN/Infinity)."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, (float, np.floating)):
        return float(obj) if np.isfinite(obj) else None
    if isinstance(obj, np.integer):
        return int(obj)
    return obj


def dumps(obj, **kw) -> str:
    """Strict JSON (non-finite floats → null, numpy scalars converted)."""
    return json.dumps(jsonable(obj), default=json_default, allow_nan=False, **kw)
