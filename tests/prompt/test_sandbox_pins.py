"""Pins for `prompt.sandbox`, the render budget (issue 28, mutation round 6).

What a template author and a user of a big agent rely on: a section may reach its
size allowance exactly and not one character more, whichever way the text is built;
the allowance grows with the text the section is given, as deep as the views go;
ordinary arithmetic and `%` formatting still work; and filters and operators count
against the step budget as loops and calls do. The hostile templates themselves are in
`tests/security/test_template_budget.py`.
"""

from __future__ import annotations

from typing import Any

import pytest

from assembler.errors import TemplateError
from assembler.prompt import sandbox
from assembler.prompt.sandbox import RenderBudget, output_allowance
from assembler.prompt.templates import compile_template, render_template

# 999,999 characters of text plus the key `s`: an allowance of 1,000,000 + 4 * 1,000,000.
BIG = {"s": "x" * 999_999}
ALLOWANCE = 5_000_000


def _render(text: str, variables: Any = None) -> str:
    return render_template(compile_template(text), variables or {}, "pin")


def _refusal(text: str, variables: Any = None) -> str:
    with pytest.raises(TemplateError) as caught:
        _render(text, variables)
    return str(caught.value)


def test_the_allowance_is_a_million_characters_plus_four_per_character_given() -> None:
    assert output_allowance(BIG) == ALLOWANCE
    assert output_allowance({}) == 1_000_000


def test_a_section_may_reach_its_allowance_exactly_and_not_one_character_more() -> None:
    four_copies = "{{ s }}{{ s }}{{ s }}{{ s }}"  # 3,999,996 characters
    exact = _render(four_copies + "{{ 'y' * 1000004 }}", BIG)
    assert len(exact) == ALLOWANCE
    message = _refusal(four_copies + "{{ 'y' * 1000005 }}", BIG)
    assert message == (
        "pin: the template's output exceeded 1,000,000 characters plus 4 per character "
        "of the text the section is given (5,000,000 in all); a section's template may not "
        "multiply its input more than that"
    )


def test_a_repetition_may_build_up_to_the_allowance_and_is_refused_beyond_it() -> None:
    assert len(_render("{{ 'y' * 5000000 }}", BIG)) == ALLOWANCE
    assert _refusal("{{ 'y' * 5000001 }}", BIG) == (
        "pin:1: the template would build a repetition of 5,000,001 items; a section may "
        "hold at most 5,000,000 characters"
    )


def test_a_width_may_be_up_to_the_allowance_and_is_refused_beyond_it() -> None:
    assert len(_render("{{ ''|center(5000000) }}", BIG)) == ALLOWANCE
    assert _refusal("{{ ''|center(5000001) }}", BIG) == (
        "pin:1: the template would build a value of 5,000,001 items; a section may hold "
        "at most 5,000,000 characters"
    )


def test_text_joined_with_a_tilde_may_reach_the_allowance_and_is_refused_beyond_it() -> None:
    assert len(_render("{{ ('y' * 2500000) ~ ('y' * 2500000) }}", BIG)) == ALLOWANCE
    assert _refusal("{{ ('y' * 2500000) ~ ('y' * 2500001) }}", BIG) == (
        "pin:1: the template would build a value of 5,000,001 items; a section may hold "
        "at most 5,000,000 characters"
    )


@pytest.mark.parametrize(
    "text",
    [
        "{{ 'x' ~ [('y' * 600000) ~ ('y' * 600000)]|length }}",  # a `~` inside a `~`
        "{% set t %}{{ 'y' * 600000 }}{{ 'y' * 600000 }}{% endset %}{{ t|length }}",
        "{{ (('y' * 600000) + ('y' * 600000))|length }}",
        "{{ ['y' * 600000, 'y' * 600000]|join|length }}",
    ],
)
def test_text_over_the_limit_is_refused_even_when_it_would_never_be_shown(text: str) -> None:
    assert "would build a value of 1,200,000 items" in _refusal(text)


def test_joining_text_still_works_as_jinja_defines_it() -> None:
    text = (
        "{{ 'a' ~ 'b' ~ 3 }}|{% set t %}x{{ 1 + 2 }}{% endset %}{{ t }}|{{ [1] + [2] }}|"
        "{% set u | upper %}abc{% endset %}{{ u }}|"
        "{% autoescape true %}{{ '<b>' ~ 'c' }}{% endautoescape %}"
    )
    assert _render(text) == "ab3|x3|[1, 2]|ABC|&lt;b&gt;c"


@pytest.mark.parametrize(
    "text",
    [
        "{{ 'x'|center(width=2000000) }}",  # a filter's keyword argument
        "{{ '\\t'.expandtabs(tabsize=2000000) }}",  # a method's keyword argument
        "{{ [1, [2]]|tojson(2000000) }}",  # a filter that is passed the context first
    ],
)
def test_a_keyword_or_context_filter_width_is_refused_before_it_is_built(text: str) -> None:
    assert "would build a value of 2,000,000 items" in _refusal(text)


@pytest.mark.parametrize(
    "text",
    [
        "{{ 'x'.ljust(10**19) }}",
        "{{ '\\t'.expandtabs(tabsize=10**19) }}",
        "{{ 'x'|center(10**19) }}",
        "{{ 'x'|center(width=10**19) }}",
        "{{ [1, [2]]|tojson(10**19) }}",
    ],
)
def test_a_width_too_large_to_build_at_all_is_refused_by_its_size_before_it_is_tried(
    text: str,
) -> None:
    # Python could not even try (an OverflowError); the budget names the size first.
    assert "would build a value of 10,000,000,000,000,000,000 items" in _refusal(text)


def test_ordinary_arithmetic_and_percent_formatting_still_work() -> None:
    text = "{{ 6 * 7 }}|{{ 2.0 ** 3 }}|{{ 7 % 3 }}|{{ '%-4s|' % 'ab' }}{{ '%03d' % 7 }}"
    assert _render(text) == "42|8.0|1|ab  |007"


def test_a_large_number_may_be_shown_through_a_filter_that_takes_the_context() -> None:
    assert _render("{{ n|tojson }}", {"n": 9_000_000}) == "9000000"


def test_powers_of_one_cost_nothing_and_are_computed() -> None:
    assert _render("{{ 1 ** 10000000 }} {{ (-1) ** 10000001 }}") == "1 -1"


def test_numbers_may_have_up_to_a_hundred_thousand_bits() -> None:
    # 3 has 2 bits: 3 ** 50000 is about 100,000 bits, 2 ** 60000 about 120,000
    assert _render("{{ (3 ** 50000) > 0 }}") == "True"
    assert "a number of about 100,002 bits" in _refusal("{{ 3 ** 50001 }}")
    assert "a number of about 120,000 bits" in _refusal("{{ 2 ** 60000 }}")
    # products: 50,000 + 50,000 bits is within the limit, 50,000 + 50,001 is not
    half = "{% set a = 2 ** 49999 %}{% set b = 2 ** 50000 %}"
    assert _render(half + "{{ (a * a) > 0 }}") == "True"
    assert "a number of about 100,001 bits" in _refusal(half + "{{ a * b }}")


@pytest.fixture
def small_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "MAX_SECONDS", 120.0)
    monkeypatch.setattr(sandbox, "MAX_STEPS", 1000)


@pytest.mark.usefixtures("small_budget")
def test_filters_and_operators_count_against_the_steps_as_loops_do() -> None:
    assert _render("{% for i in range(600) %}{{ i }}{% endfor %}").endswith("599")
    for body in ("{{ i|abs }}", "{{ i * 1 }}"):
        message = _refusal("{% for i in range(600) %}" + body + "{% endfor %}")
        assert "render budget of 1,000 loop iterations and calls" in message


def test_a_budget_of_n_steps_allows_exactly_n() -> None:
    budget = RenderBudget(steps=3, seconds=60)
    for _ in range(3):
        budget.tick()
    with pytest.raises(TemplateError, match="render budget of 3 loop iterations and calls"):
        budget.tick()


def _lists(depth: int) -> object:
    value: object = "ab"
    for _ in range(depth):
        value = [value]
    return value


def _dicts(depth: int) -> object:
    value: object = "ab"
    for _ in range(depth):
        value = {"k": value}
    return value


class _View:
    def __init__(self, inner: object) -> None:
        self.inner = inner


def _views(depth: int) -> object:
    value: object = "ab"
    for _ in range(depth):
        value = _View(value)
    return value


def test_text_counts_up_to_seven_containers_deep_in_lists_mappings_and_views() -> None:
    # The renderer's views are a few levels deep (a list of skills, each an object
    # with fields); text below seven containers does not raise the allowance.
    for nest in (_lists, _views):
        assert sandbox.text_size(nest(7)) == 2
        assert sandbox.text_size(nest(8)) == 0
    assert sandbox.text_size(_dicts(7)) == 7 + 2  # each key is text too
    assert sandbox.text_size(_dicts(8)) == 7


def test_numbers_and_other_values_add_no_text() -> None:
    assert sandbox.text_size({"n": 12345, "f": 1.5, "b": None, "t": True}) == 4
