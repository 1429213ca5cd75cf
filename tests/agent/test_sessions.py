"""Sessions in the SDK: continue, steer, follow up, compact and fork (issue 13).

Scripted models, real session files, real tools on a temporary workspace.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from assembler.agent import Agent, build_agent
from assembler.errors import ContextOverflowError, SessionError
from assembler.messages import (
    AssistantMessage,
    ModelRequest,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from assembler.runner.calls import SKIPPED_FOR_STEER
from assembler.runner.compaction import SUMMARY_SYSTEM_PROMPT, summary_message
from assembler.runner.events import Compacted, RunEnd, ToolCallResult, UserMessageDelivered
from assembler.sessions.context import INTERRUPTED
from assembler.sessions.store import Session
from assembler.testing import FunctionModel, ScriptedModel, reply, text, tool_call


def manifest(tmp_path: Path, extra: str = "") -> Path:
    (tmp_path / "work").mkdir(exist_ok=True)
    (tmp_path / "work" / "notes.txt").write_text("hello\n")
    path = tmp_path / "agent.yaml"
    path.write_text(
        "version: 1\nname: sessions-test\nidentity: You help.\nworkspace: work\n"
        "tools:\n  sets: [{builtin: readonly}]\n" + extra,
        "utf-8",
    )
    return path


def build(tmp_path: Path, model: Any, extra: str = "", **kw: Any) -> Agent:
    return build_agent(
        manifest(tmp_path, extra), provider=model, session_dir=tmp_path / "sessions", **kw
    )


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def user_texts(request: ModelRequest) -> list[str]:
    return [m.content for m in request.messages if isinstance(m, UserMessage)]


# -- continuing a session --------------------------------------------------------------


def test_a_resumed_session_sends_exactly_what_was_sent_before(tmp_path: Path) -> None:
    first = ScriptedModel([tool_call("read", path="notes.txt"), text("It says hello.")])
    agent = build(tmp_path, first)
    run(agent.prompt("What is in notes.txt?"))
    run(agent.aclose())
    assert agent.session is not None
    sent = first.last_request

    second = ScriptedModel([text("Yes.")])
    resumed = build(tmp_path, second, session=agent.session.id[:12])
    assert resumed.session is not None and resumed.session.path == agent.session.path
    run(resumed.prompt("Are you sure?"))
    request = second.last_request
    assert request.system == sent.system  # byte-identical system prompt
    assert request.messages[: len(sent.messages) + 1] == (
        *sent.messages,
        AssistantMessage("It says hello."),
    )
    assert request.messages[-1] == UserMessage("Are you sure?")


def test_a_session_of_another_agent_is_refused(tmp_path: Path) -> None:
    agent = build(tmp_path, ScriptedModel([text("hi")]))
    assert agent.session is not None
    other = tmp_path / "other.yaml"
    other.write_text(
        manifest(tmp_path).read_text().replace("name: sessions-test", "name: other"), "utf-8"
    )
    with pytest.raises(SessionError, match="belongs to agent `sessions-test`"):
        build_agent(other, provider=ScriptedModel([]), session=agent.session.path)


def test_a_tool_call_cut_off_by_a_crash_resumes_as_interrupted(tmp_path: Path) -> None:
    agent = build(tmp_path, ScriptedModel([]))
    assert agent.session is not None
    call = ToolCall("call_1", "read", {"path": "notes.txt"})
    agent.session.append_message(UserMessage("read it"))
    agent.session.append_message(AssistantMessage("", (call,)))  # then kill -9

    model = ScriptedModel([text("Sorry, again.")])
    resumed = build(tmp_path, model, session=agent.session.id)
    run(resumed.prompt("go on"))
    messages = model.last_request.messages
    assert messages[2] == ToolResultMessage("call_1", "read", INTERRUPTED, is_error=True)
    # the file itself now holds the answer, so any reader sees a valid transcript
    assert Session.load(agent.session.path).messages()[2] == messages[2]


# -- steering and following up ----------------------------------------------------------------


def test_a_follow_up_arrives_when_the_run_would_end(tmp_path: Path) -> None:
    model = ScriptedModel([text("First answer."), text("Second answer.")])
    agent = build(tmp_path, model)
    agent.follow_up("And in French?")
    result = run(agent.prompt("Say hello."))
    assert result.text == "Second answer."
    assert user_texts(model.requests[0]) == ["Say hello."]
    assert user_texts(model.requests[1]) == ["Say hello.", "And in French?"]
    delivered = [e for e in result.events if isinstance(e, UserMessageDelivered)]
    assert [(e.source, e.text) for e in delivered] == [("follow_up", "And in French?")]


SLOW_TOOL = """\
import asyncio
import pathlib


async def wait(marker: str, seconds: float) -> str:
    \"\"\"Wait a while (tests steer the agent meanwhile).\"\"\"
    pathlib.Path(marker).write_text("started")
    await asyncio.sleep(seconds)
    return "waited"
"""


def slow_agent(tmp_path: Path, model: Any, limits: str = "") -> Agent:
    (tmp_path / "slowtool.py").write_text(SLOW_TOOL, "utf-8")
    extra = "  - python: slowtool:wait\n" + limits
    path = manifest(tmp_path)
    path.write_text(
        path.read_text().replace("tools:\n  sets: [{builtin: readonly}]\n",
                                 "tools:\n  sets:\n  - builtin: readonly\n") + extra,
        "utf-8",
    )  # fmt: skip
    return build_agent(path, provider=model, session_dir=tmp_path / "sessions", trust=True)


async def steer_once_started(agent: Agent, marker: Path, prompt: str, *steers: str) -> list[Any]:
    """Run `prompt`; when the slow tool has started, send `steers` from another task,
    as the interactive CLI and RPC do."""
    events: list[Any] = []

    async def consume() -> None:
        async for event in agent.stream(prompt):
            events.append(event)

    task = asyncio.create_task(consume())
    while not marker.exists():
        await asyncio.sleep(0.01)
    for steer in steers:
        agent.steer(steer)
    await task
    return events


def test_steers_sent_while_a_tool_runs_arrive_after_it_in_order(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    model = ScriptedModel([tool_call("wait", marker=str(marker), seconds=0.3), text("done")])
    agent = slow_agent(tmp_path, model)
    events = run(steer_once_started(agent, marker, "wait", "only .txt files", "and be brief"))
    second = model.requests[1].messages
    assert user_texts(model.requests[1]) == ["wait", "only .txt files", "and be brief"]
    assert second[2] == ToolResultMessage(second[2].tool_call_id, "wait", "waited")  # it ran
    delivered = [e.text for e in events if isinstance(e, UserMessageDelivered)]
    assert delivered == ["only .txt files", "and be brief"]


def test_a_steer_skips_calls_that_have_not_started(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    model = ScriptedModel(
        [
            reply(
                tool_call("wait", marker=str(marker), seconds=0.3),
                tool_call("read", path="notes.txt"),
            ),
            text("ok"),
        ]
    )
    agent = slow_agent(tmp_path, model, "limits: {max_parallel_tools: 1}\n")
    events = run(steer_once_started(agent, marker, "look around", "stop reading"))
    results = [e for e in events if isinstance(e, ToolCallResult)]
    assert [(r.call.name, r.executed, r.content) for r in results] == [
        ("wait", True, "waited"),
        ("read", False, SKIPPED_FOR_STEER),
    ]
    assert user_texts(model.requests[1])[-1] == "stop reading"


def test_a_steer_sent_while_idle_follows_the_next_prompt(tmp_path: Path) -> None:
    model = ScriptedModel([text("ok")])
    agent = build(tmp_path, model)
    agent.steer("use British spelling")
    run(agent.prompt("Write a line."))
    assert user_texts(model.last_request) == ["Write a line.", "use British spelling"]


# -- compaction ---------------------------------------------------------------------------


def long_history(model_steps: list[Any]) -> list[Any]:
    return [
        tool_call("read", path="notes.txt"),
        text("It says hello."),
        text("Second."),
        *model_steps,
    ]


def test_compact_summarises_older_turns_and_keeps_the_last_turn_verbatim(tmp_path: Path) -> None:
    model = ScriptedModel(
        [*long_history([]), text("SUMMARY: read notes.txt, it says hello."), text("Third.")]
    )
    agent = build(tmp_path, model)
    run(agent.prompt("Read notes.txt"))
    run(agent.prompt("Again"))
    system_before = agent.system_prompt()
    compacted = run(agent.compact("keep the file name"))
    assert isinstance(compacted, Compacted)
    summary_request = model.requests[-1]
    assert summary_request.system == SUMMARY_SYSTEM_PROMPT and summary_request.tools == ()
    asked = summary_request.messages[0]
    assert isinstance(asked, UserMessage)
    assert "notes.txt" in asked.content and "keep the file name" in asked.content
    assert "Again" not in asked.content  # the last user turn is kept, not summarised
    assert agent.messages == [
        summary_message("SUMMARY: read notes.txt, it says hello."),
        UserMessage("Again"),
        AssistantMessage("Second."),
    ]
    assert agent.system_prompt() == system_before
    run(agent.prompt("Third?"))
    assert model.last_request.messages[0] == agent.messages[0]
    assert model.last_request.system == system_before

    assert agent.session is not None
    types = [entry.type for entry in agent.session.entries()]
    assert "compaction" in types
    restored = Session.load(agent.session.path).messages()
    assert restored == agent.messages


def test_a_tool_call_and_its_result_are_never_split(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            text("A."),
            reply(tool_call("ls", path=".")),
            reply(tool_call("read", path="notes.txt")),
            text("B."),
            text("the summary"),
        ]
    )
    agent = build(tmp_path, model)
    run(agent.prompt("one"))
    run(agent.prompt("two"))
    run(agent.compact())
    kept = agent.messages[1:]
    assert kept[0] == UserMessage("two")
    calls = {c.id for m in kept if isinstance(m, AssistantMessage) for c in m.tool_calls}
    results = {m.tool_call_id for m in kept if isinstance(m, ToolResultMessage)}
    assert calls == results and len(calls) == 2


def test_nothing_to_compact_before_the_last_user_turn(tmp_path: Path) -> None:
    agent = build(tmp_path, ScriptedModel([text("hi")]))
    run(agent.prompt("hello"))
    assert run(agent.compact()) is None


def test_compaction_starts_when_reported_usage_nears_the_window(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            {"text": "one", "usage": {"input_tokens": 1000, "output_tokens": 5}},
            {"text": "two", "usage": {"input_tokens": 7000, "output_tokens": 5}},
            {"text": "the summary"},
            {"text": "three", "usage": {"input_tokens": 900, "output_tokens": 5}},
        ]
    )
    agent = build(tmp_path, model, extra="limits: {context_window: 8192, compact_reserve: 2048}\n")
    run(agent.prompt("first"))
    run(agent.prompt("second"))
    result = run(agent.prompt("third"))
    compactions = [e for e in result.events if isinstance(e, Compacted)]
    assert [c.reason for c in compactions] == ["threshold"]
    assert compactions[0].tokens_before == 7000
    final = model.last_request.messages
    assert final[0] == summary_message("the summary")
    assert final[-1] == UserMessage("third")
    assert agent.context_fill == (900, 8192)


def test_an_overflow_compacts_and_retries_once_with_a_smaller_request(tmp_path: Path) -> None:
    sizes: list[int] = []

    def model_fn(request: ModelRequest) -> str:
        if request.system == SUMMARY_SYSTEM_PROMPT:
            return "the summary"
        sizes.append(len(request.messages))
        if len(sizes) == 3:
            raise ContextOverflowError("prompt is too long: 210000 tokens > 200000 maximum")
        return f"answer {len(sizes)}"

    agent = build(tmp_path, FunctionModel(model_fn))
    run(agent.prompt("first"))
    run(agent.prompt("second"))
    result = run(agent.prompt("third"))
    assert result.text == "answer 4"
    assert [e.reason for e in result.events if isinstance(e, Compacted)] == ["overflow"]
    assert sizes[3] < sizes[2]


def test_a_second_overflow_ends_the_run_with_an_error(tmp_path: Path) -> None:
    def model_fn(request: ModelRequest) -> str:
        if request.system == SUMMARY_SYSTEM_PROMPT:
            return "the summary"
        if sum(isinstance(m, UserMessage) for m in request.messages) >= 2:
            raise ContextOverflowError("exceeds the available context size")
        return "ok"

    agent = build(tmp_path, FunctionModel(model_fn))
    run(agent.prompt("first"))
    result = run(agent.prompt("second"))
    assert result.reason == "error"


# -- forking ---------------------------------------------------------------------------------


def test_fork_starts_a_new_session_and_leaves_the_original_untouched(tmp_path: Path) -> None:
    model = ScriptedModel([text("A1"), text("A2"), text("B2")])
    agent = build(tmp_path, model)
    run(agent.prompt("Q1"))
    run(agent.prompt("Q2"))
    assert agent.session is not None
    original = agent.session
    before = original.path.read_bytes()
    first_answer = next(
        e
        for e in original.entries()
        if e.type == "message" and e.payload["message"].get("text") == "A1"
    )
    forked = agent.fork(first_answer.id)
    assert forked.path != original.path and agent.session is forked
    assert forked.header["parent_session"] == original.id
    assert agent.messages == [UserMessage("Q1"), AssistantMessage("A1")]
    run(agent.prompt("Q2 again"))
    assert original.path.read_bytes() == before
    assert Session.load(forked.path).messages()[-1] == AssistantMessage("B2")


def test_run_result_carries_usage_totals_and_the_session(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            {"tool_calls": [{"name": "ls", "arguments": {"path": "."}}], "usage": {
                "input_tokens": 100, "output_tokens": 10, "cache_read_tokens": 80}},
            {"text": "done", "usage": {"input_tokens": 120, "output_tokens": 5}},
        ]
    )  # fmt: skip
    agent = build(tmp_path, model)
    result = run(agent.prompt("go"))
    assert result.usage == Usage(220, 15, 80, 0)
    assert agent.session is not None and result.session_id == agent.session.id
    end = next(e for e in result.events if isinstance(e, RunEnd))
    assert end.to_dict()["usage"]["cache_read_tokens"] == 80
    usage_entries = [
        e.payload.get("usage") for e in agent.session.entries() if "usage" in e.payload
    ]
    assert usage_entries[0] == {
        "input_tokens": 100,
        "output_tokens": 10,
        "cache_read_tokens": 80,
        "cache_write_tokens": 0,
    }
