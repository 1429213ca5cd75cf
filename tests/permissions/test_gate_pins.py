"""Pins for the gate at run time (`permissions/gate.py`): who decided, what the model
and the audit trace are told, and that an "allow for the session" given while other
calls wait decides them too (found by mutation testing, docs/testing.md).

A real `PermissionPolicy` over a temporary workspace decides; the approver answers
like a person at the terminal or a client would."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from assembler.manifest.model import PermissionsSpec
from assembler.messages import ToolCall
from assembler.permissions import NEEDS_APPROVAL, PermissionPolicy
from assembler.permissions.gate import Approval, ApprovalRequest, PermissionGate
from assembler.runner.hooks import PermissionOutcome
from assembler.tools.base import Tool, ToolContext, ToolResult


async def _noop(arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
    return ToolResult("ok")


BASH = Tool("bash", "run", {"type": "object"}, _noop)


def gate(
    tmp_path: Path, approver: Any = None, timeout: float | None = None, **spec: Any
) -> PermissionGate:
    policy = PermissionPolicy.from_spec(PermissionsSpec(**spec), workspace=tmp_path)
    return PermissionGate(policy, approver, timeout=timeout)


def check(gate: PermissionGate, command: str) -> PermissionOutcome:
    return asyncio.run(gate.check(ToolCall("c1", "bash", {"command": command}), BASH))


class Person:
    """Answers asks in turn, recording what was asked."""

    def __init__(self, *answers: Approval) -> None:
        self.answers = list(answers)
        self.asked: list[ApprovalRequest] = []

    async def __call__(self, request: ApprovalRequest) -> Approval:
        self.asked.append(request)
        await asyncio.sleep(0)  # let other waiting calls queue up behind this ask
        return self.answers.pop(0)


def test_a_rule_decides_without_asking_and_the_trace_names_it(tmp_path: Path) -> None:
    person = Person()
    g = gate(tmp_path, person, default="ask", allow=("bash(git status)",), deny=("bash(rm *)",))
    allowed = check(g, "git status")
    assert (allowed.allowed, allowed.decided_by, allowed.rule) == (True, "rule", "bash(git status)")
    denied = check(g, "rm -rf src")
    assert (denied.allowed, denied.decided_by, denied.rule) == (False, "rule", "bash(rm *)")
    assert denied.reason == "denied by the rule `bash(rm *)`"
    assert person.asked == []


def test_the_default_decides_when_no_rule_matches(tmp_path: Path) -> None:
    outcome = check(gate(tmp_path, default="allow"), "echo hi")
    assert (outcome.allowed, outcome.decided_by, outcome.rule) == (True, "default", None)


def test_an_ask_nobody_can_answer_is_refused_and_says_so(tmp_path: Path) -> None:
    outcome = check(gate(tmp_path, default="ask"), "echo hi")
    assert (outcome.allowed, outcome.decided_by) == (False, "nobody")
    assert NEEDS_APPROVAL in outcome.reason


def test_a_refusal_says_who_refused_and_why(tmp_path: Path) -> None:
    with_reason = check(gate(tmp_path, Person(Approval("deny", "too risky")), default="ask"), "x")
    assert (with_reason.allowed, with_reason.decided_by) == (False, "user")
    assert with_reason.reason == "the user refused this call: too risky"
    blank = check(gate(tmp_path, Person(Approval("deny", "  ", by="client")), default="ask"), "x")
    assert (blank.allowed, blank.decided_by, blank.reason) == (
        False,
        "client",
        "the client refused this call",
    )


def test_a_refusal_of_an_ask_rule_names_the_rule(tmp_path: Path) -> None:
    g = gate(tmp_path, Person(Approval("deny")), ask=("bash(git push *)",))
    outcome = check(g, "git push origin")
    assert (outcome.allowed, outcome.rule) == (False, "bash(git push *)")


def test_allow_once_runs_this_call_only(tmp_path: Path) -> None:
    person = Person(Approval("once"), Approval("deny"))
    g = gate(tmp_path, person, default="ask")
    first = check(g, "echo a")
    assert (first.allowed, first.decided_by, first.rule) == (True, "user", None)
    assert first.reason == "the user allowed it once"
    assert not check(g, "echo a").allowed and len(person.asked) == 2


def test_allow_for_the_session_adds_every_offered_rule_and_names_them(tmp_path: Path) -> None:
    person = Person(Approval("session", by="client"))
    g = gate(tmp_path, person, default="ask")
    first = check(g, "echo a && echo b")
    rules = person.asked[0].session_rules
    assert len(rules) == 2, rules
    assert (first.allowed, first.decided_by, first.rule) == (True, "client", ", ".join(rules))
    assert first.reason == f"the client allowed it for this session ({', '.join(rules)})"
    for command in ("echo b", "echo a"):
        again = check(g, command)
        assert (again.allowed, again.decided_by) == (True, "session rule"), command
    assert len(person.asked) == 1


def test_calls_waiting_behind_an_ask_are_decided_by_its_session_answer(tmp_path: Path) -> None:
    person = Person(Approval("session"))
    g = gate(tmp_path, person, default="ask")

    async def both() -> list[PermissionOutcome]:
        calls = [ToolCall(f"c{i}", "bash", {"command": "echo a"}) for i in range(2)]
        return list(await asyncio.gather(*(g.check(call, BASH) for call in calls)))

    first, second = asyncio.run(both())
    assert first.allowed and first.decided_by == "user"
    assert (second.allowed, second.decided_by) == (True, "session rule")
    assert len(person.asked) == 1


def test_an_answer_that_does_not_come_in_time_is_a_refusal_by_nobody(tmp_path: Path) -> None:
    async def late(request: ApprovalRequest) -> Approval:
        raise TimeoutError  # the client's channel gave up (as `wait_for` does at the limit)

    g = gate(tmp_path, late, timeout=30.0, ask=("bash(echo *)",))
    outcome = check(g, "echo hi")
    assert (outcome.allowed, outcome.decided_by, outcome.rule) == (False, "nobody", "bash(echo *)")
    assert outcome.reason == f"{NEEDS_APPROVAL} (no answer within 30 s)"
