"""Permissions at run time: rules decide, people and clients answer `ask`, the trace
says who decided (issue 14). Real agents, real tools on a temporary workspace."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from assembler.agent import Agent, build_agent
from assembler.permissions import NEEDS_APPROVAL
from assembler.permissions.gate import Approval, ApprovalRequest
from assembler.runner.events import ToolCallBlocked, ToolCallResult
from assembler.sessions.trace import read_trace
from assembler.testing import ScriptedModel, text, tool_call


def manifest(tmp_path: Path, permissions: str, extra: str = "") -> Path:
    work = tmp_path / "work"
    (work / "src").mkdir(parents=True, exist_ok=True)
    (work / "tests").mkdir(exist_ok=True)
    (work / "src" / "app.py").write_text("x = 1\n")
    (work / "tests" / "test_app.py").write_text("assert True\n")
    path = tmp_path / "agent.yaml"
    path.write_text(
        "version: 1\nname: gated\nidentity: You help.\nworkspace: work\n"
        "tools:\n  sets: [{builtin: all}]\n" + permissions + extra,
        "utf-8",
    )
    return path


def build(tmp_path: Path, permissions: str, model: Any, **kw: Any) -> Agent:
    return build_agent(
        manifest(tmp_path, permissions, kw.pop("extra", "")),
        provider=model,
        session_dir=tmp_path / "sessions",
        **kw,
    )


def results(agent: Agent, prompt: str = "go") -> list[ToolCallResult]:
    result = asyncio.run(agent.prompt(prompt))
    return [e for e in result.events if isinstance(e, ToolCallResult)]


DENY_TESTS = 'permissions:\n  deny: ["edit(tests/**)", "bash(rm *)"]\n'


def test_a_deny_rule_stops_the_call_and_the_model_reads_why(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            tool_call("edit", path="tests/test_app.py", old_text="True", new_text="False"),
            tool_call("edit", path="src/app.py", old_text="x = 1", new_text="x = 2"),
            text("done"),
        ]
    )
    agent = build(tmp_path, DENY_TESTS, model)
    denied, allowed = results(agent)
    assert not denied.executed and denied.is_error
    assert "denied by the permissions" in denied.content and "edit(tests/**)" in denied.content
    assert (tmp_path / "work" / "tests" / "test_app.py").read_text() == "assert True\n"
    assert allowed.executed and (tmp_path / "work" / "src" / "app.py").read_text() == "x = 2\n"
    assert agent.session is not None
    trace = agent.session.path.with_name(agent.session.id + ".trace.jsonl")
    first, second = read_trace(trace)
    assert first["permission"] == {
        "allowed": False,
        "decided_by": "rule",
        "rule": "edit(tests/**)",
        "reason": first["permission"]["reason"],
    }
    assert first["decision"]["blocked_by"] == "permissions"
    assert second["permission"]["allowed"] is True and second["executed"] is True


def test_a_path_rule_holds_through_dot_dot_and_symlinks(tmp_path: Path) -> None:
    (tmp_path / "work" / "src").mkdir(parents=True)
    (tmp_path / "work" / "tests").mkdir()
    (tmp_path / "work" / "src" / "link").symlink_to("../tests")
    model = ScriptedModel(
        [
            tool_call("write", path="src/../tests/x.py", content="boom"),
            tool_call("write", path="src/link/y.py", content="boom"),
            text("done"),
        ]
    )
    agent = build(tmp_path, 'permissions:\n  deny: ["write(tests/**)"]\n', model)
    first, second = results(agent)
    assert not first.executed and not second.executed
    assert not (tmp_path / "work" / "tests" / "x.py").exists()
    assert not (tmp_path / "work" / "tests" / "y.py").exists()


def test_an_ask_nobody_can_answer_is_a_deny_the_model_sees(tmp_path: Path) -> None:
    model = ScriptedModel([tool_call("bash", command="echo hi"), text("ok")])
    agent = build(tmp_path, "permissions:\n  default: ask\n", model)
    (result,) = results(agent)
    assert not result.executed and NEEDS_APPROVAL in result.content


def test_every_bypass_of_an_allow_rule_is_refused_end_to_end(tmp_path: Path) -> None:
    marker = tmp_path / "work" / "pwned"
    attempts = [
        f"git status; touch {marker}",
        f"git status && touch {marker}",
        f"git status | sh -c 'touch {marker}'",
        f"git status $(touch {marker})",
        f"git status `touch {marker}`",
        f"git status\ntouch {marker}",
        f"FOO=1 touch {marker}",
        f"env touch {marker}",
        f"bash -c 'touch {marker}'",
        "git status > tests/x",
    ]
    model = ScriptedModel([*(tool_call("bash", command=a) for a in attempts), text("ok")])
    permissions = 'permissions:\n  default: ask\n  allow: ["bash(git status)"]\n'
    agent = build(tmp_path, permissions, model, extra="limits: {max_consecutive_blocks: 50}\n")
    outcomes = results(agent)
    assert len(outcomes) == len(attempts)
    assert all(not o.executed for o in outcomes), [o.content for o in outcomes if o.executed]
    assert not marker.exists() and not (tmp_path / "work" / "tests" / "x").exists()


class Person:
    """Answers asks like the person at the terminal would, recording what was asked."""

    def __init__(self, *answers: Approval) -> None:
        self.answers = list(answers)
        self.asked: list[ApprovalRequest] = []

    async def __call__(self, request: ApprovalRequest) -> Approval:
        self.asked.append(request)
        return self.answers.pop(0)


def test_allow_once_asks_again_next_time(tmp_path: Path) -> None:
    model = ScriptedModel(
        [tool_call("bash", command="echo one"), tool_call("bash", command="echo one"), text("ok")]
    )
    person = Person(Approval("once"), Approval("deny", "not twice"))
    agent = build(tmp_path, "permissions:\n  default: ask\n", model, approver=person)
    first, second = results(agent)
    assert first.executed and "one" in first.content
    assert not second.executed and "not twice" in second.content
    assert len(person.asked) == 2


def test_allow_for_the_session_lasts_only_for_the_session(tmp_path: Path) -> None:
    model = ScriptedModel(
        [tool_call("bash", command="echo a"), tool_call("bash", command="echo a"), text("ok")]
    )
    person = Person(Approval("session"))
    agent = build(tmp_path, "permissions:\n  default: ask\n", model, approver=person)
    first, second = results(agent)
    assert first.executed and second.executed
    assert [r.session_rules for r in person.asked] == [("bash(echo a)",)]
    trace = read_trace(agent.session.path.with_name(agent.session.id + ".trace.jsonl"))  # type: ignore[union-attr]
    assert trace[0]["permission"]["decided_by"] == "user"
    assert trace[1]["permission"]["decided_by"] == "session rule"

    again = Person(Approval("deny"))
    fresh = build(
        tmp_path,
        "permissions:\n  default: ask\n",
        ScriptedModel([tool_call("bash", command="echo a"), text("ok")]),
        approver=again,
    )
    (result,) = results(fresh)
    assert not result.executed and len(again.asked) == 1  # a new session asks again


def test_a_client_that_never_answers_is_a_deny_after_the_timeout(tmp_path: Path) -> None:
    async def never(request: ApprovalRequest) -> Approval:
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    model = ScriptedModel([tool_call("bash", command="echo hi"), text("ok")])
    agent = build(tmp_path, "permissions:\n  default: ask\n", model)
    agent.set_approver(never, timeout=0.2)
    (result,) = results(agent)
    assert not result.executed and "no answer within 0.2 s" in result.content


@pytest.mark.parametrize(
    ("mode", "runs"), [("bypass", True), ("deny-asks", False), ("accept-edits", False)]
)
def test_permission_modes_decide_what_an_ask_becomes(tmp_path: Path, mode: str, runs: bool) -> None:
    model = ScriptedModel([tool_call("bash", command="echo hi"), text("ok")])
    agent = build(tmp_path, "permissions:\n  default: ask\n", model, permission_mode=mode)
    (result,) = results(agent)
    assert result.executed is runs


def test_accept_edits_allows_file_edits_inside_the_workspace(tmp_path: Path) -> None:
    model = ScriptedModel(
        [tool_call("edit", path="src/app.py", old_text="x = 1", new_text="x = 3"), text("ok")]
    )
    agent = build(tmp_path, "permissions:\n  default: ask\n", model, permission_mode="accept-edits")
    (result,) = results(agent)
    assert result.executed and (tmp_path / "work" / "src" / "app.py").read_text() == "x = 3\n"


EXTENSION = """
seen = []


def setup(api, options):
    @api.on("tool_call")
    def guard(event):
        seen.append(event.permission)
        if "blocked-by-extension" in str(event.arguments.get("command")):
            return {"block": True, "reason": "the extension says no"}
"""


def test_extensions_see_the_decision_and_a_block_from_either_side_wins(tmp_path: Path) -> None:
    (tmp_path / "guard_ext.py").write_text(EXTENSION)
    model = ScriptedModel(
        [
            tool_call("bash", command="echo blocked-by-extension"),
            tool_call("bash", command="rm -rf src"),
            tool_call("bash", command="echo fine"),
            text("ok"),
        ]
    )
    agent = build(
        tmp_path,
        'permissions:\n  deny: ["bash(rm *)"]\n',
        model,
        extra="extensions: [{path: guard_ext.py}]\n",
        trust=True,
    )
    result = asyncio.run(agent.prompt("go"))
    blocked = [e for e in result.events if isinstance(e, ToolCallBlocked)]
    assert [b.blocked_by for b in blocked] == ["guard_ext", "permissions"]
    assert (tmp_path / "work" / "src").is_dir()
    ran = [e for e in result.events if isinstance(e, ToolCallResult) and e.executed]
    assert [r.call.arguments["command"] for r in ran] == ["echo fine"]  # type: ignore[index]


def test_the_shipping_example_protected_by_rules_alone(shipping: Path) -> None:
    """The same end-to-end result as the extension version: the test edit is refused,
    the fix lands in the source, the tests pass, the test file is byte-identical."""
    workspace = shipping / "examples" / "shipping"
    test_file = workspace / "tests" / "test_fees.py"
    original = test_file.read_bytes()
    done = subprocess.run(
        [
            sys.executable, "-m", "assembler", "run", "agents/shipping-fixer-rules.yaml",
            "--trust", "-p", "The test for heavy parcels fails. Fix it.",
        ],
        cwd=shipping, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    trace = subprocess.run(
        [sys.executable, "-m", "assembler", "trace", "--agent", "shipping-fixer-rules"],
        cwd=shipping, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert "permission: DENIED by rule (rule `edit(tests/**)`)" in trace.stdout, trace.stdout
    assert test_file.read_bytes() == original
    assert "math.ceil(weight_kg)" in (workspace / "shipping" / "fees.py").read_text()
    tests = subprocess.run(
        [sys.executable, "-m", "unittest", "discover", "-s", "tests", "-t", "."],
        cwd=workspace, capture_output=True, check=False,
    )  # fmt: skip
    assert tests.returncode == 0


def test_render_json_lists_the_effective_rules(repo_root: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "assembler", "render", "--dry-run", "--format", "json",
         "agents/shipping-fixer-rules.yaml"],
        cwd=repo_root, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    import json

    assert json.loads(done.stdout)["permissions"] == {
        "deny": ["edit(tests/**)"],
        "ask": [],
        "allow": ["read", "edit(shipping/**)", "bash(python3 -m unittest *)"],
        "default": "ask",
    }


def test_an_explicit_ask_rule_offers_no_allow_for_the_session(tmp_path: Path) -> None:
    """An `ask` rule beats any allow, so "allow for the session" could not hold: it is
    not offered (only once, or deny)."""
    model = ScriptedModel([tool_call("bash", command="echo a"), text("ok")])
    person = Person(Approval("once"))
    agent = build(tmp_path, 'permissions:\n  ask: ["bash(echo *)"]\n', model, approver=person)
    (result,) = results(agent)
    assert result.executed and person.asked[0].session_rules == ()
