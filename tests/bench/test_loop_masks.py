"""The in-loop mask benchmark drives a real model through a schema's document and reports on it."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import loop_masks


@pytest.mark.model
def test_one_round_on_the_default_model(smollm2_gguf: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("llama_cpp")
    loop_masks.run(str(smollm2_gguf), ["person"], rounds=1, engine_names=["agentkit"])
    out = capsys.readouterr().out
    assert "person (" in out
    row = next(line.split() for line in out.splitlines() if line.strip().startswith("agentkit"))
    assert all(float(cell) > 0 for cell in row[1:])
