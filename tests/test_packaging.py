"""What the distribution holds and needs: every package folder of the three packages (pyproject
lists packages by name, so a new subpackage left off the list would be missing from a wheel,
while an editable install, which reads the tree, would still work), and the dependencies."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_pyproject_lists_every_package_folder() -> None:
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for top in ("agentkit", "grammar", "runtimes")
        for init in (ROOT / top).rglob("__init__.py")
    }
    assert found == listed


def _requirement_name(spec: str) -> str:
    return re.split(r"[\s;\[<>=!~]", spec, maxsplit=1)[0].lower().replace("_", "-")


def test_runtime_dependencies_hold_the_format_checkers_but_rfc3987_syntax() -> None:
    """jsonschema's format checkers find their packages by import, so the runtime dependencies
    name those of its format-nongpl extra themselves: all but rfc3987-syntax, whose import
    builds an RFC 3987 parser (a second of every `import agentkit`) for `iri` checks the
    grammar makes while decoding."""
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    named = {_requirement_name(d) for d in dependencies}
    extra = {
        _requirement_name(r) for r in importlib.metadata.requires("jsonschema") or ()
        if re.search(r"extra\s*==\s*['\"]format-nongpl['\"]", r)
    }
    assert "rfc3987-syntax" in extra  # (what is left out is still what the extra brings)
    assert extra - named == {"rfc3987-syntax"}


def test_importing_runtimes_leaves_jsonschema_unimported() -> None:
    """Only an answer a server held to a schema by itself is validated with jsonschema, so a
    runtime's users do not pay for importing it (nor for the parsers its format checkers build)."""
    code = "import sys, runtimes, runtimes.testing; print(sorted(m for m in sys.modules if m.startswith('jsonschema')))"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
