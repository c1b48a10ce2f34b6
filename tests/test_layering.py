"""The package layering holds: no import cycles, and the import-linter contracts are kept.

Two independent checks. The first reads every module of ``src/gatebench``
with :mod:`ast` and fails on any import cycle between them, so it works
without import-linter installed. The second runs ``lint-imports`` on the
contracts in ``pyproject.toml`` (the layer order, and no cycles between the
modules of any package), and skips with its reason when import-linter is
missing.

Both count every import that can run, at module level or inside a function;
imports under ``if TYPE_CHECKING:`` are left out, as in the import-linter
configuration (``exclude_type_checking_imports``): they never execute, so
they cannot make a cycle at import time.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PACKAGE = "gatebench"

Graph = Mapping[str, set[str]]


def module_files(src: Path, package: str) -> dict[str, Path]:
    """Every module of ``package`` under ``src``, by dotted name (packages by their name)."""
    out = {}
    for path in sorted((src / package).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _import_nodes(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Import statements that can run: everywhere except the body of ``if TYPE_CHECKING:``."""
    if isinstance(node, ast.Import | ast.ImportFrom):
        yield node
        return
    if isinstance(node, ast.If) and _is_type_checking(node.test):
        children: list[ast.AST] = list(node.orelse)
    else:
        children = list(ast.iter_child_nodes(node))
    for child in children:
        yield from _import_nodes(child)


def _owner(name: str, modules: Mapping[str, Path]) -> str | None:
    """The module that ``name`` (a module or an attribute of one) is loaded from."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(name: str, path: Path, modules: Mapping[str, Path]) -> set[str]:
    """The modules of ``modules`` that module ``name`` (file ``path``) imports."""
    is_package = path.name == "__init__.py"
    found = set()
    for node in _import_nodes(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:
                # A package's own __init__ is level 1's anchor; a module's parent is.
                anchor = name.split(".")[: None if is_package else -1]
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            # `from pkg import sub` imports the submodule when there is one.
            targets = [f"{base}.{alias.name}" for alias in node.names]
        for target in targets:
            owner = _owner(target, modules)
            if owner is not None and owner != name:
                found.add(owner)
    return found


def import_graph(src: Path = SRC, package: str = PACKAGE) -> dict[str, set[str]]:
    """Module -> the package's modules it imports."""
    modules = module_files(src, package)
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def find_cycles(graph: Graph) -> list[list[str]]:
    """The import cycles of ``graph``: its strongly connected components of two or more.

    Tarjan's algorithm, iterative so that a deep package cannot hit the
    recursion limit. Each component is sorted; components come in sorted order.
    """
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for nxt in successors:
                if nxt not in graph:
                    continue
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        cycles.append(sorted(component))
    return sorted(cycles)


def _describe(cycles: list[list[str]], graph: Graph) -> str:
    lines = []
    for members in cycles:
        edges = [f"{a} -> {b}" for a in members for b in sorted(graph[a]) if b in members]
        lines.append(f"cycle among {', '.join(members)}: " + "; ".join(edges))
    return "\n".join(lines)


# -- the real package -------------------------------------------------------------------


def test_gatebench_has_no_import_cycles() -> None:
    graph = import_graph()
    assert "gatebench.api" in graph and len(graph) > 100, "the scan found too few modules"
    cycles = find_cycles(graph)
    assert not cycles, (
        "import cycles between gatebench modules (move the shared piece to a lower "
        "module instead of importing inside a function):\n" + _describe(cycles, graph)
    )


# -- the checker fails on a cycle -------------------------------------------------------


def test_find_cycles_on_a_synthetic_graph() -> None:
    acyclic = {"a": {"b", "c"}, "b": {"c"}, "c": set(), "d": {"a"}}
    assert find_cycles(acyclic) == []
    cyclic = {**acyclic, "c": {"d"}, "e": {"f"}, "f": {"e"}, "g": {"outside"}}
    assert find_cycles(cyclic) == [["a", "b", "c", "d"], ["e", "f"]]


def test_scan_finds_a_lazy_cycle_in_a_synthetic_package(tmp_path: Path) -> None:
    pkg = tmp_path / "toy"
    (pkg / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "low.py": "def f():\n    from toy.sub import high\n    return high\n",
        "sub/__init__.py": "from .high import g\n",
        "sub/high.py": "from toy import low\n",
        "typed.py": (
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from toy.other import X\n"
            "else:\n    import toy.low\n"
        ),
        "other.py": "import toy.typed\nX = 1\n",
    }
    for name, text in files.items():
        (pkg / name).write_text(text, encoding="utf-8")
    graph = import_graph(tmp_path, "toy")
    assert graph["toy.sub"] == {"toy.sub.high"}  # relative import resolved
    assert graph["toy.typed"] == {"toy.low"}  # the TYPE_CHECKING branch is skipped
    assert find_cycles(graph) == [["toy.low", "toy.sub.high"]]


# -- import-linter ----------------------------------------------------------------------


def _lint_imports() -> str:
    pytest.importorskip(
        "importlinter", reason="import-linter is not installed (pip install -e '.[dev]')"
    )
    exe = Path(sys.executable).with_name("lint-imports")
    found = str(exe) if exe.is_file() else shutil.which("lint-imports")
    if found is None:
        pytest.skip("import-linter is installed but its lint-imports command is not on PATH")
    return found


def _run(exe: str, config: Path, cwd: Path, env: Mapping[str, str] | None = None) -> str:
    done = subprocess.run(
        [exe, "--no-logo", "--no-cache", str(config)],
        cwd=cwd,
        env=None if env is None else {**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return f"exit {done.returncode}\n{done.stdout}{done.stderr}"


def test_import_linter_contracts_are_kept() -> None:
    out = _run(_lint_imports(), ROOT / "pyproject.toml", ROOT)
    assert out.startswith("exit 0\n"), out
    assert "gatebench layers: each imports only the layers below it KEPT" in out, out
    assert "no import cycles between the modules of any gatebench package KEPT" in out, out


def test_import_linter_contracts_fail_on_a_synthetic_violation(tmp_path: Path) -> None:
    exe = _lint_imports()
    pkg = tmp_path / "toy"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "top.py").write_text("import toy.base\n", encoding="utf-8")
    # base reaches up to top (inside a function), and base <-> util form a cycle.
    (pkg / "base.py").write_text(
        "import toy.util\ndef f():\n    import toy.top\n", encoding="utf-8"
    )
    (pkg / "util.py").write_text("import toy.base\n", encoding="utf-8")
    config = tmp_path / "contracts.toml"
    config.write_text(
        '[tool.importlinter]\nroot_package = "toy"\n\n'
        '[[tool.importlinter.contracts]]\nname = "toy layers"\ntype = "layers"\n'
        'containers = ["toy"]\nlayers = ["top", "base : util"]\n\n'
        '[[tool.importlinter.contracts]]\nname = "toy acyclic"\n'
        'type = "acyclic_siblings"\nancestors = ["toy"]\n',
        encoding="utf-8",
    )
    out = _run(exe, config, tmp_path, {"PYTHONPATH": str(tmp_path)})
    assert not out.startswith("exit 0\n"), out
    assert "toy layers BROKEN" in out and "toy acyclic BROKEN" in out, out
