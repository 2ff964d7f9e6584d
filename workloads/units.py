"""Compute rates in SimGrid's notation (``20kf``, ``1Gf``, ``1e9``) and their display.

SimGrid writes host speeds as a number with a flop unit: ``f`` or ``flops`` with a decimal
prefix (``k`` = 1e3, ``M`` = 1e6, ``G`` = 1e9, ...), e.g. SMPI's ``smpi/host-speed``
default ``20000f`` (= ``20kf``). ccmod's ``--compute-rate`` accepts the same spellings
and plain numbers (flop/s).
"""
from __future__ import annotations

# the parser lives in the core (run options use it); kept importable from here
from ccmod.units import format_rate, parse_compute_rate  # noqa: F401

#: SMPI's default ``smpi/host-speed`` (flop/s): the rate at which its TI tracer turned
#: measured CPU time into the flops of ``compute`` records (see docs/readers.md)
SMPI_DEFAULT_HOST_SPEED = 20000.0
