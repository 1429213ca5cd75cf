"""Issue 20, item 15: `read` deny rules govern every tool that shows file content or
names: `grep` does not print a denied file's lines, `find` and `ls` do not list it.

A real agent on a real temporary workspace, driven by a scripted model.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from clirun import assemble

from assembler.agent.build import build_agent
from assembler.runner.events import ToolCallResult
from assembler.testing import ScriptedModel, reply, text, tool_call

SECRET = "TOKEN=hunter2-do-not-show"


def workspace(root: Path) -> Path:
    work = root / "work"
    (work / "secrets").mkdir(parents=True)
    (work / "secrets" / "prod.env").write_text(SECRET + "\n")
    (work / "src").mkdir()
    (work / "src" / "app.py").write_text("TOKEN = read_from_env()\n")
    (work / ".env").write_text(SECRET + "\n")
    manifest = root / "agent.yaml"
    manifest.write_text(
        "version: 1\nname: lister\nidentity: You look.\nworkspace: work\n"
        "tools:\n  sets:\n    - builtin: [read, grep, find, ls]\n"
        "permissions:\n  deny: ['read(secrets/**)', 'read(*.env)', 'read(.env)']\n"
    )
    return manifest


def results(manifest: Path, *calls: object) -> list[ToolCallResult]:
    agent = build_agent(
        manifest,
        provider=ScriptedModel([reply(*calls), text("done")]),  # type: ignore[arg-type]
        record_session=False,
    )

    async def go() -> list[ToolCallResult]:
        async with agent:
            return [e async for e in agent.stream("look") if isinstance(e, ToolCallResult)]

    return asyncio.run(go())


def test_grep_does_not_show_the_lines_of_a_denied_file(tmp_path: Path) -> None:
    (everywhere, inside) = results(
        workspace(tmp_path),
        tool_call("grep", pattern="TOKEN"),
        tool_call("grep", pattern="TOKEN", path="secrets"),
    )
    assert "src/app.py:1" in everywhere.content
    assert "hunter2" not in everywhere.content and "prod.env" not in everywhere.content
    assert "hunter2" not in inside.content


def test_find_and_ls_do_not_list_denied_paths(tmp_path: Path) -> None:
    found, listed, hidden_dir = results(
        workspace(tmp_path),
        tool_call("find", pattern="*"),
        tool_call("ls", path="."),
        tool_call("ls", path="secrets"),
    )
    assert "src/app.py" in found.content
    assert "prod.env" not in found.content and ".env" not in found.content.split()
    assert "src/" in listed.content
    assert "secrets/" not in listed.content and ".env" not in listed.content.split("\n")
    assert "prod.env" not in hidden_dir.content


def test_read_itself_is_still_denied(tmp_path: Path) -> None:
    (denied,) = results(workspace(tmp_path), tool_call("read", path="secrets/prod.env"))
    assert not denied.executed and "hunter2" not in denied.content


def test_validate_warns_where_read_rules_do_not_reach(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = workspace(tmp_path)
    text = manifest.read_text()
    quiet = assemble(capsys, "validate", str(manifest))
    assert quiet.code == 0 and "can still read them" not in quiet.out
    manifest.write_text(text.replace("[read, grep, find, ls]", "[read, grep, bash]"))
    loud = assemble(capsys, "validate", str(manifest))
    assert loud.code == 0
    assert "`read(secrets/**)` hides files from `read`, `grep`, `find` and `ls` only" in loud.out
    assert "`bash` (`cat`, `head`, ...) can still read them" in loud.out
    manifest.write_text(
        text.replace("[read, grep, find, ls]", "[read, grep, bash]").replace(
            "deny: [", "deny: [bash, "
        )
    )
    assert "can still read them" not in assemble(capsys, "validate", str(manifest)).out
