"""The public API type-checks strictly, and every public signature is fully annotated (an
unannotated parameter is `Any` to a type checker, which the strict check cannot see)."""

from __future__ import annotations

import importlib.util
import inspect
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import agentkit
import grammar
import runtimes

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed (pip install -e '.[dev]')")
def test_a_program_using_the_public_api_passes_mypy_strict() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "tests/typing/public_api.py"],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _public_functions() -> Iterator[tuple[str, Callable[..., Any]]]:
    for package in (agentkit, grammar, runtimes):
        for name in package.__all__:
            obj = getattr(package, name)
            where = f"{package.__name__}.{name}"
            if inspect.isfunction(obj):
                yield where, obj
            elif inspect.isclass(obj):
                for attr, member in vars(obj).items():
                    if attr.startswith("_") and attr != "__init__":
                        continue
                    fn = member.__func__ if isinstance(member, (classmethod, staticmethod)) else member
                    fn = fn.fget if isinstance(fn, property) else fn
                    if inspect.isfunction(fn):
                        yield f"{where}.{attr}", fn


def test_every_public_signature_is_annotated() -> None:
    unannotated = []
    for where, fn in _public_functions():
        signature = inspect.signature(fn)
        for p in signature.parameters.values():
            if p.name not in ("self", "cls") and p.annotation is inspect.Parameter.empty:
                unannotated.append(f"{where}: parameter {p.name}")
        if signature.return_annotation is inspect.Signature.empty and fn.__name__ != "__init__":
            unannotated.append(f"{where}: return")
    assert unannotated == []
