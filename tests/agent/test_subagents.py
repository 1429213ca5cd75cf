"""Sub-agents in the SDK: a manifest delegates to another through the tool `NAME(task)`.

Real manifests on a temporary project, scripted models (from the manifests' own
script files, or given to a child through `Subagent.model`), real session files,
real tools and real subprocesses.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from procs import live_processes_with

from assembler.agent import Agent, build_agent
from assembler.errors import ManifestError, ProviderError, TrustError
from assembler.messages import AssistantMessage, ModelRequest, ToolResultMessage, UserMessage
from assembler.runner.events import (
    Event,
    RunEnd,
    SubagentEvent,
    ToolCallProposed,
    ToolCallResult,
)
from assembler.sessions.store import SessionStore
from assembler.sessions.trace import format_trace_record, read_trace
from assembler.testing import FunctionModel, ScriptedModel, reply, text, tool_call
from assembler.trust import TrustStore

LEAD = """\
version: 1
name: lead
identity: You lead. Hand reviews to `reviewer`.
workspace: work
tools:
  sets:
    - readonly
    - agent: reviewer.yaml
{entry}{extra}"""

REVIEWER = """\
version: 1
name: reviewer
description: Reviews a file and lists problems.
identity: You review files.
model: scripted:reviewer.script.yaml
workspace: review
tools:
  sets: [readonly]
{extra}"""

REVIEWER_SCRIPT = """\
- tool_calls: [{name: read, arguments: {path: code.py}}]
- text: "code.py:1: x is never used."
"""


def project(
    tmp_path: Path,
    *,
    entry: str = "",
    lead: str = "",
    reviewer: str = "",
    script: str = REVIEWER_SCRIPT,
) -> Path:
    """lead.yaml delegating to reviewer.yaml, each with its own workspace."""
    for name in ("work", "review"):
        (tmp_path / name).mkdir(exist_ok=True)
    (tmp_path / "work" / "notes.txt").write_text("lead's file\n")
    (tmp_path / "review" / "code.py").write_text("x = 1\n")
    (tmp_path / "reviewer.yaml").write_text(REVIEWER.format(extra=reviewer))
    (tmp_path / "reviewer.script.yaml").write_text(script)
    (tmp_path / "lead.yaml").write_text(LEAD.format(entry=entry, extra=lead))
    return tmp_path / "lead.yaml"


def build(tmp_path: Path, model: Any, **kw: Any) -> Agent:
    """The lead, built with the test's model. The reviewer's replay calls tools, which
    makes it code: the test's own, so trusted, unless the test is about that question."""
    if "ask_trust" not in kw and "trust" not in kw:
        kw["trust"] = True
    return build_agent(
        tmp_path / "lead.yaml", provider=model, session_dir=tmp_path / "sessions", **kw
    )


def delegate(task: str = "Review code.py.", name: str = "reviewer") -> AssistantMessage:
    return tool_call(name, task=task)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


async def collect(agent: Agent, prompt: str) -> list[Event]:
    try:
        return [event async for event in agent.stream(prompt)]
    finally:
        await agent.aclose()


def results(events: list[Event]) -> list[ToolCallResult]:
    return [e for e in events if isinstance(e, ToolCallResult)]


# -- the round trip ----------------------------------------------------------------------


def test_a_delegation_builds_the_child_runs_it_and_returns_its_answer(tmp_path: Path) -> None:
    project(tmp_path)
    lead_model = ScriptedModel([delegate(), text("The reviewer found an unused x.")])
    agent = build(tmp_path, lead_model)
    with lead_model:
        events = run(collect(agent, "Get code.py reviewed."))
    end = events[-1]
    assert isinstance(end, RunEnd) and end.reason == "completed"
    assert end.text == "The reviewer found an unused x."
    (result,) = results(events)
    assert (result.content, result.is_error) == ("code.py:1: x is never used.", False)
    assert result.details["agent"] == "lead/reviewer"
    assert result.details["reason"] == "completed" and result.details["turns"] == 2
    # the parent's model saw exactly the child's answer as the tool result
    sent = lead_model.last_request.messages[-1]
    assert sent == ToolResultMessage("call_1_1", "reviewer", "code.py:1: x is never used.")
    # the child read its own workspace (review/), not the lead's (work/)
    child_session = SessionStore(tmp_path / "sessions").open(result.details["session"])
    child_messages = child_session.messages()
    assert child_messages[0] == UserMessage("Review code.py.")  # the task is all it knows
    read_result = child_messages[2]
    assert isinstance(read_result, ToolResultMessage) and "x = 1" in read_result.content


def test_the_sub_agent_tool_is_in_the_catalog_and_schemas_in_manifest_order(
    tmp_path: Path,
) -> None:
    project(tmp_path)
    lead_model = ScriptedModel([text("Nothing to do.")])
    agent = build(tmp_path, lead_model)
    run(collect(agent, "hi"))
    request = lead_model.last_request
    assert [t.name for t in request.tools] == ["read", "grep", "find", "ls", "reviewer"]
    schema = request.tools[-1]
    assert schema.description == "Reviews a file and lists problems."
    assert schema.parameters["required"] == ["task"]
    catalog = request.system.split("## tools\n", 1)[1].split("\n\n", 1)[0]
    assert catalog.splitlines()[-1] == "- reviewer: Reviews a file and lists problems."


def test_name_and_description_of_the_entry_replace_the_childs(tmp_path: Path) -> None:
    project(tmp_path, entry="      name: critic\n      description: Finds faults.\n")
    lead_model = ScriptedModel([delegate(name="critic"), text("ok")])
    agent = build(tmp_path, lead_model)
    events = run(collect(agent, "go"))
    assert [(t.name, t.description) for t in lead_model.requests[0].tools][-1] == (
        "critic",
        "Finds faults.",
    )
    assert results(events)[0].details["agent"] == "lead/critic"


def test_the_answer_is_cut_like_other_tool_output(tmp_path: Path) -> None:
    long_answer = "\n".join(f"problem {n}" for n in range(1, 3001))
    project(
        tmp_path,
        lead="limits: {max_output_lines: 10}\n",
        script=f"- text: {json.dumps(long_answer)}\n",
    )
    agent = build(tmp_path, ScriptedModel([delegate(), text("ok")]))
    (result,) = results(run(collect(agent, "go")))
    lines = result.content.splitlines()
    assert lines[:10] == [f"problem {n}" for n in range(1, 11)]
    assert (
        lines[10]
        == "[output truncated: showing lines 1-10 of 3000 (10-line limit); 2990 lines cut]"
    )
    assert len(lines) == 11


def test_workspace_inherit_runs_the_child_in_the_parents_workspace(tmp_path: Path) -> None:
    project(
        tmp_path,
        entry="      workspace: inherit\n",
        script="- tool_calls: [{name: read, arguments: {path: notes.txt}}]\n- text: read it\n",
    )
    agent = build(tmp_path, ScriptedModel([delegate(), text("ok")]))
    assert agent.subagents[0].manifest.workspace == tmp_path / "work"
    (result,) = results(run(collect(agent, "go")))
    child = SessionStore(tmp_path / "sessions").open(result.details["session"])
    assert child.header["workspace"] == str((tmp_path / "work").resolve())
    assert "lead's file" in child.messages()[2].content  # type: ignore[union-attr]


# -- events ---------------------------------------------------------------------------


def test_child_events_reach_the_parent_stream_tagged_with_its_path_while_it_runs(
    tmp_path: Path,
) -> None:
    project(tmp_path)
    agent = build(tmp_path, ScriptedModel([delegate(), text("ok")]))
    events = run(collect(agent, "go"))
    kinds = [type(e).__name__ for e in events]
    proposed = kinds.index("ToolCallProposed")
    result = kinds.index("ToolCallResult")
    tagged = [(i, e) for i, e in enumerate(events) if isinstance(e, SubagentEvent)]
    assert tagged and all(proposed < i < result for i, _ in tagged)
    assert {e.path for _, e in tagged} == {"lead/reviewer"}
    assert {e.call_id for _, e in tagged} == {"call_1_1"}
    inner = [e.event for _, e in tagged]
    assert isinstance(inner[0], type(events[0]))  # the child's own run_start comes first
    assert [e.call.name for e in inner if isinstance(e, ToolCallProposed)] == ["read"]
    assert isinstance(inner[-1], RunEnd) and inner[-1].text == "code.py:1: x is never used."
    shown = tagged[0][1].to_dict()
    assert shown["type"] == "subagent" and shown["agent"] == "lead/reviewer"
    assert shown["event"]["type"] == "run_start"


def test_a_grandchilds_events_carry_the_whole_path_once(tmp_path: Path) -> None:
    project(tmp_path)
    (tmp_path / "reviewer.yaml").write_text(
        REVIEWER.format(extra="").replace(
            "  sets: [readonly]\n", "  sets:\n    - readonly\n    - agent: helper.yaml\n"
        )
    )
    (tmp_path / "reviewer.script.yaml").write_text(
        "- tool_calls: [{name: helper, arguments: {task: look}}]\n- text: helped\n"
    )
    (tmp_path / "helper.yaml").write_text(
        "version: 1\nname: helper\nidentity: You help.\nmodel: scripted:helper.script.yaml\n"
        "tools:\n  sets: []\n"
    )
    (tmp_path / "helper.script.yaml").write_text("- text: here is help\n")
    agent = build(tmp_path, ScriptedModel([delegate(), text("ok")]))
    events = run(collect(agent, "go"))
    paths = [e.path for e in events if isinstance(e, SubagentEvent)]
    assert "lead/reviewer/helper" in paths
    nested = [e for e in events if isinstance(e, SubagentEvent) and e.path.endswith("helper")]
    assert not any(isinstance(e.event, SubagentEvent) for e in nested)  # one wrapper
    assert [s.path for s in agent.subagents] == ["lead/reviewer"]


# -- concurrency -------------------------------------------------------------------------


def test_two_sub_agent_calls_in_one_message_run_at_the_same_time(tmp_path: Path) -> None:
    project(tmp_path, lead="    - agent: reviewer.yaml\n      name: second\n")
    both_started = asyncio.Event()
    arrived: list[str] = []

    def child_model(label: str) -> Callable[[], FunctionModel]:
        async def answer(request: ModelRequest) -> str:
            arrived.append(label)
            if len(arrived) == 2:
                both_started.set()
            # each child waits for the other: run one after the other, this times out
            await asyncio.wait_for(both_started.wait(), timeout=20)
            return f"{label} done"

        return lambda: FunctionModel(answer)

    lead_model = ScriptedModel(
        [reply(delegate("one"), delegate("two", name="second")), text("both done")]
    )
    agent = build(tmp_path, lead_model)
    agent.subagents[0].model = child_model("first")
    agent.subagents[1].model = child_model("second")
    events = run(collect(agent, "go"))
    assert sorted(arrived) == ["first", "second"]
    assert [(r.call.name, r.content) for r in results(events)] == [
        ("reviewer", "first done"),
        ("second", "second done"),
    ]
    assert events[-1].reason == "completed"  # type: ignore[union-attr]


# -- failures ---------------------------------------------------------------------------


def test_a_child_whose_model_fails_gives_an_error_result_and_the_parent_goes_on(
    tmp_path: Path,
) -> None:
    project(tmp_path)

    def broken(request: ModelRequest) -> str:
        raise ProviderError("HTTP 500 from the child's model")

    lead_model = ScriptedModel([delegate(), text("The reviewer failed; I will look myself.")])
    agent = build(tmp_path, lead_model)
    agent.subagents[0].model = lambda: FunctionModel(broken)
    events = run(collect(agent, "go"))
    (result,) = results(events)
    assert result.is_error and result.details["reason"] == "error"
    assert result.content == (
        "sub-agent `reviewer` did not finish (error): HTTP 500 from the child's model"
    )
    assert events[-1].reason == "completed"  # type: ignore[union-attr]
    assert lead_model.last_request.messages[-1].is_error  # type: ignore[union-attr]


def test_a_child_that_raises_gives_an_error_result_not_a_crash(tmp_path: Path) -> None:
    project(tmp_path)

    def crashing(request: ModelRequest) -> str:
        raise RuntimeError("boom")

    agent = build(tmp_path, ScriptedModel([delegate(), text("ok")]))
    agent.subagents[0].model = lambda: FunctionModel(crashing)
    (result,) = results(run(collect(agent, "go")))
    assert result.is_error
    assert result.content == "sub-agent `reviewer` failed: RuntimeError: boom"


def test_a_child_at_its_own_max_turns_gives_an_error_result(tmp_path: Path) -> None:
    project(
        tmp_path,
        reviewer="limits: {max_turns: 1}\n",
        script="- text: Looking first.\n  tool_calls: [{name: ls, arguments: {}}]\n",
    )
    agent = build(tmp_path, ScriptedModel([delegate(), text("ok")]))
    (result,) = results(run(collect(agent, "go")))
    assert result.is_error and result.details["reason"] == "max_turns"
    assert result.content.startswith("sub-agent `reviewer` did not finish (max_turns): stopped")
    assert result.content.endswith("Its last text:\nLooking first.")


def test_a_bad_task_argument_is_an_error_result(tmp_path: Path) -> None:
    project(tmp_path, script="- text: never sent\n")  # the child is never built
    agent = build(tmp_path, ScriptedModel([tool_call("reviewer", task="  "), text("ok")]))
    (result,) = results(run(collect(agent, "go")))
    assert result.is_error and "needs a `task`" in result.content


# -- cancellation -------------------------------------------------------------------------


def test_cancelling_the_parent_stops_the_child_and_its_command(tmp_path: Path) -> None:
    seconds = f"30.{os.getpid()}31"  # a `sleep` no other test runs
    project(
        tmp_path,
        script=f"- tool_calls: [{{name: bash, arguments: {{command: sleep {seconds}}}}}]\n",
        reviewer="",
    )
    (tmp_path / "reviewer.yaml").write_text(
        REVIEWER.format(extra="").replace("[readonly]", "[coding]")
    )
    agent = build(tmp_path, ScriptedModel([delegate()]))

    async def main() -> list[Event]:
        seen: list[Event] = []

        async def drive() -> None:
            async for event in agent.stream("go"):
                seen.append(event)

        task = asyncio.create_task(drive())
        for _ in range(600):  # a guard: at most about 30 s
            if live_processes_with(seconds):
                break
            await asyncio.sleep(0.05)
        assert live_processes_with(seconds), "the child never started its command"
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert live_processes_with(seconds) == []  # gone before the cancel returned
        await agent.aclose()
        return seen

    seen = run(main())
    assert any(isinstance(e, SubagentEvent) for e in seen)
    assert agent.messages[-1] == ToolResultMessage(
        "call_1_1", "reviewer", "cancelled by the user", is_error=True
    )
    (child,) = [i for i in SessionStore(tmp_path / "sessions").list() if i.agent == "reviewer"]
    messages = SessionStore(tmp_path / "sessions").open(child.id).messages()
    assert messages[-1] == ToolResultMessage(
        "call_1_1", "bash", "cancelled by the user", is_error=True
    )


def test_the_parents_max_turns_ends_its_run_after_the_child_answered(tmp_path: Path) -> None:
    project(tmp_path, lead="limits: {max_turns: 1}\n")
    agent = build(tmp_path, ScriptedModel([delegate()]))
    events = run(collect(agent, "go"))
    end = events[-1]
    assert isinstance(end, RunEnd) and end.reason == "max_turns" and end.turns == 1
    assert results(events)[0].content == "code.py:1: x is never used."


# -- sessions and the audit trace ----------------------------------------------------------


def test_sessions_are_linked_both_ways_and_the_trace_nests(tmp_path: Path) -> None:
    project(tmp_path)
    agent = build(tmp_path, ScriptedModel([delegate(), text("ok")]))
    (result,) = results(run(collect(agent, "go")))
    assert agent.session is not None
    parent = agent.session
    store = SessionStore(tmp_path / "sessions")
    child = store.open(result.details["session"])
    assert child.path.parent == parent.path.parent  # the team's sessions stay together
    # child -> parent: its header names the parent's session, the entry and the call
    link = child.header["delegated_from"]
    call_entry = next(
        e
        for e in parent.entries()
        if e.type == "message" and e.payload["message"].get("tool_calls")
    )
    assert link == {
        "session": parent.id,
        "entry": call_entry.id,
        "call_id": "call_1_1",
        "tool": "reviewer",
        "agent_path": "lead/reviewer",
        "session_file": str(parent.path),
    }
    assert child.header["agent"] == "reviewer"
    # parent -> child: a `subagent` entry, after the call and before its result
    entries = parent.entries()
    types = [e.type for e in entries]
    (marker,) = [e for e in entries if e.type == "subagent"]
    assert marker.payload == {
        "call_id": "call_1_1",
        "tool": "reviewer",
        "agent_path": "lead/reviewer",
        "session": child.id,
        "session_file": str(child.path),
        "trace_file": result.details["trace_file"],
    }
    position = types.index("subagent")
    assert entries[position - 1].id == call_entry.id
    assert entries[position + 1].payload["message"]["role"] == "tool"
    # the conversation itself is unchanged by the link entry
    assert [type(m).__name__ for m in parent.messages()] == [
        "UserMessage",
        "AssistantMessage",
        "ToolResultMessage",
        "AssistantMessage",
    ]
    # the parent's trace record points at the child's trace, which records its own call
    parent_trace = parent.path.with_name(parent.id + ".trace.jsonl")
    (record,) = list(read_trace(parent_trace))
    assert record["tool_source"] == "agent:reviewer.yaml"
    assert record["raw_result"]["details"]["trace_file"] == result.details["trace_file"]
    (child_record,) = list(read_trace(Path(result.details["trace_file"])))
    assert child_record["tool"] == "read"
    assert f"sub-agent lead/reviewer: session {child.id}, trace " in format_trace_record(record)


def test_a_parent_without_a_session_records_none_for_its_children(tmp_path: Path) -> None:
    project(tmp_path)
    agent = build(tmp_path, ScriptedModel([delegate(), text("ok")]), record_session=False)
    (result,) = results(run(collect(agent, "go")))
    assert not result.is_error and "session" not in result.details
    assert not (tmp_path / "sessions").exists()


# -- the SDK ------------------------------------------------------------------------------


def test_subagents_are_listed_and_a_child_can_be_built_directly(tmp_path: Path) -> None:
    project(tmp_path)
    agent = build(tmp_path, ScriptedModel([]))
    (reviewer,) = agent.subagents
    assert (reviewer.name, reviewer.path) == ("reviewer", "lead/reviewer")
    assert reviewer.manifest.path == (tmp_path / "reviewer.yaml").resolve()
    assert reviewer.tool is agent.registry.get("reviewer")
    child = reviewer.build(session_dir=tmp_path / "direct")
    result = run(child.prompt("Review code.py."))
    assert result.text == "code.py:1: x is never used."
    assert child.session is not None and child.session.path.parent == tmp_path / "direct"
    run(agent.aclose())


def test_an_agent_without_sub_agents_lists_none(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("version: 1\nname: a\nidentity: Hi.\n")
    agent = build_agent(tmp_path / "a.yaml", provider=ScriptedModel([]), record_session=False)
    assert agent.subagents == ()


def test_a_manifest_that_skipped_validation_cannot_delegate_to_itself(tmp_path: Path) -> None:
    from assembler.manifest.loader import parse_manifest

    (tmp_path / "self.yaml").write_text(
        "version: 1\nname: me\nidentity: Hi.\nmodel: scripted:x.yaml\n"
        "tools:\n  sets:\n    - agent: self.yaml\n"
    )
    manifest = parse_manifest(tmp_path / "self.yaml").manifest
    assert manifest is not None
    with pytest.raises(ManifestError) as caught:
        build_agent(manifest, provider=ScriptedModel([]), record_session=False)
    assert "sub-agents form a cycle" in str(caught.value)


# -- trust ---------------------------------------------------------------------------------


def child_with_extension(tmp_path: Path) -> Path:
    """The reviewer lives in `team/` with an extension file; the lead in `tmp_path`."""
    project(tmp_path, entry="")
    (tmp_path / "lead.yaml").write_text(
        (tmp_path / "lead.yaml").read_text().replace("reviewer.yaml", "team/reviewer.yaml")
    )
    team = tmp_path / "team"
    (team / "review").mkdir(parents=True)
    (team / "review" / "code.py").write_text("x = 1\n")
    marker = tmp_path / "marker"
    (team / "guard.py").write_text(
        f"def setup(api, options):\n    open({str(marker)!r}, 'w').write('ran')\n"
    )
    (team / "reviewer.yaml").write_text(REVIEWER.format(extra="extensions:\n  - path: guard.py\n"))
    (team / "reviewer.script.yaml").write_text(REVIEWER_SCRIPT)
    return marker


def test_a_childs_project_code_needs_trust_before_anything_is_built(tmp_path: Path) -> None:
    marker = child_with_extension(tmp_path)
    with pytest.raises(TrustError) as caught:
        build(tmp_path, ScriptedModel([delegate(), text("ok")]), trust=None)
    message = str(caught.value)
    assert f"{(tmp_path / 'team').resolve()} is not a trusted directory" in message
    assert "  - sub-agent lead/reviewer: extension file guard.py" in message
    assert not marker.exists()


def test_the_trust_question_lists_the_whole_team_at_once(tmp_path: Path) -> None:
    """Each directory is asked about once, with all the code in and below it that
    any agent of the team would run."""
    marker = child_with_extension(tmp_path)
    (tmp_path / "tool.py").write_text("def helper(x: str) -> str:\n    return x\n")
    lead = tmp_path / "lead.yaml"
    lead.write_text(lead.read_text().replace("    - readonly\n", "    - python: tool:helper\n"))
    asked: list[tuple[Path, list[str]]] = []

    def ask(directory: Path, code: list[str]) -> bool:
        asked.append((directory, code))
        TrustStore().add(directory)
        return True

    agent = build(tmp_path, ScriptedModel([delegate(), text("ok")]), ask_trust=ask)
    assert not marker.exists()  # asked before anything was built
    # one question: trusting the lead's directory also trusts `team/` below it
    assert asked == [
        (
            tmp_path.resolve(),
            [
                "Python tool tool:helper (tool.py)",
                "sub-agent lead/reviewer: extension file guard.py",
                "sub-agent lead/reviewer: replay script reviewer.script.yaml (calls read)",
            ],
        )
    ]
    (result,) = results(run(collect(agent, "go")))
    assert result.content == "code.py:1: x is never used."
    assert marker.read_text() == "ran"  # the child's extension ran, in the child


def test_a_sub_agent_draws_from_its_parents_budget(tmp_path: Path) -> None:
    """One pot for a run and everything it delegates: the lead's `tool_calls: 2` is
    spent by its delegation and the reviewer's `read`, so a second delegation is not
    run and the lead stops with reason `budget`."""
    project(tmp_path, lead="limits: {budget: {tool_calls: 2}}\n")
    lead_model = ScriptedModel([delegate(), delegate("Again."), text("unused")])
    agent = build(tmp_path, lead_model)
    events = run(collect(agent, "Get code.py reviewed twice."))
    first, second = results(events)
    assert first.executed and first.content == "code.py:1: x is never used."
    assert not second.executed and "budget `tool_calls` is spent: used 2 of 2" in second.content
    end = events[-1]
    assert isinstance(end, RunEnd) and end.reason == "budget"
    assert end.budget == {"budget": "tool_calls", "limit": 2, "used": 2, "scope": "run"}
    assert lead_model.remaining  # the lead was not asked again after the stop
