"""Command-line values converted without pydantic when the conversion is plain.

typer 0.29 converts every option's text through a pydantic ``TypeAdapter``: the first
option a command reads imports pydantic (and its plugin scan of every installed
distribution) and builds one adapter per option, ~0.1 s of CPU in every ``ccmod run``,
a sixth of a warm start-up. Most of ccmod's options are a ``str``, an ``int``, a
``float`` or a ``Path`` given as text, whose conversion pydantic does as Python does:
those are converted here (:func:`plain_value`), with the same result; anything else (a
value of another form, another type, bounds, a parser, a failure) goes to typer's own
pydantic conversion, built only then, so its results and error messages are typer's.

Installed by :mod:`ccmod.cli` (:func:`install`) on the typer releases that have this
conversion layer; with any other, nothing changes. ``tests/test_cli_coerce.py`` checks
the plain conversion against typer's on every option of every command.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

#: an int as pydantic takes it from text (and int() gives the same): optional sign, digits
_INT = re.compile(r"[+-]?[0-9]+\Z")
#: a decimal float (no inf/nan, underscores, blanks: those go to pydantic)
_FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\Z")
_NO = object()


def _plain_info(info) -> bool:
    """Whether an option's settings leave its conversion to the type alone."""
    return (info.parser is None and info.min is None and info.max is None and not info.clamp
            and info.path_type is None and not info.allow_dash and not info.resolve_path)


def plain_value(annotation, value, info=None):
    """``value`` (command-line text, or a default) converted to ``annotation`` as typer's
    pydantic conversion would, or ``_NO`` when that is not a plain case."""
    if info is not None and not _plain_info(info):
        return _NO
    if annotation is str:
        return value if type(value) is str else _NO
    if annotation is int:
        if type(value) is int:
            return value
        if type(value) is str and len(value) < 4000 and _INT.match(value):
            return int(value)
        return _NO
    if annotation is float:
        if type(value) is float:
            return value
        if type(value) is str and _FLOAT.match(value):
            return float(value)
        return _NO
    if annotation is Path:
        if isinstance(value, Path):
            return value
        if type(value) is str and value and "\0" not in value:
            return Path(value)
        return _NO
    return _NO


def _item_type(annotation):
    """X of ``list[X]`` (or ``typing.List[X]``), else None."""
    import typing
    if typing.get_origin(annotation) is list:
        args = typing.get_args(annotation)
        return args[0] if len(args) == 1 else None
    return None


#: typer releases (major, minor) whose private conversion layer this was checked against;
#: any other converts as typer does (its private names may stay while their meaning moves)
TESTED_TYPER = ((0, 29),)


def tested_typer(version: str) -> bool:
    """Whether typer ``version`` is one :func:`install` was checked on."""
    try:
        major, minor = (int(x) for x in version.split(".")[:2])
    except ValueError:
        return False
    return (major, minor) in TESTED_TYPER


def install() -> bool:
    """Convert plain option values without pydantic (see above); False when this typer
    is not a tested release, has no such layer (nothing to do) or it moved."""
    import typer
    if not tested_typer(getattr(typer, "__version__", "")):
        return False
    try:
        import typer.core as core
        from typer._coercion import RuntimeParam, build_runtime_param
        from typer._param_types import coerce_cli_path
        param_cls = core._TyperParameter
        param_cls.get_runtime_param        # noqa: B018 - present or AttributeError
    except (ImportError, AttributeError):
        return False
    if getattr(param_cls, "_ccmod_plain", False):
        return True

    @dataclass(frozen=True)
    class PlainRuntimeParam(RuntimeParam):
        """Plain values converted here, the rest by typer's own (built when first needed)."""

        descriptor: object = None
        slow: list = field(default_factory=list)

        def _typer(self):
            if not self.slow:
                self.slow.append(build_runtime_param(self.descriptor))
            return self.slow[0]

        def _plain(self, value, param, ctx):
            ann, info = self.annotation, self.parameter_info
            item = _item_type(ann)
            if item is not None:
                if not isinstance(value, (list, tuple)):
                    return _NO
                out = [self._one(item, v, param, ctx) for v in value]
                return _NO if any(v is _NO for v in out) else out
            return self._one(ann, value, param, ctx)

        def _one(self, ann, value, param, ctx):
            v = plain_value(ann, value, self.parameter_info)
            if v is _NO or ann is not Path:
                return v
            # typer's path checks (exists, file_okay, ...), on the value already a Path
            try:
                return coerce_cli_path(v, self.parameter_info, path_type=Path, param=param,
                                       ctx=ctx)
            except Exception:
                return _NO                  # typer's own conversion says what is wrong

        def _coerce_value(self, value, param, ctx):
            v = self._plain(value, param, ctx)
            return self._typer()._coerce_value(value, param=param, ctx=ctx) if v is _NO else v

    def get_runtime_param(self):
        if self._runtime_param is None:
            d = self.type_descriptor
            if d.file_annotation is None:
                self._runtime_param = PlainRuntimeParam(
                    parameter_info=d.parameter_info, annotation=d.annotation, descriptor=d)
            else:
                self._runtime_param = build_runtime_param(d)
        return self._runtime_param

    param_cls.get_runtime_param = get_runtime_param
    param_cls._ccmod_plain = True
    return True
