"""The render cache's promises, and what `validate` tries an override with, pinned
(found by mutation testing: `python bench/mutation.py renderer`, docs/testing.md).

The cache keeps the 64 prompts used most recently: a session that goes back to a recent
prompt is served from the cache, and one that renders ever-new prompts (a memory that
changes every turn) holds at most 64 in memory, dropping the one used longest ago.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from assembler.errors import TemplateError
from assembler.manifest.model import TemplateOverride
from assembler.prompt.renderer import DynamicPromptRenderer, WorkspaceView
from assembler.tools.registry import ToolEntry
from assembler.validation.validator import validate_file

TOOLS = (ToolEntry("read", "Read a file", "Read a text file."),)
WORKSPACE = WorkspaceView("/srv/shop")


def render(renderer: DynamicPromptRenderer, number: int) -> str:
    return renderer.render(
        identity=f"You fix bug {number}.", context={}, tools=TOOLS, workspace=WORKSPACE
    )


def hit(renderer: DynamicPromptRenderer, number: int) -> bool:
    """Whether rendering prompt `number` now is served from the cache."""
    before = renderer.cache_hits
    text = render(renderer, number)
    assert text.startswith(f"## identity\nYou fix bug {number}.\n")
    return renderer.cache_hits == before + 1


def test_the_cache_holds_sixty_four_prompts() -> None:
    renderer = DynamicPromptRenderer()
    for number in range(64):
        assert not hit(renderer, number)
    assert all(hit(renderer, number) for number in range(64))
    assert (renderer.cache_hits, renderer.cache_misses) == (64, 64)


def test_a_prompt_used_again_stays_and_the_least_recently_used_goes() -> None:
    renderer = DynamicPromptRenderer()
    for number in range(64):
        render(renderer, number)
    assert hit(renderer, 0)  # used again: now the most recent
    assert not hit(renderer, 64)  # a 65th prompt pushes one out...
    assert hit(renderer, 0)
    assert not hit(renderer, 1)  # ...the one used longest ago
    assert hit(renderer, 64)


def test_ever_new_prompts_keep_only_the_last_sixty_four() -> None:
    renderer = DynamicPromptRenderer()
    for number in range(200):
        render(renderer, number)
    assert [hit(renderer, number) for number in (199, 137, 136)] == [True, True, True]
    assert not hit(renderer, 135)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def validate(manifest: str) -> list[str]:
    Path("agent.yaml").write_text(textwrap.dedent(manifest), "utf-8")
    return [issue.format() for issue in validate_file(Path("agent.yaml"), env={}).issues]


def test_validate_tries_an_identity_override_with_the_manifests_own_identity(
    project: Path,
) -> None:
    """An override that shows text only for this agent's identity is valid for this
    agent: `validate` must not call it empty because it tried a stand-in identity."""
    manifest = """\
        version: 1
        name: demo
        identity: You review pull requests.
        prompt:
          identity:
            template: "{% if 'review' in identity %}{{ identity }}{% endif %}"
        """
    assert validate(manifest) == []
    other = manifest.replace("You review pull requests.", "You fix bugs.")
    assert validate(other) == [
        "agent.yaml:6:16: error: the identity section renders empty; a section needs text "
        "[prompt.identity.template]"
    ]


def test_an_inline_override_that_fails_names_its_manifest_line(
    project: Path,
) -> None:
    """A template written in the manifest that fails while rendering points at the
    manifest line the failing template line is on, so an editor can jump there."""
    overrides = {
        "tools": TemplateOverride(
            "tools",
            "{% for t in tools %}- {{ t.name }}\n{% endfor %}{{ 1 / 0 }}",
            manifest=project / "agent.yaml",
            line=7,
        )
    }
    renderer = DynamicPromptRenderer(overrides)
    with pytest.raises(TemplateError) as raised:
        renderer.render(identity="x", context={}, tools=TOOLS, workspace=WORKSPACE)
    assert str(raised.value) == (
        "agent.yaml:8: prompt.tools.template: the template failed: "
        "ZeroDivisionError: division by zero"
    )


def test_prompt_text_is_never_html_escaped() -> None:
    """The prompt is text for a model, not HTML: `<`, `&` and quotes reach it as
    written (an escaped `&lt;` would change what a tool's description says)."""
    tools = (ToolEntry("cmp", "Compare a < b & \"c\" > 'd'", ""),)
    text = DynamicPromptRenderer().render(
        identity='Use <tags> & "quotes".', context={}, tools=tools, workspace=WORKSPACE
    )
    assert text.startswith('## identity\nUse <tags> & "quotes".\ncontext: {}\n\n')
    assert "- cmp: Compare a < b & \"c\" > 'd'\n" in text + "\n"


def test_an_override_file_that_renders_empty_names_the_file(project: Path) -> None:
    (project / "tools.md.j2").write_text("{% for t in tools %}{% endfor %}\n", "utf-8")
    overrides = {
        "tools": TemplateOverride(
            "tools", "{% for t in tools %}{% endfor %}\n", project / "tools.md.j2"
        )
    }
    with pytest.raises(TemplateError) as raised:
        DynamicPromptRenderer(overrides).render(
            identity="x", context={}, tools=TOOLS, workspace=WORKSPACE
        )
    assert str(raised.value) == "tools.md.j2:1: the tools section rendered empty"


def test_a_section_from_an_inline_override_says_where_it_came_from(project: Path) -> None:
    """`render --format json` shows where each section's template came from."""
    overrides = {
        "tools": TemplateOverride(
            "tools",
            "{% for t in tools %}* {{ t.name }}\n{% endfor %}",
            manifest=project / "agent.yaml",
            line=9,
        )
    }
    rendered = DynamicPromptRenderer(overrides).render_sections(
        identity="x", context={}, tools=TOOLS, workspace=WORKSPACE
    )
    assert [(s.name, s.template) for s in rendered.sections] == [
        ("identity", "default identity template"),
        ("tools", "manifest prompt.tools.template"),
        ("workspace", "default workspace template"),
    ]


def test_an_inline_override_of_unknown_line_counts_from_the_manifests_first(
    project: Path,
) -> None:
    overrides = {
        "tools": TemplateOverride("tools", "{{ 1 / 0 }}", manifest=project / "agent.yaml", line=0)
    }
    with pytest.raises(TemplateError) as raised:
        DynamicPromptRenderer(overrides).render(
            identity="x", context={}, tools=TOOLS, workspace=WORKSPACE
        )
    assert str(raised.value).startswith("agent.yaml:1: prompt.tools.template: ")


def test_a_syntax_error_is_reported_on_its_own_line(project: Path) -> None:
    manifest = """\
        version: 1
        name: demo
        identity: x
        prompt:
          tools:
            template: |
              {% for t in tools %}- {{ t.name }}
              {% endfor %}
              {% if %}
        """
    [line] = validate(manifest)
    assert line.startswith("agent.yaml:9:7: error: template syntax error: ")
