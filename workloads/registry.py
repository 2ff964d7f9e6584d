"""Reader and generator registries (entry-point groups ``ccmod.readers``, ``ccmod.generators``).

A reader is a class (or object) with ``name``, ``description``, ``sniff(path) -> bool``
and ``read(path, **options) -> Workload``; common options are ``compute_rate`` (flop/s, for
formats that count flops), ``compute_scale`` (multiply measured compute durations) and
``collectives`` (dict kind -> algorithm name, forcing a decomposition).
"""
from ccmod.registry import Registry

READERS = Registry("trace format", "ccmod.readers")
GENERATORS = Registry("generator", "ccmod.generators")
