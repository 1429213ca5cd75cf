"""Compiled section templates kept between runs (issue 21, `prompt.code_cache`): kept
by a renderer that may keep them, used by any, never written by a dry run, refused
from a directory others could write, compiled again when damaged.

Real files in the test's own cache directory; compilations are counted at Jinja2's
`Environment.parse`, which only a compilation calls.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import jinja2
import pytest

from assembler.prompt import code_cache
from assembler.prompt.renderer import DynamicPromptRenderer, WorkspaceView
from assembler.prompt.templates import compile_template
from assembler.tools.registry import ToolEntry
from assembler.user_dirs import default_cache_dir


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    seen: list[str] = []
    real = jinja2.Environment.parse

    def counting(self: jinja2.Environment, source: str, *args: object) -> object:
        seen.append(source)
        return real(self, source, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(jinja2.Environment, "parse", counting)
    compile_template.cache_clear()  # the process-wide memo, not the kept files
    yield seen
    compile_template.cache_clear()


def render(renderer: DynamicPromptRenderer) -> str:
    return renderer.render(
        identity="You help.",
        context={"k": 1},
        tools=(ToolEntry("read", "Read a file", "Read."),),
        workspace=WorkspaceView("/ws"),
    )


def kept_files() -> list[Path]:
    folder = default_cache_dir() / code_cache.TEMPLATES_DIR
    return sorted(folder.glob("*.code")) if folder.exists() else []


def test_a_running_agent_keeps_its_templates_and_a_dry_run_uses_them(
    parses: list[str],
) -> None:
    dry = render(DynamicPromptRenderer())
    assert len(parses) == 3 and kept_files() == []  # identity, tools, workspace; no writes
    running = render(DynamicPromptRenderer(keep_compiled=True))
    assert running == dry
    assert len(kept_files()) == 3
    compile_template.cache_clear()
    parses.clear()
    assert render(DynamicPromptRenderer()) == dry  # as a new process would
    assert parses == []  # loaded, not compiled


def test_a_damaged_kept_file_is_compiled_again(parses: list[str]) -> None:
    expected = render(DynamicPromptRenderer(keep_compiled=True))
    for path in kept_files():
        path.write_bytes(b"\x00not marshal data")
    compile_template.cache_clear()
    parses.clear()
    assert render(DynamicPromptRenderer(keep_compiled=True)) == expected
    assert len(parses) == 3


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")
def test_a_cache_directory_others_can_write_is_not_used(parses: list[str]) -> None:
    render(DynamicPromptRenderer(keep_compiled=True))
    folder = default_cache_dir() / code_cache.TEMPLATES_DIR
    folder.chmod(0o777)
    try:
        compile_template.cache_clear()
        parses.clear()
        render(DynamicPromptRenderer(keep_compiled=True))
        assert len(parses) == 3  # compiled: nothing loaded from there
    finally:
        folder.chmod(0o700)


def test_an_override_is_kept_under_its_own_text(parses: list[str]) -> None:
    from assembler.manifest.model import TemplateOverride

    one = DynamicPromptRenderer(
        {"tools": TemplateOverride("tools", "{% for t in tools %}* {{ t.name }}{% endfor %}")},
        keep_compiled=True,
    )
    two = DynamicPromptRenderer(
        {"tools": TemplateOverride("tools", "{% for t in tools %}+ {{ t.name }}{% endfor %}")},
        keep_compiled=True,
    )
    assert "* read" in render(one) and "+ read" in render(two)
    assert len(kept_files()) == 4  # identity, workspace, and each override


def test_render_dry_run_keeps_nothing_and_a_run_keeps_its_templates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Through the commands: `render --dry-run` writes nothing to the user's cache; a
    run keeps its compiled sections for the next one."""
    from clirun import assemble

    compile_template.cache_clear()
    (tmp_path / "ws").mkdir()
    (tmp_path / "replies.yaml").write_text("- text: Done.\n")
    manifest = tmp_path / "agent.yaml"
    manifest.write_text(
        "version: 1\nname: cached\nidentity: You help.\nworkspace: ws\n"
        "model: scripted:replies.yaml\n"
    )
    dry = assemble(capsys, "render", "--dry-run", str(manifest))
    assert dry.code == 0, dry.err
    assert kept_files() == []
    ran = assemble(capsys, "run", str(manifest), "--trust", "--no-session", "-p", "Go.")
    assert ran.code == 0, ran.err
    assert kept_files() != []
