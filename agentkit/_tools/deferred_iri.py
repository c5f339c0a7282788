"""RFC 3987's parser, built only when an IRI is checked.

Importing `jsonschema` imports its format checkers, and where the `rfc3987-syntax` package is
installed (jsonschema's `format-nongpl` extra brings it; Jupyter installs that) the `iri` and
`iri-reference` checkers import it at once: a Lark parser of RFC 3987 built in about a second,
about 120,000 objects that every full garbage collection of the process then walks. agentkit
checks those two formats rarely (its grammar holds them as `uri`/`uri-reference`, which are
stricter), so `defer()` puts a stand-in module under the package's name before jsonschema is
imported: the checkers bind the stand-in's `is_valid_syntax`, and the first call to it (or the
first use of any other name of the package, by anyone) imports the real package and puts it
back in `sys.modules`. Checks give the same answers; only the time they are paid changes.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from typing import Any

NAME = "rfc3987_syntax"


class _Standin(types.ModuleType):
    """Stands in for `rfc3987_syntax` until one of its names is used."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # the import system's own look-ups load nothing
            raise AttributeError(name)
        return getattr(_real(), name)


def _real() -> types.ModuleType:
    module = sys.modules.get(NAME)
    if isinstance(module, _Standin):
        del sys.modules[NAME]
        try:
            module = importlib.import_module(NAME)
        except BaseException:
            sys.modules.setdefault(NAME, _STANDIN)  # a later use tries again
            raise
    assert module is not None
    return module


def _is_valid_syntax(term: str, value: str) -> bool:
    return bool(_real().is_valid_syntax(term, value))


_STANDIN = _Standin(NAME, __doc__)
_STANDIN.is_valid_syntax = _is_valid_syntax  # type: ignore[attr-defined]


def defer() -> None:
    """Put the stand-in in place, where jsonschema's checkers have not bound the real package yet
    and that package is installed (else jsonschema's own import finds what it finds)."""
    if "jsonschema._format" in sys.modules or NAME in sys.modules:
        return
    spec = importlib.util.find_spec(NAME)
    if spec is None:
        return
    _STANDIN.__spec__ = spec  # so `find_spec` and friends still answer for the package
    _STANDIN.__file__ = spec.origin
    if spec.submodule_search_locations is not None:
        _STANDIN.__path__ = list(spec.submodule_search_locations)
    sys.modules[NAME] = _STANDIN
