"""Data-flow models of the MMT article's validation examples, built as JSON documents.

:func:`image_processing` is section 4.1's morphological filter on P RS6000 workstations
over a 200 KB/s Ethernet (Childers et al. 1994, Figure 7): actor S on workstation 1
splits an N x N image into P pieces written to data nodes Da_i, actor A_i filters piece i
on workstation i and writes data node Db_i, actor M on workstation 1 merges.  The text
gives the rates: S and M serve at ``200000 / (N^2 + 8 N (P - 1))`` per second, A_i at
``P / (0.0002 N^2)``; messages are ``ceil(N^2 / P) + 8 N`` bytes with a 415 us start-up.
Da_i and Db_i sit with A_i, so piece i >= 2 crosses the Ethernet once each way and piece 1
stays on workstation 1 (as the article's S / Da_1 example says).  One image at a time
(``closed: 1``); the application response time is the time per image.
"""
from __future__ import annotations

import math

__all__ = ["image_processing"]


def image_processing(P: int, N: int = 512, distribution: str = "exponential",
                     transfer_distribution: str = "exponential") -> dict:
    """The section 4.1 model for ``P`` workstations and an ``N x N`` image (a dict)."""
    if P < 1 or N < 1:
        raise ValueError("P and N must be >= 1")
    t_sm = (N * N + 8 * N * (P - 1)) / 200000.0
    t_a = 0.0002 * N * N / P
    msg = math.ceil(N * N / P) + 8 * N
    procs = [{"name": f"W{i}", "discipline": "FCFS"} for i in range(1, P + 1)]
    links = [] if P == 1 else [{"name": "ethernet", "endpoints": [p["name"] for p in procs],
                                "rate": 200000.0, "latency": 415e-6, "type": "ethernet"}]
    actors = [{"name": "S", "processor": "W1", "mean": t_sm, "distribution": distribution},
              {"name": "M", "processor": "W1", "mean": t_sm, "distribution": distribution}]
    data, edges = [], []
    for i in range(1, P + 1):
        w = f"W{i}"
        actors.append({"name": f"A{i}", "processor": w, "mean": t_a,
                       "distribution": distribution})
        data += [{"name": f"Da{i}", "processor": w}, {"name": f"Db{i}", "processor": w}]
        edges += [{"from": "S", "to": f"Da{i}", "amount": msg},
                  {"from": f"Da{i}", "to": f"A{i}", "amount": msg},
                  {"from": f"A{i}", "to": f"Db{i}", "amount": msg},
                  {"from": f"Db{i}", "to": "M", "amount": msg}]
    return {"name": f"imageproc_P{P}_N{N}", "time_unit": "s", "closed": 1,
            "description": f"MMT section 4.1 image processing, P={P}, N={N} "
                           f"(Childers et al. 1994)",
            "transfer_distribution": transfer_distribution, "processors": procs,
            "links": links, "actors": actors, "data": data, "edges": edges}
