"""The one JSON helper: strict JSON from numpy-laden Python data.

Strict JSON has no NaN or Infinity: non-finite floats become ``null``. numpy scalars and
arrays become Python numbers and lists, paths become strings.
"""
from __future__ import annotations

import json
import math
from pathlib import PurePath


def json_default(obj):
    """``json.dumps`` fallback: numpy scalars/arrays, paths; anything else as ``str``."""
    try:
        import numpy as np
    except ImportError:  # pragma: no cover
        np = None
    if np is not None:
        if isinstance(obj, np.bool_):
            return bool(obj)
        if isinstance(obj, np.generic):
            return obj.item()
        if isinstance(obj, np.ndarray):
            return obj.tolist()
    if isinstance(obj, PurePath):
        return str(obj)
    return str(obj)


def jsonable(obj):
    """Recursively replace non-finite floats by None and numpy values by Python ones."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if hasattr(obj, "tolist") and not isinstance(obj, (str, bytes)):
        return jsonable(obj.tolist())
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    return obj


def dumps(obj, **kw) -> str:
    """Strict JSON text of ``obj`` (see the module docstring)."""
    return json.dumps(jsonable(obj), default=json_default, allow_nan=False, **kw)
