"""The ``ccmod`` command line: thin typer wrappers over the Python API.

Each area registers its commands from its own ``ccmod/cli_<area>.py`` module through a
``register(app)`` function; :func:`main` turns every :class:`ccmod.errors.CcmodError`
(and bad options) into one line on stderr and exit code 2.
"""
from __future__ import annotations

import importlib
import sys

import typer

from ccmod.cli_coerce import install as install_plain_conversion
from ccmod.errors import CcmodError, one_line

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Predict communication time and network bottlenecks from MPI traces "
                       "(CCMOD event-horizon model).",
                  pretty_exceptions_enable=False)

#: command modules; a module that is missing is skipped (plugins ship separately)
_COMMAND_MODULES = ("ccmod.cli_run", "ccmod.cli_fit", "ccmod.cli_workloads", "ccmod.cli_generate",
                    "ccmod.cli_outputs", "ccmod.cli_analytic", "ccmod.cli_sweep",
                    "ccmod.cli_dataflow")


#: the module of each command (a command given on the command line registers only its
#: module: importing and building the others' commands is ~0.05 s of every start-up);
#: tests/test_cli_coerce.py checks it against what the modules register
COMMAND_MODULE = {
    "run": "ccmod.cli_run", "networks": "ccmod.cli_run", "sharing": "ccmod.cli_run",
    "fit": "ccmod.cli_fit", "info": "ccmod.cli_workloads", "convert": "ccmod.cli_workloads",
    "formats": "ccmod.cli_workloads", "generate": "ccmod.cli_generate",
    "report": "ccmod.cli_outputs", "sinks": "ccmod.cli_outputs", "lopc": "ccmod.cli_analytic",
    "mva": "ccmod.cli_analytic", "overflow": "ccmod.cli_analytic",
    "crosscheck": "ccmod.cli_analytic", "sweep": "ccmod.cli_sweep",
    "sweep-report": "ccmod.cli_sweep", "link-rules": "ccmod.cli_dataflow",
    "dataflow": "ccmod.cli_dataflow"}
_registered: list = []          # the modules whose commands are in `app`, in order


def _register(mods) -> None:
    for mod in mods:
        if mod in _registered:
            continue
        try:
            m = importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            if exc.name == mod:
                continue
            raise
        m.register(app)
        _registered.append(mod)


def _register_all() -> None:
    """Every command, in :data:`_COMMAND_MODULES`' order (``--help`` lists them so)."""
    if _registered == [m for m in _COMMAND_MODULES if m in _registered] and \
            len(_registered) == len(_COMMAND_MODULES):
        return
    app.registered_commands.clear()
    app.registered_groups.clear()
    _registered.clear()
    _register(_COMMAND_MODULES)


#: ``(registrations, click command)``: the command typer built from ``app`` for them
_built: list = []


def _command():
    """The click command of ``app`` as registered now, built again only when the
    registrations changed.

    Calling ``app`` builds it on every call: typer reads every command function's
    signature and evaluates its annotations, ~30 ms with all commands registered, where
    the command itself may take a few (``main`` called many times in one process: tests,
    notebooks). ``pretty_exceptions_enable=False``: typer's own call adds nothing else.
    """
    key = (tuple(app.registered_commands), tuple(app.registered_groups),
           app.registered_callback)
    if not _built or _built[0][0] != key:
        _built[:] = [(key, typer.main.get_command(app))]
    return _built[0][1]


def _register_for(args: list) -> None:
    """The commands ``args`` can reach: the named command's module alone when the first
    argument names one (a plain ``ccmod run ...``), else all (help, a typo's suggestions)."""
    mod = COMMAND_MODULE.get(args[0]) if args else None
    if mod is None or "--help" in args[:1]:
        _register_all()
    elif not _registered or _registered == [mod]:
        _register([mod])
    else:
        _register_all()      # commands of several modules already in: keep the order


install_plain_conversion()


def _quiet_library_logs() -> None:
    """Library log records (matplotlib's font manager...) would reach stderr through
    logging's last-resort handler: give the root logger a handler that drops them."""
    import logging
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(logging.NullHandler())


def _plain_flags() -> None:
    """Show on/off flags without a ``<bool>`` type column in ``--help`` (it is noise)."""
    import typer.core
    orig = typer.core.TyperOption.display_type_rich

    def display_type_rich(self, ctx):
        return None if getattr(self, "is_flag", False) else orig(self, ctx)
    typer.core.TyperOption.display_type_rich = display_type_rich


_plain_flags()


def _version(value: bool) -> None:
    if value:
        from ccmod import __version__
        print(f"ccmod {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    """Predict communication time and network bottlenecks from MPI traces."""


def _skip_final_collection() -> None:
    """Spare the process its last garbage collections: it ends after this command.

    At exit CPython collects garbage over every object still alive; once numba has loaded
    its typing and lowering registries that walk costs ~0.2 s of CPU, a fifth of a small
    ``ccmod run``. The objects are frozen (:func:`gc.freeze`) instead, after the exit
    handlers registered later have run; the memory goes back with the process. Nothing
    relies on a collection then: outputs are closed and renamed explicitly
    (:mod:`ccmod.atomic`), the standard streams are flushed by the interpreter.
    """
    import atexit
    import gc
    atexit.register(gc.freeze)


#: commands that make no BLAS call (numpy's matrix products, solvers): their process starts
#: OpenBLAS with one thread (see :func:`_one_blas_thread`)
_NO_BLAS_COMMANDS = frozenset({"run", "report", "info", "convert", "formats", "networks",
                               "sharing", "sinks"})
#: whether :func:`_pause_collection` paused the collector (then :func:`end_of_startup`
#: resumes it)
_startup_paused: list = []


def _one_blas_thread(args: list) -> None:
    """Start OpenBLAS with one thread in a process whose command makes no BLAS call.

    Importing numpy starts OpenBLAS's thread pool (one thread per core, ~0.03 s of CPU
    in a warm ``ccmod run``), though no kernel, reader or output of these commands calls
    a BLAS. A value the user set (``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS``) is kept;
    numpy must not be imported yet (it is not, in the ``ccmod`` process).
    """
    import os
    if args[:1] and args[0] in _NO_BLAS_COMMANDS and "numpy" not in sys.modules and \
            not any(k in os.environ for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")):
        os.environ["OPENBLAS_NUM_THREADS"] = "1"


def _skip_report_validation() -> None:
    """Build Bokeh reports without Bokeh's document validation in the ``ccmod`` process.

    Bokeh checks every model of a document before writing it (~0.05 s of CPU of the
    Quickstart's ``--report``), but what it finds it only logs, and the command drops
    library log records (:func:`_quiet_library_logs`): the check changes nothing a user
    sees, nor the file written. Kept with ``CCMOD_DEBUG`` (which shows the records) and
    when the user set ``BOKEH_VALIDATE_DOC``.
    """
    import os
    if not os.environ.get("CCMOD_DEBUG"):
        os.environ.setdefault("BOKEH_VALIDATE_DOC", "false")


def _pause_collection(args: list) -> None:
    """Pause Python's cyclic garbage collector through ``ccmod run``'s start-up.

    Importing numba, numpy and the readers makes a few hundred thousand long-lived objects;
    the collector's passes walk them again and again as they accumulate (~4 % of a warm
    small run's instructions), though almost none is garbage. :func:`end_of_startup`
    freezes what start-up made (:func:`gc.freeze`: later passes skip it) and resumes the
    collector before the run itself, so the run collects as before.
    """
    import gc
    if args[:1] == ["run"] and gc.isenabled():
        gc.disable()
        _startup_paused.append(True)


def end_of_startup() -> None:
    """Resume the collector :func:`_pause_collection` paused (nothing otherwise)."""
    if _startup_paused:
        import gc
        _startup_paused.clear()
        gc.freeze()
        gc.enable()


def main(argv: list[str] | None = None) -> None:
    """Console entry point: run the app, one-line errors, exit code 2.

    ``--allow-outside-paths`` (anywhere on the command line) lets description files name
    trace files outside their own folder (see :mod:`ccmod.guard`). Called without ``argv``
    (the ``ccmod`` command, ``python -m ccmod``) the process ends after the command: see
    :func:`_skip_final_collection`.
    """
    import os
    import warnings

    from ccmod import guard
    if argv is None:
        _skip_final_collection()
    args = list(sys.argv[1:] if argv is None else argv)
    guard.set_allow_outside_paths("--allow-outside-paths" in args)
    args = [a for a in args if a != "--allow-outside-paths"]
    if argv is None:
        _one_blas_thread(args)
        _skip_report_validation()
        _pause_collection(args)
    _register_for(args)
    try:
        with warnings.catch_warnings():
            # library warnings (numpy RuntimeWarning, matplotlib UserWarning...) are not
            # errors: the CLI's stderr holds one line per error only (CCMOD_DEBUG shows them)
            if not os.environ.get("CCMOD_DEBUG"):
                warnings.simplefilter("ignore")
                _quiet_library_logs()
            rv = _command()(args=args, standalone_mode=False)
    except CcmodError as exc:
        print(f"ccmod: error: {one_line(exc)}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        print("ccmod: interrupted", file=sys.stderr)
        sys.exit(130)
    except SystemExit:
        raise
    except BrokenPipeError:
        # the reader went away (e.g. `| head`): stop quietly, like other Unix tools
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except OSError:
            pass
        sys.exit(0)
    except MemoryError:
        print("ccmod: error: out of memory: the input or the parameters are too large for this "
              "machine (use smaller sizes or a bigger machine)", file=sys.stderr)
        sys.exit(2)
    except OSError as exc:
        # the environment refused a file operation (unwritable path, a directory, disk full)
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        if not where:
            # a library's write failed without naming its file (e.g. disk full): name the
            # output(s) being written
            from ccmod.atomic import outputs_being_written
            names = outputs_being_written()
            where = f"{names[0]}: " if names else ""
        print(one_line(f"ccmod: error: {where}{exc.strerror or exc} (check the path, its "
                       f"permissions and free space)"), file=sys.stderr)
        sys.exit(2)
    except Exception as exc:
        # usage errors (bad option, missing argument) from typer's click
        if hasattr(exc, "format_message") and hasattr(exc, "exit_code"):
            msg = one_line(exc.format_message()).strip()
            if not msg:  # no arguments: help was printed
                sys.exit(2)
            print(f"ccmod: error: {msg} (see --help)", file=sys.stderr)
            sys.exit(2)
        if type(exc).__name__ == "Abort":
            sys.exit(130)
        if os.environ.get("CCMOD_DEBUG"):
            raise
        text = one_line(exc)
        text = text[:300] + "..." if len(text) > 300 else text
        print(f"ccmod: internal error: {type(exc).__name__}: {text} (a bug: please report "
              f"it; set CCMOD_DEBUG=1 for the traceback)", file=sys.stderr)
        sys.exit(1)
    if isinstance(rv, int) and rv:
        sys.exit(rv)
