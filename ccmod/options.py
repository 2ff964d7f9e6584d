"""Run options, validated once: :class:`RunOptions`.

The API (:func:`ccmod.run`), ``ccmod run``, ``ccmod sweep``, ``ccmod crosscheck`` and the
report all take their options through this one frozen dataclass, so every value is
checked in one place and every error names the command-line option it came from.
"""
from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass, field

from ccmod.errors import CcmodInputError

SEND_MODES = ("rendezvous", "eager", "detached")

#: default eager limit (bytes) with rendezvous: MPI-like, SMPI's
#: ``smpi/send-is-detached-thresh`` (65536); 0 gives the article's synchronous SCOM
DEFAULT_EAGER_LIMIT_BYTES = 65536

#: intra-node (same node) message cost: a memcpy-like latency and bandwidth
INTRA_LATENCY_S = 5e-7
INTRA_BANDWIDTH_BPS = 5e9

#: the command-line option of each field (named in error messages)
OPTION_FLAGS = {"sharing": "--sharing", "send_mode": "--send-mode",
                "eager_limit_bytes": "--eager-limit", "compute_rate": "--compute-rate",
                "compute_scale": "--compute-scale", "background": "--background",
                "mapping": "--map", "cost": "--cost", "fmt": "--format",
                "collectives": "--collective", "intra_latency_s": "--intra-latency",
                "intra_bandwidth_Bps": "--intra-bandwidth"}

#: options applied when the trace is read (the others apply when it runs)
LOAD_OPTIONS = ("fmt", "compute_rate", "compute_scale", "collectives")

_NONE = ("", "none", "default")


def _number(name: str, v, *, lo: float, lo_open: bool = False, hi: float | None = None,
            integer: bool = False, what: str | None = None):
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    if ok and integer:
        ok = float(v).is_integer()
    if ok:
        ok = (v > lo if lo_open else v >= lo) and (hi is None or v < hi)
    if not ok:
        want = "an integer" if integer else "a number"
        want += f" {'>' if lo_open else '>='} {lo:g}"
        if hi is not None:
            want += f" and < {hi:g}"
        raise CcmodInputError(f"{what or name} must be {want}, got {v!r}",
                              source=OPTION_FLAGS.get(name, name))
    return int(v) if integer else float(v)


def check_option(name: str, value):
    """Validate one run option; return its normalised value.

    Raises
    ------
    CcmodInputError
        A bad value, naming the command-line option (e.g. ``--background``).
    """
    if name == "sharing":
        from ccmod.sharing import SHARING_RULES
        if not isinstance(value, str):
            raise CcmodInputError(f"a sharing rule is a NAME[:key=value,...] string, got "
                                  f"{value!r}", source="--sharing")
        SHARING_RULES.resolve(value, source="--sharing")
        return value.strip()
    if name == "send_mode":
        if value not in SEND_MODES:
            raise CcmodInputError(f"unknown send mode '{value}'", source="--send-mode",
                                  hint="valid: " + ", ".join(SEND_MODES))
        return value
    if name == "eager_limit_bytes":
        if value is None:
            return None     # the default: DEFAULT_EAGER_LIMIT_BYTES with rendezvous, else 0
        return _number(name, value, lo=0, integer=True, what="eager limit (bytes)")
    if name == "compute_rate":
        from ccmod.units import parse_compute_rate
        return parse_compute_rate(value)
    if name == "compute_scale":
        return _number(name, value, lo=0.0, what="compute scale")
    if name == "background":
        # a constant fraction is checked here; a model spec ("exp:...", "file:PATH") or a
        # Background object is checked by ccmod.netsys.background when the run starts
        if value is None:
            return 0.0
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                if not value.strip():
                    return 0.0
                return value.strip()
        if isinstance(value, (int, float)):
            return _number(name, value, lo=0.0, hi=1.0, what="background load fraction")
        return value
    if name in ("intra_latency_s", "intra_bandwidth_Bps") and value is None:
        return None     # from the cost model's intra section, else the defaults
    if name == "intra_latency_s":
        return _number(name, value, lo=0.0, what="intra-node latency (s)")
    if name == "intra_bandwidth_Bps":
        return _number(name, value, lo=0.0, lo_open=True, what="intra-node bandwidth (B/s)")
    if name in ("mapping", "cost"):
        if value is None or (isinstance(value, str) and value.strip().lower() in _NONE):
            return None
        if isinstance(value, os.PathLike):
            return os.fspath(value)
        return value
    if name == "fmt":
        if value is None or (isinstance(value, str) and not value.strip()):
            return "auto"
        if not isinstance(value, str):
            raise CcmodInputError(f"a trace format is a name, got {value!r}", source="--format")
        return value.strip()
    if name == "collectives":
        if value is None or isinstance(value, (str, dict)):
            return dict(value) if isinstance(value, dict) else value
        raise CcmodInputError(f"collective algorithms are 'kind=algo,...' or a dict, got "
                              f"{value!r}", source="--collective")
    raise CcmodInputError(f"unknown run option '{name}'",
                          hint="valid: " + ", ".join(f.name for f in dataclasses.fields(RunOptions)))


@dataclass(frozen=True)
class RunOptions:
    """How to run a trace (everything but the trace and the network), validated once.

    Parameters
    ----------
    sharing : str
        Sharing rule ``NAME[:key=value,...]`` (see ``ccmod.sharing.SHARING_RULES``).
    send_mode : {"rendezvous", "eager", "detached"}
    eager_limit_bytes : int, optional
        With rendezvous, messages of at most this many bytes go eagerly (0 = none: the
        article's synchronous SCOM). ``None``: :data:`DEFAULT_EAGER_LIMIT_BYTES` with
        rendezvous (raised to what the traced run's MPI visibly buffered), 0 otherwise.
    compute_rate : float or str
        flop/s used to turn traced flops into seconds (formats that count flops); also
        SimGrid's notation (``"20kf"``, ``"1Gf"``).
    compute_scale : float
        Multiplies every compute duration (0.5 = a CPU twice as fast).
    background : float, str or Background
        Constant background load fraction on every link direction, in [0, 1), or a
        background model spec (``"exp:mean_pps=7000,..."``, ``"file:loads.csv"``).
    mapping : str, optional
        Rank → node map: ``block:K``, ``cyclic:K`` or a file (default one rank per node).
    cost : str, path or CostModel, optional
        Quiet cost: a JSON model file from ``ccmod fit`` or ``"physical"``.
    fmt : str
        Trace format name or ``"auto"``.
    collectives : str or dict, optional
        Forced collective algorithms (``"allreduce=ring,bcast=binomial"``).
    intra_latency_s, intra_bandwidth_Bps : float, optional
        Cost of a message between two ranks of one node; None (default): the cost
        model's ``intra`` section (``ccmod fit --intra``), else 0.5 µs and 5 GB/s.

    Raises
    ------
    CcmodInputError
        At construction, for any bad value (naming its command-line option).
    """

    sharing: str = "ccmod"
    send_mode: str = "rendezvous"
    eager_limit_bytes: int | None = None
    compute_rate: float = 1e9
    compute_scale: float = 1.0
    background: object = 0.0
    mapping: object = None
    cost: object = None
    fmt: str = "auto"
    collectives: object = field(default=None, compare=False)
    intra_latency_s: float | None = None
    intra_bandwidth_Bps: float | None = None

    def __post_init__(self):
        for f in dataclasses.fields(self):
            object.__setattr__(self, f.name, check_option(f.name, getattr(self, f.name)))

    @classmethod
    def make(cls, options: "RunOptions | None" = None, **overrides) -> "RunOptions":
        """``options`` (or the defaults) with ``overrides`` applied; unknown names fail."""
        names = {f.name for f in dataclasses.fields(cls)}
        for k in overrides:
            if k not in names:
                check_option(k, overrides[k])   # raises: unknown run option
        base = options if options is not None else cls()
        return dataclasses.replace(base, **overrides) if overrides else base

    def replace(self, **changes) -> "RunOptions":
        """A copy with ``changes`` (validated again)."""
        return RunOptions.make(self, **changes)

    @property
    def sharing_name(self) -> str:
        """The sharing rule's name (without parameters)."""
        return self.sharing.partition(":")[0].strip()

    @property
    def sharing_params(self) -> dict:
        """The sharing rule's typed parameters."""
        from ccmod.sharing import SHARING_RULES
        return SHARING_RULES.resolve(self.sharing, source="--sharing")[1]

    def load_kwargs(self) -> dict:
        """Keyword arguments of the trace-reading step (``fmt`` and the read options)."""
        return {"fmt": self.fmt, "compute_rate": self.compute_rate,
                "compute_scale": self.compute_scale, "collectives": self.collectives}

    def to_dict(self) -> dict:
        """Plain values (for ``RunResult.options`` and JSON); a cost model becomes its name."""
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        if d["cost"] is not None and not isinstance(d["cost"], str):
            d["cost"] = str(d["cost"])
        return d
