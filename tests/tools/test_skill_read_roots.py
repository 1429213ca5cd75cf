"""The skill directories are readable by `read`, `grep`, `find` and `ls`, never
writable, and no link or `..` leads out of them (issue 12).

Before: the prompt told the model to read `/.../agents/skills/x/SKILL.md` and `read`
refused it as outside the workspace.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from assembler.agent.build import build_agent
from assembler.testing import ScriptedModel, text, tool_call
from assembler.tools.base import ToolContext, ToolResult
from assembler.tools.builtin.sets import BUILTIN_TOOLS
from assembler.validation.load import load_manifest


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """agents/ (manifest and skills) beside ws/ (the workspace), and a secret outside both."""
    skill = tmp_path / "agents" / "skills" / "deploy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: deploy\ndescription: How to deploy\n---\nRun `make deploy`.\n", "utf-8"
    )
    (skill / "notes.txt").write_text("deploy notes\n", "utf-8")
    (tmp_path / "ws").mkdir()
    (tmp_path / "secret.txt").write_text("TOP SECRET\n", "utf-8")
    (skill / "leak.txt").symlink_to(tmp_path / "secret.txt")
    (tmp_path / "agents" / "agent.yaml").write_text(
        "version: 1\nname: a\nidentity: You deploy.\nworkspace: ../ws\nskills: [skills]\n"
        "tools: {sets: [all]}\n",
        "utf-8",
    )
    return tmp_path


def _context(project: Path) -> ToolContext:
    return ToolContext(workspace=project / "ws", read_roots=(project / "agents" / "skills",))


def run(name: str, ctx: ToolContext, **args: Any) -> ToolResult:
    return asyncio.run(BUILTIN_TOOLS[name].execute(args, ctx))


def test_the_model_reads_the_skill_file_the_prompt_names(project: Path) -> None:
    manifest = load_manifest(project / "agents" / "agent.yaml")
    skill_md = (project / "agents" / "skills" / "deploy" / "SKILL.md").resolve()
    model = ScriptedModel([tool_call("read", path=str(skill_md)), text("Deployed.")])
    agent = build_agent(manifest, provider=model, trust=True, record_session=False)
    assert f"(file: `{skill_md}`)" in agent.system_prompt()
    result = asyncio.run(agent.prompt("deploy"))
    outcome = next(e for e in result.events if e.kind == "tool_result")
    assert not outcome.is_error, outcome.content
    assert "Run `make deploy`." in outcome.content
    model.assert_consumed()


def test_without_read_roots_the_skill_file_is_refused(project: Path) -> None:
    skill_md = project / "agents" / "skills" / "deploy" / "SKILL.md"
    result = run("read", ToolContext(workspace=project / "ws"), path=str(skill_md))
    assert result.is_error and "outside the workspace" in result.content


def test_grep_find_and_ls_work_in_a_skill_directory(project: Path) -> None:
    ctx = _context(project)
    skills = (project / "agents" / "skills").resolve()
    grep = run("grep", ctx, pattern="deploy", path=str(skills))
    assert not grep.is_error, grep.content
    assert f"{skills}/deploy/notes.txt:1: deploy notes" in grep.content
    assert "SECRET" not in grep.content  # the link leading out is skipped
    found = run("find", ctx, pattern="*.md", path=str(skills))
    assert found.content == f"{skills}/deploy/SKILL.md"
    listing = run("ls", ctx, path=str(skills / "deploy"))
    assert listing.content.splitlines() == ["SKILL.md", "leak.txt", "notes.txt"]


@pytest.mark.parametrize("name", ["write", "edit"])
def test_a_skill_file_is_never_written(project: Path, name: str) -> None:
    skill_md = project / "agents" / "skills" / "deploy" / "SKILL.md"
    before = skill_md.read_bytes()
    args = {"content": "x"} if name == "write" else {"old_text": "Run", "new_text": "Skip"}
    result = run(name, _context(project), path=str(skill_md), **args)
    assert result.is_error
    assert "can be read but not changed" in result.content
    assert skill_md.read_bytes() == before
    new = run("write", _context(project), path=str(skill_md.parent / "new.txt"), content="x")
    assert new.is_error and not (skill_md.parent / "new.txt").exists()


@pytest.mark.parametrize(
    "path",
    [
        "{skills}/deploy/leak.txt",  # a link inside the skill directory, pointing out
        "{skills}/deploy/../../../secret.txt",  # `..` out of it
        "{skills}/../agent.yaml",  # the manifest beside the skills, not a skill
        "{skills}-evil/x.txt",  # a sibling whose name starts the same
    ],
)
def test_nothing_leads_out_of_a_skill_directory(project: Path, path: str) -> None:
    skills = project / "agents" / "skills"
    (project / "agents" / "skills-evil").mkdir()
    (project / "agents" / "skills-evil" / "x.txt").write_text("evil\n", "utf-8")
    result = run("read", _context(project), path=path.format(skills=skills))
    assert result.is_error
    assert "outside the workspace" in result.content
    assert "TOP SECRET" not in result.content


def test_a_relative_path_still_means_the_workspace(project: Path) -> None:
    (project / "ws" / "SKILL.md").write_text("workspace file\n", "utf-8")
    result = run("read", _context(project), path="SKILL.md")
    assert result.content.startswith("workspace file\n")
