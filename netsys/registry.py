"""The network registry: ``NETWORKS`` (entry-point group ``ccmod.networks``)."""
from ccmod.registry import Registry

NETWORKS = Registry("network", "ccmod.networks")
