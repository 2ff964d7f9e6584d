"""Front-end of the output sinks: registration of the built-ins, ``make_sinks``, ``write_all``.

Importing this module registers every built-in sink in :data:`outputs.registry.SINKS`
(third-party sinks come through the ``ccmod.sinks`` entry-point group).

Sink specifications are comma-separated names, each optionally followed by
``:key=value`` parameters; further ``key=value`` items (no colon) belong to the sink
before them::

    parquet,perfetto:max_flows=50000,counters=4,debug
"""
from __future__ import annotations

import inspect
from pathlib import Path

from ccmod.errors import CcmodInputError
from ccmod.outputs.base import Sink
from ccmod.outputs.debug import DebugSink
from ccmod.outputs.paraver import ParaverSink
from ccmod.outputs.parquet import ParquetSink
from ccmod.outputs.perfetto import PerfettoSink
from ccmod.outputs.registry import SINKS

#: built-in sinks and the files each writes into the run directory
BUILTIN = {
    "debug": (DebugSink, "debug.txt"),
    "parquet": (ParquetSink, "messages/rank_states/link_load/ranks/links/resources.parquet, "
                             "run.json"),
    "perfetto": (PerfettoSink, "trace.json"),
    "paraver": (ParaverSink, "trace.prv, trace.pcf, trace.row"),
}

for _name, (_cls, _files) in BUILTIN.items():
    SINKS.add(_name, _cls, _cls.description)


def split_spec(spec: str, source: str = "--sink") -> list[tuple[str, dict[str, str]]]:
    """Split ``"a,b:k=v,k2=v2,c"`` into ``[(a, {}), (b, {k: v, k2: v2}), (c, {})]``."""
    out: list[tuple[str, dict[str, str]]] = []
    for raw in spec.split(","):
        item = raw.strip()
        if not item:
            continue
        name, colon, rest = item.partition(":")
        if not colon and "=" in item:
            if not out:
                raise CcmodInputError(f"parameter '{item}' comes before any sink name",
                                      source=source, hint="use NAME[:key=value,...]")
            key, _, value = item.partition("=")
            params = out[-1][1]
        else:
            name = name.strip()
            if not name or "=" in name:
                raise CcmodInputError(f"bad sink '{item}'", source=source,
                                      hint="use NAME[:key=value,...]")
            params = {}
            out.append((name, params))
            if not rest.strip():
                continue
            key, eq, value = rest.partition("=")
            if not eq:
                raise CcmodInputError(f"parameter '{rest}' of sink '{name}' is not key=value",
                                      source=source)
        key = key.strip()
        if not key:
            raise CcmodInputError(f"empty parameter name in '{item}'", source=source)
        if key in params:
            raise CcmodInputError(f"parameter '{key}' given twice for sink '{out[-1][0]}'",
                                  source=source)
        params[key] = value.strip()
    return out


def sink_params(factory) -> dict[str, object]:
    """Parameters (name → default) a sink factory accepts besides ``out_dir``."""
    try:
        sig = inspect.signature(factory)
    except (TypeError, ValueError):
        return {}
    return {p.name: p.default for p in sig.parameters.values()
            if p.name not in ("self", "out_dir") and p.kind in
            (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def _convert(sink: str, key: str, text: str, default, source: str):
    try:
        if isinstance(default, bool):
            low = text.lower()
            if low not in ("1", "0", "true", "false", "yes", "no"):
                raise ValueError
            return low in ("1", "true", "yes")
        if isinstance(default, int):
            v = float(text)
            if not v.is_integer() or v < 0:
                raise ValueError
            return int(v)
        if isinstance(default, float):
            return float(text)
    except ValueError:
        kind = "boolean" if isinstance(default, bool) else (
            "non-negative integer" if isinstance(default, int) else "number")
        raise CcmodInputError(f"parameter '{key}={text}' of sink '{sink}' is not a {kind}",
                              source=source) from None
    return text


def make_sink(name: str, out_dir=None, params: dict[str, str] | None = None,
              source: str = "--sink") -> Sink:
    """Instantiate one registered sink with raw string parameters."""
    entry = SINKS.get(name, source=source)
    declared = sink_params(entry.factory)
    kwargs = {}
    for key, text in (params or {}).items():
        if key not in declared:
            raise CcmodInputError(f"unknown parameter '{key}' for sink '{name}'", source=source,
                                  hint=("valid: " + ", ".join(sorted(declared))) if declared
                                  else "it takes no parameters")
        kwargs[key] = _convert(name, key, text, declared[key], source)
    try:
        return entry.factory(out_dir=None if out_dir is None else Path(out_dir), **kwargs)
    except TypeError:
        if kwargs:
            raise
        return entry.factory()


def make_sinks(spec, out_dir=None, source: str = "--sink") -> list[Sink]:
    """Build the sinks of ``spec`` writing into ``out_dir``.

    Parameters
    ----------
    spec : str, or iterable of str / Sink
        ``"parquet,perfetto:max_flows=1000"``; ``None``/``""`` gives no sink. Sink objects
        are passed through unchanged.
    out_dir : path, optional
        Run directory (file sinks fall back to ``RunContext.out_dir`` when None).

    Raises
    ------
    CcmodInputError
        Unknown sink (lists the valid ones), bad parameter, or a sink given twice.
    """
    if spec is None:
        return []
    items: list = []
    if isinstance(spec, str):
        items = split_spec(spec, source)
    else:
        for x in spec:
            if isinstance(x, Sink) or not isinstance(x, str):
                items.append(x)
            else:
                items.extend(split_spec(x, source))
    sinks: list[Sink] = []
    seen: set[str] = set()
    for it in items:
        if not isinstance(it, tuple):
            sinks.append(it)
            continue
        name, params = it
        if name in seen:
            raise CcmodInputError(f"sink '{name}' given twice", source=source)
        seen.add(name)
        sinks.append(make_sink(name, out_dir, params, source))
    return sinks


def list_sinks() -> list[dict]:
    """Rows (name, description, files, parameters) of every registered sink."""
    rows = []
    for e in SINKS.entries():
        files = BUILTIN.get(e.name, (None, ""))[1]
        params = ", ".join(f"{k}={v}" for k, v in sink_params(e.factory).items())
        rows.append({"name": e.name, "description": e.description, "files": files,
                     "parameters": params})
    return rows


def write_all(sinks, result, ctx) -> None:
    """Hand the finished result to every sink (each writes its files atomically)."""
    for s in sinks:
        s.write(result, ctx)
