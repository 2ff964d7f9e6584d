"""The network registry: ``NETWORKS`` (entry-point group ``ccmod.networks``).

Built-in networks register with ``@NETWORKS.register`` where they are defined; those
modules are imported on first use of the registry.
"""
from ccmod.registry import Registry

NETWORKS = Registry("network", "ccmod.networks",
                    builtins=("ccmod.netsys.topologies", "ccmod.netsys.meshes",
                              "ccmod.netsys.topofile", "ccmod.netsys.fattree",
                              "ccmod.netsys.dragonfly", "ccmod.netsys.simgrid_platform"),
                    skip_params=("nodes_needed",))
