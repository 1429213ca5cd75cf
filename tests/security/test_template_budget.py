"""A hostile section template cannot make `validate` or `render` run forever or
allocate without bound (issue 11, item 15): every render has a budget of steps, time
and size, a clear error when it runs out, and `validate` renders each override once
so CI reports such a template before anyone runs it.

Each case here hung `render` (or died with MemoryError) before the budget existed.
"""

from __future__ import annotations

import re
import textwrap
import time
from pathlib import Path

import pytest
from clirun import assemble

from assembler.errors import TemplateError
from assembler.manifest.model import TemplateOverride
from assembler.prompt import sandbox
from assembler.prompt.renderer import DynamicPromptRenderer, SkillEntry, WorkspaceView
from assembler.tools.registry import ToolEntry

NESTED_LOOPS = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
LITERAL_LOOPS = "".join(
    "{% for a" + str(i) + " in [1,2,3,4,5,6,7,8,9,10] %}" for i in range(12)
) + ("{% endfor %}" * 12)
FAN_OUT = (
    "{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(60) }}"
)
SELF_CALL = "{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}"

HOSTILE = {
    # steps or time, whichever runs out first (on a busy machine, time may)
    "nested range loops": (NESTED_LOOPS, "exceeded its render budget of"),
    "nested literal loops": (LITERAL_LOOPS, "exceeded its render budget of"),
    "macro fan-out": (FAN_OUT, "exceeded its render budget of"),
    "macro calling itself": (SELF_CALL, "recursed too deeply"),
    "string repetition": ('{{ "x" * 10**9 }}', "a repetition of 1,000,000,000 items"),
    "list repetition": ("{{ range(100000)|list * 100000 }}", "a repetition of"),
    "huge power": ("{{ 10 ** (10 ** 8) }}", "a number of about"),
    # 24 squarings took 14 s and 30 would take hours, all in some 100 steps
    "repeated squaring": (
        "{% set n = namespace(x=3) %}{% for i in range(30) %}{% set n.x = n.x * n.x %}{% endfor %}",
        "a number of about",
    ),
    "filter width": ("{{ 'x'|center(10**9) }}", "a value of 1,000,000,000 items"),
    "method width": ("{{ 'x'.ljust(10**9) }}", "a value of 1,000,000,000 items"),
    "format width": ("{{ '%1000000000s' % 'x' }}", "width too large"),
    # A string doubled in a loop, each way a template can join text: 24 doublings
    # stay small enough to run unguarded (16 MB); 40 would ask for a terabyte.
    **{
        f"doubling with {way}": (
            "{% macro twice(s) %}{{ s }}{{ s }}{% endmacro %}{% set n = namespace(s='x') %}"
            "{% for i in range(24) %}" + step + "{% endfor %}{{ n.s|length }}",
            "would build a value of 1,048,576 items",
        )
        for way, step in {
            "~": "{% set n.s = n.s ~ n.s %}",
            "+": "{% set n.s = n.s + n.s %}",
            "+ of lists": "{% set n.s = (n.s|list) + (n.s|list) %}",
            "a set block": "{% set t %}{{ n.s }}{{ n.s }}{% endset %}{% set n.s = t %}",
            "a filter block": "{% set n.s %}{% filter lower %}{{ n.s ~ n.s }}{% endfilter %}"
            "{% endset %}",
            "join": "{% set n.s = [n.s, n.s]|join %}",
            "a method": "{% set n.s = n.s.join(['', '', '']) %}",
            "a % format": "{% set n.s = '%s%s' % (n.s, n.s) %}",
            "a macro": "{% set n.s = twice(n.s) %}",
        }.items()
    },
    "long output": (
        "{% for i in range(100000) %}{{ 'y' * 100 }}{% endfor %}",
        "output exceeded 1,000,000 characters",
    ),
}


def _render(text: str) -> str:
    renderer = DynamicPromptRenderer(
        {"tools": TemplateOverride("tools", "{{ tools|length }}" + text)}
    )
    return renderer.render(
        identity="You help.",
        context={},
        tools=(ToolEntry("read", "", "Read."),),
        workspace=WorkspaceView("/ws"),
    )


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_template_stops_with_a_clear_error(case: str) -> None:
    text, message = HOSTILE[case]
    started = time.monotonic()
    with pytest.raises(TemplateError, match=re.escape("manifest prompt.tools.template")) as caught:
        _render(text)
    assert message in str(caught.value)
    assert time.monotonic() - started < sandbox.MAX_SECONDS + 3


@pytest.mark.parametrize("case", ["nested range loops", "nested literal loops"])
def test_loop_iterations_count_as_steps(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """With time to spare, the step budget stops a loop that outputs nothing."""
    monkeypatch.setattr(sandbox, "MAX_SECONDS", 120.0)
    monkeypatch.setattr(sandbox, "MAX_STEPS", 50_000)
    with pytest.raises(TemplateError, match="render budget of 50,000 loop iterations and calls"):
        _render(HOSTILE[case][0])


def test_the_time_budget_holds_when_steps_are_slow(monkeypatch: pytest.MonkeyPatch) -> None:
    """Steps that each take long still end at the time limit, not the step limit."""
    monkeypatch.setattr(sandbox, "MAX_SECONDS", 0.2)
    slow = "{% for i in range(100000) %}{{ range(5000)|list|sum }}{% endfor %}"
    started = time.monotonic()
    with pytest.raises(TemplateError, match=re.escape("render budget of 0.2 s")):
        _render(slow)
    assert time.monotonic() - started < 2


def test_the_budget_is_per_render_and_ordinary_templates_fit() -> None:
    """A template that loops over a large catalog many times still renders: the
    budget is for runaway templates, not for big agents."""
    tools = tuple(ToolEntry(f"t{i}", "s", "d") for i in range(2000))
    renderer = DynamicPromptRenderer(
        {"tools": TemplateOverride("tools", "{% for t in tools %}- {{ t.name }}\n{% endfor %}")}
    )
    for _ in range(3):  # three renders, each with a fresh budget
        text = renderer.render(
            identity="x", context={}, tools=tools, workspace=WorkspaceView("/ws"), guidelines=("g",)
        )
        renderer._cache.clear()
    assert text.count("\n- t") == 2000  # "## tools\n- t0" too


def test_a_catalog_over_the_base_limit_renders_and_a_multiplying_template_still_stops() -> None:
    """Issue 21: 10,000 skills are over a million characters with the default template;
    the limit grows with the text a section is given, and a template that repeats
    that text more than `OUTPUT_PER_INPUT_CHAR` times over is still refused."""
    skills = tuple(
        SkillEntry(
            f"skill-{i:05d}", f"Use it for the format number {i}. " * 3, f"skills/s{i}/SKILL.md"
        )
        for i in range(10_000)
    )
    text = DynamicPromptRenderer().render(
        identity="x", context={}, tools=(), workspace=WorkspaceView("/ws"), skills=skills
    )
    assert len(text) > sandbox.MAX_OUTPUT_CHARS
    assert text.count("\n- **skill-") == 10_000
    amplifying = "{% for s in skills %}{{ s.description * 10 }}{% endfor %}"
    renderer = DynamicPromptRenderer({"skills": TemplateOverride("skills", amplifying)})
    with pytest.raises(TemplateError, match="may not multiply its input more than that"):
        renderer.render(
            identity="x", context={}, tools=(), workspace=WorkspaceView("/ws"), skills=skills
        )


def test_filters_that_take_the_context_still_work() -> None:
    """Guarding filters keeps Jinja2's pass-the-context marker (`|map`, `|select`)."""
    body = _render(
        "|{{ tools|map(attribute='name')|join(',') }}|{{ tools|selectattr('name')|list|length }}"
    )
    assert "|read|1" in body


def _manifest(root: Path, template: str) -> Path:
    manifest = root / "agent.yaml"
    block = textwrap.indent(template, "      ")
    manifest.write_text(
        f"version: 1\nname: t\nidentity: You help.\nprompt:\n  tools:\n    template: |\n{block}\n",
        "utf-8",
    )
    return manifest


@pytest.mark.parametrize("case", ["nested range loops", "macro fan-out", "macro calling itself"])
def test_validate_reports_a_template_over_budget_at_its_line(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    text, message = HOSTILE[case]
    _manifest(tmp_path, "{{ tools|length }}\n" + text)
    outcome = assemble(capsys, "validate", "agent.yaml")
    assert outcome.code == 1
    first = outcome.out.splitlines()[0]
    assert first.startswith("agent.yaml:8:7: error: ")  # the template's second line
    assert message in first and first.endswith("[prompt.tools.template]")


def test_render_names_the_manifest_line_of_a_failing_inline_template(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    _manifest(tmp_path, "{{ tools|length }}\n" + NESTED_LOOPS)
    # `validate` refuses this manifest, so the renderer is built from the parsed one:
    # a template that only fails on real data reports itself the same way
    from assembler.manifest.loader import parse_manifest

    manifest = parse_manifest(tmp_path / "agent.yaml").manifest
    assert manifest is not None
    with pytest.raises(TemplateError) as caught:
        DynamicPromptRenderer(manifest.prompt).render(
            identity="x",
            context={},
            tools=(ToolEntry("read", "", ""),),
            workspace=WorkspaceView("/"),
        )
    assert str(caught.value).startswith(
        "agent.yaml:8: prompt.tools.template: the template exceeded"
    )
    assert "<manifest>" not in str(caught.value)
