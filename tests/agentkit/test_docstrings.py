"""Docstring parsing in the three common styles gives the same description and parameters."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentkit._tools.docstrings import parse_docstring

GOOGLE = '''Get the weather.

    Looks it up in a table.

    Args:
        city (str): The city,
            by its English name.
        units: Unit system.

    Returns:
        A sentence.
    '''

NUMPY = '''Get the weather.

    Looks it up in a table.

    Parameters
    ----------
    city : str
        The city,
        by its English name.
    units : {'metric', 'imperial'}, optional
        Unit system.

    Returns
    -------
    str
        A sentence.
    '''

SPHINX = '''Get the weather.

    Looks it up in a table.

    :param city: The city,
        by its English name.
    :param str units: Unit system.
    :type city: str
    :returns: A sentence.
    '''


@pytest.mark.parametrize("doc", [GOOGLE, NUMPY, SPHINX], ids=["google", "numpy", "sphinx"])
def test_three_styles_agree(doc: str) -> None:
    parsed = parse_docstring(doc)
    assert parsed.description == "Get the weather.\n\nLooks it up in a table."
    assert parsed.params == {"city": "The city, by its English name.", "units": "Unit system."}


def test_plain_docstring_is_all_description() -> None:
    parsed = parse_docstring("Add two numbers.\n\nReturns their sum, exactly.")
    assert parsed.description == "Add two numbers.\n\nReturns their sum, exactly."
    assert parsed.params == {}


def test_empty() -> None:
    assert parse_docstring(None).description == ""
    assert parse_docstring("   ").params == {}


def test_numpy_shared_description_and_star_args() -> None:
    parsed = parse_docstring("Sum.\n\nParameters\n----------\na, b : int\n    Terms.\n**extra : dict\n    More.\n")
    assert parsed.params == {"a": "Terms.", "b": "Terms.", "extra": "More."}


_name = st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True)
_text = st.from_regex(r"[A-Za-z][A-Za-z ,.]{0,30}[a-z.]", fullmatch=True)


@given(st.dictionaries(_name, _text, min_size=1, max_size=5))
def test_google_round_trip(params: dict[str, str]) -> None:
    body = "\n".join(f"    {name}: {text}" for name, text in params.items())
    parsed = parse_docstring(f"Summary.\n\nArgs:\n{body}\n")
    assert parsed.params == {name: " ".join(text.split()) for name, text in params.items()}
    assert parsed.description == "Summary."


@given(st.dictionaries(_name, _text, min_size=1, max_size=5))
def test_sphinx_round_trip(params: dict[str, str]) -> None:
    body = "\n".join(f":param {name}: {text}" for name, text in params.items())
    parsed = parse_docstring(f"Summary.\n\n{body}\n")
    assert parsed.params == {name: " ".join(text.split()) for name, text in params.items()}
