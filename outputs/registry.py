"""The sink registry: ``SINKS`` (entry-point group ``ccmod.sinks``).

Built-in sinks register with ``@SINKS.register()`` where they are defined; their modules
are imported on first use of the registry.
"""
from ccmod.registry import Registry

SINKS = Registry("sink", "ccmod.sinks",
                 builtins=("ccmod.outputs.parquet", "ccmod.outputs.perfetto",
                           "ccmod.outputs.paraver", "ccmod.outputs.debug"),
                 skip_params=("out_dir",), int_min=0)
