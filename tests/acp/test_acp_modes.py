"""The permission modes as ACP session modes: offered with each session, switched with
`session/set_mode`, announced with `current_mode_update`, and deciding the next
call; a deny rule holds in every mode."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from acp import RequestError
from acp.schema import CurrentModeUpdate
from acp_harness import Editor, manifest, serving

from assembler.acp.modes import MODES
from assembler.permissions.policy import PERMISSION_MODES

RULES = "permissions:\n  ask: [write]\n  deny: ['bash(rm *)']\nlimits:\n  permission_timeout: 5\n"

WRITES = """\
- tool_calls: [{name: write, arguments: {path: one.txt, content: "1"}}]
- text: Tried one.
- tool_calls: [{name: write, arguments: {path: two.txt, content: "2"}}]
- text: Tried two.
- tool_calls: [{name: write, arguments: {path: three.txt, content: "3"}}]
- text: Tried three.
- tool_calls: [{name: bash, arguments: {command: rm -f one.txt}}]
- text: Tried rm.
"""


def test_the_modes_are_the_permission_modes() -> None:
    assert tuple(mode.id for mode in MODES) == PERMISSION_MODES


def test_switching_modes_decides_the_next_call(tmp_path: Path) -> None:
    agent = manifest(tmp_path, WRITES, extra=RULES)
    work = tmp_path / "work"
    editor = Editor(answer="reject_once")

    async def scenario() -> None:
        async with serving(agent, "--no-session", editor=editor) as acp:
            await acp.conn.initialize(protocol_version=1)
            created = await acp.conn.new_session(cwd="/", mcp_servers=[])
            session = created.session_id
            assert created.modes is not None
            assert created.modes.current_mode_id == "default"
            assert [m.id for m in created.modes.available_modes] == list(PERMISSION_MODES)
            # default: the editor is asked (and refuses)
            await acp.prompt(session, "One.")
            assert len(editor.asked) == 1 and not (work / "one.txt").exists()
            # deny-asks: refused without asking
            await acp.conn.set_session_mode(session_id=session, mode_id="deny-asks")
            await editor.until(lambda: _modes(editor, session) == ["deny-asks"], "the update")
            await acp.prompt(session, "Two.")
            assert len(editor.asked) == 1 and not (work / "two.txt").exists()
            assert "deny-asks" in str(editor.progress(session)[-1].content)
            # bypass: runs without asking; a deny rule still holds
            await acp.conn.set_session_mode(session_id=session, mode_id="bypass")
            await acp.prompt(session, "Three.")
            assert (work / "three.txt").read_text() == "3" and len(editor.asked) == 1
            await acp.prompt(session, "Remove.")
            removal = editor.progress(session)[-1]
            assert removal.status == "failed" and "bash(rm *)" in str(removal.content)
            await editor.until(lambda: len(_modes(editor, session)) == 2, "the second update")
            assert _modes(editor, session) == ["deny-asks", "bypass"]
            with pytest.raises(RequestError) as wrong:
                await acp.conn.set_session_mode(session_id=session, mode_id="yolo")
            assert wrong.value.code == -32602
            assert "default, accept-edits, deny-asks, bypass" in str(wrong.value)

    asyncio.run(scenario())
    assert sorted(p.name for p in work.iterdir()) == ["three.txt"]


def test_the_first_mode_comes_from_the_command_line(tmp_path: Path) -> None:
    """`--permission-mode accept-edits`, with an agent that has no rules at all: the
    mode is still offered and switchable, and the editor hears each switch."""
    agent = manifest(tmp_path, "- text: unused\n")
    editor = Editor()

    async def scenario() -> None:
        async with serving(
            agent, "--no-session", "--permission-mode", "accept-edits", editor=editor
        ) as acp:
            await acp.conn.initialize(protocol_version=1)
            created = await acp.conn.new_session(cwd="/", mcp_servers=[])
            assert created.modes is not None
            assert created.modes.current_mode_id == "accept-edits"
            session = created.session_id
            await acp.conn.set_session_mode(session_id=session, mode_id="default")
            await editor.until(lambda: _modes(editor, session) == ["default"], "the update")
            with pytest.raises(RequestError, match="no session"):
                await acp.conn.set_session_mode(session_id="nope", mode_id="default")

    asyncio.run(scenario())


def _modes(editor: Editor, session: str) -> list[str]:
    return [
        u.current_mode_id for u in editor.announced(session) if isinstance(u, CurrentModeUpdate)
    ]
