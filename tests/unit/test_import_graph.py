"""The imports between the repository's top-level packages run one way, and no two files import each other.

Every ``import`` and ``from ... import`` of every Python file is read with ``ast`` (those under ``if TYPE_CHECKING:``
and inside functions too: a cycle there is still two files that need each other). The arrows allowed:

- ``exporter`` (the product) imports none of the others;
- ``harness`` (the test bench: clients, processes, ports, jars) imports neither broker package, nor the demo;
- ``kafka_double`` and ``real_kafka`` import the bench, never each other nor the demo;
- ``demo`` imports the bench and both broker packages;
- ``alerts`` (the rules' renderer, product tooling) imports nothing of the bench, the brokers or the demo;
- ``bench`` (benchmarks) imports the bench and the brokers, not the demo nor the tests;
- ``tests`` may import everything; nothing imports the tests but the tests;
- any other top-level package (tooling such as a docs generator) may import the product only.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SKIPPED = {".git", ".venv", ".tools", "node_modules", "__pycache__", "test-artifacts", "build", "dist"}
#: The top-level packages and what each may import besides itself and the standard library and dependencies.
ALLOWED: dict[str, set[str]] = {
    "exporter": set(),
    "alerts": set(),
    "harness": {"exporter"},
    "kafka_double": {"exporter", "harness"},
    "real_kafka": {"exporter", "harness"},
    "demo": {"exporter", "harness", "kafka_double", "real_kafka", "alerts"},
    "bench": {"exporter", "harness", "kafka_double", "real_kafka"},
}
#: Packages that may import every other (their own imports are not checked; nothing may import them).
IMPORTS_ALL = {"tests"}
#: What a top-level package not listed above may import.
OTHERS = {"exporter"}


def python_files(root: Path) -> Iterator[Path]:
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if not SKIPPED.intersection(relative.parts) and not any(part.endswith(".egg-info") for part in relative.parts):
            yield path


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported(root: Path, path: Path, modules: set[str]) -> set[str]:
    """The repository's modules ``path`` imports: ``from a.b import c`` is module ``a.b.c`` when that is a module of
    the repository, else ``a.b``; relative imports resolved from the file's package."""
    name = module_name(root, path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            for alias in node.names:
                found.add(f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source)
    return {module for module in found if module in modules and module != name}


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the repository's modules it imports."""
    files = {module_name(root, path): path for path in python_files(root)}
    modules = set(files)
    return {name: imported(root, path, modules) for name, path in files.items()}


def top(module: str) -> str:
    return module.split(".", 1)[0]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each strongly connected component of more than one node (Tarjan), as a path."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return components


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    packages: dict[str, set[str]] = {}
    for module, targets in graph.items():
        packages.setdefault(top(module), set()).update(top(t) for t in targets if top(t) != top(module))
    return packages


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph(ROOT)


def test_the_packages_of_the_arrows_are_read(graph: dict[str, set[str]]) -> None:
    packages = {top(module) for module in graph}
    assert {"exporter", "harness", "kafka_double", "real_kafka", "demo", "alerts", "bench", "tests"} <= packages
    assert any(top(t) == "harness" for t in graph["kafka_double.mbean_host"])


def test_the_packages_import_each_other_only_along_the_arrows(graph: dict[str, set[str]]) -> None:
    wrong = sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        for target in targets
        if top(target) != top(module)
        and top(module) not in IMPORTS_ALL
        and top(target) not in ALLOWED.get(top(module), OTHERS)
    )
    assert not wrong, "\n".join(wrong)


def test_the_packages_import_each_other_in_no_cycle(graph: dict[str, set[str]]) -> None:
    assert not cycles(package_graph(graph))


def test_no_files_import_each_other(graph: dict[str, set[str]]) -> None:
    assert not cycles(graph), cycles(graph)


def test_the_checks_see_a_cycle_and_a_wrong_arrow(tmp_path: Path) -> None:
    """The reading itself: a relative cycle inside a package and a harness module importing a broker package."""
    for package in ("harness", "kafka_double"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "kafka_double" / "specs.py").write_text("from .tls import ListenerTls\n")
    (tmp_path / "kafka_double" / "tls.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .specs import ListenerSpec\n"
    )
    (tmp_path / "harness" / "ports.py").write_text("def free_port():\n    from kafka_double import specs\n")
    found = import_graph(tmp_path)
    assert found["kafka_double.specs"] == {"kafka_double.tls"}
    assert found["kafka_double.tls"] == {"kafka_double.specs"}
    assert found["harness.ports"] == {"kafka_double.specs"}
    assert cycles(found) == [["kafka_double.specs", "kafka_double.tls"]]
    assert package_graph(found)["harness"] == {"kafka_double"}
