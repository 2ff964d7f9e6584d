"""Third-party plugins arrive through entry points and work like built-in ones."""
import numpy as np
import pytest

from ccmod.errors import CcmodInputError
from ccmod.registry import Registry
from ccmod.netsys.base import Param
from ccmod.netsys.topologies import BuiltNetwork


class Ring(BuiltNetwork):
    """A unidirectional ring (a third party's network)."""

    name = "ring3p"
    description = "unidirectional ring: node i -> i+1 -> ... (test plugin)"
    params = {"nodes": Param(int, None, "number of nodes"),
              "bandwidth": Param(float, 1e9, "bytes/s per link"),
              "latency": Param(float, 1e-6, "s per link")}

    def build(self):
        n = self.size_nodes()
        self.nnodes = n
        self.link_names = [f"ring{i}" for i in range(n)]
        self.capacity_Bps = np.full((n, 2), self.values["bandwidth"])
        self.latency_s = np.full((n, 2), self.values["latency"])

    def route(self, src, dst):
        hops, i = [], src
        while i != dst:
            hops.append((i, 0))
            i = (i + 1) % self.nnodes
        return hops


def fake_entry_points(group_name, *eps):
    """``importlib.metadata.entry_points`` with ``eps`` in ``group_name``; every other
    group (e.g. numba's extensions, which numba looks up at its first compile) is real."""
    from importlib import metadata
    real = metadata.entry_points

    def entry_points(group=None, **kw):
        if group == group_name:
            return list(eps)
        return real(group=group, **kw) if group is not None else real(**kw)
    return entry_points


class FakeEntryPoint:
    def __init__(self, name, obj):
        self.name, self._obj = name, obj

    def load(self):
        return self._obj


@pytest.fixture
def with_plugin(monkeypatch):
    import ccmod.registry as reg
    from ccmod.netsys.registry import NETWORKS

    monkeypatch.setattr(reg.metadata, "entry_points",
                        fake_entry_points("ccmod.networks", FakeEntryPoint("ring3p", Ring)))
    monkeypatch.setattr(NETWORKS, "_loaded_eps", False)
    yield
    NETWORKS._entries.pop("ring3p", None)


def test_entry_point_network_is_listed_and_runs(with_plugin):
    from ccmod.api import run
    from ccmod.netsys.networks import list_networks
    from ccmod.workloads.base import WorkloadBuilder
    assert "ring3p" in set(list_networks()["name"])
    b = WorkloadBuilder(4)
    b.send(0, 3, 1000)
    b.recv(3, 0, 1000)
    r = run(b.build(), "ring3p:bandwidth=1e6")
    # three hops of 1 us each, bytes at the bottleneck
    assert r.makespan_s == pytest.approx(3e-6 + 1000 / 1e6)
    assert r.messages.hops.iloc[0] == 3


def test_unknown_name_lists_valid_ones():
    r = Registry("thing")
    r.add("alpha", object, "first")
    with pytest.raises(CcmodInputError, match="valid: alpha"):
        r.get("beta")


def test_broken_plugin_is_reported_not_fatal(monkeypatch):
    import ccmod.registry as reg

    class Bad:
        name = "bad"

        def load(self):
            raise ImportError("missing dependency foo")

    monkeypatch.setattr(reg.metadata, "entry_points", fake_entry_points("ccmod.things", Bad()))
    r = Registry("thing", "ccmod.things")
    assert "bad" in r.names()
    with pytest.raises(CcmodInputError, match="failed to load"):
        r.get("bad").factory()


def test_plugin_with_a_builtin_name_is_reported_not_dropped(monkeypatch):
    import ccmod.registry as reg
    from ccmod.netsys.registry import NETWORKS

    class Impostor(Ring):
        name = "star"

    monkeypatch.setattr(reg.metadata, "entry_points",
                        fake_entry_points("ccmod.networks", FakeEntryPoint("star", Impostor)))
    monkeypatch.setattr(NETWORKS, "_loaded_eps", False)
    monkeypatch.setattr(NETWORKS, "shadowed", [])
    with pytest.warns(reg.PluginWarning, match="'star'.*ignored: a built-in network"):
        assert "star" in NETWORKS.names()
    assert NETWORKS.get("star").factory is not Impostor          # the built-in stays
    rows = [r for r in NETWORKS.listing() if r["name"] == "star"]
    assert len(rows) == 2 and "ignored" in rows[1]["description"]


def test_one_spec_parser_and_converter_for_every_family():
    from ccmod.outputs.registry import SINKS
    from ccmod.registry import Param, convert_value, parse_spec
    from ccmod.sharing import SHARING_RULES
    from ccmod.workloads.registry import GENERATORS, READERS
    assert parse_spec("halo2d: px=4 ,py=2") == ("halo2d", {"px": "4", "py": "2"})
    p = Param(int, 1, "how many")
    assert convert_value("1e3", p, key="n", plugin="x") == 1000
    assert convert_value("1_000", p, key="n", plugin="x") == 1000
    with pytest.raises(CcmodInputError, match=r"'n=2.5' of plugin 'x' is not a valid int"):
        convert_value("2.5", p, key="n", plugin="x")
    assert convert_value("yes", Param(bool, False), key="b", plugin="x") is True
    # every family lists the same row shape and fails the same way on unknown names
    for reg_ in (NETWORKS_(), READERS, GENERATORS, SINKS, SHARING_RULES):
        rows = reg_.listing()
        assert rows and all({"name", "description", "params", "origin"} <= set(r) for r in rows)
        with pytest.raises(CcmodInputError, match=f"unknown {reg_.kind} 'nope'.*valid: "):
            reg_.get("nope")
    # typed parameters from a signature (generators) and from a declaration (networks)
    assert GENERATORS.resolve("ring:nranks=1e1")[1] == {"nranks": 10}
    assert NETWORKS_().resolve("star:bandwidth=1e9")[1] == {"bandwidth": 1e9}
    assert READERS.params_of("ti")["syntax"].default == "auto"


def NETWORKS_():
    from ccmod.netsys.registry import NETWORKS
    return NETWORKS


def test_every_builtin_registration_is_in_its_registrys_lazy_list():
    # a module registering built-ins must be listed in its registry's `builtins`, or its
    # plugins would only appear after something else happened to import it
    import re
    from pathlib import Path

    from ccmod.outputs.registry import SINKS
    from ccmod.workloads.registry import GENERATORS, READERS
    root = Path(__file__).resolve().parent.parent
    registries = {"NETWORKS": NETWORKS_(), "READERS": READERS, "GENERATORS": GENERATORS,
                  "SINKS": SINKS}
    rooms = {"netsys": "ccmod.netsys", "workloads": "ccmod.workloads", "outputs": "ccmod.outputs"}
    missing, seen = [], set()
    for folder, pkg in rooms.items():
        for path in (root / folder).glob("*.py"):
            for name in set(re.findall(r"^@(\w+)\.register\(", path.read_text(), re.M)):
                if name in registries:
                    mod = f"{pkg}.{path.stem}"
                    seen.add(name)
                    if mod not in registries[name].builtins:
                        missing.append(f"{mod} registers in {name}")
    assert not missing, missing
    assert seen == set(registries)
