"""The command line's start-up shortcuts give what typer gives.

* :mod:`ccmod.cli_coerce` converts plain option values without pydantic: on every option of
  every command, for text of many forms, its result (or its refusal) is typer's own.
* :data:`ccmod.cli.COMMAND_MODULE` (a command registers only its module) names every
  command of every module, and a run registers only its own module.
"""
from __future__ import annotations

import importlib
from pathlib import Path

import typer
import typer.main

from ccmod import cli
from ccmod.cli_coerce import _NO, _item_type, plain_value

SAMPLES = ["0", "7", "-3", "+12", "007", "1.5", "-0.25", ".5", "5.", "1e-3", "2E+6", "1e400",
           "inf", "nan", " 7", "7 ", "1_000", "", "abc", "0x10", "ring16.ti", "a/b c", "-",
           "1,2", "12345678901234567890"]


def _all_params():
    app = typer.Typer()

    @app.callback()
    def _root():
        """all commands"""
    for mod in cli._COMMAND_MODULES:
        importlib.import_module(mod).register(app)
    group = typer.main.get_command(app)
    out, todo = [], [group]
    while todo:
        cmd = todo.pop()
        out += [p for p in getattr(cmd, "params", []) if hasattr(p, "type_descriptor")]
        todo += list(getattr(cmd, "commands", {}).values())
    return out


def _typer_value(param, value):
    from typer._coercion import build_runtime_param
    try:
        return build_runtime_param(param.type_descriptor)._coerce_value(value, param=param,
                                                                        ctx=None)
    except Exception as exc:               # typer refuses it: so must the plain path
        return ("refused", type(exc).__name__)


def test_plain_conversion_is_typers():
    params = _all_params()
    assert len(params) > 100
    # one option of each kind (type, settings): the others convert alike
    kinds = {}
    for p in params:
        i = p.type_descriptor.parameter_info
        kinds.setdefault((repr(p.type_descriptor.annotation), i.min, i.max, i.clamp,
                          i.parser, i.exists, i.file_okay, i.dir_okay, i.readable,
                          i.writable, i.path_type, i.resolve_path, i.allow_dash), p)
    checked = 0
    for p in kinds.values():
        d = p.type_descriptor
        item = _item_type(d.annotation)
        for text in SAMPLES:
            value = [text, text] if item is not None else text
            ann = item if item is not None else d.annotation
            got = plain_value(ann, text, d.parameter_info)
            if got is _NO:
                continue                   # left to typer
            if ann is Path and text == "-":
                continue                   # exists checks etc. run after, in both
            want = _typer_value(p, value)
            want = want[0] if item is not None and isinstance(want, list) else want
            assert got == want and type(got) is type(want), (p.name, text, got, want)
            checked += 1
    assert checked > 50


def test_plain_conversion_refuses_what_it_does_not_know():
    assert plain_value(int, "1_000") is _NO and plain_value(float, "inf") is _NO
    assert plain_value(int, " 7") is _NO and plain_value(bool, "yes") is _NO
    assert plain_value(int, True) is _NO and plain_value(Path, "") is _NO


def test_command_modules_are_complete():
    for mod in cli._COMMAND_MODULES:
        app = typer.Typer()
        importlib.import_module(mod).register(app)
        names = [c.name for c in app.registered_commands] + \
                [g.name for g in app.registered_groups]
        assert names and all(cli.COMMAND_MODULE[n] == mod for n in names), (mod, names)
    assert set(cli.COMMAND_MODULE.values()) == set(cli._COMMAND_MODULES)


def test_a_command_registers_its_module_only(monkeypatch, capsys):
    monkeypatch.setattr(cli, "_registered", [])
    monkeypatch.setattr(cli.app, "registered_commands", [])
    monkeypatch.setattr(cli.app, "registered_groups", [])
    cli.main(["sharing", "--json"])
    assert cli._registered == ["ccmod.cli_run"] and "maxmin" in capsys.readouterr().out
    cli._register_for(["--help"])            # help (or a typo): every command, in order
    assert cli._registered == list(cli._COMMAND_MODULES)
    names = [c.name for c in cli.app.registered_commands]
    assert names[:3] == ["run", "networks", "sharing"] and "sweep-report" in names
    cli._register_for(["sharing"])           # all registered: nothing changes
    assert [c.name for c in cli.app.registered_commands] == names


def test_only_tested_typer_releases_are_patched():
    from ccmod.cli_coerce import tested_typer
    assert tested_typer("0.29.2") and tested_typer("0.29.0rc1")
    assert not tested_typer("0.30.0") and not tested_typer("1.0") and not tested_typer("x")
    assert not tested_typer("")
