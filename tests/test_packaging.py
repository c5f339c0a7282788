"""Every package folder of the three packages is in the distribution: pyproject lists packages by
name, so a new subpackage left off the list would be missing from a wheel (while an editable
install, which reads the tree, would still work)."""

from __future__ import annotations

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
