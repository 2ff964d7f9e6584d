"""The sink registry: ``SINKS`` (entry-point group ``ccmod.sinks``)."""
from ccmod.registry import Registry

SINKS = Registry("sink", "ccmod.sinks")
