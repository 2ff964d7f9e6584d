"""Background load models (``--background SPEC``): the article's netsys::GetBgrLoad.

Background load is traffic that is not in the trace. It takes a fraction of each link
direction's capacity: a message's bandwidth availability on a resource is
``(1 - load) / contention``. Three models:

``0.3`` (a number)
    constant: that fraction on every link direction for the whole run.
``exp:mean_pps=7000,max_pps=25000,interval=1e-3,seed=1,max_load=0.99``
    the article's Listing Seven: every ``interval`` seconds each link direction draws
    ``X ~ Exponential(mean = mean_pps)`` packets/s and carries the load
    ``min(X / max_pps, max_load)``. Listing Seven returns 1 (a saturated link) when
    ``X >= max_pps``; a load of 1 would stop every message on the link for the whole
    interval, so ccmod caps it at ``max_load`` (default 0.99; the contract keeps loads in
    [0, 1)). The mean load is ``(mean_pps / max_pps) * (1 - exp(-max_load * max_pps /
    mean_pps))`` (0.2718 for the defaults) and its 95th percentile
    ``min(-mean_pps * ln(0.05) / max_pps, max_load)`` (0.839).
    The draw of resource ``r`` in interval ``j`` comes from ``numpy.random.default_rng((seed,
    r, j // 1024))``, so it does not depend on the trace, on the other resources or on how
    far the run goes: same seed, same loads.
``file:PATH`` (or ``file:path=PATH``)
    a measured per-link time series, CSV with a header and the columns ``t_s`` (step
    start, seconds, >= 0), ``link`` (link name as in ``ccmod networks show``, or its integer
    id), ``direction`` (``up``/``down``/``0``/``1``/``both``) and ``load`` (fraction in
    [0, 1)). A row sets the load of that link direction from ``t_s`` on, until its next row;
    before its first row, and on links the file does not name, the load is 0.

Every model produces the engine's step arrays (the shared design contract): ``bg_t_s``
(K,), ``bg_resource`` (K,), ``bg_load`` (K,), sorted by time, one entry per change; a
constant background is one step per resource at t = 0. It also gives the constant levels
used for ``--bounds``: the mean and a quantile (time-weighted for files) per resource.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from ccmod.errors import CcmodInputError
from ccmod.registry import Registry

SRC = "--background"
BACKGROUNDS = Registry("background model", "ccmod.backgrounds")
#: most background steps one run may hold in memory (about 20 bytes each)
MAX_STEPS = 50_000_000
_BLOCK = 1024


@dataclass
class Steps:
    """Piecewise-constant background load (contract names); ``t_s`` sorted ascending."""

    t_s: np.ndarray          # float64[K]
    resource: np.ndarray     # int64[K]
    load: np.ndarray         # float64[K]
    horizon_s: float = math.inf   # loads are known up to this time

    def __len__(self) -> int:
        return int(len(self.t_s))


class Background:
    """Base class of background models.

    Subclasses set ``name``, ``description`` and implement :meth:`level` (constant levels
    per resource: ``"mean"`` or a quantile in (0, 1)) and :meth:`steps`.
    """

    name = "background"
    description = ""
    constant = False

    def level(self, net, which) -> np.ndarray:
        """Constant load per resource (float64[R]): ``"mean"``, ``0`` (none) or a quantile."""
        raise NotImplementedError

    def steps(self, net, resources, horizon_s: float) -> Steps:
        """Steps for ``resources`` (ids) covering at least ``[0, horizon_s]``."""
        raise NotImplementedError

    def spec(self) -> str:
        return self.name

    def describe(self) -> dict:
        return {"model": self.name, "spec": self.spec()}


def _check_load(x: float, what: str) -> float:
    if not (math.isfinite(x) and 0.0 <= x < 1.0):
        raise CcmodInputError(f"{what} must be a fraction in [0, 1), got {x}", source=SRC)
    return float(x)


@BACKGROUNDS.register()
class ConstantBackground(Background):
    """The same load on every link direction for the whole run (``--background 0.3``)."""

    name = "constant"
    description = "the same fraction of every link direction for the whole run"
    constant = True

    def __init__(self, load: float = 0.0):
        self.load = _check_load(float(load), "background load")

    def level(self, net, which) -> np.ndarray:
        v = 0.0 if (not isinstance(which, str) and float(which) == 0.0) else self.load
        return np.full(net.nresources, v)

    def steps(self, net, resources, horizon_s: float = math.inf) -> Steps:
        res = np.unique(np.asarray(resources, dtype=np.int64))
        res = res if self.load > 0 else res[:0]
        return Steps(np.zeros(len(res)), res, np.full(len(res), self.load))

    def spec(self) -> str:
        return f"{self.load:g}"


@BACKGROUNDS.register()
class ExponentialBackground(Background):
    """Listing Seven: inverse-exponential load resampled per link direction every interval."""

    name = "exp"
    description = "the article's Listing Seven: exponential packets/s per link direction, resampled"

    def __init__(self, mean_pps: float = 7000.0, max_pps: float = 25000.0,
                 interval: float = 1e-3, seed: int = 1, max_load: float = 0.99):
        self.mean_pps, self.max_pps = float(mean_pps), float(max_pps)
        self.interval, self.seed, self.max_load = float(interval), int(seed), float(max_load)
        for k in ("mean_pps", "max_pps", "interval"):
            v = getattr(self, k)
            if not (math.isfinite(v) and v > 0):
                raise CcmodInputError(f"background parameter {k}={v} must be > 0", source=SRC)
        if self.seed < 0:
            raise CcmodInputError("background parameter seed must be >= 0", source=SRC)
        if not (0.0 < self.max_load < 1.0):
            raise CcmodInputError(f"background parameter max_load={self.max_load} must be in "
                                  "(0, 1)", source=SRC)

    def mean_load(self) -> float:
        """E[min(X / b, c)] for X ~ Exp(mean l): (l / b) (1 - exp(-c b / l))."""
        ratio = self.mean_pps / self.max_pps
        return ratio * (1.0 - math.exp(-self.max_load / ratio))

    def quantile_load(self, q: float) -> float:
        return min(-self.mean_pps * math.log(1.0 - q) / self.max_pps, self.max_load)

    def level(self, net, which) -> np.ndarray:
        if isinstance(which, str):
            v = self.mean_load()
        elif float(which) == 0.0:
            v = 0.0
        else:
            v = self.quantile_load(float(which))
        return np.full(net.nresources, v)

    def sample(self, resource: int, first: int, count: int) -> np.ndarray:
        """Loads of ``resource`` in intervals ``first .. first+count-1`` (reproducible)."""
        out = np.empty(count)
        j, pos = first, 0
        while pos < count:
            blk, off = divmod(j, _BLOCK)
            x = np.random.default_rng((self.seed, int(resource), blk)).exponential(
                self.mean_pps, _BLOCK)
            take = min(_BLOCK - off, count - pos)
            out[pos:pos + take] = x[off:off + take]
            pos += take
            j += take
        return np.minimum(out / self.max_pps, self.max_load)

    def steps(self, net, resources, horizon_s: float) -> Steps:
        res = np.unique(np.asarray(resources, dtype=np.int64))
        nint = max(1, int(math.ceil(float(horizon_s) / self.interval)) + 1)
        if nint * len(res) > MAX_STEPS:
            raise CcmodInputError(f"the background would need {nint * len(res):,} steps "
                                  f"({len(res)} link directions x {nint:,} intervals)",
                                  source=SRC, hint="raise interval=")
        t = np.arange(nint) * self.interval
        loads = np.stack([self.sample(int(r), 0, nint) for r in res]) if len(res) else \
            np.zeros((0, nint))
        # time-major order: all resources of interval 0, then interval 1, ...
        return Steps(np.repeat(t, len(res)), np.tile(res, nint), loads.T.reshape(-1),
                     horizon_s=nint * self.interval)

    def spec(self) -> str:
        return (f"exp:mean_pps={self.mean_pps:g},max_pps={self.max_pps:g},"
                f"interval={self.interval:g},seed={self.seed},max_load={self.max_load:g}")


@BACKGROUNDS.register()
class FileBackground(Background):
    """A measured per-link load time series from a CSV file (see the module docstring)."""

    name = "file"
    description = "a measured per-link load time series (CSV: t_s, link, direction, load)"

    def __init__(self, path):
        self.path = os.fspath(path)
        import pandas as pd
        try:
            df = pd.read_csv(self.path, dtype={"link": str, "direction": str})
        except FileNotFoundError:
            raise CcmodInputError("background file not found", source=self.path) from None
        except UnicodeDecodeError:
            raise CcmodInputError("not a background CSV (not UTF-8 text)",
                                  source=self.path) from None
        except (OSError, pd.errors.ParserError,
                pd.errors.EmptyDataError) as exc:
            raise CcmodInputError(f"cannot read the background CSV: {exc}".replace("\n", " "),
                                  source=self.path) from None
        missing = [c for c in ("t_s", "link", "direction", "load") if c not in df.columns]
        if missing:
            raise CcmodInputError(f"background CSV lacks column '{missing[0]}'",
                                  source=self.path, hint="columns: t_s, link, direction, load")
        for col in ("t_s", "load"):
            vals = pd.to_numeric(df[col], errors="coerce").to_numpy(float)
            bad = np.flatnonzero(~np.isfinite(vals) | (vals < 0) | ((vals >= 1) if col == "load"
                                                                   else False))
            if bad.size:
                i = int(bad[0])
                raise CcmodInputError(f"{col}={df[col].iloc[i]!r} is not "
                                      + ("a time >= 0" if col == "t_s" else
                                         "a load fraction in [0, 1)"),
                                      source=self.path, line=i + 2)
            df[col] = vals
        self.df = df

    def _resolved(self, net):
        """(t_s, resource, load) arrays for this network, sorted by time (stable)."""
        names = {n: i for i, n in enumerate(net.link_names)}
        t, r, ld = [], [], []
        for i, row in enumerate(self.df.itertuples(index=False)):
            link = str(row.link).strip()
            lid = names.get(link)
            if lid is None:
                try:
                    lid = int(link)
                except ValueError:
                    lid = -1
            if not (0 <= lid < net.nlinks):
                raise CcmodInputError(f"link '{link}' is not a link of network '{net.name}'",
                                      source=self.path, line=i + 2,
                                      hint="see `ccmod networks show SPEC` for the link table")
            d = str(row.direction).strip().lower()
            dirs = {"up": (0,), "0": (0,), "down": (1,), "1": (1,), "both": (0, 1)}.get(d)
            if dirs is None:
                raise CcmodInputError(f"direction '{row.direction}' is not up, down or both",
                                      source=self.path, line=i + 2)
            for dd in dirs:
                t.append(float(row.t_s))
                r.append(2 * lid + dd)
                ld.append(float(row.load))
        t, r, ld = np.asarray(t, float), np.asarray(r, np.int64), np.asarray(ld, float)
        order = np.argsort(t, kind="stable")
        return t[order], r[order], ld[order]

    def level(self, net, which) -> np.ndarray:
        """Time-weighted mean / quantile per resource over [0, last step time]; a series'
        last value counts for the mean step length of the file."""
        out = np.zeros(net.nresources)
        if not isinstance(which, str) and float(which) == 0.0:
            return out
        t, r, ld = self._resolved(net)
        if not len(t):
            return out
        t_end = float(t.max())
        span = float(np.median(np.diff(np.unique(t)))) if len(np.unique(t)) > 1 else 1.0
        t_end += span
        for res in np.unique(r):
            sel = r == res
            ts = np.concatenate([[0.0], t[sel]])
            vs = np.concatenate([[0.0], ld[sel]])
            dur = np.diff(np.concatenate([ts, [t_end]]))
            if isinstance(which, str):
                out[res] = float(np.sum(vs * dur) / max(np.sum(dur), 1e-300))
            else:
                order = np.argsort(vs, kind="stable")
                cw = np.cumsum(dur[order])
                k = int(np.searchsorted(cw, float(which) * cw[-1], side="left"))
                out[res] = float(vs[order][min(k, len(vs) - 1)])
        return out

    def steps(self, net, resources, horizon_s: float = math.inf) -> Steps:
        t, r, ld = self._resolved(net)
        keep = np.isin(r, np.asarray(resources, dtype=np.int64))
        return Steps(t[keep], r[keep], ld[keep])

    def spec(self) -> str:
        return f"file:{self.path}"


def make_background(spec) -> Background:
    """``0.3`` / ``"0.3"`` / ``"exp:..."`` / ``"file:PATH"`` / a Background → a Background."""
    if spec is None:
        return ConstantBackground(0.0)
    if isinstance(spec, Background):
        return spec
    if isinstance(spec, (int, float, np.integer, np.floating)) and not isinstance(spec, bool):
        return ConstantBackground(_check_load(float(spec), "background load"))
    text = str(spec).strip()
    try:
        return ConstantBackground(_check_load(float(text), "background load"))
    except ValueError:
        pass
    name, _, rest = text.partition(":")
    name = name.strip().lower()
    if name == "file":
        path = rest[5:] if rest.startswith("path=") else rest
        if not path:
            raise CcmodInputError("file background needs a path", source=SRC,
                                  hint="--background file:loads.csv")
        return FileBackground(path)
    # the one spec parser and typed converter of every plugin family (ccmod.registry):
    # parameters from the model's signature, e.g. exp:mean_pps=7000,seed=3
    entry, vals = BACKGROUNDS.resolve(f"{name}:{rest}" if rest else name, source=SRC)
    return entry.factory(**vals)


#: the constant levels of ``--bounds`` (see docs/networks.md)
BOUNDS = {"best": 0.0, "avg": "mean", "worst": 0.95}
BOUNDS_DOC = ("best = no background load; avg = every link direction at the model's mean "
              "load, held constant; worst = every link direction at its 95th-percentile "
              "load, held constant")
