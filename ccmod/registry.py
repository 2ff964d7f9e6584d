"""A small named-plugin registry (SimGrid-style model names).

Each package (``netsys``, ``workloads``, ``outputs``, ...) owns one :class:`Registry`.
Plugins register with a one-line description; third-party plugins are found through
the entry-point group given to the registry (e.g. ``ccmod.networks``).
"""
from __future__ import annotations

from dataclasses import dataclass
from importlib import metadata
from typing import Any, Callable

from ccmod.errors import CcmodInputError


@dataclass(frozen=True)
class Entry:
    name: str
    factory: Callable[..., Any]
    description: str


class Registry:
    """Name → factory map with descriptions.

    Parameters
    ----------
    kind : str
        Human name of what is registered ("network", "reader", "sink", ...), used in errors.
    entry_point_group : str, optional
        Entry-point group scanned once for third-party plugins; each entry point must load
        to a callable with ``description`` attribute (or docstring first line).
    """

    def __init__(self, kind: str, entry_point_group: str | None = None):
        self.kind = kind
        self.entry_point_group = entry_point_group
        self._entries: dict[str, Entry] = {}
        self._loaded_eps = entry_point_group is None

    def register(self, name: str, description: str):
        """Decorator: register ``factory`` under ``name``."""
        def deco(factory):
            self.add(name, factory, description)
            return factory
        return deco

    def add(self, name: str, factory: Callable[..., Any], description: str) -> None:
        self._entries[name] = Entry(name, factory, description.strip().splitlines()[0])

    def _load_entry_points(self) -> None:
        if self._loaded_eps:
            return
        self._loaded_eps = True
        try:
            eps = metadata.entry_points(group=self.entry_point_group)
        except Exception:  # pragma: no cover - broken metadata must not break ccmod
            return
        for ep in eps:
            if ep.name in self._entries:
                continue
            try:
                obj = ep.load()
            except Exception as exc:  # a broken third-party plugin is reported, not fatal
                self._entries[ep.name] = Entry(ep.name, _broken(ep.name, exc),
                                               f"(failed to load: {exc})")
                continue
            desc = getattr(obj, "description", None) or (obj.__doc__ or ep.name)
            self.add(ep.name, obj, str(desc))

    def names(self) -> list[str]:
        self._load_entry_points()
        return sorted(self._entries)

    def entries(self) -> list[Entry]:
        self._load_entry_points()
        return [self._entries[n] for n in sorted(self._entries)]

    def __contains__(self, name: str) -> bool:
        self._load_entry_points()
        return name in self._entries

    def get(self, name: str, source: str | None = None) -> Entry:
        """Return the entry for ``name`` or fail listing the valid names."""
        self._load_entry_points()
        try:
            return self._entries[name]
        except KeyError:
            raise CcmodInputError(f"unknown {self.kind} '{name}'", source=source,
                                  hint="valid: " + ", ".join(self.names())) from None


def _broken(name: str, exc: Exception):
    def factory(*a, **k):
        raise CcmodInputError(f"plugin '{name}' failed to load: {exc}")
    return factory


def parse_spec(spec: str, source: str = "spec") -> tuple[str, dict[str, str]]:
    """Split ``NAME[:key=value,...]`` into the name and a dict of raw string values.

    Raises
    ------
    CcmodInputError
        On an empty name, a parameter without ``=`` or a repeated key.
    """
    spec = spec.strip()
    name, _, rest = spec.partition(":")
    name = name.strip()
    if not name:
        raise CcmodInputError(f"empty name in '{spec}'", source=source,
                              hint="use NAME[:key=value,...]")
    params: dict[str, str] = {}
    if rest.strip():
        for item in rest.split(","):
            item = item.strip()
            if not item:
                continue
            key, eq, value = item.partition("=")
            if not eq or not key.strip():
                raise CcmodInputError(f"parameter '{item}' in '{spec}' is not key=value",
                                      source=source, hint="use NAME[:key=value,...]")
            key = key.strip()
            if key in params:
                raise CcmodInputError(f"parameter '{key}' given twice in '{spec}'", source=source)
            params[key] = value.strip()
    return name, params
