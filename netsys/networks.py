"""The public network factory: ``--network NAME[:key=value,...]`` → a :class:`Network`.

Importing this module registers every built-in network in
:data:`netsys.registry.NETWORKS`; third-party networks come from the ``ccmod.networks``
entry-point group (a :class:`netsys.base.Network` subclass with a ``params`` dict whose
constructor accepts ``nodes_needed=`` plus its parameters, see docs/networks.md).
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ccmod.errors import CcmodInputError
from ccmod.netsys.base import Network
from ccmod.netsys.cost import CostModel, PhysicalCost, PiecewiseLinearCost
from ccmod.netsys.nic import COMMON_PARAMS, parse_common, split_common
from ccmod.netsys.registry import NETWORKS
from ccmod.registry import format_default, parse_spec

if TYPE_CHECKING:   # pandas only for the listings (not on a run's start-up path)
    import pandas as pd

SRC = "--network"


def make_network(spec: str, nodes_needed: int | None,
                 cost: str | os.PathLike | CostModel | None = None,
                 background: float | None = None) -> Network:
    """Build the network named by ``spec`` for a run that needs ``nodes_needed`` nodes.

    Parameters
    ----------
    spec : str
        ``NAME[:key=value,...]``, e.g. ``"star"``, ``"fattree2:spines=4,route=smodk"``.
        Every network also takes ``duplex=``, ``nic_bandwidth=``, ``connection=`` and ``intra=``
        (:mod:`ccmod.netsys.nic`).
    nodes_needed : int or None
        Number of nodes the run uses (max mapped node + 1, see
        :func:`netsys.mapping.rank_to_node`). Parameters left at a derived default are
        sized from it; an explicit size that is too small is an error.
    cost : str, path, CostModel or None
        Quiet-network cost: ``None`` keeps the network's default, ``"physical"`` selects
        :class:`PhysicalCost`, any other string is a JSON cost-model file
        (``ccmod fit`` writes them, loaded with :meth:`PiecewiseLinearCost.load`).
    background : float or None
        Constant background load fraction in [0, 1) applied to every link direction.

    Returns
    -------
    Network

    Raises
    ------
    CcmodInputError
        Unknown network (lists valid names), unknown or invalid parameter (names it and the
        valid ones), a network too small for the run, or a bad cost file / background.
    """
    name, entry, values, nic = _parse(spec)
    need = None if nodes_needed is None else int(nodes_needed)
    net = entry.factory(nodes_needed=need, **values)
    if not isinstance(net, Network):
        raise CcmodInputError(f"network plugin '{name}' did not build a netsys Network",
                              source=SRC)
    if need is not None and net.nnodes < need:
        raise CcmodInputError(f"network '{name}' has {net.nnodes} nodes but the run needs {need}",
                              source=SRC, hint="use a bigger network or --map")
    model = None if _default_cost(cost) else load_cost(cost)
    if nic["nic_bandwidth"] is None and (nic["duplex"] != "none" or nic["connection"] != "none"):
        # a model fitted on multi-pair streams knows the node's NIC rate
        nic["nic_bandwidth"] = getattr(model, "nic_bandwidth_Bps", None)
    net.configure_nodes(**nic)
    if model is not None:
        net.set_cost(model)
        one = getattr(model, "stream_bandwidth_Bps", None)
        node = getattr(model, "nic_bandwidth_Bps", None)
        if net.node_resources is not None and one and node and one < node:
            # one pair streams slower than the NIC: a per-rank injection resource
            net.node_resources.inject_Bps = float(one)
    if background is not None:
        net.set_background(background)
    return net


def _parse(spec: str):
    """``(name, registry entry, typed parameters, NIC parameters)`` of a network spec."""
    name, raw = parse_spec(str(spec), source=SRC)
    raw, common = split_common(raw)
    nic = parse_common(common)
    entry = NETWORKS.get(name, source=SRC)
    return name, entry, NETWORKS.convert(name, raw, source=SRC, defaults=True), nic


def _default_cost(cost) -> bool:
    return cost is None or (isinstance(cost, str) and cost.strip().lower() in ("none", "default"))


def check_network(spec: str, cost: str | os.PathLike | CostModel | None = None) -> None:
    """Check a network spec (name, parameters) and its ``--cost`` without building anything.

    What :func:`make_network` checks before it needs the run's size: ``ccmod run`` calls it
    before reading the trace and loading the compiled kernels, so a typo fails at once.
    """
    _parse(spec)
    if not _default_cost(cost):
        load_cost(cost)


def load_cost(cost: str | os.PathLike | CostModel) -> CostModel:
    """Resolve a ``--cost`` value: a CostModel, ``"physical"``, ``"loggp:L=..,o=..,g=..,G=.."``
    or a JSON model file."""
    if isinstance(cost, CostModel):
        return cost
    if str(cost) == "physical":
        return PhysicalCost()
    from ccmod.netsys.cost_loggp import is_loggp_spec, parse_loggp
    if is_loggp_spec(cost):
        return parse_loggp(str(cost))
    return PiecewiseLinearCost.load(cost)


def list_networks() -> pd.DataFrame:
    """One row per registered network: ``name``, ``description``, ``params``.

    ``params`` is ``key=default`` joined with ``, `` (``derived`` = sized from the run or
    from another parameter, ``required`` = must be given).
    """
    import pandas as pd
    rows = [{k: r[k] for k in ("name", "description", "params")} for r in NETWORKS.listing()]
    return pd.DataFrame(rows, columns=["name", "description", "params"])


def common_params() -> pd.DataFrame:
    """The parameters every network accepts (NIC and intra-node resources)."""
    import pandas as pd
    return pd.DataFrame([{"param": k, "doc": v} for k, v in COMMON_PARAMS.items()],
                        columns=["param", "doc"])


def network_params(name: str) -> pd.DataFrame:
    """The declared parameters of one network: ``param``, ``type``, ``default``, ``doc``."""
    import pandas as pd
    entry = NETWORKS.get(name, source=SRC)
    declared = NETWORKS.params_of(entry) or {}
    rows = [{"param": k, "type": p.type.__name__, "default": format_default(p),
             "doc": p.doc + (f" (one of: {', '.join(map(str, p.choices))})" if p.choices else "")}
            for k, p in declared.items()]
    return pd.DataFrame(rows, columns=["param", "type", "default", "doc"])
