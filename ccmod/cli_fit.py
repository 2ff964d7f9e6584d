"""``ccmod fit``: fit a quiet-network cost model from ping-pong measurements or traces.

A thin wrapper over :func:`netsys.fit_report.fit_files` (benchmark output) and
:func:`ccmod.fit_trace.fit_traces` (a timestamped trace's own messages); see docs/fitting.md.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from ccmod.errors import CcmodInputError

_FORMATS = ("auto, osu, imb, csv, simgrid-calib, raw-latency, nxn, simgrid-json; traces: "
            "trace, otf2, paraver, dumpi, dumpi-ascii, liballprof")


def register(app: typer.Typer) -> None:
    """Add the ``fit`` command to the ccmod app."""

    @app.command("fit")
    def fit_cmd(
        files: list[Path] = typer.Argument(..., help="Benchmark outputs (OSU, IMB, CSV, SimGrid "
                                                     "calibration, ...) or timestamped traces "
                                                     "(OTF2, Paraver, DUMPI, liballprof); "
                                                     "several are pooled."),
        output: Optional[Path] = typer.Option(None, "-o", "--output",
                                              help="Write the cost model JSON here "
                                                   "(for `ccmod run --cost`)."),
        plot: Optional[Path] = typer.Option(None, "--plot", help="Plot file (.png/.svg/.pdf)."),
        fmt: str = typer.Option("auto", "--format", help=f"Input format: {_FORMATS}."),
        packet_size: Optional[int] = typer.Option(None, "--packet-size",
                                                  help="Two lines: n <= packet size and above "
                                                       "(the article)."),
        breakpoints: str = typer.Option("auto", "--breakpoints",
                                        help="'auto' (BIC), 'none' (one line) or sizes "
                                             "starting new segments, e.g. 4096,65536."),
        max_segments: int = typer.Option(4, "--max-segments", help="Most segments for 'auto'."),
        robust: bool = typer.Option(False, "--robust", help="Huber loss (damps outliers)."),
        size_col: Optional[str] = typer.Option(None, "--size-col", help="CSV size column (bytes)."),
        time_col: Optional[str] = typer.Option(None, "--time-col", help="CSV time column."),
        time_unit: Optional[str] = typer.Option(None, "--time-unit", help="CSV time unit: "
                                                                          "s, ms, us, ns."),
        round_trip: bool = typer.Option(False, "--round-trip", help="CSV times are round trips."),
        hops: Optional[str] = typer.Option(None, "--hops", help="Route length of each input file "
                                                                "(comma list); 2+ distinct values "
                                                                "fit the per-hop latency."),
        per_hop_latency: float = typer.Option(0.0, "--per-hop-latency",
                                              help="Seconds per route resource beyond "
                                                   "--ref-hops (when not fitted)."),
        ref_hops: int = typer.Option(2, "--ref-hops", help="Route resources of the modelled "
                                                           "path (node-switch-node = 2)."),
        benchmark: Optional[str] = typer.Option(None, "--benchmark",
                                                help="IMB benchmark table (default PingPong)."),
        processes: Optional[int] = typer.Option(None, "--processes",
                                                help="IMB '#processes = N' table to use."),
        raw_size: int = typer.Option(1, "--raw-size", help="Message size of 'Rep# T1 T2 deltaT' "
                                                           "files (they do not record it)."),
        json_out: bool = typer.Option(False, "--json", help="Print one JSON object (model, "
                                                            "per-size table, errors)."),
        stream: Optional[list[Path]] = typer.Option(None, "--stream", help="Streaming benchmark "
                                                    "(osu_bw, osu_mbw_mr, IMB Uniband; repeat): "
                                                    "streaming bandwidth, NIC gap, overhead."),
        intra: Optional[list[Path]] = typer.Option(None, "--intra", help="Intra-node ping-pong "
                                                   "or stream (two ranks on one node; repeat)."),
        intra_processes: Optional[int] = typer.Option(None, "--intra-processes",
                                                      help="IMB '#processes = N' table of the "
                                                           "--intra files (e.g. 2)."),
        intra_aggregate: Optional[list[Path]] = typer.Option(
            None, "--intra-aggregate", help="Multi-pair run inside one node (IMB Uniband / "
                                            "Biband, osu_mbw_mr; repeat): the node's aggregate "
                                            "copy bandwidth."),
        aggregate_processes: Optional[str] = typer.Option(
            None, "--intra-aggregate-processes", help="IMB '#processes' tables of the "
                                                      "--intra-aggregate files whose pairs are "
                                                      "all on one node (comma list, e.g. 4,8,16)."),
        quantile: float = typer.Option(0.1, "--quantile", help="Traces: low quantile of the "
                                       "message times per size bin (the lower envelope)."),
        min_messages: int = typer.Option(2, "--min-messages", help="Traces: fewest messages "
                                         "a size bin needs to be fitted."),
        bins_per_decade: int = typer.Option(20, "--bins-per-decade", help="Traces: size bins "
                                            "per factor 10 of the message size."),
        message_time: str = typer.Option("waiting", "--message-time", help="Traces: 'waiting' "
                                         "(messages whose receiver waited, from the send's "
                                         "start) or 'later' (all, from the later start; a "
                                         "lower bound)."),
        compare: Optional[Path] = typer.Option(None, "--compare", help="Traces: a cost model "
                                               "JSON (e.g. a ping-pong fit) to compare the "
                                               "envelope with."),
    ) -> None:
        """Fit a piecewise-linear quiet-network cost model (latency + bandwidth per size range)."""
        from ccmod.netsys.fit_report import fit_files
        from ccmod.netsys.pingpong import FORMATS, ReadOptions
        from ccmod.fit_trace import TIMED_FORMATS, fit_traces, timed_trace_format
        traces = [timed_trace_format(f) for f in files] if fmt == "auto" else []
        if any(traces) and not all(traces):
            raise CcmodInputError("give timestamped traces and benchmark outputs in separate "
                                  "runs", source=str(files[traces.index(None)]),
                                  hint="fit each, then compare the two models")
        from_trace = fmt in ("trace", *TIMED_FORMATS) or (bool(traces) and all(traces))
        if fmt not in FORMATS and not from_trace:
            raise CcmodInputError(f"unknown input format '{fmt}'", source="--format",
                                  hint="valid: " + ", ".join((*FORMATS, "trace", *TIMED_FORMATS)))
        if time_unit is not None and time_unit not in ("s", "ms", "us", "ns"):
            raise CcmodInputError(f"unknown time unit '{time_unit}'", source="--time-unit",
                                  hint="valid: s, ms, us, ns")
        if ref_hops < 0:
            raise CcmodInputError("--ref-hops must be >= 0", source="--ref-hops")
        _check_before_fit(from_trace, breakpoints, max_segments, packet_size, per_hop_latency,
                          (quantile, min_messages, bins_per_decade, message_time),
                          [*(stream or ()), *(intra or ()), *(intra_aggregate or ())])
        opts = ReadOptions(size_col=size_col, time_col=time_col, time_unit=time_unit,
                           round_trip=round_trip, benchmark=benchmark, processes=processes,
                           raw_size=raw_size)
        named = ", ".join(str(f) for f in files) or "ccmod fit"
        fit_kw = dict(breakpoints=breakpoints, packet_size=packet_size,
                      max_segments=max_segments, robust=robust,
                      per_hop_latency_s=per_hop_latency, ref_hops=ref_hops)
        try:
            if from_trace:
                if hops is not None:
                    raise CcmodInputError("--hops applies to benchmark files, not traces",
                                          source="--hops", hint="give --per-hop-latency")
                report = fit_traces(files, fmt, message_time=message_time, quantile=quantile,
                                    min_messages=min_messages, bins_per_decade=bins_per_decade,
                                    **fit_kw)
                if compare is not None:
                    from ccmod.netsys.cost import PiecewiseLinearCost
                    from ccmod.netsys.fit_envelope import compare as compare_models
                    compare_models(report, PiecewiseLinearCost.load(compare), str(compare))
            else:
                if compare is not None:
                    raise CcmodInputError("--compare applies to fits of traces",
                                          source="--compare",
                                          hint="give a timestamped trace (OTF2, Paraver, ...)")
                report = fit_files(files, fmt, opts, hops=hops, **fit_kw)
        except CcmodInputError as exc:
            if fmt == "auto" and not from_trace:
                _untimed_trace_instead(files)
            if exc.source is not None:
                raise
            # a fit of the data as a whole failed: the data is the files given
            raise CcmodInputError(exc.what, source=named, hint=exc.hint) from None
        from ccmod.netsys.fit_multi import extend_report
        procs = None
        if aggregate_processes:
            try:
                procs = [int(v) for v in aggregate_processes.split(",") if v.strip()]
            except ValueError:
                raise CcmodInputError(f"'{aggregate_processes}' is not a comma list of integers",
                                      source="--intra-aggregate-processes") from None
        extend_report(report, stream or (), intra or (), intra_processes, intra_aggregate or (),
                      procs)
        if output is not None:
            try:
                report.model.save(output)
            except OSError as exc:
                raise CcmodInputError(f"cannot write model: {exc.strerror or exc}",
                                      source=str(output)) from None
        if plot is not None:
            from ccmod.netsys.fit_plot import plot_fit
            plot_fit(report, plot)
        if json_out:
            d = report.to_json()
            d["output"] = None if output is None else str(output)
            d["plot"] = None if plot is None else str(plot)
            try:
                typer.echo(json.dumps(d, allow_nan=False))
            except ValueError:
                raise CcmodInputError("the fit produced non-finite numbers (check the input "
                                      "for inf/NaN values)", source=named) from None
            return
        typer.echo(report.text())
        if output is not None:
            typer.echo(f"wrote {output} (use: ccmod run TRACE --cost {output})")
        else:
            typer.echo("(no model written: add -o model.json)")
        if plot is not None:
            typer.echo(f"wrote {plot}")


def _check_before_fit(from_trace, breakpoints, max_segments, packet_size, per_hop_latency,
                      envelope, extra_files) -> None:
    """The options' values and the extra input files, checked before the fit reads the inputs
    and imports scikit-learn (~1-2 s): a bad option or a missing file fails at once."""
    from ccmod.netsys.fit_math import check_params
    from ccmod.netsys.fit_report import parse_breakpoints
    from ccmod.netsys.pingpong import read_text
    parse_breakpoints(breakpoints)
    check_params(max_segments, packet_size, per_hop_latency)
    if from_trace:
        from ccmod.fit_trace import check_message_time
        from ccmod.netsys.fit_envelope import check_envelope_options
        *bins, message_time = envelope
        check_envelope_options(*bins)
        check_message_time(message_time)
    for f in extra_files:
        read_text(f)        # small benchmark outputs: missing, a folder, empty or binary


def _untimed_trace_instead(files) -> None:
    """A benchmark read failed: when a file is a trace without timestamps, say that."""
    from ccmod.fit_trace import no_timestamps_error, untimed_trace_format
    for f in files:
        name = untimed_trace_format(f)
        if name is not None:
            raise no_timestamps_error(f, name) from None
