"""Mutation fuzzing of the ``ccmod`` command line, in-process (issue 14).

Shared by ``tests/test_fuzz.py`` (hypothesis, a small budget in the default suite) and
``bench/fuzz_campaign.py`` (a longer campaign that counts verdicts per family).

A *family* turns a list of mutation operations into a command line: it copies a small real
sample (``traces/``, ``tests/data/``) into a scratch folder, mutates one file (or builds an
option value), and names the paths/options an error must mention. :func:`run_cli` runs
``ccmod.cli.main(argv)`` in this process, capturing stdout/stderr and the exit code, and
:func:`verdict` checks the project's contract: exit 0, or exit 2 with exactly one stderr
line naming what the user gave, no internal error, no control characters, nothing from a
file the user did not name, no temp file left behind.
"""
from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import re
import shutil
import signal
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
TRACES = ROOT / "traces"
DUMPI_ASCII = DATA / "real" / "sst-dumpi" / "ascii-derived"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

#: a marker written in a file outside every input folder; it must never be printed
SECRET_MARK = "ZZ-SECRET-7f3a-ZZ"
#: values that broke parsers before: int64/uint64 edges, float overflow, huge digit
#: strings, terminal escapes, bidi overrides, empty
INTERESTING = ["9223372036854775808", "18446744073709551616", "1e400", "-1e400", "nan",
               "inf", "-1", "0", "2147483648", "4294967297", "99999999999999999999999",
               "1" * 5000, "\x1b[31mRED\x1b[0m", "\u202eevil", "0x10", "", "1e-400",
               "-9223372036854775809", "1.5", "100000000", "1e9", "\x07\x08\x1b]0;t\x07"]
#: JSON values for Parquet/CSV header keys of the wrong type or size
JSON_VALUES = ["100000000", "null", "[]", "{}", '"x"', "1e400", "-5", "[1, 2]", '{"a": 1}',
               "2147483648", '"\\u001b[31m"', "1" * 5000, "true"]

_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
NOPS = 9  # mutation kinds understood by mutate()


class Timeout(BaseException):
    """Raised by the alarm: a BaseException so that ccmod's handlers do not catch it."""


# -- mutation ---------------------------------------------------------------------------
def mutate(data: bytes, ops, extra_values=()) -> bytes:
    """Apply ``ops`` (tuples ``(kind, pos, val)`` of non-negative ints) to ``data``."""
    values = list(INTERESTING) + list(extra_values)
    for kind, pos, val in ops:
        kind %= NOPS
        v = values[val % len(values)].encode("utf-8", "surrogateescape")
        lines = data.split(b"\n")
        if kind in (0, 1, 8):
            pat = rb"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?" if kind == 0 else rb"[^\s:,=]+"
            toks = list(re.finditer(pat, data))
            if not toks:
                data = v + data
                continue
            m = toks[pos % len(toks)]
            if kind == 8:  # insert a new token after this one
                data = data[:m.end()] + b" " + v + data[m.end():]
            else:
                data = data[:m.start()] + v + data[m.end():]
        elif kind == 2 and lines:
            del lines[pos % len(lines)]
            data = b"\n".join(lines)
        elif kind == 3 and lines:
            i = pos % len(lines)
            lines.insert(i, lines[i] if val % 4 else lines[i] * (2 + val % 50))
            data = b"\n".join(lines)
        elif kind == 4:
            i = pos % (len(data) + 1)
            junk = bytes((val * 37 + k * 101) % 256 for k in range(1 + val % 16))
            data = data[:i] + junk + data[i:]
        elif kind == 5:
            data = data[:pos % (len(data) + 1)]
        elif kind == 6 and len(lines) > 1:
            i, j = pos % len(lines), val % len(lines)
            lines[i], lines[j] = lines[j], lines[i]
            data = b"\n".join(lines)
        elif kind == 7 and data:
            i = pos % len(data)
            data = data[:i] + bytes([data[i] ^ (1 + val % 255)]) + data[i + 1:]
    return data


# -- running ----------------------------------------------------------------------------
def run_cli(argv, timeout_s: float = 20.0, env: dict | None = None):
    """Run ``ccmod.cli.main(argv)`` here; return ``(exit code, stdout, stderr)``.

    Code ``"timeout"`` if it ran longer than ``timeout_s`` (SIGALRM, main thread only).
    """
    from ccmod.cli import main
    out, err = io.StringIO(), io.StringIO()
    code = 0
    old_env = {k: os.environ.get(k) for k in (env or {})}
    os.environ.update(env or {})
    use_alarm = hasattr(signal, "SIGALRM") and timeout_s

    def _alarm(signum, frame):
        raise Timeout()

    old = signal.signal(signal.SIGALRM, _alarm) if use_alarm else None
    if use_alarm:
        signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main([str(a) for a in argv])
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except Timeout:
        code = "timeout"
    finally:
        if use_alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
        for k, v in old_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return code, out.getvalue(), err.getvalue()


def verdict(code, out: str, err: str, names, scratch: Path | None = None) -> str:
    """``"ok"`` (exit 0), ``"clean"`` (exit 2, one good line) or what is wrong."""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    if SECRET_MARK in out or SECRET_MARK in err:
        return "leak: printed content of a file the user did not mean"
    if _CONTROL.search(err) or "\x1b" in out:
        return "control characters on the terminal"
    if scratch is not None:
        left = [p.name for p in scratch.rglob("*.ccmod-tmp")] + \
               [p.name for p in scratch.rglob(".*.tmp")]
        if left and code in (0, 2):
            return f"temp file left behind: {left[0]}"
    if code == "timeout":
        return "timeout"
    if code == 0:
        return "ok" if not lines else f"stderr on success: {lines[0][:200]}"
    if "internal error" in err:
        return "internal error: " + (lines[0][:300] if lines else "")
    if code != 2:
        return f"exit code {code}: {(lines or [''])[0][:200]}"
    if len(lines) != 1:
        return f"{len(lines)} stderr lines: {' | '.join(lines)[:300]}"
    if "Traceback" in err:
        return "traceback"
    if names and not any(str(n) in lines[0] for n in names):
        return f"names none of {[str(n) for n in names][:3]}: {lines[0][:300]}"
    if "sys.set_int_max_str_digits" in err or "position " in err and "codec" in err:
        return f"wrapped Python exception text: {lines[0][:200]}"
    return "clean"


# -- families ---------------------------------------------------------------------------
def _copy(src: Path, dst: Path) -> Path:
    if src.is_dir():
        shutil.copytree(src, dst)
        for p in dst.rglob("*"):
            p.chmod(0o644)
    else:
        shutil.copyfile(src, dst)
    return dst


def _secret(tmp: Path) -> Path:
    """A file outside the input folders whose content must never be printed."""
    s = tmp / "outside" / "secret.txt"
    s.parent.mkdir(exist_ok=True)
    s.write_text(f"root:{SECRET_MARK}:19000:0:99999:7:::\n0 compute {SECRET_MARK}\n")
    return s


def _pick(seq, ops):
    return seq[(ops[0][2] if ops else 0) % len(seq)]


def _which(n, ops):
    return (ops[0][1] if ops else 0) % n


class Family:
    name = "?"
    sources: tuple = ()

    def make(self, tmp: Path, ops):  # -> (argv, names)
        raise NotImplementedError


class FileFamily(Family):
    """Mutate one file of a (copied) sample; run ``commands`` on it."""

    def __init__(self, name, sample, commands, target=None, member=None):
        self.name, self.sample, self.commands = name, sample, commands
        self.target, self.member = target, member

    def make(self, tmp, ops):
        sample = Path(self.sample)
        inp = _copy(sample, tmp / "in" / sample.name) if sample.is_dir() else None
        if inp is None:
            (tmp / "in").mkdir()
            inp = _copy(sample, tmp / "in" / sample.name)
        secret = _secret(tmp)
        extra = [str(secret), "../../outside/secret.txt", "/proc/self/environ"]
        if inp.is_dir():
            files = sorted(p for p in inp.iterdir() if p.is_file())
            victim = files[_which(len(files), ops)]
        else:
            victim = inp
        victim.write_bytes(mutate(victim.read_bytes(), ops, extra))
        given = inp / self.target if self.target else inp
        cmd = _pick(self.commands, ops)
        argv = [a.format(IN=given, OUT=tmp / "out") if isinstance(a, str) else a for a in cmd]
        # a folder input (or a description file) may be blamed through any file in it
        return argv, [given] + ([inp] if inp != given or inp.is_dir() else [])


class GzipFamily(Family):
    name = "ti-gz"

    def make(self, tmp, ops):
        data = (TRACES / "stencil16.ti").read_bytes()
        f = tmp / "t.ti.gz"
        if ops and ops[0][0] % 2:   # mutate the compressed bytes
            f.write_bytes(mutate(gzip.compress(data, mtime=0), ops[1:] or [(7, 99, 3)]))
        else:                       # compress a mutated text
            f.write_bytes(gzip.compress(mutate(data, ops), mtime=0))
        return _pick([["info", f], ["run", f, "--network", "torus"]], ops), [f]


class TabularFamily(Family):
    """ccmod's own Parquet/CSV copies of a TI trace: bytes, rows or header keys mutated."""

    def __init__(self, name, suffix):
        self.name, self.suffix = name, suffix

    def make(self, tmp, ops):
        from ccmod.workloads import read_workload
        from ccmod.workloads.tabular import write_csv, write_parquet
        f = tmp / f"w{self.suffix}"
        w = read_workload(str(TRACES / "stencil16.ti"))
        (write_parquet if self.suffix == ".parquet" else write_csv)(w, f)
        mode = ops[0][0] % 3 if ops else 0
        keys = ("ccmod.nranks", "ccmod.files", "ccmod.meta", "ccmod.format_version")
        if mode == 0:  # one header key gets a value of the wrong type or size
            key = keys[_which(len(keys), ops)]
            val = JSON_VALUES[(ops[0][2] if ops else 0) % len(JSON_VALUES)]
            if self.suffix == ".parquet":
                import pyarrow.parquet as pq
                t = pq.read_table(f)
                md = dict(t.schema.metadata or {})
                md[key.encode()] = val.encode()
                pq.write_table(t.replace_schema_metadata(md), f)
            else:
                lines = f.read_text().split("\n")
                head = json.loads(lines[1][2:])
                head[key.split(".", 1)[1]] = "__V__"
                lines[1] = "# " + json.dumps(head).replace('"__V__"', val)
                f.write_text("\n".join(lines))
        else:
            f.write_bytes(mutate(f.read_bytes(), ops[1:] or ops))
        cmd = _pick([["info", f], ["run", f], ["convert", f, tmp / "o.ti"]], ops)
        return cmd, [f]


class SecretFamily(Family):
    """The user names a file that is not of the expected kind: never echo its content."""
    name = "named-non-input"

    def make(self, tmp, ops):
        secret = _secret(tmp)
        target = _pick([secret, Path("/proc/self/environ"), Path("/etc/hostname")], ops)
        t = TRACES / "alltoall8.ti"
        cmds = [["run", t, "--map", target], ["run", t, "--network", f"topology:file={target}"],
                ["run", t, "--cost", target], ["info", target], ["fit", target],
                ["report", target.parent, "-o", tmp / "r.html"],
                ["run", t, "--background", f"file:{target}"],
                ["run", t, "--network", f"simgrid:file={target}"]]
        cmd = cmds[_which(len(cmds), ops)]
        return cmd, [target, target.parent, "--network", "--map"]


class DescFamily(Family):
    """A description file that lists files outside its folder (or mutated entries)."""
    name = "ti-desc-paths"

    def make(self, tmp, ops):
        d = _copy(DATA / "ti-desc", tmp / "in" / "ti-desc")
        secret = _secret(tmp)
        entries = [str(secret), "../../outside/secret.txt", "/proc/self/environ",
                   "../ti-desc/rank1.ti", "rank0.ti", "/etc/passwd"]
        lines = ["rank0.ti", entries[_which(len(entries), ops)]]
        if ops and ops[0][0] % 2:  # replay_multiple form
            lines = [f"1 {e} 2 0" for e in lines[1:]]
        (d / "desc.txt").write_text("\n".join(lines) + "\n")
        return ["info", d / "desc.txt"], [d / "desc.txt", d]


class SpecFamily(Family):
    """An option value built from a grammar (network specs, engine options, generators)."""

    def __init__(self, name, build):
        self.name, self.build = name, build

    def make(self, tmp, ops):
        return self.build(tmp, ops)


_NETWORKS = {
    "star": ["nodes", "bandwidth", "latency"], "bus": ["nodes", "bandwidth", "latency"],
    "fattree2": ["leaves", "hosts_per_leaf", "spines", "bandwidth", "latency",
                 "spine_bandwidth", "spine_latency", "route"],
    "myrinet16": ["nodes", "seed", "bandwidth", "latency", "quiet"],
    "mesh": ["dims", "bandwidth", "latency"], "torus": ["dims", "bandwidth", "latency"],
    "topology": ["file", "bandwidth", "latency"], "nosuch": ["x"],
}
_SIZES = ["1048576", "65536", "256x4096", "4096x4096x64", "2x2", "8", "0", "-3", "1e6",
          "3x", "x", "99999999999999999999", "2147483648"]


def _network(tmp, ops):
    name = list(_NETWORKS)[_which(len(_NETWORKS), ops)]
    parts = []
    for kind, pos, val in ops[:3]:
        keys = _NETWORKS[name] + ["bogus"]
        k = keys[pos % len(keys)]
        vals = _SIZES + INTERESTING if k in ("nodes", "dims", "leaves", "spines",
                                            "hosts_per_leaf") else INTERESTING + _SIZES
        parts.append(f"{k}={vals[val % len(vals)]}")
    spec = name + (":" + ",".join(parts) if parts else "")
    return ["run", TRACES / "alltoall8.ti", "--network", spec], ["--network", "network"]


_OPTIONS = ["--background", "--compute-rate", "--compute-scale", "--eager-limit",
            "--sharing", "--send-mode", "--collective", "--map", "--intra-latency",
            "--intra-bandwidth", "--format", "--sink"]


def _options(tmp, ops):
    argv = ["run", TRACES / "pingpong.ti"]
    names = []
    for kind, pos, val in ops[:3]:
        opt = _OPTIONS[pos % len(_OPTIONS)]
        pre = {"--map": ["block:", "cyclic:", ""], "--collective": ["allreduce=", "bcast=",
                                                                  ""]}.get(opt, [""])
        v = pre[kind % len(pre)] + INTERESTING[val % len(INTERESTING)]
        argv += [opt, v]
        names.append(opt)
    if "--sink" in argv:
        argv += ["--out", tmp / "out"]
    return argv, names + ["--", "sink", "format", "option", "collective"]


_GENERATORS = {"alltoall": ["nranks", "iterations", "nbytes", "algorithm"],
               "halo2d": ["px", "py", "iterations", "nbytes", "dist"],
               "halo3d": ["px", "py", "pz", "iterations"],
               "wavefront": ["px", "py", "kblocks", "octants", "angle_blocks"],
               "snakes": ["nranks", "snakes", "hops", "imbalance"],
               "reqreply": ["nranks", "requests", "work_s", "work_dist"],
               "workpile": ["nranks", "servers", "chunks"],
               "client_server": ["servers", "clients", "requests"],
               "uniform": ["nranks", "iterations", "fanout"],
               "ring": ["nranks", "iterations", "mode"],
               "hotspot": ["nranks", "pattern", "per_rank", "hops"], "nosuch": ["x"]}
_COUNTS = ["100000", "65536", "1000000000", "3", "1", "2", "0", "-1", "1e12", "2.5"]


def _generate(tmp, ops):
    kind = list(_GENERATORS)[_which(len(_GENERATORS), ops)]
    parts = []
    for _k, pos, val in ops[:3]:
        keys = _GENERATORS[kind] + ["bogus"]
        vals = _COUNTS + INTERESTING
        parts.append(f"{keys[pos % len(keys)]}={vals[val % len(vals)]}")
    spec = kind + (":" + ",".join(parts) if parts else "")
    return (["generate", spec, "-o", tmp / "g.ti", "--seed", "1"],
            ["generator", "--seed", "-o", kind])


def _analytic(tmp, ops):
    vals = _COUNTS + INTERESTING
    v = [vals[o[2] % len(vals)] for o in ops] + ["4", "2", "8"]
    cmds = [["mva", "--demands", f"0.1,{v[0]}", "--population", v[1]],
            ["overflow", "--N", v[0], "--K", v[1], "--Q", v[2]],
            ["mva", "--demands", v[0], "--population", "3", "--think", v[1]],
            ["crosscheck", TRACES / "alltoall8.ti", "--compute-rate", v[0]]]
    # calculators name the parameter at fault (N, K, Q, population, think_time, demands)
    return cmds[_which(len(cmds), ops)], ["--", "N must", "K must", "Q must", "population",
                                          "think", "demand", "compute"]


def _sweep(tmp, ops):
    vals = INTERESTING + _SIZES
    v = [vals[o[2] % len(vals)] for o in ops] + ["0", "1", "2"]
    cmds = [["sweep", TRACES / "pingpong.ti", "--background", f"0,{v[0]}"],
            ["sweep", TRACES / "pingpong.ti", "-n", f"star:bandwidth={v[0]}", "-n", "bus"],
            ["sweep", TRACES / "pingpong.ti", "--grid", f"network.bandwidth={v[0]},{v[1]}"],
            ["sweep", TRACES / "pingpong.ti", "--grid", f"{v[0]}=1,2"],
            ["sweep", TRACES / "pingpong.ti", "--eager-limit", v[0], "-o", tmp / "s.csv"]]
    return cmds[_which(len(cmds), ops)], ["--", "sweep", "grid", "network", "bandwidth",
                                          "background", "eager", str(tmp)]


def families() -> dict[str, Family]:
    """Every family, by name (the campaign's rows)."""
    run_eager = ["run", "{IN}", "--send-mode", "eager"]
    fams = [
        FileFamily("ti", TRACES / "pingpong.ti",
                   [["info", "{IN}"], ["run", "{IN}"], ["convert", "{IN}", "{OUT}.csv"]]),
        FileFamily("ti-stencil", TRACES / "stencil16.ti",
                   [["run", "{IN}", "--network", "myrinet16"], ["info", "{IN}"]]),
        GzipFamily(),
        FileFamily("ti-desc", DATA / "ti-desc", [["info", "{IN}"], ["run", "{IN}"]],
                   target="desc.txt"),
        DescFamily(),
        FileFamily("dumpi-ascii", DUMPI_ASCII, [["info", "{IN}"], run_eager]),
        FileFamily("liballprof", DATA / "liballprof", [["info", "{IN}"], run_eager]),
        FileFamily("pipit-csv", DATA / "pipit-ping-pong.csv", [["info", "{IN}"], ["run", "{IN}"]]),
        FileFamily("paraver", DATA / "real" / "paraver-kernel", [["info", "{IN}"], run_eager],
                   target="qsort_beo3.prv"),
        TabularFamily("parquet", ".parquet"),
        TabularFamily("ccmod-csv", ".csv"),
        FileFamily("fit-osu", DATA / "osu_latency.txt",
                   [["fit", "{IN}", "-o", "{OUT}.json"], ["fit", "{IN}", "--max-segments", "3"]]),
        FileFamily("cost-json", DATA / "cost_model.json",
                   [["run", ROOT / "traces" / "pingpong.ti", "--cost", "{IN}"]]),
        FileFamily("map", DATA / "map4.txt",
                   [["run", DUMPI_ASCII, "--map", "{IN}"]]),
        FileFamily("topology", DATA / "topo.txt",
                   [["run", TRACES / "alltoall8.ti", "--network", "topology:file={IN}",
                     "--map", "block:2"]]),
        FileFamily("goal", DATA / "goal" / "binary_tree_32.goal",
                   [["info", "{IN}"], ["run", "{IN}", "--send-mode", "eager"]]),
        FileFamily("dimemas", DATA / "dimemas" / "handwritten_4tasks.dim",
                   [["info", "{IN}"], ["run", "{IN}"]]),
        FileFamily("simgrid-platform", DATA / "simgrid" / "cluster_backbone.xml",
                   [["run", TRACES / "alltoall8.ti", "--network", "simgrid:file={IN}"]]),
        SecretFamily(),
        SpecFamily("network", _network),
        SpecFamily("run-options", _options),
        SpecFamily("generate", _generate),
        SpecFamily("analytic", _analytic),
        SpecFamily("sweep", _sweep),
    ]
    return {f.name: f for f in fams}


#: environment of fuzz runs: generators refused early (the limit itself is under test)
FUZZ_ENV = {"CCMOD_MAX_RECORDS": "200000"}


def fuzz_one(family: Family, ops, tmp: Path, timeout_s: float = 20.0):
    """Build and run one input; return ``(verdict, argv)``."""
    tmp.mkdir(parents=True, exist_ok=True)
    argv, names = family.make(tmp, ops)
    code, out, err = run_cli(argv, timeout_s=timeout_s, env=FUZZ_ENV)
    return verdict(code, out, err, names, tmp), argv, err
