"""The package's layout: data flows one way, no import cycles, no module over 500 lines.

The import graph is read from the source (``ast``), with every import counted, those
inside functions included; only imports under ``if TYPE_CHECKING:`` are left out, since
they never run. ``from netsim.pkg import name`` is an edge to ``netsim.pkg.name`` when
that is a module, else to the package ``netsim.pkg`` itself.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "netsim"

# Bottom to top: a module may import from its own layer and the layers before it, never after.
LAYERS = [
    {"netsim.version", "netsim.columnar", "netsim.destinations", "netsim.network"},
    {"netsim.semantics"},
    {"netsim.algorithms"},
    {"netsim.engine"},
    {"netsim.checks"},
    {"netsim.analysis"},
    {"netsim.result"},
    {"netsim.scenario"},
    {"netsim.pipeline", "netsim.outputs", "netsim.collectives", "netsim.mlx", "netsim.programs", "netsim.hlo"},
    {"netsim.studies"},
    {"netsim.teaching"},
    {"netsim.cli"},
    {"netsim", "netsim.__main__", "netsim.moved"},
]


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The netsim modules ``name`` imports at run time."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.split(".")[0] == "netsim")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] == "netsim":
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    found.add(sub if sub in known else target)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(), str(path)))
    found.discard(name)
    return found


def import_graph() -> nx.DiGraph:
    known = modules()
    graph = nx.DiGraph()
    for name, path in known.items():
        graph.add_node(name)
        for target in imports_of(name, path, set(known)):
            graph.add_edge(name, target)
    return graph


def layer(name: str) -> int:
    best = None
    for rank, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (name == prefix or name.startswith(prefix + ".")) and (best is None or len(prefix) > best[1]):
                best = (rank, len(prefix))
    if best is None:
        raise AssertionError(f"module {name} belongs to no layer: add its package to LAYERS in {Path(__file__).name}")
    return best[0]


def test_the_checker_sees_a_cycle_and_a_lazy_import(tmp_path):
    known = {"netsim.a", "netsim.b"}
    a = tmp_path / "a.py"
    a.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from netsim.b import B\ndef f():\n    from netsim import b\n")
    assert imports_of("netsim.a", a, known) == {"netsim.b"}
    graph = nx.DiGraph([("netsim.a", "netsim.b"), ("netsim.b", "netsim.a")])
    assert [sorted(c) for c in nx.simple_cycles(graph)] == [["netsim.a", "netsim.b"]]


def test_no_import_cycles():
    cycles = sorted(nx.simple_cycles(import_graph()), key=len)
    assert not cycles, "import cycles: " + "; ".join(" -> ".join([*c, c[0]]) for c in cycles[:5])


def test_data_flows_one_way():
    wrong = [f"{a} (layer {layer(a)}) imports {b} (layer {layer(b)})" for a, b in import_graph().edges if layer(b) > layer(a)]
    assert not wrong, "imports back up the data's way:\n" + "\n".join(sorted(wrong))


@pytest.mark.parametrize("name", sorted(modules()))
def test_module_is_at_most_500_lines(name):
    lines = modules()[name].read_text().count("\n")
    assert lines <= 500, f"{modules()[name].relative_to(PACKAGE.parent)} has {lines} lines: split it by subject"
