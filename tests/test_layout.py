"""The layout's rules, checked on the source: imports run one way inside each package (no module
imports one that imports it back, however far round), no module grows past 900 lines, and
nothing above `grammar` reaches into its private modules (bench goes through `grammar.testing`)."""

from __future__ import annotations

import ast
import re
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


# agentkit's stages, from the top down; a module imports only its own stage and those below.
AGENTKIT_STAGES = ("agentkit._loop", "agentkit._outputs", "agentkit._tools")
AGENTKIT_FACES = {"agentkit", "agentkit.mcp"}


def _agentkit_stage(name: str) -> int:
    """A module's stage: 0 the loop, 1 outputs, 2 tools' schemas, 3 the shared modules."""
    return next((i for i, room in enumerate(AGENTKIT_STAGES) if name == room or name.startswith(room + ".")),
                len(AGENTKIT_STAGES))


def _every_import(name: str, path: Path, known: set[str]) -> set[str]:
    """Every module of the package `name` imports, at import time or inside a function."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for item in ast.walk(ast.parse(path.read_text())):
        if isinstance(item, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - (item.level - 1)] if item.level else []
            target = ".".join(base + ([item.module] if item.module else []))
            candidates = [target] + [f"{target}.{a.name}" for a in item.names]
        elif isinstance(item, ast.Import):
            candidates = [a.name for a in item.names]
        else:
            continue
        found.update(c for c in candidates if c in known and c != name)
    return found


def test_agentkits_stages_import_one_way_and_never_its_faces():
    """The loop → outputs → tools' schemas → shared modules; no private module reaches back to
    a face (`agentkit`, `agentkit.mcp`), so a face can import anything without a circle."""
    modules = _modules("agentkit")
    wrong = []
    for name, path in modules.items():
        if name in AGENTKIT_FACES or name.startswith("agentkit.mcp."):
            continue
        for target in _every_import(name, path, set(modules)):
            if target in AGENTKIT_FACES:
                wrong.append(f"{name} imports the face {target}")
            elif _agentkit_stage(target) < _agentkit_stage(name):
                wrong.append(f"{name} imports {target}, a stage above it")
    assert not wrong, "; ".join(sorted(wrong))


def test_agentkits_top_level_holds_its_faces_rooms_and_shared_modules():
    top = {p.name for p in (REPO / "agentkit").iterdir() if p.suffix == ".py" or (p.is_dir() and p.name != "__pycache__")}
    rooms = {room.split(".")[1] for room in AGENTKIT_STAGES}
    shared = {"_errors.py", "_bounds.py", "_context.py", "_inputs.py", "_runtime.py", "_sync.py", "_messages.py", "_version.py"}
    assert top - rooms - shared - {"__init__.py", "mcp"} == set(), "a module at agentkit's top level belongs in a room"


def _layout_section(package: str) -> str:
    """The part of docs/layout.md under the package's own heading (`## package: ...`)."""
    text = (REPO / "docs" / "layout.md").read_text()
    start = text.index(f"\n## {package}")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


@pytest.mark.parametrize("package", PACKAGES)
def test_layout_doc_names_every_module_and_room(package):
    """docs/layout.md stays true to the tree: every private module and room of the three
    packages is named under the package's heading (as `name` or `room/`), and every room it
    names there exists."""
    text = _layout_section(package)
    named = set(re.findall(r"`([A-Za-z_][\w.]*)/?`", text)) | set(re.findall(r"`(_\w+)/", text))
    missing = []
    for path in sorted((REPO / package).rglob("*.py")):
        rel = path.relative_to(REPO / package)
        parts = [p for p in rel.with_suffix("").parts if p != "__init__"]
        if not parts or parts[-1] == "py":
            continue
        if parts[-1] not in named and parts[-1].lstrip("_") not in named:
            missing.append("/".join(parts))
    assert not missing, f"{package} modules docs/layout.md does not name: {missing}"
    for room in set(re.findall(r"`(_[a-z_]+)/", text)):
        assert (REPO / package / room).is_dir(), f"docs/layout.md names {package}'s {room}/, which is no folder"
