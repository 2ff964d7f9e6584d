"""The package's layering, checked on the source files (every import, also inside functions).

ccmod installs one package with four rooms: the core and front end in ``ccmod/`` and the
plugin rooms ``ccmod.netsys``, ``ccmod.workloads`` and ``ccmod.outputs``. The rules:

- the package facade (``ccmod/__init__.py``, lazy ``ccmod.run``) belongs to the front end;
- the core (errors, input guards, units, registry, options, codes, atomic writes, JSON, progress bar,
  sharing-rule names, numba start-up, the RunResult data type) imports nothing else of ccmod;
- the rooms import the core and each other, never the engine or the front end (API, CLI,
  sweep, analytic);
- the engine (compile, kernel, engine, handlers, collect, linkrate) never imports ``ccmod.outputs``
  nor the front end;
- the graph between these groups has no circle.
"""
import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROOMS = {"ccmod": "ccmod", "netsys": "ccmod.netsys", "workloads": "ccmod.workloads",
         "outputs": "ccmod.outputs"}
CORE = {"ccmod.errors", "ccmod.units", "ccmod.registry", "ccmod.options",
        "ccmod.codes", "ccmod.atomic", "ccmod.jsonio", "ccmod.progress", "ccmod.sharing",
        "ccmod.result", "ccmod.guard", "ccmod.jit"}
ENGINE = {"ccmod.compile", "ccmod.kernel", "ccmod.engine", "ccmod.handlers", "ccmod.collect",
          "ccmod.linkrate"}


@functools.lru_cache(maxsize=None)
def _trees():
    """((path, module name, import statements), ...) of every source file, parsed once.

    Only the ``import``/``from … import`` nodes are kept (from anywhere in the file, also
    inside functions): every check below reads those alone, and walking the whole trees
    once per check cost seconds of the default run.
    """
    out = []
    for folder, pkg in ROOMS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT / folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            tree = ast.parse(path.read_text(), str(path))
            out.append((path, ".".join([pkg, *parts]), tuple(_import_statements(tree))))
    return tuple(out)


def _import_statements(tree):
    """Every import statement of a module, at any depth of nested statements.

    Imports are statements, so only statement bodies are searched, not expressions.
    """
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            stack.extend(getattr(node, field, None) or ())


@functools.lru_cache(maxsize=None)
def _modules():
    """{module name: set of ccmod modules it imports}."""
    out = {}
    for path, name, nodes in _trees():
        imports = set()
        for node in nodes:
            if isinstance(node, ast.Import):
                imports |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                assert node.level == 0, f"{path}: relative import (use ccmod.…)"
                imports.add(node.module)
                # `from ccmod import api` imports the module ccmod.api
                imports |= {f"{node.module}.{a.name}" for a in node.names}
        out[name] = {i for i in imports if i and (i == "ccmod" or i.startswith("ccmod."))}
    return out


def _resolve(name: str, modules) -> str:
    """The module an imported name belongs to (``ccmod.errors.CcmodInputError`` → errors)."""
    while name not in modules and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def _group(mod: str) -> str:
    for room in ("netsys", "workloads", "outputs"):
        if mod == f"ccmod.{room}" or mod.startswith(f"ccmod.{room}."):
            return room
    if mod in CORE:
        return "core"
    if mod in ENGINE or mod.startswith("ccmod.kernel."):   # the kernel is a package
        return "engine"
    return "front"


def _edges():
    modules = _modules()
    edges = []
    for mod, imps in modules.items():
        for imp in imps:
            target = _resolve(imp, modules)
            if target != mod:
                edges.append((mod, target))
    return modules, edges


def test_no_old_top_level_imports():
    # every import is ccmod.…: the rooms are not top-level packages any more
    bad = []
    for path, _, nodes in _trees():
        for node in nodes:
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            bad += [f"{path.relative_to(ROOT)}: {n}" for n in names
                    if n.split(".")[0] in ("netsys", "workloads", "outputs")]
    assert not bad, bad


def test_core_imports_only_core():
    _, edges = _edges()
    bad = [f"{a} -> {b}" for a, b in edges if _group(a) == "core" and _group(b) != "core"]
    assert not bad, bad


def test_rooms_never_import_engine_or_front():
    _, edges = _edges()
    bad = [f"{a} -> {b}" for a, b in edges
           if _group(a) in ("netsys", "workloads", "outputs")
           and _group(b) in ("engine", "front")]
    assert not bad, bad


def test_engine_never_imports_outputs_or_front():
    _, edges = _edges()
    bad = [f"{a} -> {b}" for a, b in edges
           if _group(a) == "engine" and _group(b) in ("outputs", "front")]
    assert not bad, bad


def test_no_circle_between_groups():
    _, edges = _edges()
    graph: dict[str, set] = {}
    for a, b in edges:
        ga, gb = _group(a), _group(b)
        if ga != gb:
            graph.setdefault(ga, set()).add(gb)
    # depth-first search for a back edge
    state: dict[str, int] = {}

    def visit(node, path):
        state[node] = 1
        for nxt in graph.get(node, ()):
            if state.get(nxt) == 1:
                raise AssertionError("import circle: " + " -> ".join(path + [node, nxt]))
            if nxt not in state:
                visit(nxt, path + [node])
        state[node] = 2

    for node in list(graph):
        if node not in state:
            visit(node, [])
    assert graph  # the check saw the real graph, not an empty one


def test_the_checker_sees_known_edges():
    # guard against a checker that silently finds nothing
    modules, edges = _edges()
    assert ("ccmod.api", "ccmod.engine") in edges
    assert ("ccmod.engine", "ccmod.codes") in edges
    assert any(a.startswith("ccmod.workloads.") and b == "ccmod.errors" for a, b in edges)
    assert len(modules) > 80


def test_every_ccmod_import_names_an_existing_module():
    # catches imports of renamed modules inside functions, which only fail when called
    modules = set(_modules())
    bad = []
    for path, _, nodes in _trees():
        for node in nodes:
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            bad += [f"{path.relative_to(ROOT)}:{node.lineno}: {n}" for n in names
                    if n.startswith("ccmod") and n not in modules]
    assert not bad, bad


def test_no_importorskip_of_the_project():
    # the project's own modules are always there: a skip would hide a broken import
    bad = []
    for p in sorted((ROOT / "tests").glob("*.py")):
        text = p.read_text()
        if "importorskip" not in text:   # parsing every test file costs ~1 s
            continue
        for node in ast.walk(ast.parse(text)):
            if (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "importorskip"
                    and node.args and isinstance(node.args[0], ast.Constant)
                    and str(node.args[0].value).startswith("ccmod")):
                bad.append(f"{p.name}:{node.lineno}: {node.args[0].value}")
    assert not bad, bad
