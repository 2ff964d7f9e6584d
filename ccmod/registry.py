"""The one plugin convention of ccmod: named registries, one spec parser, one converter.

Every family of plugins (networks, trace readers, generators, sinks, sharing rules) is a
:class:`Registry`. A plugin registers at its definition with the decorator
``@FAMILY.register("name", "one-line description")``; its parameters come from one
declaration (a ``params`` dict of :class:`Param`, on the plugin or given to ``register``)
or, when there is none, from its call signature. A user names a plugin with one spec
syntax, ``NAME[:key=value,...]`` (:func:`parse_spec`), and every value goes through one
typed converter (:func:`convert_value`). ``listing()`` gives every family the same rows
(``name``, ``description``, ``params``, ``origin``) for ``ccmod networks``, ``ccmod
formats``, ``ccmod sinks`` and ``ccmod generate --list``.

Built-in plugins are imported lazily: a registry knows the modules that define them and
imports them on first use, so ``import ccmod`` does not import every reader and sink.
Third-party plugins come through the registry's entry-point group (e.g.
``ccmod.networks``). A third-party plugin that takes a built-in's name does not replace
it: it is reported (a :class:`PluginWarning` and a row in the listing).
"""
from __future__ import annotations

import importlib
import inspect
import math
import warnings
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Callable

from ccmod.errors import CcmodInputError

BUILTIN = "built-in"

_REAL_ENTRY_POINTS = metadata.entry_points
_ALL_EPS: list = []


def _entry_points(group: str):
    """The installed entry points of ``group``. Every query reads every installed
    distribution's metadata (~10 ms with a scientific stack), and a run loads several
    registries: the installed set is read once per process. A replaced
    ``metadata.entry_points`` (tests' fake plugins) is asked directly."""
    if metadata.entry_points is not _REAL_ENTRY_POINTS:
        return metadata.entry_points(group=group)
    if not _ALL_EPS:
        _ALL_EPS.append(metadata.entry_points())
    return _ALL_EPS[0].select(group=group)


_TRUE = {"1", "true", "yes", "on", "y", "t"}
_FALSE = {"0", "false", "no", "off", "n", "f"}


class PluginWarning(UserWarning):
    """A third-party plugin was ignored (its name is taken by a built-in)."""


@dataclass(frozen=True)
class Param:
    """One declared plugin parameter.

    Parameters
    ----------
    type : type
        ``int``, ``float``, ``bool``, ``str`` or any callable taking the text.
    default : object
        Value when the user does not give it (``None`` = derived by the plugin).
    doc : str
        One line shown by the listing and in error hints.
    choices : tuple, optional
        The only accepted values.
    min : float, optional
        Smallest accepted value (numbers).
    """

    type: type
    default: object
    doc: str = ""
    choices: tuple | None = None
    min: float | None = None


@dataclass(frozen=True)
class Entry:
    """One registered plugin: ``factory`` builds it; ``origin`` says where it came from."""

    name: str
    factory: Callable[..., Any]
    description: str
    params: dict | None = None
    origin: str = BUILTIN


def _first_line(text) -> str:
    lines = str(text or "").strip().splitlines()
    return lines[0].strip() if lines else ""


class Registry:
    """Name → plugin map of one family.

    Parameters
    ----------
    kind : str
        Human name of what is registered ("network", "trace format", "sink", ...), used in
        messages.
    entry_point_group : str, optional
        Entry-point group scanned once for third-party plugins; each entry point loads to
        a callable with a ``description`` attribute (or a docstring).
    builtins : tuple of str
        Modules defining the built-in plugins, imported on first use. A module that is
        itself absent is skipped (an optional reader); an import error inside it is not.
    skip_params : tuple of str
        Signature parameters that are not user parameters (``seed``, ``out_dir``, ...).
    call : str, optional
        Method of the plugin whose signature gives its parameters (``"read"`` for
        readers); default: the plugin itself (its constructor or function).
    int_min : int, optional
        Smallest value of an integer parameter taken from a signature (sinks: 0, their
        integers are sizes and counts).
    """

    def __init__(self, kind: str, entry_point_group: str | None = None,
                 builtins: tuple[str, ...] = (), skip_params: tuple[str, ...] = (),
                 call: str | None = None, int_min: int | None = None):
        self.call = call
        self.int_min = int_min
        self.kind = kind
        self.entry_point_group = entry_point_group
        self.builtins = tuple(builtins)
        self.skip_params = ("self",) + tuple(skip_params)
        self._entries: dict[str, Entry] = {}
        self._loaded_builtins = not self.builtins
        self._loaded_eps = entry_point_group is None
        #: third-party plugins ignored because a built-in has their name: (name, origin)
        self.shadowed: list[tuple[str, str]] = []

    # ------------------------------------------------------------------ registration
    def register(self, name: str | None = None, description: str | None = None,
                 params: dict | None = None):
        """Decorator registering a class or function at its definition.

        ``name`` and ``description`` default to the object's ``name`` / ``description``
        attributes (then its docstring's first line).
        """
        def deco(factory):
            self.add(name or getattr(factory, "name"), factory,
                     description if description is not None else _describe(factory),
                     params=params)
            return factory
        return deco

    def add(self, name: str, factory: Callable[..., Any], description: str,
            params: dict | None = None, origin: str = BUILTIN) -> None:
        """Register ``factory`` under ``name`` (a later built-in replaces an earlier one)."""
        self._entries[name] = Entry(name, factory, _first_line(description), params, origin)

    # ------------------------------------------------------------------ loading
    def _load(self) -> None:
        if not self._loaded_builtins:
            self._loaded_builtins = True   # set first: the modules register while importing
            try:
                for mod in self.builtins:
                    try:
                        importlib.import_module(mod)
                    except ModuleNotFoundError as exc:
                        if exc.name != mod:
                            raise
            except BaseException:
                self._loaded_builtins = False   # a broken built-in: fail again next time
                raise
        if not self._loaded_eps:
            self._loaded_eps = True
            self._load_entry_points()

    def _load_entry_points(self) -> None:
        try:
            eps = _entry_points(self.entry_point_group)
        except Exception:  # pragma: no cover - broken metadata must not break ccmod
            return
        for ep in eps:
            origin = f"entry point {getattr(ep, 'value', ep.name)}"
            if ep.name in self._entries:
                self.shadowed.append((ep.name, origin))
                warnings.warn(f"ccmod: third-party {self.kind} '{ep.name}' ({origin}) is "
                              f"ignored: a built-in {self.kind} has that name (rename it)",
                              PluginWarning, stacklevel=3)
                continue
            try:
                obj = ep.load()
            except Exception as exc:  # a broken third-party plugin is reported, not fatal
                self.add(ep.name, _broken(ep.name, exc), f"(failed to load: {exc})",
                         params={}, origin=origin)
                continue
            self.add(ep.name, obj, _describe(obj) or ep.name, origin=origin)

    # ------------------------------------------------------------------ queries
    def names(self) -> list[str]:
        self._load()
        return sorted(self._entries)

    def entries(self) -> list[Entry]:
        self._load()
        return [self._entries[n] for n in sorted(self._entries)]

    def __contains__(self, name: str) -> bool:
        self._load()
        return name in self._entries

    def get(self, name: str, source: str | None = None) -> Entry:
        """Return the entry for ``name`` or fail listing the valid names."""
        self._load()
        try:
            return self._entries[name]
        except KeyError:
            raise CcmodInputError(f"unknown {self.kind} '{name}'", source=source,
                                  hint="valid: " + ", ".join(self.names())) from None

    def params_of(self, name_or_entry) -> dict[str, Param] | None:
        """The plugin's parameters: declared ``params``, else from its signature.

        ``None`` means unknown (a callable without a signature): any key is accepted and
        passed as text.
        """
        e = name_or_entry if isinstance(name_or_entry, Entry) else self.get(name_or_entry)
        if e.params is not None:
            return dict(e.params)
        declared = getattr(e.factory, "params", None)
        if isinstance(declared, dict) and all(isinstance(p, Param) for p in declared.values()):
            return dict(declared)
        target = getattr(e.factory, self.call, None) if self.call else e.factory
        if target is None:
            return None
        return signature_params(target, self.skip_params, int_min=self.int_min)

    def convert(self, name: str, raw: dict, source: str | None = None,
                defaults: bool = False) -> dict[str, object]:
        """Typed keyword arguments of plugin ``name`` from raw ``key=value`` texts.

        Unknown keys fail listing the valid ones; ``defaults=True`` also fills every
        declared parameter the user did not give with its default.
        """
        e = self.get(name, source=source)
        declared = self.params_of(e)
        if declared is None:
            return dict(raw)
        out = {k: p.default for k, p in declared.items()} if defaults else {}
        for key, text in raw.items():
            if key not in declared:
                raise CcmodInputError(
                    f"unknown parameter '{key}' for {self.kind} '{name}'", source=source,
                    hint=("valid: " + ", ".join(self._valid_order(e, declared))) if declared
                    else "it takes no parameters")
            out[key] = convert_value(text, declared[key], key=key, plugin=name,
                                     kind=self.kind, source=source)
        return out

    def _valid_order(self, e: Entry, declared: dict) -> list[str]:
        # a declared dict is listed alphabetically; a signature in its own (documented) order
        explicit = e.params is not None or isinstance(getattr(e.factory, "params", None), dict)
        return sorted(declared) if explicit else list(declared)

    def resolve(self, spec: str, source: str | None = None,
                defaults: bool = False) -> tuple[Entry, dict[str, object]]:
        """Parse ``NAME[:key=value,...]``; return the entry and its typed parameters."""
        name, raw = parse_spec(str(spec), source=source or self.kind)
        entry = self.get(name, source=source)
        return entry, self.convert(name, raw, source=source, defaults=defaults)

    def listing(self) -> list[dict]:
        """Rows ``name, description, params, origin``; ignored plugins are listed too."""
        rows = [{"name": e.name, "description": e.description,
                 "params": format_params(self.params_of(e)), "origin": e.origin}
                for e in self.entries()]
        rows += [{"name": n, "description": f"ignored: a built-in {self.kind} has this name",
                  "params": "", "origin": o} for n, o in self.shadowed]
        return rows


def _describe(obj) -> str:
    desc = getattr(obj, "description", None)
    return _first_line(desc) if desc else _first_line(getattr(obj, "__doc__", ""))


def _broken(name: str, exc: Exception):
    def factory(*a, **k):
        raise CcmodInputError(f"plugin '{name}' failed to load: {exc}")
    return factory


# ---------------------------------------------------------------------- parameters
def signature_params(factory, skip: tuple[str, ...] = ("self",),
                     int_min: int | None = None) -> dict[str, Param] | None:
    """Parameters of a callable as :class:`Param` (type from the default or annotation)."""
    try:
        sig = inspect.signature(factory)
    except (TypeError, ValueError):
        return None
    out = {}
    for p in sig.parameters.values():
        if p.name in skip or p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
            continue
        default = None if p.default is p.empty else p.default
        typ = type(default) if default is not None else _annotation_type(p.annotation)
        out[p.name] = Param(typ, default, min=int_min if typ is int else None)
    return out


def _annotation_type(ann) -> type:
    if isinstance(ann, type) and ann in (int, float, bool, str):
        return ann
    if isinstance(ann, str) and ann in ("int", "float", "bool", "str"):
        return {"int": int, "float": float, "bool": bool, "str": str}[ann]
    return str


def _type_desc(p: Param) -> str:
    if p.type is int:
        return "non-negative integer" if p.min == 0 else "valid integer"
    if p.type is bool:
        return "boolean (yes/no)"
    return f"valid {getattr(p.type, '__name__', 'value')}"


def convert_value(text, p: Param, *, key: str, plugin: str, kind: str = "plugin",
                  source: str | None = None):
    """Convert one ``key=value`` text to the parameter's type; the one converter of ccmod.

    Integers accept ``1e3`` and ``1_000``; booleans accept yes/no, true/false, on/off, 1/0.
    A value that is not text (a Python caller) is checked against ``choices`` / ``min``
    but not converted.

    Raises
    ------
    CcmodInputError
        ``parameter 'key=value' of KIND 'NAME' is not a valid integer (doc; got key='value')``,
        or a value outside ``choices`` / below ``min``.
    """
    where = f"parameter '{key}={text}' of {kind} '{plugin}'"
    if isinstance(text, str):
        s = text.strip()
        try:
            if p.type is bool:
                low = s.lower()
                if low not in _TRUE | _FALSE:
                    raise ValueError
                value = low in _TRUE
            elif p.type is int:
                v = float(s.replace("_", ""))
                if not v.is_integer():
                    raise ValueError
                value = int(v)
                if p.min == 0 and value < 0:
                    raise ValueError
            elif p.type is float:
                value = float(s.replace("_", ""))
                if not math.isfinite(value):
                    raise ValueError
            elif p.type is str:
                value = s
            else:
                value = p.type(s)
        except (ValueError, OverflowError, TypeError):
            hint = "; ".join(x for x in (p.doc, f"got {key}={text!r}") if x)
            raise CcmodInputError(f"{where} is not a {_type_desc(p)}", source=source,
                                  hint=hint) from None
    else:
        value = text
    if p.choices is not None and value not in p.choices:
        raise CcmodInputError(f"{where} must be one of {', '.join(map(str, p.choices))}",
                              source=source)
    if p.min is not None and isinstance(value, (int, float)) and value < p.min:
        raise CcmodInputError(f"{where} must be >= {p.min:g}", source=source)
    return value


def format_default(p: Param) -> str:
    """``derived`` (sized from the run), ``required`` (doc says so) or the value."""
    if p.default is None:
        return "required" if "(required" in p.doc else "derived"
    return f"{p.default:g}" if isinstance(p.default, float) else str(p.default)


def format_params(params: dict[str, Param] | None) -> str:
    """``key=default, ...`` (empty when the plugin takes none or they are unknown)."""
    return ", ".join(f"{k}={format_default(p)}" for k, p in (params or {}).items())


# ---------------------------------------------------------------------- specs
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


def split_specs(text: str, source: str = "spec",
                label: str = "plugin") -> list[tuple[str, dict[str, str]]]:
    """Split a comma-separated list of specs, ``"a,b:k=v,k2=v2,c"``.

    A ``key=value`` item without a colon belongs to the spec before it, so
    ``perfetto:max_flows=10,counters=2,debug`` is two specs.
    """
    out: list[tuple[str, dict[str, str]]] = []
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            continue
        if ":" not in item and "=" in item:
            if not out:
                raise CcmodInputError(f"parameter '{item}' comes before any {label} name",
                                      source=source, hint="use NAME[:key=value,...]")
            key, _, value = item.partition("=")
            params = out[-1][1]
        else:
            name, colon, rest = item.partition(":")
            name = name.strip()
            if not name or "=" in name:
                raise CcmodInputError(f"bad {label} '{item}'", source=source,
                                      hint="use NAME[:key=value,...]")
            params = {}
            out.append((name, params))
            if not rest.strip():
                continue
            key, eq, value = rest.partition("=")
            if not eq:
                raise CcmodInputError(f"parameter '{rest}' of {label} '{name}' is not key=value",
                                      source=source)
        key = key.strip()
        if not key:
            raise CcmodInputError(f"empty parameter name in '{item}'", source=source)
        if key in params:
            raise CcmodInputError(f"parameter '{key}' given twice for {label} '{out[-1][0]}'",
                                  source=source)
        params[key] = value.strip()
    return out
