"""Sessions of every shape convert and replay: with a sub-agent (its own session, its
own replay), with a compaction, a fork, several prompts with a steer, and one that
ended mid-tool (killed before its calls ran)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from regress_project import (
    MANIFEST,
    PROMPT,
    SCRIPT,
    TESTS,
    edit_file,
    failure,
    record,
    replay_one,
    restore_workspace,
    to_test,
)

from assembler.agent.build import build_agent
from assembler.errors import ConversionError
from assembler.eval.evaluation import check_code
from assembler.eval.load import load_eval
from assembler.eval.plan import Selection, plan_runs
from assembler.messages import Usage
from assembler.providers.script_file import ScriptStep
from assembler.regress.convert import ConvertOptions, convert
from assembler.runner.events import ToolCallProposed, TurnEnd
from assembler.testing import ScriptedModel, text, tool_call

LEAD = MANIFEST.replace(
    "    - python:\n",
    "    - agent: team/reviewer.yaml\n      name: reviewer\n      workspace: inherit\n"
    "    - python:\n",
)
REVIEW = "Review shipping/fees.py and list its problems."


def test_a_session_with_a_sub_agent_replays_the_child_from_its_own_session(
    project: Path,
) -> None:
    (project / "agents" / "lead.yaml").write_text(LEAD, "utf-8")
    session = record(
        project,
        [tool_call("reviewer", task=REVIEW), text("The reviewer found the rounding bug.")],
        "Have the fee code reviewed.",
        manifest="agents/lead.yaml",
    )
    eval_file = project / "evals" / "team.eval.yaml"
    conversion = to_test(session, eval_file)
    assert conversion.sessions == 2
    scripts = sorted(p.name for p in (project / "evals" / "team.replay").glob("*.script.yaml"))
    assert len(scripts) == 2 and any(".reviewer-1." in name for name in scripts)
    # the child's replay chooses the child's calls: project code, as the task's own
    report = load_eval(eval_file)
    assert report.spec is not None and report.manifest is not None
    runs = plan_runs(report.spec, Selection(), project / "s")
    described = [code.description for code in check_code(report.spec, runs, report.manifest)]
    assert any(".reviewer-1.script.yaml (calls read)" in text_ for text_ in described), described
    run = replay_one(eval_file)
    assert run.status == "passed", failure(run)
    assert failure(run) == "4 replies, every request as recorded"  # 2 the lead's, 2 the child's
    checks = {check.kind: check for check in run.checks}
    assert checks["tool_sequence"].evidence == "1 call in order: reviewer"  # the lead's own
    # the child's own replay compares the child's requests
    edit_file(
        project / "agents" / "team" / "reviewer.yaml", "You review Python", "You audit Python"
    )
    run = replay_one(eval_file)
    assert run.status == "failed"
    assert failure(run).startswith(
        "sub-agent `fixer/reviewer`, turn 1: section `identity` changed: - `You review Python code."
    ), failure(run)


def test_a_session_with_a_compaction_replays_the_summary(project: Path) -> None:
    steps = [
        tool_call("read", path="shipping/fees.py"),
        text("The fee rounds down."),
        text("The base fee is 499 cents."),
        text("Summary: the fee code rounds started kilograms down."),
        text("It should use math.ceil."),
    ]
    model = ScriptedModel(steps)
    agent = build_agent(
        project / "agents" / "fixer.yaml",
        provider=model,
        session_dir=project / ".sessions",
        trust=True,
    )

    async def go() -> None:
        async with agent:
            await agent.prompt("What does the fee code do?")
            await agent.prompt("And the base fee?")
            assert await agent.compact() is not None
            await agent.prompt("And how should it round?")

    asyncio.run(go())
    model.assert_consumed()
    assert agent.session is not None
    eval_file = project / "evals" / "compact.eval.yaml"
    to_test(agent.session.path, eval_file)
    written = eval_file.read_text("utf-8")
    assert "- compact: true" in written and "- prompt: And how should it round?" in written
    run = replay_one(eval_file)
    assert run.status == "passed", failure(run)
    assert failure(run) == "5 replies, every request as recorded"


def test_a_fork_converts_from_its_own_branch(project: Path) -> None:
    model = ScriptedModel(
        [text("First answer."), text("An answer on the first branch."), text("The fork's answer.")]
    )
    agent = build_agent(
        project / "agents" / "fixer.yaml",
        provider=model,
        session_dir=project / ".sessions",
        trust=True,
    )

    async def go() -> None:
        async with agent:
            await agent.prompt("Say something.")
            state = agent.state()
            first_answer = state.entry_ids[-1] if state.entry_ids else None
            assert first_answer is not None
            await agent.prompt("Go on.")
            agent.fork(first_answer)
            await agent.prompt("Go elsewhere.")

    asyncio.run(go())
    model.assert_consumed()
    assert agent.session is not None and agent.session.header.get("parent_session")
    eval_file = project / "evals" / "fork.eval.yaml"
    to_test(agent.session.path, eval_file)
    written = eval_file.read_text("utf-8")
    assert "Go on." not in written and "- prompt: Go elsewhere." in written
    run = replay_one(eval_file)
    assert run.status == "passed", failure(run)
    assert failure(run) == "2 replies, every request as recorded"


def test_several_prompts_and_a_steer_replay_in_order(project: Path) -> None:
    model = ScriptedModel(
        [
            tool_call("read", path="shipping/fees.py"),
            text("Read it, and noted the steer."),
            text("Second prompt answered."),
        ]
    )
    agent = build_agent(
        project / "agents" / "fixer.yaml",
        provider=model,
        session_dir=project / ".sessions",
        trust=True,
    )

    async def go() -> None:
        async with agent:
            async for event in agent.stream("Look at the fees."):
                if isinstance(event, ToolCallProposed):
                    agent.steer("Only the base fee matters.")
            await agent.prompt("Anything else?")

    asyncio.run(go())
    assert agent.session is not None
    eval_file = project / "evals" / "steer.eval.yaml"
    to_test(agent.session.path, eval_file)
    written = eval_file.read_text("utf-8")
    assert (
        "- steer: Only the base fee matters.\n    after_turn: 1\n    before_tools: true" in written
    )
    run = replay_one(eval_file)
    assert run.status == "passed", failure(run)
    assert failure(run) == "3 replies, every request as recorded"


@pytest.mark.parametrize("after_tools", [False, True])
def test_a_session_killed_mid_run_replays_up_to_where_it_stopped(
    project: Path, after_tools: bool
) -> None:
    model = ScriptedModel([tool_call("bash", command=TESTS)])
    agent = build_agent(
        project / "agents" / "fixer.yaml",
        provider=model,
        session_dir=project / ".sessions",
        trust=True,
    )

    async def go() -> None:
        async with agent:
            async for event in agent.stream(PROMPT):
                # as a kill before the call ran, or after it and before the next
                # request: no run end either way
                if isinstance(event, TurnEnd if after_tools else ToolCallProposed):
                    break

    asyncio.run(go())
    assert agent.session is not None
    eval_file = project / "evals" / "killed.eval.yaml"
    conversion = to_test(agent.session.path, eval_file)
    assert any("cut off" in note for note in conversion.notes)
    written = eval_file.read_text("utf-8")
    ran = "true" if after_tools else "false"
    assert f"interrupt:\n      after_turn: 1\n      tools_ran: {ran}" in written
    assert "files_equal" not in written
    run = replay_one(eval_file)
    assert run.status == "passed", failure(run)
    assert run.reason == "cancelled"
    assert [c.kind for c in run.checks] == ["replay", "tool_sequence"]


def test_the_shipping_session_replays_with_its_full_script(project: Path) -> None:
    session = record(project, SCRIPT)
    restore_workspace(project)
    run = replay_one(to_test(session, project / "evals" / "fix.eval.yaml").eval_file)
    assert run.status == "passed", failure(run)


def test_a_sub_agent_session_that_is_gone_is_one_clear_error(project: Path) -> None:
    (project / "agents" / "lead.yaml").write_text(LEAD, "utf-8")
    session = record(
        project,
        [tool_call("reviewer", task=REVIEW), text("Done.")],
        "Have the fee code reviewed.",
        manifest="agents/lead.yaml",
    )
    for child in session.parent.glob("*.jsonl"):
        if child != session and not child.name.endswith(".trace.jsonl"):
            child.unlink()
    with pytest.raises(ConversionError) as caught:
        convert(session, ConvertOptions(out=project / "evals" / "team.eval.yaml"))
    assert "the session of sub-agent call" in str(caught.value) and "is gone" in str(caught.value)


def test_a_request_the_session_did_not_record_is_answered_empty_and_counted(
    project: Path,
) -> None:
    """Memory extraction at the session's end asks the model on the side: the session
    records no such request, and the replay answers it empty instead of comparing."""
    manifest = MANIFEST.replace("at_session_end: false", "at_session_end: true")
    (project / "agents" / "fixer.yaml").write_text(manifest, "utf-8")
    session = record(
        project,
        [tool_call("read", path="shipping/fees.py"), text("It rounds down."), text("[]")],
        "What does the fee code do?",
    )
    run = replay_one(to_test(session, project / "evals" / "side.eval.yaml").eval_file)
    assert run.status == "passed", failure(run)
    assert failure(run) == "2 replies, every request as recorded; 1 side request(s) answered empty"


def test_a_compaction_forced_by_a_full_window_happens_again(project: Path) -> None:
    """The manifest's model has a known window (gpt-4o: 128,000 tokens): an answer
    that reports 120,000 input tokens makes the next prompt's turn compact first, when
    recorded and when replayed (a replay's model stands for the manifest's)."""
    manifest = MANIFEST.replace(
        "model:\n  provider: scripted\n  name: replay\n  script: fixer.script.yaml\n",
        "model:\n  provider: openai\n  name: gpt-4o\n",
    )
    (project / "agents" / "fixer.yaml").write_text(manifest, "utf-8")
    full = Usage(input_tokens=120_000, output_tokens=10)
    steps = [
        ScriptStep(text("It rounds down."), usage=full),
        ScriptStep(text("Summary: the fee code rounds down.")),
        ScriptStep(text("The base fee is 499 cents.")),
    ]
    session = record(project, steps, "What does the fee code do?", then=["And the base fee?"])
    expected = (project / "evals" / "full.replay").glob("*.expected.json")
    eval_file = to_test(session, project / "evals" / "full.eval.yaml").eval_file
    (expected_file,) = expected
    assert '"reason": "threshold"' in expected_file.read_text("utf-8")
    run = replay_one(eval_file)
    assert run.status == "passed", failure(run)
    assert failure(run) == "3 replies, every request as recorded"
