"""The registry of sharing rules: how active messages share a resource's bandwidth.

``--sharing NAME[:key=value,...]`` names one (``ccmod sharing`` lists them). The engine
implements each rule; this module only names and documents them, so options can be
validated (and listed) without importing the engine.
"""
from __future__ import annotations

from ccmod.registry import Param, Registry

SHARING_RULES = Registry("sharing rule", "ccmod.sharing_rules")

SHARING_RULES.add(
    "ccmod", object,
    "the article's rule: each message's whole quiet time is divided by its route's "
    "bandwidth availability (BA = capacity share left by contention and background)",
    params={"latency": Param(str, "shared", "shared: the article (latency divided by BA "
                                            "too); unshared: latency paid alone, BA applied "
                                            "to the bandwidth part", ("shared", "unshared")),
            "capacity": Param(str, "ignored", "ignored: the article (BA = free / count on "
                                              "every resource, whatever its capacity); ratio: "
                                              "BA = min(1, capacity / (count * quiet "
                                              "bandwidth)), so a resource faster or slower "
                                              "than a message's quiet bandwidth counts",
                              ("ignored", "ratio"))})
SHARING_RULES.add(
    "maxmin", object,
    "max-min fair sharing of each resource (SimGrid CM02-like); latency is not shared",
    params={})


def split_rules(text: str) -> list[str]:
    """A comma list of rules, where a rule's own options also use commas:
    ``ccmod,ccmod:latency=unshared,capacity=ratio,maxmin`` -> three rules (an item with
    ``=`` and no ``:`` is an option of the rule before it)."""
    out: list[str] = []
    for tok in (t.strip() for t in str(text or "").split(",")):
        if not tok:
            continue
        if out and "=" in tok and ":" not in tok:
            out[-1] += "," + tok
        else:
            out.append(tok)
    return out
