"""LoPC validation: all-to-all request/reply through the engine vs the LoPC prediction.

The LoPC thesis (../shared/seeds/lopc-frank-1997.txt, Sec. 5.3) reports its model within 6%
of an event-driven simulation of homogeneous all-to-all request/reply.  This script generates
the same workload with the ``reqreply`` generator over a grid of W (work between requests),
So (handler time) and P (ranks), runs it through the engine on a star network (16-byte
messages: the network is nearly contention-free, as LoPC assumes) and compares the engine's
mean cycle time (finish / requests) with LoPC's R from :func:`ccmod.analytic.lopc.all_to_all`
with Sl = the mean quiet time of the messages.

``--model am`` (default) uses the engine's LoPC processor model (``ccmod/handlers.py``):
each cycle is one active-message request whose handler runs on arrival at the target,
interrupting its compute, and whose reply handler runs on the requester, as LoPC assumes.
(In one cycle the request and reply handlers take the same drawn time.)  ``--model static``
writes the servers' side as ordinary recv/compute/send records in an order fixed at
generation time (nominal, contention-free times), which any MPI replayer can run but which
cannot interrupt compute: with exponential times that order is far from the dynamic one.

    python bench/lopc_validation.py [--model am|static] [--dist deterministic|exponential]
        [--sharing maxmin] [--send-mode eager] [--requests 40] [--csv out.csv]
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import pandas as pd

from ccmod import api
from ccmod.analytic import lopc
from ccmod.workloads.gen_queueing import reqreply


def one(P, W, So, requests, dist, send_mode, seed, model="am", sharing="maxmin"):
    w = reqreply(nranks=P, requests=requests, work_s=W, handler_s=So, work_dist=dist,
                 handler_dist=dist, seed=seed, model=model)
    res = api.run(w, "star", send_mode=send_mode, sharing=sharing, record=False)
    Sl = float(res.messages["quiet_s"].mean())
    Co2 = 0.0 if dist == "deterministic" else 1.0
    pred = lopc.all_to_all(W, So, Sl, P, Co2=Co2)
    pp = lopc.all_to_all(W, So, Sl, P, Co2=Co2, protocol_processor=True)
    eng_cycle = float(np.mean(res.ranks["finish_s"])) / requests
    return {"P": P, "W_s": W, "So_s": So, "W/So": W / So, "Sl_s": Sl, "dist": dist,
            "engine_cycle_s": eng_cycle, "lopc_R_s": pred.R,
            "lopc_err_pct": 100 * (pred.R - eng_cycle) / eng_cycle,
            "lopc_pp_R_s": pp.R, "lopc_pp_err_pct": 100 * (pp.R - eng_cycle) / eng_cycle,
            "free_s": pred.contention_free,
            "free_err_pct": 100 * (pred.contention_free - eng_cycle) / eng_cycle,
            "engine_contention_So": (eng_cycle - pred.contention_free) / So,
            "lopc_contention_So": pred.contention / So}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dist", default="deterministic", choices=("deterministic", "exponential"))
    ap.add_argument("--send-mode", default="eager")
    ap.add_argument("--model", default="am", choices=("am", "static"))
    ap.add_argument("--sharing", default="maxmin", choices=("maxmin", "ccmod"))
    ap.add_argument("--requests", type=int, default=40)
    ap.add_argument("--P", default="4,16,32")
    ap.add_argument("--So", default="1e-5,5e-5")
    ap.add_argument("--W-over-So", default="0,2,10,50")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--csv", default=None)
    a = ap.parse_args(argv)
    rows = []
    t0 = time.perf_counter()
    for P in [int(x) for x in a.P.split(",")]:
        for So in [float(x) for x in a.So.split(",")]:
            for k in [float(x) for x in a.W_over_So.split(",")]:
                rows.append(one(P, k * So, So, a.requests, a.dist, a.send_mode, a.seed,
                                a.model, a.sharing))
    df = pd.DataFrame(rows)
    pd.set_option("display.width", 200)
    cols = ["P", "So_s", "W/So", "engine_cycle_s", "lopc_R_s", "lopc_err_pct",
            "lopc_pp_err_pct", "free_err_pct", "engine_contention_So", "lopc_contention_So"]
    print(df[cols].to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    print(f"\n{len(df)} runs in {time.perf_counter() - t0:.1f} s; model={a.model}, "
          f"dist={a.dist}, sharing={a.sharing}, send-mode={a.send_mode}, requests={a.requests}")
    print(f"|LoPC error|: mean {df['lopc_err_pct'].abs().mean():.1f}%, "
          f"max {df['lopc_err_pct'].abs().max():.1f}%  (thesis: <= 6% vs its simulator)")
    print(f"|contention-free (LogP-like) error|: mean {df['free_err_pct'].abs().mean():.1f}%, "
          f"max {df['free_err_pct'].abs().max():.1f}%")
    if a.csv:
        from ccmod.atomic import atomic_path
        with atomic_path(a.csv) as tmp:
            df.to_csv(tmp, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
