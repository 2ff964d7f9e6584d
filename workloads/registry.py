"""Reader and generator registries (entry-point groups ``ccmod.readers``, ``ccmod.generators``).

A reader is a class (or object) with ``name``, ``description``, ``sniff(path) -> bool``
and ``read(path, **options) -> Workload``; common options are ``compute_rate`` (flop/s, for
formats that count flops), ``compute_scale`` (multiply measured compute durations) and
``collectives`` (dict kind -> algorithm name, forcing a decomposition). A generator is a
function ``(params..., seed=0) -> Workload``. Both register with ``@READERS.register()`` /
``@GENERATORS.register(...)`` where they are defined; the modules below are imported on
first use of the registry, so importing ``ccmod.workloads`` stays cheap.
"""
from ccmod.registry import Registry

READERS = Registry("trace format", "ccmod.readers",
                   builtins=("ccmod.workloads.ti", "ccmod.workloads.tabular",
                             "ccmod.workloads.otf2_reader", "ccmod.workloads.dumpi",
                             "ccmod.workloads.paraver", "ccmod.workloads.liballprof",
                             "ccmod.workloads.goal", "ccmod.workloads.dimemas"),
                   skip_params=("path", "compute_rate", "compute_scale", "collectives"),
                   call="read")
GENERATORS = Registry("generator", "ccmod.generators",
                      builtins=("ccmod.workloads.gen_regular", "ccmod.workloads.gen_queueing"),
                      skip_params=("seed",))
