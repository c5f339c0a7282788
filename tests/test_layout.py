"""The layout's rules, checked on the source: imports run one way inside each package (no module
imports one that imports it back, however far round), no module grows past 900 lines, and
nothing above `grammar` reaches into its private modules (bench goes through `grammar.testing`)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("grammar", "runtimes", "agentkit")
MOST_LINES = 900


def _modules(package: str) -> dict[str, Path]:
    found = {}
    for path in sorted((REPO / package).rglob("*.py")):
        parts = path.relative_to(REPO).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The package's own modules `name` imports when it is imported (not under TYPE_CHECKING,
    not inside functions)."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        for item in ast.walk(node) if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else ():
            if isinstance(item, ast.ImportFrom):
                if item.level:
                    base = package.split(".")
                    base = base[: len(base) - (item.level - 1)]
                    target = ".".join(base + ([item.module] if item.module else []))
                else:
                    target = item.module or ""
                candidates = [target] + [f"{target}.{a.name}" for a in item.names]
            elif isinstance(item, ast.Import):
                candidates = [a.name for a in item.names]
            else:
                continue
            found.update(c for c in candidates if c in known and c != name)
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_imports_one_that_imports_it_back(package):
    modules = _modules(package)
    graph = {name: _imports(name, path, set(modules)) for name, path in modules.items()}
    # A package's __init__ imports its rooms; a room importing its package's __init__ is the
    # circle to refuse, so edges into an __init__ from inside it are kept.
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(name: str) -> None:
        state[name] = 1
        stack.append(name)
        for nxt in sorted(graph[name]):
            if nxt.startswith(name + "."):
                continue  # a package importing its own rooms
            if state.get(nxt) == 1:
                circle = stack[stack.index(nxt):] + [nxt]
                pytest.fail("import circle: " + " -> ".join(circle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name)


@pytest.mark.parametrize("package", PACKAGES + ("bench",))
def test_no_module_is_past_the_line_limit(package):
    long = {name: n for name, path in _modules(package).items() if (n := len(path.read_text().splitlines())) > MOST_LINES}
    assert not long, f"modules past {MOST_LINES} lines (split them into rooms): {long}"


@pytest.mark.parametrize("package", ("runtimes", "agentkit", "bench"))
def test_nothing_above_grammar_imports_its_private_modules(package):
    reaching = []
    for name, path in _modules(package).items():
        for node in ast.walk(ast.parse(path.read_text())):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else \
                [a.name for a in node.names] if isinstance(node, ast.Import) else []
            reaching += [f"{name}: {n}" for n in names if n.startswith("grammar._")]
    assert not reaching, "private grammar modules imported (use grammar's public names or grammar.testing): " \
        + ", ".join(reaching)
