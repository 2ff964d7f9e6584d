"""Where the compiled loop's cycles go: ``perf`` over a warm kernel, with numba's symbols.

Usage::

    python bench/perf_kernel.py incast512 [--records 200000] [--repeat 5] [--top 30]
    python bench/perf_kernel.py random64 --sharing maxmin --annotate _join

Cases are bench/profile_kernel.py's: ``random64``, ``incastK`` (K senders onto one node),
``light16`` (myrinet16 with compute), ``spreadK`` (incastK's messages, each receiver on a node
of its own: K in flight without contention), and bench/bench_engine.py's ``sharersK`` /
``sharersKrR`` (incast(R / 2)'s trace on an R-node star, R = 2048 by default, the
receivers K to a node: the ranks held fixed, only the sharers per downlink vary). The script warms the JIT with one run, writes
``/tmp/perf-PID.map`` (the symbol map ``perf report`` reads for JIT code), then repeats
the run with ``perf record`` attached to itself, enabled only inside ``Engine.run`` (the
compiled loop; the per-run set-up is left out), and prints ``perf report``'s flat profile
(self time per function, one line per compiled copy). ``--annotate NAME`` also prints the
hottest instructions of the functions whose name contains NAME (perf cannot annotate JIT
code from a map: the machine code comes from the object numba linked or cached,
disassembled by ``objdump``); a sample on an instruction right after a load usually
means that load waited. Samples are of the CPU clock (virtual machines often have no
hardware counters): time, not cycles or misses. Needs ``perf`` (``perf_event_paranoid``
<= 2 is enough for one's own process) and ``nm`` / ``objdump`` (binutils).

``--counts`` instead runs the case once as plain Python (``NUMBA_DISABLE_JIT=1``, in a
child process) under cProfile and prints how many times each kernel function is called
per record: the operations per record (heap pushes, flushes, joins...), which the
compiled profile cannot count.

Why a map at all: numba compiles in memory (or loads its cache file as an object and
links it in memory), so perf sees anonymous executable pages. Each compiled entry point
(``run_entry`` here) is one object file holding every function it calls that LLVM did not
inline; ``nm`` of that object gives their offsets, and the entry's address in memory
(numba knows it) anchors them (the object's ``.text`` is loaded as one block).
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def _demangle(name: str) -> str:
    """numba's Itanium-like names (``_ZN5ccmod6kernel4loop8_advanceB...``) -> the dotted
    Python name (``ccmod.kernel.loop._advance``); other names unchanged."""
    s = name[2:] if name.startswith("_Z") else ""
    s = s[1:] if s.startswith("N") else s
    parts = []
    while s and s[0].isdigit():
        k = 0
        while k < len(s) and s[k].isdigit():
            k += 1
        n = int(s[:k])
        parts.append(s[k:k + n])
        s = s[k + n:]
    return ".".join(parts).replace("ccmod.kernel.", "") if parts else name


def _objects(disp):
    """``(overload, object bytes)`` of each compiled overload of a dispatcher: the
    library's object when it was compiled in this process, else its numba cache file."""
    out = []
    by_name = {ov.fndesc.mangled_name: ov for ov in disp.overloads.values()}
    for ov in disp.overloads.values():
        try:
            out.append((ov, ov.library._get_compiled_object()))
        except Exception:   # loaded from the cache: no object kept in memory
            pass
    if len(out) == len(by_name) or disp._cache is None:
        return out
    cf = disp._cache._cache_file
    for fname in cf._load_index().values():
        obj = cf._load_data(fname)[0][2][0]     # (name, "object", (object, bitcode))
        if not isinstance(obj, bytes):          # a link-only entry (IR, no object)
            continue
        for mangled, ov in by_name.items():
            if mangled.encode() in obj and all(o is not ov for o, _ in out):
                out.append((ov, obj))
    return out


def _symbols(obj: bytes):
    """``[(offset, size, name)]`` of the functions defined in an object file (nm)."""
    with tempfile.NamedTemporaryFile(suffix=".o", delete=False) as f:
        f.write(obj)
    try:
        text = subprocess.run(["nm", "-S", "--defined-only", f.name], capture_output=True,
                              text=True, check=True).stdout
    finally:
        os.unlink(f.name)
    syms = []
    for line in text.splitlines():
        p = line.split()
        if len(p) == 4 and p[2] in "tTwW":
            syms.append((int(p[0], 16), int(p[1], 16), p[3]))
    return syms


def write_perf_map(dispatchers, path=None):
    """Write ``/tmp/perf-PID.map`` for the given numba dispatchers (and everything linked
    into them); returns ``(path, {address: (size, name)}, [(address, object bytes)])``."""
    items, objs = {}, []
    for disp in dispatchers:
        for ov, obj in _objects(disp):
            syms = _symbols(obj)
            mangled = ov.fndesc.mangled_name
            anchor = [s for s in syms if s[2] == mangled]
            if not anchor:
                continue
            base = ov.library._codegen._engine.get_function_address(mangled) - anchor[0][0]
            objs.append((base, obj))
            for off, size, name in syms:
                items[base + off] = (size, _demangle(name))
    path = path or f"/tmp/perf-{os.getpid()}.map"
    with open(path, "w") as f:
        for a, (size, name) in sorted(items.items()):
            f.write(f"{a:x} {size:x} {name}\n")
    return path, items, objs


def _dispatchers(first):
    """``first``, then every other numba dispatcher loaded (entry points called from
    Python: the state set-up's helpers, numba's typed containers), so that samples in
    their code are named too."""
    from numba.core.registry import CPUDispatcher
    out = [first]
    for mname, mod in list(sys.modules.items()):
        if mod is not None:
            out += [d for d in vars(mod).values()
                    if isinstance(d, CPUDispatcher) and d.overloads and d is not first]
    return list({id(d): d for d in out}.values())


def _case(name, nrec, sharing):
    """``(workload, network, run keywords)`` of a bench/profile_kernel.py case."""
    from bench_engine import STAR, incast, random_pairs
    if name == "random64":
        return random_pairs(64, nrec, 1), STAR, {}
    if name == "light16":
        return random_pairs(16, nrec, 2, compute_mean_s=1e-4), "myrinet16", {}
    if name.startswith("compute") and name[len("compute"):].isdigit():
        from profile_kernel import compute_only
        return compute_only(int(name[len("compute"):]), nrec), STAR, {}
    m = re.fullmatch(r"sharers(\d+)(?:r(\d+))?", name)
    if m:
        # bench/bench_engine.py's sharersKrR: incast(R / 2)'s trace on an R-node star, the
        # receivers K to a node (the ranks held fixed, only the sharers per downlink vary)
        from bench_engine import sharers_mapping
        K, R = int(m.group(1)), int(m.group(2) or 2048)
        mp = Path(tempfile.mkdtemp(prefix="ccmod-perf-")) / f"{name}.map"
        mp.write_text("".join(f"{r} {nd}\n" for r, nd in enumerate(sharers_mapping(K, R))))
        return incast(R // 2, nrec), f"{STAR},nodes={R}", {"mapping": str(mp)}
    m = re.fullmatch(r"(incast|spread)(\d+)", name)
    if not m:
        raise SystemExit(f"perf_kernel: unknown case {name!r} (random64, light16, incastK, "
                         "spreadK, sharersK, sharersKrR)")
    K = int(m.group(2))
    # spreadK: incastK's messages with every receiver on a node of its own (no contention:
    # what K messages in flight cost without sharing)
    nodes = list(range(K)) + [K] * K if m.group(1) == "incast" else list(range(2 * K))
    mp = Path(tempfile.mkdtemp(prefix="ccmod-perf-")) / f"{name}.map"
    mp.write_text("".join(f"{r} {nd}\n" for r, nd in enumerate(nodes)))
    return incast(K, nrec), STAR, {"mapping": str(mp)}


def _annotate(data, items, objs, pattern, limit=int(os.environ.get("ANN_LIMIT", 60))):
    """Print the hottest instructions of the functions whose name contains ``pattern``."""
    raw = subprocess.run(["perf", "script", "-i", data, "-F", "ip"], capture_output=True,
                         text=True).stdout.split()
    hits = {}
    for h in raw:
        a = int(h, 16)
        hits[a] = hits.get(a, 0) + 1
    for a, (size, name) in sorted(items.items()):
        if pattern not in name:
            continue
        n = sum(c for x, c in hits.items() if a <= x < a + size)
        if n == 0:
            continue
        base, obj = max((b, o) for b, o in objs if b <= a)
        with tempfile.NamedTemporaryFile(suffix=".o", delete=False) as f:
            f.write(obj)
        asm = subprocess.run(["objdump", "-d", "--no-show-raw-insn", f.name,
                              f"--start-address={a - base:#x}",
                              f"--stop-address={a - base + size:#x}"],
                             capture_output=True, text=True).stdout
        os.unlink(f.name)
        print(f"\n== {name}: {n} samples")
        rows = []
        for line in asm.splitlines():
            m = re.match(r"\s*([0-9a-f]+):\s*(.*)", line)
            if m:
                off = int(m.group(1), 16)
                rows.append((hits.get(base + off, 0), off, m.group(2)))
        for c, off, ins in sorted(rows, reverse=True)[:limit]:
            print(f"{c:7d} {100.0 * c / n:5.1f}%  {off:8x}  {ins}")


def _counts(a, run):
    """Run the case once under cProfile (plain Python) and print calls per record."""
    import cProfile
    import pstats
    import ccmod.engine as eng_mod
    w, net, kw = _case(a.case, a.records, a.sharing)
    prof, orig = cProfile.Profile(), eng_mod.Engine.run

    def profiled(self):
        prof.enable()
        try:
            return orig(self)
        finally:
            prof.disable()
    eng_mod.Engine.run = profiled
    run(w, net, sharing=a.sharing, record=False, **kw)
    rows = sorted(((nc, f"{Path(f).stem}.{name}") for (f, _, name), (_, nc, *_r)
                   in pstats.Stats(prof).stats.items() if "ccmod" in f), reverse=True)
    print(f"{a.case} {a.sharing}: calls per record ({w.nrecords} records, plain Python)")
    for nc, name in rows[:a.top]:
        print(f"{nc / w.nrecords:9.3f}  {name}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("case", help="random64 | light16 | incastK | spreadK")
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--sharing", default="ccmod")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--annotate", default="", help="function name substring to annotate")
    ap.add_argument("--sort", default="sym", help="perf report's --sort (e.g. dso,sym)")
    ap.add_argument("--counts", action="store_true",
                    help="calls per record of each kernel function (plain Python, cProfile)")
    a = ap.parse_args()
    if a.counts and os.environ.get("NUMBA_DISABLE_JIT") != "1":
        env = dict(os.environ, NUMBA_DISABLE_JIT="1")
        sys.exit(subprocess.run([sys.executable] + sys.argv, env=env).returncode)
    from ccmod.api import run
    if a.counts:
        _counts(a, run)
        return
    import ccmod.kernel.loop as loop
    w, net, kw = _case(a.case, a.records, a.sharing)

    def once():
        run(w, net, sharing=a.sharing, record=False, **kw)
    once()                                       # compile or load the cache, warm
    _, items, objs = write_perf_map(_dispatchers(loop.run_entry))
    import ccmod.engine as eng_mod
    tmp = Path(tempfile.mkdtemp(prefix="ccmod-perf-"))
    data, ctl, ack = tmp / "perf.data", tmp / "ctl", tmp / "ack"
    os.mkfifo(ctl)
    os.mkfifo(ack)
    # counting starts disabled (-D -1): only Engine.run (the loop) is measured, the
    # set-up of each run (reading nothing, but matching, routes, the arena) is not
    head = ["perf", "record", "-q", "-o", str(data)]
    perf = subprocess.Popen(head + ["-D", "-1", f"--control=fifo:{ctl},{ack}",
                                    "-p", str(os.getpid())])
    fc, fa = open(ctl, "w"), open(ack)          # (blocks until perf opens its ends)
    orig, spent = eng_mod.Engine.run, []

    def measured(self):
        fc.write("enable\n")
        fc.flush()
        fa.readline()
        c0 = time.process_time()
        out = orig(self)
        spent.append(time.process_time() - c0)
        fc.write("disable\n")
        fc.flush()
        fa.readline()
        return out
    eng_mod.Engine.run = measured
    for _ in range(a.repeat):
        once()
    eng_mod.Engine.run = orig
    fc.close()
    fa.close()
    perf.send_signal(signal.SIGINT)
    perf.communicate()
    nrec = w.nrecords * a.repeat
    print(f"{a.case} {a.sharing}: {sum(spent) / nrec * 1e6:.3f} us CPU per record in "
          f"Engine.run ({a.repeat} x {w.nrecords} records)")
    rep = subprocess.run(["perf", "report", "-i", str(data), "--stdio", "--sort", a.sort,
                          "--percent-limit", "0.3"], capture_output=True, text=True).stdout
    rows = [ln for ln in rep.splitlines() if ln.strip() and not ln.startswith("#")]
    print("\n".join(rows[:a.top]))
    if a.annotate:
        _annotate(str(data), items, objs, a.annotate)
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
