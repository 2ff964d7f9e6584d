"""Real-trace readers (OTF2, Paraver, DUMPI, liballprof) against the shared public traces.

The small traces are shipped in tests/data/real (so a clone tests every reader on real
files); the large ones are read from the shared folder where present (see conftest).

Every expected number is derived in the test from the file itself (counting records with
an independent minimal parser or the otf2 bindings) or is a published number from the
trace's origin repository (pypop's modelfactors.csv); never copied from the reader.
"""
from __future__ import annotations

import gzip
import re
import shutil
from collections import Counter, defaultdict

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from conftest import examples

from ccmod.errors import CcmodInputError
from ccmod.workloads.base import OP_IRECV, OP_ISEND, OP_RECV, OP_SEND, OP_WAIT, RECV_OPS, SEND_OPS
from ccmod.workloads.dumpi import DumpiAsciiReader, DumpiReader
from ccmod.workloads.liballprof import LiballprofReader
from ccmod.workloads.otf2_reader import Otf2Reader
from ccmod.workloads.paraver import ParaverReader
from ccmod.workloads.registry import READERS

PP = "pipit/ping-pong-otf2/traces.otf2"
SST_OTF2 = "sst-macro/otf2_test_traces/traces.otf2"
QSORT = "paraver-kernel/qsort_beo3.prv"
EPOCH = "pypop-epoch-paraver/epoch_{}proc.prv.gz"
TT_META, TT_ASCII = "sst-dumpi/testtrace.meta", "sst-dumpi/ascii-derived"
BGP = "sst-macro/dumpi_testbgp"
BGP_META, BGP_ASCII = BGP + "/testbgp.meta", BGP + "/ascii-derived"
SPHOT, PMPI = "loggopsim/sphot-liballprof", "loggopsim/pmpi-trace-4rank"


# ------------------------------------------------------------------------ helpers
def check_channels(w):
    """Every send matches one recv per (src, dst, tag) channel, FIFO, with equal sizes;
    request ids are unique per rank and every wait names a posted request."""
    sends, recvs = defaultdict(list), defaultdict(list)
    for r in range(w.nranks):
        posted = set()
        for i in range(w.rank_ptr[r], w.rank_ptr[r + 1]):
            op = int(w.op[i])
            if op in SEND_OPS:
                sends[(r, int(w.peer[i]), int(w.tag[i]))].append(int(w.nbytes[i]))
            elif op in RECV_OPS:
                recvs[(int(w.peer[i]), r, int(w.tag[i]))].append(int(w.nbytes[i]))
            if op in (OP_ISEND, OP_IRECV):
                assert int(w.req[i]) not in posted, f"request {w.req[i]} reused on rank {r}"
                posted.add(int(w.req[i]))
            elif op == OP_WAIT:
                assert int(w.req[i]) in posted, f"wait on unknown request on rank {r}"
        assert all(0 <= p < w.nranks for (_, p, _) in sends)
    assert set(sends) == set(recvs)
    for ch in sends:
        assert sends[ch] == recvs[ch], ch


def app_ops(w, ops):
    """Per rank: (op, peer, tag, nbytes) of application point-to-point ops (tag >= 0;
    collectives use negative tags)."""
    out = []
    for r in range(w.nranks):
        s = slice(w.rank_ptr[r], w.rank_ptr[r + 1])
        sel = np.isin(w.op[s], ops) & (w.tag[s] >= 0)
        out.append(list(zip(w.op[s][sel].tolist(), w.peer[s][sel].tolist(),
                            w.tag[s][sel].tolist(), w.nbytes[s][sel].tolist())))
    return out


def n_app(w, ops):
    return sum(len(x) for x in app_ops(w, ops))


def otf2_counts(path):
    import otf2
    c = Counter()
    with otf2.reader.open(str(path)) as tr:
        nproc = len(tr.definitions.location_groups)
        for _loc, ev in tr.events:
            c[type(ev).__name__] += 1
            if type(ev).__name__ == "Enter" and re.fullmatch(
                    r"MPI_I(allgather|alltoall|allreduce|bcast|reduce|barrier|gather|scatter)",
                    ev.region.name or ""):
                c["nb_coll"] += 1
    return nproc, c


# ------------------------------------------------------------------------ OTF2
# SST-macro's OTF2 trace (~1.5 s here, the largest) with the slow tests, which CI runs; the
# two pipit traces check the same counts by default
@pytest.mark.parametrize("rel", [PP, "pipit/ping-pong-otf2-papi/traces.otf2",
                                 pytest.param(SST_OTF2, marks=pytest.mark.slow)])
def test_otf2_counts(real_dir, rel):
    nproc, c = otf2_counts(real_dir / rel)
    w = Otf2Reader.read(real_dir / rel)
    assert w.nranks == nproc
    assert n_app(w, SEND_OPS) == c["MpiSend"] + c["MpiIsend"]
    assert n_app(w, RECV_OPS) == c["MpiRecv"] + c["MpiIrecv"]
    assert w.meta["collective_calls"] == c["MpiCollectiveEnd"]
    assert w.meta["unmapped_messages"] == 0
    assert w.meta.get("nonblocking_collectives_skipped", 0) == c["nb_coll"]
    check_channels(w)


@pytest.mark.slow      # ~0.9 s here on a large ../shared trace; CI runs it
def test_otf2_self_communicators(real_dir):
    """The sst-macro trace's sub-communicators with an empty COMM_SELF member list are
    self communicators: their messages go from a rank to itself."""
    import otf2
    from otf2.enums import GroupType
    selfsend = 0
    with otf2.reader.open(str(real_dir / SST_OTF2)) as tr:
        for loc, ev in tr.events:
            if type(ev).__name__ == "MpiIsend":
                g = ev.communicator.group
                if g.group_type == GroupType.COMM_SELF:
                    selfsend += 1
                elif list(g.members)[ev.receiver] == loc:
                    selfsend += 1
    w = Otf2Reader.read(real_dir / SST_OTF2)
    ops = app_ops(w, SEND_OPS)
    assert sum(1 for r in range(w.nranks) for (_o, p, _t, _n) in ops[r] if p == r) == selfsend
    assert w.meta["self_messages"] == selfsend


# ------------------------------------------------------------------------ Paraver
def prv_lines(path):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        return f.read().splitlines()


@pytest.mark.parametrize("n", [1, 2] + [pytest.param(n, marks=pytest.mark.slow)
                                        for n in (4, 8, 16)])
def test_paraver_epoch_counts(real_dir, n):
    path = real_dir / EPOCH.format(n)
    lines = prv_lines(path)
    ntasks = int(re.search(r":(\d+)\(", lines[0].split("):", 1)[1].split(":", 2)[2]).group(1))
    ncomm = sum(1 for ln in lines if ln.startswith("3:"))
    ncoll = sum(1 for ln in lines if ln.startswith("2:")
                and re.search(r":50000002:(7|8|10)(:|$)", ln))
    w = ParaverReader.read(path)
    assert w.nranks == ntasks == n
    assert n_app(w, SEND_OPS) == ncomm == n_app(w, RECV_OPS)
    assert w.meta["collective_calls"] == ncoll
    check_channels(w)


# 1 and 4 processes (~0.7-0.9 s each here) with the slow tests, which CI runs: the same
# comparison on the 2-process trace by default
@pytest.mark.parametrize("n", [pytest.param(1, marks=pytest.mark.slow), 2,
                               pytest.param(4, marks=pytest.mark.slow)])
def test_paraver_compute_matches_pypop_useful_duration(real_dir, n):
    """compute + Running time before the first / after the last MPI event equals pypop's
    published 'Useful duration (total)' of the same trace."""
    mf = (real_dir / "pypop-epoch-paraver/modelfactors.csv").read_text().splitlines()
    procs = mf[0].split(";")[1:]
    row = next(ln for ln in mf if ln.startswith("#Useful duration (total)"))
    useful_us = float(row.split(";")[1:][procs.index(str(n))])
    lines = prv_lines(real_dir / EPOCH.format(n))
    first, last = {}, {}
    for ln in lines:
        x = ln.split(":")
        if x[0] == "2" and x[4] == "1" and any(50000001 <= int(t) <= 50000005 for t in x[6::2]):
            first.setdefault(x[3], int(x[5]))
            last[x[3]] = int(x[5])
    outside = 0
    for ln in lines:
        x = ln.split(":")
        if x[0] == "1" and x[4] == "1" and x[7] == "1":
            a, b = int(x[5]), int(x[6])
            outside += max(0, min(b, first[x[3]]) - a) + max(0, b - max(a, last[x[3]]))
    w = ParaverReader.read(real_dir / EPOCH.format(n))
    total_us = w.duration_s.sum() * 1e6 + outside / 1e3
    assert total_us == pytest.approx(useful_us, rel=1e-6)


def test_paraver_qsort_records_mode(real_dir):
    path = real_dir / QSORT
    lines = prv_lines(path)
    ncomm = sum(1 for ln in lines if ln.startswith("3:"))
    ntasks = int(re.search(r":\d+:\d+:(\d+)\(", lines[0]).group(1))
    w = ParaverReader.read(path)
    assert w.nranks == ntasks
    # MPICH-1 era trace: the messages inside the collectives are recorded and replayed
    assert w.meta["collective_messages"] == "records"
    assert n_app(w, SEND_OPS) == ncomm
    check_channels(w)
    w2 = ParaverReader.read(path, collective_messages="expand")
    assert w2.meta["collective_calls"] > 0
    check_channels(w2)


@pytest.mark.slow      # ~1 s here on a large ../shared trace; CI runs it
def test_paraver_option_and_scale(real_dir):
    with pytest.raises(CcmodInputError, match="collective_messages"):
        ParaverReader.read(real_dir / QSORT, collective_messages="bogus")
    a = ParaverReader.read(real_dir / EPOCH.format(2))
    b = ParaverReader.read(real_dir / EPOCH.format(2), compute_scale=0.5)
    assert b.duration_s.sum() == pytest.approx(a.duration_s.sum() * 0.5)


# ------------------------------------------------------------------------ DUMPI
_DTYPE_SIZE = {"MPI_INT": 4, "MPI_DOUBLE": 8}


def ascii_p2p(path):
    """(op, peer, tag, nbytes) of Isend/Irecv/Send/Recv in one dumpi2ascii file (all on
    communicators that are identity-mapped in these samples)."""
    out, cur, args = [], None, {}
    for ln in path.read_text().splitlines():
        m = re.match(r"MPI_(\w+) (entering|returning) at", ln)
        if m and m.group(2) == "entering":
            cur, args = m.group(1), {}
        elif m:
            if cur in ("Isend", "Irecv", "Send", "Recv"):
                peer = args["dest"] if "dest" in args else args["source"]
                op = {"Isend": OP_ISEND, "Irecv": OP_IRECV, "Send": OP_SEND,
                      "Recv": OP_RECV}[cur]
                out.append((op, int(peer), int(args["tag"]),
                            int(args["count"]) * _DTYPE_SIZE[args["dtname"]]))
            cur = None
        elif cur is not None:
            a = re.match(r".* (\w+)=(\S+)(?: \((\w+)\))?", ln)
            if a:
                args[a.group(1)] = a.group(2).strip("[]")
                if a.group(1) == "datatype":
                    args["dtname"] = a.group(3)
    return out


@pytest.mark.parametrize("meta,asc,prefix", [(TT_META, TT_ASCII, "testtrace"),
                                             (BGP_META, BGP_ASCII, "testbgp")])
def test_dumpi_binary_matches_ascii_dump(real_dir, meta, asc, prefix):
    numprocs = int(re.search(r"numprocs=(\d+)", (real_dir / meta).read_text()).group(1))
    w = DumpiReader.read(real_dir / meta)
    assert w.nranks == numprocs
    ops = app_ops(w, [OP_SEND, OP_RECV, OP_ISEND, OP_IRECV])
    for r in range(numprocs):
        assert ops[r] == ascii_p2p(real_dir / asc / f"{prefix}-{r:04d}.txt")
    text = "".join((real_dir / asc / f"{prefix}-{r:04d}.txt").read_text()
                   for r in range(numprocs))
    ncoll = len(re.findall(r"^MPI_(Barrier|Allreduce|Alltoall|Bcast|Reduce) entering",
                           text, re.M))
    assert w.meta["collective_calls"] == ncoll
    nwait = sum(int(x) for x in re.findall(r"MPI_Waitall entering.*\nint count=(\d+)", text))
    nwait += len(re.findall(r"^MPI_Wait entering", text, re.M))
    assert int(((w.op == OP_WAIT) & (w.req >= 0)).sum()) == nwait
    check_channels(w)
    # the text reader gives the very same workload
    w2 = DumpiAsciiReader.read(real_dir / asc)
    for col in ("op", "peer", "tag", "nbytes", "req", "rank_ptr"):
        assert np.array_equal(getattr(w, col), getattr(w2, col)), col
    assert np.allclose(w.duration_s, w2.duration_s, atol=1e-9)


def test_dumpi_callcounts_rank0(real_dir):
    """sst-dumpi's own call counts of rank 0 (callcounts-single.txt)."""
    cc = dict(re.findall(r"^MPI_(\w+) called (\d+) times",
                         (real_dir / "sst-dumpi/callcounts-single.txt").read_text(), re.M))
    w = DumpiReader.read(real_dir / "sst-dumpi/testtrace-0000.bin")
    ops = Counter(o for (o, *_x) in app_ops(w, [OP_SEND, OP_RECV, OP_ISEND, OP_IRECV])[0])
    assert ops[OP_RECV] == int(cc["Recv"]) and ops[OP_ISEND] == int(cc["Isend"])
    assert ops[OP_SEND] == int(cc["Send"]) and ops[OP_IRECV] == int(cc["Irecv"])


# ------------------------------------------------------------------------ liballprof
@pytest.mark.parametrize("rel", [SPHOT, PMPI])
def test_liballprof_counts(real_dir, rel):
    files = sorted(p for p in (real_dir / rel).iterdir() if re.search(r"\d\.(dat|txt)$", p.name))
    w = LiballprofReader.read(real_dir / rel)
    assert w.nranks == len(files)
    text = [f.read_text() for f in files]
    nsend = sum(len(re.findall(r"^MPI_(Send|Isend):", t, re.M)) for t in text)
    nrecv = sum(len(re.findall(r"^MPI_(Recv|Irecv):", t, re.M)) for t in text)
    ncoll = sum(len(re.findall(r"^MPI_(Barrier|Bcast|Reduce|Allreduce):", t, re.M))
                for t in text)
    nwait = sum(int(x) for t in text for x in re.findall(r"^MPI_Waitall:[^:]+:(\d+):", t, re.M))
    assert n_app(w, SEND_OPS) == nsend and n_app(w, RECV_OPS) == nrecv
    assert w.meta["collective_calls"] == ncoll
    assert int(((w.op == OP_WAIT) & (w.req >= 0)).sum()) == nwait
    assert w.meta["unmapped_messages"] == 0
    check_channels(w)


# ------------------------------------------------------------------------ registry, sniff
def test_registered_and_sniffed(real_dir):
    for name in ("otf2", "paraver", "dumpi", "dumpi-ascii", "liballprof"):
        assert name in READERS
    assert Otf2Reader.sniff(real_dir / "pipit/ping-pong-otf2")
    assert DumpiReader.sniff(real_dir / TT_META)
    assert DumpiReader.sniff(real_dir / "sst-dumpi/testtrace-0002.bin")
    assert LiballprofReader.sniff(real_dir / SPHOT)
    assert not DumpiReader.sniff(real_dir / QSORT)
    assert not ParaverReader.sniff(real_dir / TT_META)
    # the large traces last (only in the shared folder: a clone skips from here)
    assert ParaverReader.sniff(real_dir / EPOCH.format(2))
    assert DumpiAsciiReader.sniff(real_dir / BGP_ASCII)


# ------------------------------------------------------------------------ bad input
def _copy(real_dir, rel, tmp_path):
    src = real_dir / rel
    if src.is_dir():
        dst = tmp_path / src.name
        shutil.copytree(src, dst)
    else:
        dst = tmp_path / src.name
        shutil.copy(src, dst)
    return dst


def test_paraver_corrupt_record_names_line(real_dir, tmp_path):
    lines = (real_dir / QSORT).read_text().splitlines(True)
    k = next(i for i, ln in enumerate(lines) if ln.startswith("3:"))
    lines[k] = lines[k].replace(":32:", ":x2:", 1)
    bad = tmp_path / "bad.prv"
    bad.write_text("".join(lines))
    with pytest.raises(CcmodInputError) as ei:
        ParaverReader.read(bad)
    assert str(bad) in str(ei.value) and f":{k + 1}:" in str(ei.value)


def test_paraver_truncated_gzip(real_dir, tmp_path):
    data = (real_dir / EPOCH.format(1)).read_bytes()
    bad = tmp_path / "cut.prv.gz"
    bad.write_bytes(data[: len(data) // 2])
    with pytest.raises(CcmodInputError, match="cut.prv.gz"):
        ParaverReader.read(bad)


def test_dumpi_truncated_and_corrupt(real_dir, tmp_path):
    d = _copy(real_dir, "sst-macro/dumpi_testbgp", tmp_path)
    f = d / "testbgp-0003.bin"
    data = f.read_bytes()
    f.write_bytes(data[: len(data) - 100])
    with pytest.raises(CcmodInputError, match="testbgp-0003.bin"):
        DumpiReader.read(d / "testbgp.meta")
    body = 8 + 8              # first record label right after the time biases
    f.write_bytes(data[:body] + b"\xff\x00" + data[body + 2:])
    with pytest.raises(CcmodInputError, match=r"testbgp-0003.bin:1\b"):
        DumpiReader.read(d / "testbgp.meta")
    (d / "testbgp-0003.bin").unlink()
    with pytest.raises(CcmodInputError, match="missing"):
        DumpiReader.read(d / "testbgp.meta")


def test_dumpi_ascii_truncated(real_dir, tmp_path):
    d = _copy(real_dir, TT_ASCII, tmp_path)
    f = d / "testtrace-0001.txt"
    lines = f.read_text().splitlines(True)
    k = next(i for i, ln in enumerate(lines) if "MPI_Recv entering" in ln)
    f.write_text("".join(lines[: k + 2]))
    with pytest.raises(CcmodInputError) as ei:
        DumpiAsciiReader.read(d)
    assert "testtrace-0001.txt" in str(ei.value) and f":{k + 1}" in str(ei.value)


def test_liballprof_corrupt_line(real_dir, tmp_path):
    d = _copy(real_dir, PMPI, tmp_path)
    f = d / "pmpi-trace-rank-2.txt"
    lines = f.read_text().splitlines(True)
    k = next(i for i, ln in enumerate(lines) if ln.startswith("MPI_Isend"))
    lines[k] = lines[k].replace(":1,4,4:", ":1,4:")
    f.write_text("".join(lines))
    with pytest.raises(CcmodInputError) as ei:
        LiballprofReader.read(d)
    assert f"pmpi-trace-rank-2.txt:{k + 1}" in str(ei.value)


def test_otf2_truncated(real_dir, tmp_path):
    d = _copy(real_dir, "pipit/ping-pong-otf2", tmp_path)
    evt = d / "traces" / "1.evt"
    data = evt.read_bytes()
    evt.write_bytes(data[: len(data) // 2])
    with pytest.raises(CcmodInputError, match="traces.otf2"):
        Otf2Reader.read(d / "traces.otf2")


_FUZZ = settings(max_examples=examples(25), deadline=None,
                 suppress_health_check=[HealthCheck.function_scoped_fixture])


@_FUZZ
@given(data=st.binary(max_size=600), kind=st.sampled_from(
    ["x.prv", "x-0000.bin", "x-0000.txt", "x-rank-0.dat", "traces.otf2"]))
def test_random_bytes_only_input_errors(tmp_path, data, kind):
    reader = {"x.prv": ParaverReader, "x-0000.bin": DumpiReader,
              "x-0000.txt": DumpiAsciiReader, "x-rank-0.dat": LiballprofReader,
              "traces.otf2": Otf2Reader}[kind]
    p = tmp_path / kind
    p.write_bytes(data)
    try:
        reader.read(p)
    except CcmodInputError:
        pass


@_FUZZ
@given(pos=st.integers(0, 10_000), val=st.integers(0, 255),
       cut=st.integers(0, 10_000))
@example(pos=340, val=0, cut=0)    # rank 1's allreduce count zeroed: members disagree
def test_mutated_dumpi_only_input_errors(real_dir, tmp_path, pos, val, cut):
    d = tmp_path / f"m{pos}_{val}_{cut}"
    d.mkdir(exist_ok=True)        # hypothesis may draw the same example twice
    for r in range(4):
        shutil.copy(real_dir / f"sst-dumpi/testtrace-{r:04d}.bin", d)
    f = d / "testtrace-0001.bin"
    b = bytearray(f.read_bytes())
    b[pos % len(b)] = val
    f.write_bytes(bytes(b[: len(b) - cut % 64]))
    try:
        check_channels(DumpiReader.read(d / "testtrace-0000.bin"))
    except CcmodInputError:
        pass


@_FUZZ
@given(text=st.text(alphabet="0123456789:,-#.\n cP", max_size=400))
def test_mutated_paraver_text_only_input_errors(tmp_path, text):
    p = tmp_path / "t.prv"
    p.write_text("#Paraver (01/01/20 at 10:00):1000_ns:1(2):1:2(1:1,1:1),0\n" + text)
    try:
        check_channels(ParaverReader.read(p))
    except CcmodInputError:
        pass


# ------------------------------------------------------------------------ synthetic DUMPI
def _dump(calls):
    """dumpi2ascii text for a list of (name, {arg: value}) calls, 1 µs apart."""
    out, t = [], 1.0
    for name, args in calls:
        out.append(f"MPI_{name} entering at walltime {t:.9f}, cputime {t:.9f} seconds in "
                   "thread 0.")
        for k, v in args.items():
            if isinstance(v, list):
                out.append(f"int {k}[{len(v)}]=[{', '.join(map(str, v))}]")
            else:
                out.append(f"int {k}={v}")
        t += 1e-6
        out.append(f"MPI_{name} returning at walltime {t:.9f}, cputime {t:.9f} seconds in "
                   "thread 0.")
        t += 1e-6
    return "\n".join(out) + "\n"


def test_dumpi_subcommunicators_and_wildcards(tmp_path):
    """Hand-derived: split by parity (keys reverse the order), a reversed Comm_create group,
    and an ANY_SOURCE receive."""
    INT = 9
    for r in range(4):
        calls = [("Comm_split", dict(oldcomm=2, color=r % 2, key=-r, newcomm=5)),
                 ("Comm_group", dict(comm=2, group=3)),
                 ("Group_incl", dict(group=3, count=4, ranks=[3, 2, 1, 0], newgroup=4)),
                 ("Comm_create", dict(oldcomm=2, group=4, newcomm=6))]
        local5 = 1 - r // 2          # key=-r: the higher world rank is local 0
        if local5 == 0:
            calls.append(("Send", dict(count=2, datatype=INT, dest=1, tag=7, comm=5)))
        else:
            calls.append(("Recv", dict(count=2, datatype=INT, source=0, tag=7, comm=5)))
        calls.append(("Bcast", dict(count=3, datatype=INT, root=1, comm=5)))
        local6 = 3 - r
        if local6 == 0:              # world 3 receives from anyone on comm 6
            calls += [("Recv", dict(count=1, datatype=INT, source=-1, tag=-1, comm=6)),
                      ("Recv", dict(count=1, datatype=INT, source=-1, tag=-1, comm=6))]
        elif local6 in (1, 2):       # worlds 2 and 1 send to local 0 = world 3
            calls.append(("Send", dict(count=1, datatype=INT, dest=0, tag=local6, comm=6)))
        (tmp_path / f"syn-{r:04d}.txt").write_text(_dump(calls))
    w = DumpiAsciiReader.read(tmp_path)
    ops = app_ops(w, [OP_SEND, OP_RECV])
    assert ops[2] == [(OP_SEND, 0, 7, 8), (OP_SEND, 3, 1, 4)]
    assert ops[0] == [(OP_RECV, 2, 7, 8)]
    assert ops[3][0] == (OP_SEND, 1, 7, 8)
    assert sorted(ops[3][1:]) == [(OP_RECV, 1, 2, 4), (OP_RECV, 2, 1, 4)]
    assert w.meta["wildcard_receives_resolved"] == 2
    assert w.meta["collective_calls"] == 4 and w.meta["unmapped_messages"] == 0
    # the bcast on {2, 0} (local root 1 = world 0) and on {3, 1} (root = world 1)
    coll = [(r, int(w.peer[i])) for r in range(4)
            for i in range(w.rank_ptr[r], w.rank_ptr[r + 1])
            if w.op[i] in SEND_OPS and w.tag[i] < 0]
    assert sorted(coll) == [(0, 2), (1, 3)]
    check_channels(w)


def test_unmapped_message_counted_and_dropped(tmp_path):
    """A send on a communicator that was never created cannot be mapped: it is counted,
    its receive is dropped too, and the rest of the trace is kept."""
    INT = 9
    r0 = [("Send", dict(count=1, datatype=INT, dest=1, tag=5, comm=9)),       # unknown comm
          ("Send", dict(count=1, datatype=INT, dest=1, tag=6, comm=2))]
    r1 = [("Recv", dict(count=1, datatype=INT, source=0, tag=5, comm=2)),
          ("Recv", dict(count=1, datatype=INT, source=0, tag=6, comm=2))]
    (tmp_path / "u-0000.txt").write_text(_dump(r0))
    (tmp_path / "u-0001.txt").write_text(_dump(r1))
    w = DumpiAsciiReader.read(tmp_path)
    assert w.meta["unmapped_messages"] == 1
    assert w.meta["unmapped_sends"] == 1 and w.meta["unmatched_recvs"] == 1
    assert app_ops(w, [OP_SEND, OP_RECV]) == [[(OP_SEND, 1, 6, 4)], [(OP_RECV, 0, 6, 4)]]
    assert any("could not be mapped" in n for n in w.meta["notes"])
    check_channels(w)
