"""What a run's summary must say about the trace itself (issue 12).

* the compute rate assumed for traces that count flops (SimGrid TI), and a warning when
  compute is implausibly small next to communication (an SMPI trace read at 1 Gf/s
  although SMPI wrote its flops at ``smpi/host-speed``, 20 kf/s by default);
* a trace with no communication: what it holds and that there is nothing to predict.

Pure functions of the workload and the run's numbers; the API adds their sentences to
the run's notes and the CLI prints them.
"""
from __future__ import annotations

import numpy as np

from ccmod.workloads.base import (OP_AMREQUEST, OP_BARRIER, OP_COMPUTE, OP_NAMES, RECV_OPS,
                                  SEND_OPS)
from ccmod.workloads.units import SMPI_DEFAULT_HOST_SPEED, ExactSum, format_rate

#: compute below this fraction of the predicted communication is called implausible
IMPLAUSIBLE_COMPUTE_FRACTION = 1e-3
#: records per pass of the counts and sums below: their temporaries (a bool mask, the op
#: codes widened to intp, ExactSum's per-value arrays) stay small, where over the whole
#: trace at once they were ~35 bytes per record on top of the run's result (the peak)
_CHUNK = 1 << 16


def _op_counts(w) -> np.ndarray:
    """Records per op code (a streamed run's trace survey carries them: ``op_counts``)."""
    got = getattr(w, "op_counts_total", None)
    if got is not None:
        return np.asarray(got, np.int64)
    op = np.asarray(w.op)
    out = np.zeros(len(OP_NAMES), np.int64)
    for a in range(0, len(op), _CHUNK):
        out += np.bincount(op[a:a + _CHUNK], minlength=len(OP_NAMES))[:len(OP_NAMES)]
    return out


def _compute_sum_s(w) -> float:
    """Seconds of compute records, correctly rounded (a streamed run's survey sums them
    group by group: :class:`ExactSum`)."""
    got = getattr(w, "compute_total_s", None)
    if got is not None:
        return float(got)
    acc = ExactSum()          # exact: the same total whatever the chunks
    op, dur = np.asarray(w.op), np.asarray(w.duration_s)
    for a in range(0, len(op), _CHUNK):
        acc.add(dur[a:a + _CHUNK][op[a:a + _CHUNK] == OP_COMPUTE])
    return acc.value()


def compute_info(w, compute_rate: float) -> dict:
    """``{"unit": "flops"|"seconds", "rate_flops": ..., "flops": ...}`` for the summary."""
    unit = w.meta.get("compute_unit", "seconds")
    out = {"unit": unit}
    if unit == "flops":
        rate = float(w.meta.get("compute_rate", compute_rate))
        scale = float(w.meta.get("compute_scale", 1.0)) or 1.0
        out["rate_flops"] = rate
        out["flops"] = float(_compute_sum_s(w) * rate / scale)
    return out


def compute_notes(w, compute_rate: float, comm_s: float, compute_s_max: float) -> list[str]:
    """Sentences about the compute rate: always the rate (flop traces), maybe a warning.

    Parameters
    ----------
    comm_s : float
        Predicted communication time of the busiest rank (send + recv + wait), seconds.
    compute_s_max : float
        Largest predicted compute time of any rank, seconds.
    """
    info = compute_info(w, compute_rate)
    if info["unit"] != "flops":
        return []
    rate = info["rate_flops"]
    if not _op_counts(w)[OP_COMPUTE]:
        return []
    notes = [f"compute: {info['flops']:.4g} flops in the trace at {format_rate(rate)} "
             "(--compute-rate; SMPI traces count flops at its smpi/host-speed, default "
             f"{format_rate(SMPI_DEFAULT_HOST_SPEED)}: --compute-rate 20kf)"]
    if info["flops"] > 0 and comm_s > 0 and \
            compute_s_max < IMPLAUSIBLE_COMPUTE_FRACTION * comm_s:
        notes.append(
            f"compute looks implausibly small: at most {compute_s_max:.3g} s of compute on "
            f"any rank next to {comm_s:.3g} s of communication on the busiest rank at "
            f"{format_rate(rate)}; "
            "if the trace was written by SMPI, give the host speed it was recorded at "
            "(--compute-rate 20kf is SMPI's default)")
    return notes


def holds_no_communication(w) -> bool:
    """True when no record communicates (no send/recv, barrier or active message)."""
    comm = SEND_OPS + RECV_OPS + (OP_BARRIER, OP_AMREQUEST)
    return not bool(_op_counts(w)[list(comm)].any())


def nothing_to_predict_note(w, makespan_s: float) -> str:
    """The sentence said instead of a bare prediction when there is no communication."""
    ops = _op_counts(w)
    held = ", ".join(f"{int(ops[i]):,} {OP_NAMES[i]}" for i in range(len(OP_NAMES)) if ops[i])
    held = held or "no records"
    skipped = {k: v for k, v in w.meta.items()
               if k in ("unsupported_collectives", "unmapped_messages",
                        "nonblocking_collectives_skipped") and v}
    extra = ("; skipped: " + ", ".join(f"{k}={v}" for k, v in skipped.items())) if skipped else ""
    return (f"nothing to predict: the trace ({w.nranks} rank(s)) holds {held} and no "
            f"point-to-point or collective communication{extra}; the makespan "
            f"({makespan_s:.6g} s) is its compute alone")


def measured_vs_predicted(w, result) -> dict | None:
    """Measured (trace timestamps) next to predicted, for timestamped traces.

    Returns None when the trace has no timestamps. Keys: ``window_s`` (first MPI call to
    last MPI call: what the replay covers), ``trace_span_s`` / ``before_first_call_s`` /
    ``after_last_call_s`` when the format records the whole trace, ``mpi_s_max`` /
    ``mpi_s_mean`` (measured time inside MPI calls per rank), ``predicted_makespan_s``,
    ``predicted_comm_s_max`` / ``predicted_comm_s_mean`` (send + recv + wait + barrier),
    ``makespan_ratio`` (predicted / the replayed window when MPI_Init/MPI_Finalize were
    traced, else the measured window), ``mpi_includes`` and ``leaves_out`` (sentences), and
    ``gap_note`` when the traced MPI time dwarfs the predicted one.

    ``mpi_s`` leaves MPI_Init/MPI_Finalize out (``setup_s``): they are not replayed. Like
    the prediction's communication + wait, it includes waiting for late partners (a
    blocking receive posted before its send) and for collectives.
    """
    m = w.meta.get("measured")
    if not m:
        return None
    r = result.ranks
    pred_comm = (r["send_s"] + r["recv_s"] + r["wait_s"] + r["barrier_s"]).to_numpy(float)
    mpi = np.asarray(m["mpi_s"], float)
    out = {k: m[k] for k in ("window_s", "replayed_window_s", "setup_s", "init_skew_s",
                             "trace_span_s",
                             "before_first_call_s", "after_last_call_s") if k in m}
    out.update({
        "mpi_s": [float(x) for x in mpi],
        "mpi_s_max": float(mpi.max()) if mpi.size else 0.0,
        "mpi_s_mean": float(mpi.mean()) if mpi.size else 0.0,
        "predicted_makespan_s": float(result.makespan_s),
        "predicted_comm_s": [float(x) for x in pred_comm],
        "predicted_comm_s_max": float(pred_comm.max()) if pred_comm.size else 0.0,
        "predicted_comm_s_mean": float(pred_comm.mean()) if pred_comm.size else 0.0,
    })
    win = m.get("replayed_window_s", m["window_s"])
    out["makespan_ratio"] = float(result.makespan_s / win) if win > 0 else None
    out["mpi_includes"] = ("time inside MPI calls, waiting for late partners and inside "
                           "collectives included" + (", MPI_Init/MPI_Finalize excluded"
                                                     if "setup_s" in m else ""))
    gap = _gap_note(out, result)
    if gap:
        out["gap_note"] = gap
    left = ["compute is replayed as measured (only communication is predicted)"]
    if "setup_s" in m:
        left.append(f"MPI_Init/MPI_Finalize ({max(m['setup_s']):.4g} s on the slowest rank) "
                    "are not replayed: the ratio compares with the "
                    f"{m['replayed_window_s']:.6g} s from the last rank's MPI_Init end to "
                    "the last MPI_Finalize start")
        # skew worth a sentence: above 1% of the replayed window (clock noise is ~1e-7 s)
        if m.get("init_skew_s", 0.0) > 0.01 * max(m["replayed_window_s"], 0.0):
            left.append(f"the ranks left MPI_Init up to {m['init_skew_s']:.4g} s apart; the "
                        "early ones wait for the late ones in their first communication "
                        "(in the measured MPI time, not in the replay: all ranks start "
                        "together)")
    if "trace_span_s" in m:
        left.append(f"the {m['before_first_call_s']:.4g} s before the first and "
                    f"{m['after_last_call_s']:.4g} s after the last MPI call of the "
                    f"{m['trace_span_s']:.6g} s trace are not replayed")
    else:
        left.append("time before the first and after the last MPI call is not replayed")
    skipped = [f"{k}={w.meta[k]}" for k in ("unmapped_messages", "unsupported_collectives",
                                            "nonblocking_collectives_skipped",
                                            "ignored_calls") if w.meta.get(k)]
    if skipped:
        left.append("skipped records: " + ", ".join(skipped))
    out["leaves_out"] = "; ".join(left)
    return out


def _gap_note(out: dict, result) -> str | None:
    """A hint when the trace spent far more time in MPI than predicted (> 5x, > 1 ms).

    The usual cause is a network far faster than the traced machine (the defaults are a
    10 Gb/s, 1 us star; a 2004 Fast-Ethernet cluster is 100x slower)."""
    meas, pred = out["mpi_s_mean"], out["predicted_comm_s_mean"]
    if meas < 1e-3 or meas < 5 * pred:
        return None
    net = getattr(result, "network", None) or {}
    name = net.get("name", "the network") if isinstance(net, dict) else "the network"
    return (f"the traced run spent {meas / max(pred, 1e-300):.3g}x more time in MPI per rank "
            f"than predicted on {name}: check that --network (bandwidth, latency) or --cost "
            "matches the traced machine (docs/readers.md, 'Measured next to predicted')")
