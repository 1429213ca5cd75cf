"""`DynamicPromptRenderer`: section order and omission in code, bodies from sandboxed
templates, and a cache keyed on all six model-visible inputs (DESIGN.md section 4)."""

from __future__ import annotations

import datetime
import re
from importlib import resources
from typing import Any

import pytest

import assembler.prompt.renderer as renderer_module
from assembler.errors import PromptContextError, RenderError, TemplateError, TemplateSecurityError
from assembler.manifest.model import SECTION_NAMES, TemplateOverride
from assembler.prompt.renderer import (
    ContextFileView,
    DynamicPromptRenderer,
    MemoryEntry,
    SkillEntry,
    WorkspaceView,
)
from assembler.prompt.templates import compile_template, default_template_text
from assembler.tools.registry import ToolEntry

IDENTITY = "You fix bugs."
CONTEXT: dict[str, Any] = {"repo": "shop", "limits": {"turns": 3, "ratio": 0.5}}
TOOLS = (
    ToolEntry("read", "Read a file", "Read a text file."),
    ToolEntry("ship", "", "Ship an order."),
)
WORKSPACE = WorkspaceView("/srv/shop", (ContextFileView("AGENTS.md", "Be brief."),))
SKILLS = (SkillEntry("alpha", "Does alpha things.", "skills/alpha/SKILL.md"),)
MEMORY = (MemoryEntry("answer-style", "user", "How to answer.", "Short answers."),)


def inputs(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "identity": IDENTITY,
        "context": CONTEXT,
        "tools": TOOLS,
        "guidelines": ("Read before you edit.",),
        "workspace": WORKSPACE,
        "skills": SKILLS,
        "memory": MEMORY,
    }
    base.update(changes)
    return base


def headings(text: str) -> list[str]:
    """The section headings: `## ` lines outside the memory block (whose records have
    `## name (type)` headings of their own)."""
    outside = re.sub(
        r"<relevant_memories>\n\n.*?\n\n</relevant_memories>", "", text, flags=re.DOTALL
    )
    return re.findall(r"^## (.+)$", outside, flags=re.MULTILINE)


def position(text: str, heading: str) -> int:
    """Where the section starts: the prompt's start, or after the blank line that
    separates it from the one before."""
    if text.startswith(f"## {heading}\n"):
        return 0
    index = text.find(f"\n\n## {heading}\n")
    assert index > 0, heading
    return index + 2


# -- order and omission --------------------------------------------------------------


def test_sections_come_in_the_fixed_order() -> None:
    text = DynamicPromptRenderer().render(**inputs())
    assert headings(text) == ["identity", "tools", "workspace", "skills", "memory"]
    spots = [position(text, name) for name in SECTION_NAMES]
    assert spots == sorted(spots)
    assert spots[0] == 0


def test_the_whole_prompt_of_the_fixed_inputs() -> None:
    text = DynamicPromptRenderer().render(**inputs())
    assert text == (
        "## identity\n"
        "You fix bugs.\n"
        'context: {"limits":{"ratio":0.5,"turns":3},"repo":"shop"}\n'
        "\n"
        "## tools\n"
        "- read: Read a file\n"
        "- ship\n"
        "\n"
        "Guidelines:\n"
        "- Read before you edit.\n"
        "\n"
        "## workspace\n"
        "/srv/shop\n"
        "\n"
        "### AGENTS.md\n"
        "Be brief.\n"
        "\n"
        "## skills\n"
        "Read a skill's file before you follow it.\n"
        "- **alpha**: Does alpha things. (file: `skills/alpha/SKILL.md`)\n"
        "\n"
        "## memory\n"
        "<relevant_memories>\n"
        "\n"
        "## answer-style (user)\n"
        "\n"
        "How to answer.\n"
        "\n"
        "Short answers.\n"
        "\n"
        "</relevant_memories>"
    )


def test_no_tools_reads_none_and_the_section_stays() -> None:
    text = DynamicPromptRenderer().render(**inputs(tools=(), guidelines=("Unused.",)))
    assert headings(text) == ["identity", "tools", "workspace", "skills", "memory"]
    assert "\n\n## tools\n(none)\n\n## workspace\n" in text
    assert "Unused." not in text


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"skills": ()}, ["identity", "tools", "workspace", "memory"]),
        ({"memory": ()}, ["identity", "tools", "workspace", "skills"]),
        ({"skills": (), "memory": ()}, ["identity", "tools", "workspace"]),
        ({"skills": (), "memory": (), "tools": ()}, ["identity", "tools", "workspace"]),
    ],
)
def test_empty_skills_and_memory_are_dropped_whole(
    changes: dict[str, Any], expected: list[str]
) -> None:
    text = DynamicPromptRenderer().render(**inputs(**changes))
    assert headings(text) == expected
    spots = [position(text, name) for name in expected]
    assert spots == sorted(spots)
    assert not text.endswith("\n")
    assert "\n\n\n" not in text


def test_memory_without_skills_follows_the_workspace_directly() -> None:
    text = DynamicPromptRenderer().render(**inputs(skills=()))
    assert "Be brief.\n\n## memory\n<relevant_memories>\n\n## answer-style (user)\n" in text


def test_the_workspace_is_the_absolute_path_then_each_context_file() -> None:
    workspace = WorkspaceView(
        "/srv/shop",
        (
            ContextFileView("AGENTS.md", "# Shop\nUse make."),
            ContextFileView("docs/STYLE.md", "Tabs."),
        ),
    )
    rendered = DynamicPromptRenderer().render_sections(**inputs(workspace=workspace))
    [section] = [s for s in rendered.sections if s.name == "workspace"]
    assert (
        section.text == "/srv/shop\n\n### AGENTS.md\n# Shop\nUse make.\n\n### docs/STYLE.md\nTabs."
    )
    bare = DynamicPromptRenderer().render(**inputs(workspace=WorkspaceView("/srv/shop")))
    assert "\n\n## workspace\n/srv/shop\n\n## skills\n" in bare


# The seed reference implementation's memory block, byte for byte: every part, the two
# markers included, separated by one blank line.
ONE_MEMORY = (
    "<relevant_memories>\n\n## database (project)\n\n{description}\n\n{body}\n\n"
    "</relevant_memories>"
)
TWO_MEMORIES = (
    "<relevant_memories>\n\n## database (project)\n\n{description}\n\n{body}\n\n"
    "## next (type)\n\n{description}\n\n{body}\n\n</relevant_memories>"
)


@pytest.mark.parametrize(
    ("memory", "expected"),
    [
        ((MemoryEntry("database", "project", "{description}", "{body}"),), ONE_MEMORY),
        (
            (
                MemoryEntry("database", "project", "{description}", "{body}"),
                MemoryEntry("next", "type", "{description}", "{body}"),
            ),
            TWO_MEMORIES,
        ),
    ],
)
def test_the_memory_block_is_the_seed_reference_literal(
    memory: tuple[MemoryEntry, ...], expected: str
) -> None:
    text = DynamicPromptRenderer().render(**inputs(memory=memory))
    assert text.endswith("\n\n## memory\n" + expected)
    assert text.count("<relevant_memories>") == text.count("</relevant_memories>") == 1


def test_the_memory_section_for_two_selected_records() -> None:
    memory = (
        MemoryEntry("answer-style", "user", "How the user wants answers.", "Short, in English."),
        MemoryEntry(
            "release-process", "project", "How releases are cut.", "Tag, then push.\nNo Fridays."
        ),
    )
    text = DynamicPromptRenderer().render(**inputs(memory=memory))
    assert text[text.index("\n\n## memory\n") + 2 :] == (
        "## memory\n"
        "<relevant_memories>\n"
        "\n"
        "## answer-style (user)\n"
        "\n"
        "How the user wants answers.\n"
        "\n"
        "Short, in English.\n"
        "\n"
        "## release-process (project)\n"
        "\n"
        "How releases are cut.\n"
        "\n"
        "Tag, then push.\n"
        "No Fridays.\n"
        "\n"
        "</relevant_memories>"
    )
    assert text.count("<relevant_memories>") == text.count("</relevant_memories>") == 1


def test_identity_is_trimmed_and_must_not_be_blank() -> None:
    text = DynamicPromptRenderer().render(**inputs(identity="\n  You fix bugs.  \n"))
    assert text.startswith("## identity\nYou fix bugs.\ncontext: ")
    with pytest.raises(RenderError):
        DynamicPromptRenderer().render(**inputs(identity="  \n "))


def test_sections_record_where_their_body_came_from() -> None:
    overrides = {"tools": TemplateOverride("tools", "{{ tools|length }} tools")}
    rendered = DynamicPromptRenderer(overrides).render_sections(**inputs())
    assert [(s.name, s.template) for s in rendered.sections] == [
        ("identity", "default identity template"),
        ("tools", "manifest prompt.tools.template"),
        ("workspace", "default workspace template"),
        ("skills", "default skills template"),
        ("memory", "default memory template"),
    ]
    assert rendered.text == "\n\n".join(f"## {s.name}\n{s.text}" for s in rendered.sections)
    empty = DynamicPromptRenderer().render_sections(**inputs(tools=()))
    assert (empty.sections[1].text, empty.sections[1].template) == (
        "(none)",
        "code: no active tools",
    )


# -- templates -----------------------------------------------------------------------


def test_templates_run_sandboxed_with_strict_undefined() -> None:
    from jinja2 import StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment

    from assembler.prompt.templates import environment

    env = environment()
    assert isinstance(env, SandboxedEnvironment)
    assert env.undefined is StrictUndefined
    assert compile_template("{{ x }}").environment is env


def test_the_default_templates_are_package_data() -> None:
    folder = resources.files("assembler.prompt.sections")
    for section in SECTION_NAMES:
        shipped = folder.joinpath(f"{section}.md.j2")
        assert shipped.is_file(), section
        assert default_template_text(section) == shipped.read_text("utf-8")


def test_an_override_reshapes_the_body_but_not_the_heading_or_order() -> None:
    overrides = {
        "tools": TemplateOverride("tools", "{% for t in tools %}* {{ t.name }}\n{% endfor %}"),
        "skills": TemplateOverride("skills", "## memory\n{{ skills|length }} skill(s)"),
        "identity": TemplateOverride("identity", "I am: {{ identity }}"),
    }
    text = DynamicPromptRenderer(overrides).render(**inputs())
    assert text.startswith("## identity\nI am: You fix bugs.\n\n## tools\n* read\n* ship\n\n")
    assert "\n\n## skills\n## memory\n1 skill(s)\n\n## memory\n<relevant_memories>\n" in text
    spots = [position(text, name) for name in SECTION_NAMES]
    assert spots == sorted(spots)


def test_an_override_cannot_bring_back_a_dropped_section_or_hide_no_tools() -> None:
    overrides = {
        "skills": TemplateOverride("skills", "Always here."),
        "memory": TemplateOverride("memory", "Always here too."),
        "tools": TemplateOverride("tools", "Whatever the template says."),
    }
    text = DynamicPromptRenderer(overrides).render(**inputs(tools=(), skills=(), memory=()))
    assert headings(text) == ["identity", "tools", "workspace"]
    assert "\n\n## tools\n(none)\n\n" in text
    assert "Always here" not in text
    assert "Whatever" not in text


def test_an_override_that_renders_nothing_cannot_remove_a_heading() -> None:
    overrides = {"tools": TemplateOverride("tools", "{% for t in tools %}{% endfor %}  \n")}
    with pytest.raises(TemplateError, match="the tools section rendered empty"):
        DynamicPromptRenderer(overrides).render(**inputs())


def test_an_override_from_a_file_names_the_file(tmp_path: Any) -> None:
    file = tmp_path / "tools.md.j2"
    overrides = {"tools": TemplateOverride("tools", "{{ nope }}", file)}
    with pytest.raises(TemplateError, match=re.escape(f"{file}:1: template uses `nope`")):
        DynamicPromptRenderer(overrides)


def test_an_unknown_variable_is_a_template_error_at_construction() -> None:
    overrides = {"memory": TemplateOverride("memory", "line\n{{ tools }}")}
    with pytest.raises(TemplateError) as caught:
        DynamicPromptRenderer(overrides)
    assert not isinstance(caught.value, TemplateSecurityError)
    assert str(caught.value) == (
        "manifest prompt.memory.template:2: template uses `tools`, which the memory section "
        "does not provide (it has `memories`)"
    )


def test_a_variable_named_sandbox_is_a_mistake_not_an_attack() -> None:
    overrides = {"tools": TemplateOverride("tools", "{{ sandbox }}")}
    with pytest.raises(TemplateError) as caught:
        DynamicPromptRenderer(overrides)
    assert not isinstance(caught.value, TemplateSecurityError)


def test_an_unknown_attribute_fails_at_render_time_under_strict_undefined() -> None:
    overrides = {
        "skills": TemplateOverride("skills", "{% for s in skills %}{{ s.nme }}{% endfor %}")
    }
    renderer = DynamicPromptRenderer(overrides)
    with pytest.raises(TemplateError, match=re.escape("manifest prompt.skills.template")) as caught:
        renderer.render(**inputs())
    assert not isinstance(caught.value, TemplateSecurityError)


def test_a_syntax_error_is_a_template_error() -> None:
    overrides = {"tools": TemplateOverride("tools", "{% for t in tools %}")}
    with pytest.raises(TemplateError, match="syntax error"):
        DynamicPromptRenderer(overrides)


ESCAPE = "{{ ''.__class__.__mro__ }}"


@pytest.mark.parametrize(
    "text",
    [
        ESCAPE,
        "{{ tools.__class__ }}",
        "{{ tools['__class__'] }}",
        "{{ nope }}{{ ''.__class__ }}",  # reported as an attack even after a plain mistake
    ],
)
def test_reaching_for_internals_is_refused_at_construction(text: str) -> None:
    with pytest.raises(TemplateSecurityError, match="the sandbox refuses Python internals"):
        DynamicPromptRenderer({"tools": TemplateOverride("tools", text)})


def test_the_sandbox_refuses_internals_at_render_time_too(monkeypatch: pytest.MonkeyPatch) -> None:
    # bypass the static check: the sandbox alone must still refuse
    monkeypatch.setattr(
        renderer_module,
        "check_override",
        lambda section, text, origin, parameters=(), **_: compile_template(text),
    )
    renderer = DynamicPromptRenderer({"tools": TemplateOverride("tools", ESCAPE)})
    with pytest.raises(
        TemplateSecurityError, match=re.escape("manifest prompt.tools.template:1: template refused")
    ):
        renderer.render(**inputs())
    assert renderer.cache_misses == 0


def test_the_sandbox_catches_what_the_static_check_cannot_see() -> None:
    renderer = DynamicPromptRenderer(
        {"tools": TemplateOverride("tools", "{{ tools|attr('__class__') }}")}
    )
    with pytest.raises(TemplateSecurityError, match="unsafe"):
        renderer.render(**inputs())


# -- the cache -----------------------------------------------------------------------


def test_a_fresh_renderer_starts_with_no_hits() -> None:
    first = DynamicPromptRenderer()
    first.render(**inputs())
    first.render(**inputs())
    assert first.cache_hits == 1
    second = DynamicPromptRenderer()
    assert (second.cache_hits, second.cache_misses) == (0, 0)
    second.render(**inputs())
    assert (second.cache_hits, second.cache_misses) == (0, 1)  # no cache shared between them


def test_context_keys_in_another_order_give_the_same_prompt_and_one_hit() -> None:
    renderer = DynamicPromptRenderer()
    first = renderer.render(**inputs(context={"b": [1, {"y": 2, "x": 1}], "a": "é", "c": None}))
    second = renderer.render(**inputs(context={"c": None, "a": "é", "b": [1, {"x": 1, "y": 2}]}))
    assert second == first
    assert 'context: {"a":"é","b":[1,{"x":1,"y":2}],"c":null}\n' in first
    assert (renderer.cache_hits, renderer.cache_misses) == (1, 1)


CHANGES: dict[str, dict[str, Any]] = {
    "identity": {"identity": "You review code."},
    "context": {"context": {**CONTEXT, "repo": "other"}},
    "context-nested": {"context": {"repo": "shop", "limits": {"turns": 4, "ratio": 0.5}}},
    "tools": {"tools": (*TOOLS, ToolEntry("write", "Write a file", ""))},
    "tools-snippet": {"tools": (ToolEntry("read", "Read any file", ""), TOOLS[1])},
    "tools-guidelines": {"guidelines": ("Read before you edit.", "Run the tests.")},
    "workspace": {"workspace": WorkspaceView("/srv/other", WORKSPACE.context_files)},
    "workspace-context-file": {
        "workspace": WorkspaceView("/srv/shop", (ContextFileView("AGENTS.md", "Be terse."),))
    },
    "skills": {"skills": (*SKILLS, SkillEntry("beta", "Does beta.", "skills/beta/SKILL.md"))},
    "skills-none": {"skills": ()},
    "memory": {"memory": (MemoryEntry("other", "project", "Another.", "Body."),)},
    "memory-none": {"memory": ()},
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_each_model_visible_input_changed_alone_misses_the_cache(change: str) -> None:
    renderer = DynamicPromptRenderer()
    before = renderer.render(**inputs())
    after = renderer.render(**inputs(**CHANGES[change]))
    assert after != before
    assert (renderer.cache_hits, renderer.cache_misses) == (0, 2)
    assert renderer.render(**inputs()) == before
    assert renderer.cache_hits == 1


def test_the_six_inputs_are_all_covered() -> None:
    covered = {change.split("-")[0] for change in CHANGES}
    assert covered == {"identity", "context", "tools", "workspace", "skills", "memory"}


def _cycle() -> dict[str, Any]:
    loop: dict[str, Any] = {"name": "loop"}
    loop["self"] = loop
    return {"outer": loop}


INVALID: dict[str, tuple[Any, str]] = {
    "nan": ({"ratio": float("nan")}, "$.ratio"),
    "infinity": ({"ratio": float("-inf")}, "$.ratio"),
    "date": ({"when": {"day": datetime.date(2024, 5, 1)}}, "$.when.day"),
    "list-root": ([{"a": 1}], "$"),
    "cycle": (_cycle(), "$.outer.self"),
    "int-key": ({"ok": {1: "one"}}, "$.ok"),
    "big-int": ({"n": 2**53}, "$.n"),
}


@pytest.mark.parametrize("case", sorted(INVALID))
def test_an_invalid_context_raises_and_does_not_poison_the_cache(case: str) -> None:
    context, path = INVALID[case]
    renderer = DynamicPromptRenderer()
    first = renderer.render(**inputs())
    with pytest.raises(PromptContextError) as caught:
        renderer.render(**inputs(context=context))
    assert caught.value.path == path
    assert (renderer.cache_hits, renderer.cache_misses) == (0, 1)
    assert renderer.render(**inputs()) == first
    assert (renderer.cache_hits, renderer.cache_misses) == (1, 1)


def test_a_shared_value_in_two_places_is_not_a_cycle() -> None:
    shared = {"x": 1}
    text = DynamicPromptRenderer().render(**inputs(context={"a": shared, "b": [shared, shared]}))
    assert 'context: {"a":{"x":1},"b":[{"x":1},{"x":1}]}\n' in text


def test_proto_is_an_ordinary_key() -> None:
    renderer = DynamicPromptRenderer()
    text = renderer.render(**inputs(context={"__proto__": {"polluted": True}, "a": 1}))
    assert '\ncontext: {"__proto__":{"polluted":true},"a":1}\n' in text
    other = renderer.render(**inputs(context={"a": 1}))
    assert "polluted" not in other
    assert renderer.cache_misses == 2


def test_pre_canonicalised_context_text_shares_the_cache_with_the_mapping() -> None:
    renderer = DynamicPromptRenderer()
    from_mapping = renderer.render(**inputs(context={"b": 1, "a": 2}))
    from_text = renderer.render(**inputs(context='{"a":2,"b":1}'))
    assert from_text == from_mapping
    assert renderer.cache_hits == 1


def test_a_failed_render_is_not_cached() -> None:
    overrides = {
        "skills": TemplateOverride("skills", "{% for s in skills %}{{ s.nme }}{% endfor %}")
    }
    renderer = DynamicPromptRenderer(overrides)
    for _ in range(2):
        with pytest.raises(TemplateError):
            renderer.render(**inputs())
    assert (renderer.cache_hits, renderer.cache_misses) == (0, 0)
    renderer.render(**inputs(skills=()))  # the broken template is not needed without skills
    assert renderer.cache_misses == 1
