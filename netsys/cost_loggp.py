"""LogGP quiet cost (``--cost loggp:L=..,o=..,g=..,G=..``), for users coming from LogGOPSim.

LogGP (Alexandrov et al., 1995) describes a message of ``n`` bytes with four numbers:
``L`` the end-to-end latency, ``o`` the CPU overhead paid by the sender and again by the
receiver, ``g`` the gap (minimum time between two message injections of one node) and
``G`` the gap per byte (1 / bandwidth). The quiet-network time of one message is, as in
LogGOPSim::

    Tquiet(n) = o + L + (n - 1) * G + o        (n >= 1; a 0-byte message costs 2o + L)

The size-independent part ``2o + L`` is the latency phase (what ``maxmin`` and the
``ccmod:latency=unshared`` refinement keep unshared); ``n * G``-ish is what contention
stretches. ``g`` limits the message rate of a node: it is exposed as :attr:`gap_s` (and
``o`` as :attr:`o_send_s` / :attr:`o_recv_s`) for the engine's per-node NIC gap and CPU
overheads where the engine supports them; on its own the quiet time does not use ``g``.
Routes do not change the cost: ``L`` is end to end (``L_hop`` adds a per-hop latency
beyond ``ref_hops`` resources, 0 by default).
"""
from __future__ import annotations

import math

import numpy as np

from ccmod.errors import CcmodInputError
from ccmod.netsys.cost import CostModel

#: defaults: a 10 Gb/s-class cluster interconnect of the LogGOPSim papers' era
DEFAULTS = {"L": 1.5e-6, "o": 1.0e-6, "g": 2.0e-6, "G": 8.0e-10, "L_hop": 0.0, "ref_hops": 2}
DOCS = {"L": "end-to-end latency (s)", "o": "CPU overhead per message, paid by sender and "
        "receiver (s)", "g": "gap: minimum time between two injections of a node (s)",
        "G": "gap per byte: 1 / bandwidth (s/byte)", "L_hop": "latency per route resource "
        "beyond ref_hops (s)", "ref_hops": "route resources included in L"}


class LogGPCost(CostModel):
    """``Tquiet(n) = 2o + L + max(n - 1, 0) * G (+ L_hop * (hops - ref_hops))``.

    Parameters
    ----------
    L, o, g, G : float
        LogGP parameters in seconds (``G`` in seconds per byte).
    L_hop : float
        Latency per route resource beyond ``ref_hops`` (default 0: ``L`` is end to end).
    ref_hops : int
        Route length ``L`` was measured on.
    """

    name = "loggp"

    def __init__(self, L: float = DEFAULTS["L"], o: float = DEFAULTS["o"],
                 g: float = DEFAULTS["g"], G: float = DEFAULTS["G"],
                 L_hop: float = DEFAULTS["L_hop"], ref_hops: int = DEFAULTS["ref_hops"]):
        self.L, self.o, self.g, self.G = float(L), float(o), float(g), float(G)
        self.L_hop, self.ref_hops = float(L_hop), int(ref_hops)
        for k in ("L", "o", "g", "G", "L_hop"):
            v = getattr(self, k)
            if not (math.isfinite(v) and 0.0 <= v <= 1e4):
                raise CcmodInputError(f"LogGP parameter {k}={v} must be a number of seconds "
                                      "in [0, 1e4]", source="--cost")
        if self.ref_hops < 0:
            raise CcmodInputError("LogGP parameter ref_hops must be >= 0", source="--cost")
        if self.G == 0.0:
            raise CcmodInputError("LogGP parameter G (seconds per byte) must be > 0",
                                  source="--cost", hint="G = 1 / bandwidth, e.g. 8e-10")

    # the engine's per-message split (CPU overheads and the NIC gap of the contract)
    @property
    def o_send_s(self) -> float:
        return self.o

    @property
    def o_recv_s(self) -> float:
        return self.o

    @property
    def gap_s(self) -> float:
        return self.g

    def overheads_s(self, nbytes, same_node=None):
        """(o_send, o_recv) per message: ``o`` each (the CPU overheads of LogGP).

        An engine that charges them to the ranks takes them out of the quiet time (the
        quiet time ``2o + L + (n-1)G`` includes them, as a ping-pong measures them)."""
        shape = np.shape(nbytes)
        return np.full(shape, self.o), np.full(shape, self.o)

    def _hop_extra(self, hops):
        if hops is None or not self.L_hop:
            return 0.0
        return self.L_hop * (np.asarray(hops, float) - self.ref_hops)

    def quiet_s(self, nbytes, route_latency_s=0.0, route_bandwidth_Bps=1.0, hops=None):
        n = np.asarray(nbytes, dtype=float)
        t = 2 * self.o + self.L + np.maximum(n - 1.0, 0.0) * self.G + self._hop_extra(hops)
        return np.maximum(t, 0.0)

    def latency_s(self, nbytes, route_latency_s=0.0, route_bandwidth_Bps=1.0, hops=None):
        n = np.asarray(nbytes, dtype=float)
        return np.maximum(2 * self.o + self.L + 0.0 * n + self._hop_extra(hops), 0.0)

    def bandwidth_Bps(self, nbytes):
        return np.full_like(np.asarray(nbytes, float), 1.0 / self.G)

    def _lat_for_inverse(self, nbytes, total):
        return total - np.maximum(nbytes - 1.0, 0.0) * self.G

    def describe(self) -> str:
        return (f"loggp L={self.L:g}s o={self.o:g}s g={self.g:g}s G={self.G:g}s/B"
                + (f" L_hop={self.L_hop:g}s ref_hops={self.ref_hops}" if self.L_hop else ""))

    def to_dict(self) -> dict:
        return {"kind": "loggp", "L": self.L, "o": self.o, "g": self.g, "G": self.G,
                "L_hop": self.L_hop, "ref_hops": self.ref_hops}


def is_loggp_spec(text) -> bool:
    """True for ``loggp`` or ``loggp:...`` (the ``--cost`` value names this model)."""
    return isinstance(text, str) and text.strip().split(":", 1)[0].strip().lower() == "loggp"


def parse_loggp(spec: str) -> LogGPCost:
    """``"loggp:L=5e-6,o=1e-6,g=2e-6,G=8e-10"`` → :class:`LogGPCost` (defaults for the rest)."""
    from ccmod.registry import parse_spec
    _, raw = parse_spec(spec, source="--cost")
    vals: dict = {}
    for k, text in raw.items():
        if k not in DEFAULTS:
            raise CcmodInputError(f"unknown LogGP parameter '{k}'", source="--cost",
                                  hint="valid: " + ", ".join(DEFAULTS))
        try:
            x = float(text)
        except ValueError:
            raise CcmodInputError(f"LogGP parameter '{k}={text}' is not a number",
                                  source="--cost", hint=DOCS[k]) from None
        if k == "ref_hops":
            if not x.is_integer():
                raise CcmodInputError(f"LogGP parameter 'ref_hops={text}' is not an integer",
                                      source="--cost")
            x = int(x)
        vals[k] = x
    return LogGPCost(**vals)
