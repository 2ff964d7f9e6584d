"""Link disciplines of data-flow models as registered sharing rules.

MMT (Childers et al. 1994) gives every physical link a type; each type is a rule for how a
communication uses the links of its route.  A rule turns a route into *stages* and says
how a stage shares its links:

* ``circuit`` (link type ``virtual_circuit``): consecutive circuit links form one stage
  that holds all of them for the whole transfer; a waiting transfer acquires all its
  links at once, in FCFS order of arrival (MMT's virtual-circuit compound, its Figure 6);
* ``store_forward`` (``store_and_forward``): one stage per link (hop by hop); each link
  serves its hops one at a time in FCFS order;
* ``ethernet`` (``ethernet``): one stage per link; the link is one shared medium whose
  active transfers progress at ``1 / n`` of its rate each, which is CCMOD's bandwidth
  availability ``BA = 1 / CA`` on that resource (no queue: every transfer is admitted).

``exclusive`` stages are admitted by the data-flow event loop and then run at full rate
(contention 1 on their links); ``shared`` stages are admitted at once and slowed by the
engine's sharing machinery.  Third-party rules register through ``ccmod.link_rules``.
"""
from __future__ import annotations

from dataclasses import dataclass

from ccmod.registry import Registry

LINK_RULES = Registry("link discipline", "ccmod.link_rules")


@dataclass(frozen=True)
class LinkRule:
    """How a link type uses its links.

    Attributes
    ----------
    name : str
    stage_kind : str
        ``"exclusive"`` (held by one transfer, FCFS admission) or ``"shared"`` (processor
        sharing among the active transfers).
    merge : bool
        Consecutive links of this rule form one stage acquired at once.
    """

    name: str
    stage_kind: str
    merge: bool


@LINK_RULES.register("circuit", "virtual circuit: all links of the route held at once, "
                                "FCFS acquisition")
def circuit() -> LinkRule:
    return LinkRule("circuit", "exclusive", True)


@LINK_RULES.register("store_forward", "store-and-forward: hop by hop, each link serves one "
                                      "transfer at a time (FCFS)")
def store_forward() -> LinkRule:
    return LinkRule("store_forward", "exclusive", False)


@LINK_RULES.register("ethernet", "ethernet: one shared medium, n active transfers get 1/n of "
                                 "the rate each (bandwidth availability)")
def ethernet() -> LinkRule:
    return LinkRule("ethernet", "shared", False)


def rule(name: str) -> LinkRule:
    """The registered rule ``name`` (unknown names fail listing the valid ones)."""
    return LINK_RULES.get(name).factory()
