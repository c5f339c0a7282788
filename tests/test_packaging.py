"""What the distribution holds and needs: every package folder of the three packages (pyproject
lists packages by name, so a new subpackage left off the list would be missing from a wheel,
while an editable install, which reads the tree, would still work), and the dependencies."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

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


@pytest.mark.skipif(importlib.util.find_spec("rfc3987_syntax") is None, reason="rfc3987-syntax is not installed here")
def test_a_first_tool_imports_no_rfc3987_parser_where_it_is_installed() -> None:
    """jsonschema's `iri` checkers import rfc3987-syntax, whose import builds a parser of RFC
    3987 (a second, and objects every full collection then walks); `import agentkit` and a first
    `@tool` (which builds its validator) leave it unimported until an IRI is checked."""
    code = "import agentkit\n@agentkit.tool\ndef f(city: str) -> str:\n    return city\n"
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", code], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    imported = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line]
    assert "jsonschema" in imported  # the validator is built, so the check below means something
    assert not [name for name in imported if name.startswith("lark") or name.startswith("rfc3987_syntax")]


@pytest.mark.skipif(importlib.util.find_spec("rfc3987_syntax") is None, reason="rfc3987-syntax is not installed here")
def test_iri_formats_are_still_checked_after_decoding() -> None:
    """The parser is built at the first IRI check, which answers as rfc3987-syntax does; from
    then on the package is the real one in `sys.modules`."""
    code = (
        "import sys, agentkit._tools.validator as v\n"
        "check = v.SchemaValidator({'type': 'string', 'format': 'iri'})\n"
        "print(bool(check.problems('http://ex.ample/ü')), bool(check.problems('not an iri')))\n"
        "import rfc3987_syntax\n"
        "print(type(sys.modules['rfc3987_syntax']).__name__, hasattr(rfc3987_syntax, 'RFC3987_SYNTAX_TERMS'))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True", "module", "True"]
