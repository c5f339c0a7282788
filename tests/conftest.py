"""Shared fixtures: where the external corpus lives, and the small models the packages ship."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

REPO = Path(__file__).resolve().parent.parent

# CI draws the same examples on every run, so a red build is reproducible and never a new random
# draw; local runs keep exploring fresh ones.
settings.register_profile("ci", derandomize=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


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


@pytest.fixture(scope="session")
def smollm2_gguf() -> Path:
    from runtimes import RuntimeUnavailable, default_model_path

    try:
        return default_model_path()
    except RuntimeUnavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def smollm2_vocabulary(smollm2_gguf: Path):
    """SmolLM2's 49,152-token vocabulary, read once."""
    from grammar import Vocabulary

    return Vocabulary.from_gguf(smollm2_gguf)
