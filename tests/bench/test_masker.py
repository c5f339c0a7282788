"""The masker benchmark runs our engine on a realistic schema and, asked to, takes its cold path apart."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench import masker


@pytest.mark.model
def test_profile_takes_the_cold_path_apart(smollm2_gguf: Path, capsys: pytest.CaptureFixture[str]) -> None:
    masker.main(["--vocab", "smollm2", "--passes", "1", "--schema", "strings", "--engine", "agentkit", "--profile"])
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if line.strip().startswith("profile:"))
    parts = {name: float(ms) for name, ms in re.findall(r"(schema->IR|analysis|automaton|masks) (\d+\.\d+) ms", line)}
    assert set(parts) == {"schema->IR", "analysis", "automaton", "masks"}
    cold = float(re.search(r"of (\d+\.\d+) ms cold", line).group(1))
    assert 0 < sum(parts.values()) <= cold
    assert "forced" in line  # the first document's literal states, counted by way


@pytest.mark.model
def test_untuned_dev_schemas_join_the_run(smollm2_gguf: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bench._dev_schemas import dev_schemas

    chosen = dev_schemas(3)
    if not chosen:
        pytest.skip("../shared/corpus is not beside the clone")
    masker.main(["--vocab", "smollm2", "--passes", "1", "--schema", "person", "--engine", "agentkit", "--dev", "3"])
    out = capsys.readouterr().out
    for ident in chosen:
        assert f"\n  {ident} (" in out  # each DEV schema ran a document
