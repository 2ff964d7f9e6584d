"""ccmod: predict communication time and network bottlenecks from parallel traces.

>>> import ccmod
>>> r = ccmod.run("traces/ring16.ti", network="myrinet16")   # doctest: +SKIP
>>> r.makespan_s                                              # doctest: +SKIP
"""
__version__ = "0.1.0"

__all__ = ["run", "load_workload", "load_network", "RunResult", "__version__"]


def __getattr__(name):
    # lazy: `import ccmod` stays cheap for the CLI and plugins
    if name in ("run", "load_workload", "load_network"):
        from ccmod import api
        return getattr(api, name)
    if name == "RunResult":
        from ccmod.result import RunResult
        return RunResult
    raise AttributeError(f"module 'ccmod' has no attribute {name!r}")
