"""The codec's modules import one another without a circle, function-local imports included (issue 20 §1).

The graph is read from the source with :mod:`ast` (every ``import`` statement, at module level or
inside a function), so an upward call hidden in a function body counts as an edge just as a
top-level import does. Doctest examples are strings, not statements, and do not count.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import fp8lab.codec

CODEC = Path(fp8lab.codec.__file__).parent
PACKAGE = "fp8lab.codec"


def _modules(folder: Path) -> dict[str, Path]:
    return {p.stem: p for p in sorted(folder.glob("*.py")) if p.stem != "__init__"}


def _targets(node: ast.AST, here: str, names: set[str]) -> set[str]:
    """The codec modules an import statement reaches (``from . import a, b``, ``from .a import f``, absolute forms)."""
    out: set[str] = set()
    if isinstance(node, ast.ImportFrom):
        if node.level == 1:
            base = node.module or ""
        elif node.level == 0 and node.module and node.module.startswith(PACKAGE):
            base = node.module[len(PACKAGE):].lstrip(".")
        else:
            return out  # another package (a parent-relative import leaves the codec)
        if base:
            out.add(base.split(".")[0])
        else:
            out |= {a.name for a in node.names if a.name in names}
    elif isinstance(node, ast.Import):
        for a in node.names:
            if a.name.startswith(PACKAGE + "."):
                out.add(a.name[len(PACKAGE) + 1:].split(".")[0])
    return {t for t in out if t in names and t != here}


def import_graph(folder: Path) -> dict[str, set[str]]:
    """Module -> the sibling modules it imports anywhere in its body."""
    mods = _modules(folder)
    names = set(mods)
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        graph[name] = set()
        for node in ast.walk(tree):
            graph[name] |= _targets(node, name, names)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle as a list of modules (first repeated at the end), or None when the graph is acyclic."""
    state: dict[str, int] = {}  # 1 on the stack, 2 done
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            found = visit(n)
            if found:
                return found
    return None


def test_the_cycle_finder_finds_circles_and_passes_acyclic_graphs() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"api": {"impl"}, "impl": {"lut"}, "lut": {"impl"}}) == ["impl", "lut", "impl"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_function_local_imports_are_edges(tmp_path: Path) -> None:
    (tmp_path / "api.py").write_text("from .impl import f\n")
    (tmp_path / "impl.py").write_text("def f():\n    from .api import g\n    return g\n")
    (tmp_path / "lut.py").write_text("def h():\n    from fp8lab.codec import impl\n")
    (tmp_path / "doc.py").write_text('"""\n>>> from fp8lab.codec.api import encode\n"""\nfrom ..formats import Format\n')
    g = import_graph(tmp_path)
    assert g == {"api": {"impl"}, "impl": {"api"}, "lut": {"impl"}, "doc": set()}
    assert find_cycle(g) == ["api", "impl", "api"]


def test_the_codec_import_graph_has_no_circle() -> None:
    g = import_graph(CODEC)
    assert {"api", "impl", "paths", "lut", "ckernels", "tables"} <= set(g)
    assert find_cycle(g) is None, f"import circle in fp8lab/codec: {' -> '.join(find_cycle(g))}"


@pytest.mark.parametrize("low", ["impl", "lut", "ckernels", "tables", "core"])
def test_the_lower_modules_never_reach_the_entry_points(low: str) -> None:
    g = import_graph(CODEC)
    seen, todo = set(), [low]
    while todo:
        n = todo.pop()
        for m in g.get(n, ()):
            if m not in seen:
                seen.add(m)
                todo.append(m)
    assert not seen & {"api", "paths"}, f"{low} reaches {sorted(seen & {'api', 'paths'})}"
