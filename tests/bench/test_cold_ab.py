"""The interleaved A/B of two checkouts' cold path: each tree's worker times the same DEV
schemas, and a checkout against itself yields a ratio per schema."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import cold_ab
from bench.coverage import corpus_dir

ROOT = Path(__file__).resolve().parents[2]


def test_a_checkout_against_itself(smollm2_gguf: Path) -> None:
    if corpus_dir() is None:
        pytest.skip("../shared/corpus is not beside the clone")
    found = cold_ab.compare(ROOT, ROOT, "smollm2", limit=2, rounds=1)
    assert len(found["best"]) == 2
    assert all(old > 0 and new > 0 for old, new in found["best"].values())
    assert set(found["ratios"]) == set(found["best"])
    assert found["median"] > 0


def test_a_tree_without_the_schemas_is_refused(smollm2_gguf: Path, tmp_path: Path) -> None:
    if corpus_dir() is None:
        pytest.skip("../shared/corpus is not beside the clone")
    with pytest.raises(SystemExit, match="same DEV schemas"):
        cold_ab.compare(ROOT, tmp_path, "smollm2", limit=2, rounds=1)
