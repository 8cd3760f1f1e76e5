"""The package's layout, as docs/architecture.md states it: data flows one way, and the seams are public.

The layers are read from the table "The layers" in docs/architecture.md, so the page
and the code cannot drift apart. The import graph is read from the source (``ast``),
with every import counted, those inside functions and ``importlib.import_module`` of a
written-out name included; only imports under ``if TYPE_CHECKING:`` are left out, since
they never run. ``from netsim.pkg import
name`` is an edge to ``netsim.pkg.name`` when that is a module, else to the package
``netsim.pkg`` itself.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "netsim"
ARCHITECTURE = ROOT / "docs" / "architecture.md"


def read_layers(text: str) -> list[list[tuple[str, bool]]]:
    """The table of section "The layers", bottom to top: each row's (module name, is a package) entries."""
    if "\n## The layers\n" not in text:
        raise AssertionError(f"{ARCHITECTURE.relative_to(ROOT)} has no section '## The layers'")
    section = text.split("\n## The layers\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")][2:]  # after the header and its rule
    layers = []
    for row in rows:
        entries = []
        for path in re.findall(r"`([^`]+)`", row.split("|")[1]):
            package = path.endswith("/")
            parts = path.rstrip("/").removesuffix(".py").split("/")
            entries.append((".".join(parts[:-1] if parts[-1] == "__init__" else parts), package))
        layers.append(entries)
    return layers


LAYERS = read_layers(ARCHITECTURE.read_text(encoding="utf-8"))


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def package_of(name: str) -> str:
    """The package a module belongs to for private names: ``netsim.engine`` for ``netsim.engine.fast``; a top-level module is its own."""
    return ".".join(name.split(".")[:2])


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def imported_names(name: str, path: Path, known: set[str]) -> list[tuple[str, str | None, str | None]]:
    """What ``name`` imports at run time from netsim: (module, name taken from it or None, local name bound to a module or None)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[str, str | None, str | None]] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "netsim":
                    found.append((alias.name, None, alias.asname))
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module":
            named = node.args[0] if node.args else None
            if isinstance(named, ast.Constant) and isinstance(named.value, str) and named.value.split(".")[0] == "netsim":
                found.append((named.value, None, None))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] == "netsim":
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    if sub in known:
                        found.append((sub, None, alias.asname or alias.name))
                    else:
                        found.append((target, alias.name, None))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(), str(path)))
    return found


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The netsim modules ``name`` imports at run time."""
    return {module for module, _, _ in imported_names(name, path, known)} - {name}


def private_imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The private names ``name`` takes from another package: ``netsim.pkg.module._name`` (imported, or read off an imported module)."""
    found = set()
    bound: dict[str, str] = {}
    for module, taken, local in imported_names(name, path, known):
        if package_of(module) == package_of(name):
            continue
        if any(_is_private(part) for part in module.split(".")) or (taken is not None and _is_private(taken)):
            found.add(f"{module}.{taken}" if taken is not None else module)
        if local is not None:
            bound[local] = module
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound and _is_private(node.attr):
            found.add(f"{bound[node.value.id]}.{node.attr}")
    return found


def import_hooks(path: Path) -> list[str]:
    """What in a module hooks into Python's import system (finders, loaders, aliased module paths)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Attribute) and node.attr in ("meta_path", "path_hooks", "path_importer_cache"):
            found.append(f"line {node.lineno}: sys.{node.attr}")
        elif isinstance(node, ast.ImportFrom) and node.module in ("importlib.abc", "importlib.machinery"):
            found.append(f"line {node.lineno}: from {node.module} import ...")
        elif isinstance(node, ast.Attribute) and node.attr in ("MetaPathFinder", "PathEntryFinder", "Loader", "spec_from_loader"):
            found.append(f"line {node.lineno}: {node.attr}")
        elif isinstance(node, (ast.Assign, ast.AugAssign)) and not (isinstance(node.value, ast.Constant) and node.value.value is None):
            # (sys.modules[name] = None makes an import fail for a while, as netsim.engine.jit does SciPy's: it aliases nothing)
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Attribute) and target.value.attr == "modules":
                    found.append(f"line {node.lineno}: sys.modules[...] = (a module path aliased)")
    return sorted(found, key=lambda line: int(line.split(":")[0].split()[1]))


def import_graph() -> nx.DiGraph:
    known = modules()
    graph = nx.DiGraph()
    for name, path in known.items():
        graph.add_node(name)
        for target in imports_of(name, path, set(known)):
            graph.add_edge(name, target)
    return graph


def layer(name: str) -> int:
    """The row of docs/architecture.md's table a module belongs to (0 at the bottom)."""
    best = None
    for rank, entries in enumerate(LAYERS):
        for prefix, package in entries:
            if (name == prefix or (package and name.startswith(prefix + "."))) and (best is None or len(prefix) > best[1]):
                best = (rank, len(prefix))
    if best is None:
        raise AssertionError(f"module {name} belongs to no layer: add it to the table of {ARCHITECTURE.relative_to(ROOT)}")
    return best[0]


def test_the_checker_sees_a_cycle_and_a_lazy_import(tmp_path):
    known = {"netsim.a", "netsim.b"}
    a = tmp_path / "a.py"
    a.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from netsim.b import B\ndef f():\n    from netsim import b\n")
    assert imports_of("netsim.a", a, known) == {"netsim.b"}
    a.write_text("import importlib\ndef f():\n    return importlib.import_module('netsim.b')\n")
    assert imports_of("netsim.a", a, known) == {"netsim.b"}
    graph = nx.DiGraph([("netsim.a", "netsim.b"), ("netsim.b", "netsim.a")])
    assert [sorted(c) for c in nx.simple_cycles(graph)] == [["netsim.a", "netsim.b"]]


def test_the_checker_sees_private_names_and_hooks(tmp_path):
    known = {"netsim.x.a", "netsim.x.b", "netsim.y.c", "netsim.y"}
    a = tmp_path / "a.py"
    a.write_text(
        "from netsim.x.b import _near\nfrom netsim.y.c import public, _far\nfrom netsim.y import c\n"
        "def f():\n    from netsim.y.c import _lazy\n    return c._read(public)\n"
    )
    assert private_imports("netsim.x.a", a, known) == {"netsim.y.c._far", "netsim.y.c._lazy", "netsim.y.c._read"}
    hook = tmp_path / "hook.py"
    hook.write_text(
        "import sys\nimport importlib.abc\nclass F(importlib.abc.MetaPathFinder): pass\nsys.meta_path.insert(0, F())\nsys.modules['netsim.old'] = sys\n"
    )
    assert [line.split(":")[0] for line in import_hooks(hook)] == ["line 3", "line 4", "line 5"]


def test_the_table_is_read_bottom_to_top():
    table = (
        "# Title\n\n## The layers\n\n| layer | holds |\n|---|---|\n"
        "| `netsim/a/`, `netsim/b.py` | x |\n| `netsim/__init__.py` | y |\n\n## Next\n| `netsim/c/` |\n"
    )
    assert read_layers(table) == [[("netsim.a", True), ("netsim.b", False)], [("netsim", False)]]
    names = [name for row in LAYERS for name, _ in row]
    order = ["netsim.network", "netsim.engine", "netsim.result", "netsim.analysis", "netsim.cli"]
    assert [names.index(name) for name in order] == sorted(names.index(name) for name in order)


def test_the_table_names_what_exists():
    missing = [name for row in LAYERS for name, package in row if not (PACKAGE.parent / name.replace(".", "/")).with_suffix("" if package else ".py").exists()]
    missing = [name for name in missing if not (name == "netsim" and PACKAGE.is_dir())]
    assert not missing, f"{ARCHITECTURE.relative_to(ROOT)} lists what does not exist: {', '.join(missing)}"


def test_every_module_has_a_layer():
    lost = []
    for name in modules():
        try:
            layer(name)
        except AssertionError:
            lost.append(name)
    assert not lost, f"modules in no row of the table of {ARCHITECTURE.relative_to(ROOT)}: {', '.join(lost)}"


def test_no_import_cycles():
    cycles = sorted(nx.simple_cycles(import_graph()), key=len)
    assert not cycles, "import cycles: " + "; ".join(" -> ".join([*c, c[0]]) for c in cycles[:5])


def test_data_flows_one_way():
    wrong = [f"{a} (layer {layer(a)}) imports {b} (layer {layer(b)})" for a, b in import_graph().edges if layer(b) > layer(a)]
    assert not wrong, "imports back up the data's way:\n" + "\n".join(sorted(wrong))


def test_no_private_name_crosses_a_package():
    known = modules()
    found = {(name, private) for name, path in known.items() for private in private_imports(name, path, set(known))}
    wrong = sorted(found)
    assert not wrong, "private names taken from another package (make the seam public and documented):\n" + "\n".join(f"{a} takes {b}" for a, b in wrong)


def test_no_import_hooks():
    hooks = {name: found for name, path in modules().items() if (found := import_hooks(path))}
    assert not hooks, "import hooks in netsim (a moved module gets a changelog entry instead): " + str(hooks)


@pytest.mark.parametrize("name", sorted(modules()))
def test_module_is_at_most_500_lines(name):
    lines = modules()[name].read_text().count("\n")
    assert lines <= 500, f"{modules()[name].relative_to(PACKAGE.parent)} has {lines} lines: split it by subject"
