"""Sweep MMT section 4.1's image-processing model over P = 2..8 (and section 4.3).

For each image size N and workstation count P it solves the all-exponential model
exactly (CTMC) and simulates it with exponential and with constant actor service times
(section 4.3: MMT's exponential assumption over-estimates the response time because
M waits for the slowest of the P filters).  Prints a Markdown table of the response time
per image (seconds) with 95 % CI half-widths; ``--json`` prints the rows instead.

    PYTHONPATH=. python bench/dataflow_imageproc.py [--sizes 512,1024] [--procs 2-8]
        [--replications 5] [--iterations 500] [--seed 0] [--json]
"""
from __future__ import annotations

import argparse
import json
import time

from ccmod import dataflow_sim
from ccmod.analytic import ctmc_dataflow
from ccmod.errors import CcmodInputError
from ccmod.workloads import dataflow as df
from ccmod.workloads import dataflow_examples as ex


def sweep(sizes, procs, replications=5, iterations=500, seed=0, max_states=100_000):
    rows = []
    for N in sizes:
        for P in procs:
            row = {"N": N, "P": P}
            m = df.from_dict(ex.image_processing(P, N))
            try:
                t0 = time.perf_counter()
                r = ctmc_dataflow.solve(m, max_states=max_states)
                row.update(exact_s=r["application"]["response_time"], states=r["states"],
                           ctmc_wall_s=time.perf_counter() - t0,
                           exact_ethernet_util=r["links"]["ethernet"]["utilization"]
                           if P > 1 else 0.0)
            except CcmodInputError as e:
                row.update(exact_s=None, states=None, ctmc_note=str(e))
            for dist in ("exponential", "constant"):
                m = df.from_dict(ex.image_processing(P, N, dist))
                s = dataflow_sim.simulate(m, replications=replications, seed=seed,
                                          iterations=iterations)
                row[f"sim_{dist}_s"] = s["application"]["response_time"]
                row[f"sim_{dist}_ci"] = s["ci95"]["application"]["response_time"]
            rows.append(row)
    return rows


def _range(text):
    if "-" in text:
        a, b = text.split("-")
        return list(range(int(a), int(b) + 1))
    return [int(x) for x in text.split(",")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="512,1024")
    ap.add_argument("--procs", default="2-8")
    ap.add_argument("--replications", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()

    def f(x):
        return "-" if x is None else f"{x:.2f}"
    if not a.json:
        print("| N | P | exact CTMC (exp) | states | sim exponential | sim constant | "
              "constant / exponential |")
        print("|---|---|---|---|---|---|---|", flush=True)
    rows = []
    for N in _range(a.sizes):
        for P in _range(a.procs):
            r = sweep([N], [P], a.replications, a.iterations, a.seed)[0]
            rows.append(r)
            if not a.json:
                print(f"| {r['N']} | {r['P']} | {f(r['exact_s'])} | {r['states'] or '-'} | "
                      f"{f(r['sim_exponential_s'])} ± {f(r['sim_exponential_ci'])} | "
                      f"{f(r['sim_constant_s'])} ± {f(r['sim_constant_ci'])} | "
                      f"{r['sim_constant_s'] / r['sim_exponential_s']:.2f} |", flush=True)
    if a.json:
        print(json.dumps(rows))


if __name__ == "__main__":
    main()
