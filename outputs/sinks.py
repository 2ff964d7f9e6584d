"""Front-end of the output sinks: ``make_sinks``, ``write_all`` and ``list_sinks``.

Built-in sinks register in :data:`outputs.registry.SINKS` where they are defined
(third-party sinks come through the ``ccmod.sinks`` entry-point group).

Sink specifications are comma-separated names, each optionally followed by
``:key=value`` parameters; further ``key=value`` items (no colon) belong to the sink
before them::

    parquet,perfetto:max_flows=50000,counters=4,debug
"""
from __future__ import annotations

from pathlib import Path

from ccmod.errors import CcmodInputError
from ccmod.outputs.base import Sink
from ccmod.outputs.registry import SINKS
from ccmod.registry import split_specs


def split_spec(spec: str, source: str = "--sink") -> list[tuple[str, dict[str, str]]]:
    """Split ``"a,b:k=v,k2=v2,c"`` into ``[(a, {}), (b, {k: v, k2: v2}), (c, {})]``."""
    return split_specs(spec, source, label="sink")


def make_sink(name: str, out_dir=None, params: dict[str, str] | None = None,
              source: str = "--sink") -> Sink:
    """Instantiate one registered sink with raw string parameters."""
    entry = SINKS.get(name, source=source)
    kwargs = SINKS.convert(name, dict(params or {}), source=source)
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
    """Rows (name, description, params, origin, files, parameters) of every sink."""
    rows = []
    for r in SINKS.listing():
        f = SINKS.get(r["name"]).factory
        rows.append({**r, "files": getattr(f, "files", ""), "parameters": r["params"]})
    return rows


def write_all(sinks, result, ctx) -> None:
    """Hand the finished result to every sink (each writes its files atomically)."""
    for s in sinks:
        s.write(result, ctx)
