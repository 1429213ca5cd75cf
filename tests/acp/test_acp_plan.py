"""The plan over ACP (issue 27): the SDK's own client sees `todo_write` as a `plan`
update with every entry; a wrong list fails the call (the model reads why) and sends
no plan; a resumed or loaded session sends the plan it had."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from acp.schema import AgentPlanUpdate, ToolCallProgress
from acp_harness import Editor, serving

SCRIPT = """\
- tool_calls:
  - name: todo_write
    arguments:
      todos:
        - {content: Read the notes, status: completed}
        - {content: Fix the fee, status: in_progress, priority: high}
        - {content: Run the tests, status: pending, priority: low}
- tool_calls: [{name: todo_write, arguments: {todos: [{content: Fix, status: done}]}}]
- tool_calls: [{name: todo_write, arguments: {todos: "fix it"}}]
- text: Planned.
"""

EXPECTED = [
    {"content": "Read the notes", "status": "completed", "priority": "medium"},
    {"content": "Fix the fee", "status": "in_progress", "priority": "high"},
    {"content": "Run the tests", "status": "pending", "priority": "low"},
]


def project(root: Path) -> Path:
    (root / "work").mkdir()
    (root / "script.yaml").write_text(SCRIPT)
    (root / "again.yaml").write_text("- text: Still planned.\n")
    path = root / "agent.yaml"
    path.write_text(
        "version: 1\nname: planner\nidentity: You plan.\nmodel: scripted:script.yaml\n"
        "workspace: work\ntools:\n  sets: [readonly, todo]\n"
    )
    return path


def entries(update: AgentPlanUpdate) -> list[dict[str, Any]]:
    return [e.model_dump(mode="json", exclude_none=True) for e in update.entries]


def plans(editor: Editor, session: str) -> list[AgentPlanUpdate]:
    return [u for sid, u in editor.updates if sid == session and isinstance(u, AgentPlanUpdate)]


def test_the_plan_reaches_the_editor_and_a_wrong_list_fails_the_call(tmp_path: Path) -> None:
    agent = project(tmp_path)
    sessions = tmp_path / "sessions"
    editor = Editor()

    async def scenario() -> tuple[str, str]:
        async with serving(agent, "--session-dir", str(sessions), editor=editor) as acp:
            session = await acp.start(tmp_path / "work")
            answer = await acp.prompt(session, "Plan the fix.")
            return session, answer.stop_reason

    session, stop = asyncio.run(scenario())
    assert stop == "end_turn"
    sent = plans(editor, session)
    assert [entries(u) for u in sent] == [EXPECTED]
    # the plan comes after the call that wrote it ended
    updates = editor.of(session)
    first_end = next(
        i for i, u in enumerate(updates) if isinstance(u, ToolCallProgress) and u.status
    )
    assert updates.index(sent[0]) == first_end + 1
    failed = [u for u in editor.progress(session) if u.status == "failed"]
    said = [block.content.text for u in failed for block in u.content or []]
    assert said == [
        "todos[0].status must be one of pending, in_progress, completed, not 'done'",
        "argument 'todos' must be a list of items, not a string",
    ]
    assert editor.text(session) == "Planned."

    # a new process: resume and load both show the plan the session has
    resumed, loaded = Editor(), Editor()
    args = ("--session-dir", str(sessions), "--model", "scripted:again.yaml")

    async def reopen(client: Editor, how: str) -> None:
        async with serving(agent, *args, editor=client) as acp:
            await acp.conn.initialize(protocol_version=1)
            if how == "resume":
                await acp.conn.resume_session(cwd=str(tmp_path), session_id=session)
            else:
                await acp.conn.load_session(cwd=str(tmp_path), session_id=session, mcp_servers=[])
            await client.until(lambda: plans(client, session), "the plan")

    asyncio.run(reopen(resumed, "resume"))
    assert [entries(u) for u in plans(resumed, session)] == [EXPECTED]
    asyncio.run(reopen(loaded, "load"))
    assert [entries(u) for u in plans(loaded, session)] == [EXPECTED]
    # load replays the history first: the plan is not sent before the conversation
    history = loaded.of(session)
    assert history.index(plans(loaded, session)[0]) > 0
