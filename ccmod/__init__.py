"""ccmod: predict communication time and network bottlenecks from parallel traces.

>>> import ccmod
>>> r = ccmod.run("traces/ring16.ti", network="myrinet16")   # doctest: +SKIP
>>> r.makespan_s                                              # doctest: +SKIP
"""
__version__ = "0.1.0"

# A source checkout keeps netsys/, workloads/ and outputs/ beside ccmod/ (they install as
# ccmod.netsys, ... via pyproject's package-dir). When this file is imported straight from
# the checkout (e.g. `python -m ccmod` in the repository root), let those subpackages
# resolve to the sibling folders; an installed package has them inside and skips this.
def _extend_path_in_checkout() -> None:
    import os
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    if os.path.isdir(os.path.join(here, "netsys")):
        return
    if all(os.path.isfile(os.path.join(root, room, "__init__.py"))
           for room in ("netsys", "workloads", "outputs")):
        __path__.append(root)  # noqa: F821 (module __path__)


_extend_path_in_checkout()

__all__ = ["run", "load_workload", "load_network", "RunOptions", "RunResult", "__version__"]


def __getattr__(name):
    # lazy: `import ccmod` stays cheap for the CLI and plugins
    if name in ("run", "load_workload", "load_network"):
        from ccmod import api
        return getattr(api, name)
    if name == "RunOptions":
        from ccmod.options import RunOptions
        return RunOptions
    if name == "RunResult":
        from ccmod.result import RunResult
        return RunResult
    raise AttributeError(f"module 'ccmod' has no attribute {name!r}")
