"""Pins for what `grep`, `find` and `ls` leave out (`permissions/hidden.py`): a bare
`read` deny hides everything, an `ask` on `read` hides like a deny but under
`--permission-mode bypass`, and a rule on an MCP server's tools hides nothing
(found by mutation testing, docs/testing.md).

A real agent on a real temporary workspace, driven by a scripted model."""

from __future__ import annotations

import asyncio
from pathlib import Path

from assembler.agent.build import build_agent
from assembler.permissions import PermissionMode
from assembler.runner.events import ToolCallResult
from assembler.testing import ScriptedModel, reply, text, tool_call

SECRET = "TOKEN=hunter2-do-not-show"


def listing(
    root: Path, permissions: str, mode: PermissionMode = "default", **where: str
) -> tuple[str, str]:
    """What `find` and `grep` over the workspace (or `path`) show under `permissions`."""
    work = root / "work"
    (work / "secrets").mkdir(parents=True)
    (work / "secrets" / "prod.env").write_text(SECRET + "\n")
    (work / "src").mkdir()
    (work / "src" / "app.py").write_text("TOKEN = read_from_env()\n")
    manifest = root / "agent.yaml"
    manifest.write_text(
        "version: 1\nname: lister\nidentity: You look.\nworkspace: work\n"
        "tools:\n  sets:\n    - builtin: [read, grep, find, ls]\n" + permissions
    )
    agent = build_agent(
        manifest,
        provider=ScriptedModel(
            [
                reply(
                    tool_call("find", pattern="*", **where),
                    tool_call("grep", pattern="TOKEN", **where),
                ),
                text("ok"),
            ]
        ),
        record_session=False,
        permission_mode=mode,
    )

    async def go() -> list[ToolCallResult]:
        async with agent:
            return [e async for e in agent.stream("look") if isinstance(e, ToolCallResult)]

    found, grepped = asyncio.run(go())
    return found.content, grepped.content


def test_a_bare_read_deny_hides_every_file(tmp_path: Path) -> None:
    found, grepped = listing(tmp_path / "a", "permissions:\n  deny: [read]\n")
    hidden = "is hidden by the manifest's `read` deny rules: its content and names are not shown"
    assert found == grepped == f". {hidden}"
    found, grepped = listing(tmp_path / "b", "permissions:\n  deny: [read]\n", path="src")
    assert found == grepped == f"src {hidden}"


def test_an_ask_on_read_hides_like_a_deny(tmp_path: Path) -> None:
    found, grepped = listing(tmp_path, "permissions:\n  ask: ['read(secrets/**)']\n")
    assert "src/app.py" in found and "src/app.py" in grepped
    assert "prod.env" not in found and "hunter2" not in grepped


def test_under_bypass_an_ask_on_read_hides_nothing_but_a_deny_still_does(tmp_path: Path) -> None:
    asked = tmp_path / "asked"
    asked.mkdir()
    found, grepped = listing(asked, "permissions:\n  ask: ['read(secrets/**)']\n", "bypass")
    assert "secrets/prod.env" in found and "hunter2" in grepped
    denied = tmp_path / "denied"
    denied.mkdir()
    found, grepped = listing(denied, "permissions:\n  deny: ['read(secrets/**)']\n", "bypass")
    assert "prod.env" not in found and "hunter2" not in grepped


def test_a_rule_on_an_mcp_servers_tools_hides_nothing_from_the_builtins(tmp_path: Path) -> None:
    found, grepped = listing(tmp_path, "permissions:\n  deny: ['mcp:files']\n")
    assert "secrets/prod.env" in found and "hunter2" in grepped
