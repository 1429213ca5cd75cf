"""The docstring parser of Python tools, on the cases where a general-purpose parser
(`docstring-parser`, compared in docs/decisions.md) reads docstrings differently:
what the model is told must not lose prose or gain reST directives."""

from __future__ import annotations

import inspect

from assembler.tools.python.docstrings import parse_docstring


def parse(doc: str) -> tuple[str, dict[str, str]]:
    parsed = parse_docstring(inspect.cleandoc(doc))
    return parsed.description, dict(parsed.params)


def test_a_line_starting_with_a_rest_role_is_prose_not_a_field() -> None:
    description, params = parse(
        """Load a template from a source string without using
        :attr:`loader`.

        :param source: The template text.
        """
    )
    assert description == "Load a template from a source string without using\n:attr:`loader`."
    assert params == {"source": "The template text."}


def test_a_directive_after_a_field_is_not_part_of_its_note() -> None:
    _, params = parse(
        """Echo a message.

        :param color: Force colors on or off.

        .. versionchanged:: 8.0
            Added the ``color`` parameter.
        """
    )
    assert params == {"color": "Force colors on or off."}


def test_an_example_before_the_parameters_stays_in_the_description() -> None:
    description, params = parse(
        """Quote a fee.

        Example:
            quote(2.5) -> "6.49 EUR"

        Args:
            weight: Kilograms.
        """
    )
    assert description == 'Quote a fee.\n\nExample:\n    quote(2.5) -> "6.49 EUR"'
    assert params == {"weight": "Kilograms."}


def test_keyword_and_other_parameter_sections_are_parameters() -> None:
    _, google = parse("Do it.\n\nKeyword Arguments:\n    limit: At most this many.")
    _, numpy = parse("Do it.\n\nOther Parameters\n----------------\nlimit : int\n    At most.")
    assert google == {"limit": "At most this many."}
    assert numpy == {"limit": "At most."}


def test_numpy_entries_naming_several_parameters_describe_each() -> None:
    _, params = parse("Move.\n\nParameters\n----------\nx, y : float\n    Where to.")
    assert params == {"x": "Where to.", "y": "Where to."}
