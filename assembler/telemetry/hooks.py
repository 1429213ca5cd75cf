"""`invoke_agent` and `execute_tool` spans, from around the runner's hooks.

`TracedHooks` wraps the whole hook chain (extensions, memory, permissions) rather than
joining it: only around the chain is the final decision known, which handler blocked a
call and which rewrote its result. It changes nothing the chain decides.

Each tool call runs in its own task (`AgentRunner._execute_all`). Its span is made the
current span of that task only, so whatever the tool does (a sub-agent's run, an
instrumented HTTP client) nests under it, and nothing leaks into the runner's context.
A call cancelled between its two hooks still ends its span, from the task's done
callback.

Calls that never reach the hooks get their span from the runner's trace record
(`span_for_unseen_call`): one the permission rules refused (they decide before any
extension), and one that could not run (no such tool, arguments that are not JSON,
skipped for a steer). An allowed call's span names the permission outcome too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass

from opentelemetry import context
from opentelemetry.trace import Span

from assembler.messages import AssistantMessage, Message, ToolCall
from assembler.runner.hooks import (
    CallDecision,
    PermissionOutcome,
    ResultOutcome,
    RunnerHooks,
    ToolCallRecord,
    current_permission,
)
from assembler.telemetry.content import arguments_json, text_messages
from assembler.telemetry.otel import SpanKind, fail, in_context, start
from assembler.telemetry.state import AgentTelemetry, RunState
from assembler.tools.base import ToolResult

__all__ = ["BLOCKED_EVENT", "REWRITTEN_EVENT", "TracedHooks", "span_for_unseen_call"]

BLOCKED_EVENT = "assembler.tool_call.blocked"
"""On `execute_tool`: an extension or a permission rule refused the call."""
REWRITTEN_EVENT = "assembler.tool_result.rewritten"
"""On `execute_tool`: extensions changed the result the model sees."""


@dataclass
class _ToolSpan:
    call: ToolCall
    span: Span
    ended: bool = False

    def end(self, error: str = "") -> None:
        if self.ended:
            return
        self.ended = True
        if error:
            fail(self.span, error)
        self.span.end()

    def end_with_task(self, task: asyncio.Future[object]) -> None:
        """The task ended between the two hooks: cancelled, or failed."""
        if not self.ended:
            failure = None if task.cancelled() else task.exception()
            self.end("cancelled" if failure is None else type(failure).__name__)


_TOOL_SPAN: ContextVar[_ToolSpan | None] = ContextVar("assembler_tool_span", default=None)


class TracedHooks:
    """The runner's hooks, unchanged, with an `invoke_agent` span per run and an
    `execute_tool` span per call that reaches them."""

    def __init__(self, inner: RunnerHooks, telemetry: AgentTelemetry) -> None:
        self.inner = inner
        self.telemetry = telemetry

    # -- the run -----------------------------------------------------------------------

    async def on_run_start(self, prompt: str) -> None:
        telemetry = self.telemetry
        if telemetry.run is not None:  # the last run ended by an exception, not a reason
            fail(telemetry.run.span, "incomplete")
            telemetry.run.span.end()
        attributes = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.request.model": telemetry.model,
        }
        if telemetry.agent_description:
            attributes["gen_ai.agent.description"] = telemetry.agent_description
        span = start(
            telemetry,
            f"invoke_agent {telemetry.agent_name}",
            kind=SpanKind.INTERNAL,
            parent=context.get_current(),  # an application's span, or a parent agent's tool
            attributes=attributes,
        )
        if telemetry.content and span.is_recording():
            span.set_attribute("gen_ai.input.messages", text_messages("user", prompt))
        telemetry.run = RunState(span, in_context(span), asyncio.current_task())
        await self.inner.on_run_start(prompt)

    async def on_run_end(self, reason: str) -> None:
        run, self.telemetry.run = self.telemetry.run, None
        try:
            await self.inner.on_run_end(reason)
        finally:
            if run is not None:
                _end_run(run, reason, self.telemetry.content, self.telemetry.price is not None)

    async def on_turn_start(self, turn: int) -> None:
        await self.inner.on_turn_start(turn)

    async def on_turn_end(self, turn: int, message: AssistantMessage) -> None:
        run = self.telemetry.run
        if run is not None and message.text:
            run.answer = message.text
        await self.inner.on_turn_end(turn, message)

    async def transform_context(self, messages: Sequence[Message]) -> Sequence[Message]:
        return await self.inner.transform_context(messages)

    # -- tool calls --------------------------------------------------------------------

    async def before_tool_call(self, call: ToolCall) -> CallDecision:
        run = self.telemetry.run
        if run is None:
            return await self.inner.before_tool_call(call)
        tool = self._start_tool(run, call)
        try:
            decision = await self.inner.before_tool_call(call)
        except BaseException as e:
            tool.end(type(e).__name__)
            raise
        if decision.blocked:
            _blocked(tool.span, decision, with_content=self.telemetry.content)
            tool.end("blocked")
        return decision

    async def after_tool_result(self, call: ToolCall, result: ToolResult) -> ResultOutcome:
        tool = _TOOL_SPAN.get()
        if tool is None or tool.call is not call:
            return await self.inner.after_tool_result(call, result)
        try:
            outcome = await self.inner.after_tool_result(call, result)
        except BaseException as e:
            tool.end(type(e).__name__)
            raise
        span = tool.span
        if outcome.rewritten_by:
            span.add_event(REWRITTEN_EVENT, {"assembler.rewritten_by": list(outcome.rewritten_by)})
        if self.telemetry.content and span.is_recording():
            span.set_attribute("gen_ai.tool.call.result", outcome.result.content)
        tool.end("tool_error" if outcome.result.is_error else "")
        return outcome

    def _start_tool(self, run: RunState, call: ToolCall) -> _ToolSpan:
        run.seen.add(id(call))
        span = _tool_span(self.telemetry, run, call, current_permission.get())
        tool = _ToolSpan(call, span)
        _TOOL_SPAN.set(tool)
        task = asyncio.current_task()
        if task is not None and task is not run.task:
            # The call's own task: the span becomes current there, and only there (the
            # task's context is its own copy, dropped with it, so nothing is detached).
            context.attach(in_context(span))
            task.add_done_callback(tool.end_with_task)
        return tool


def span_for_unseen_call(telemetry: AgentTelemetry, record: ToolCallRecord) -> None:
    """The span of a call the hooks never saw, from its finished trace record."""
    run = telemetry.run
    if run is None or id(record.call) in run.seen or getattr(record, "phase", "done") != "done":
        return
    span = _tool_span(telemetry, run, record.call, record.permission)
    if record.decision.blocked:
        _blocked(span, record.decision, record.permission, with_content=telemetry.content)
        error = "blocked"
    else:  # the runner answered for it: no such tool, no JSON object, or a steer came
        error = "invalid_arguments" if record.call.arguments is None else "not_run"
    if telemetry.content and span.is_recording() and record.final is not None:
        span.set_attribute("gen_ai.tool.call.result", record.final.content)
    fail(span, error)
    span.end()


def _tool_span(
    telemetry: AgentTelemetry, run: RunState, call: ToolCall, permission: PermissionOutcome | None
) -> Span:
    span = start(
        telemetry,
        f"execute_tool {call.name}",
        kind=SpanKind.INTERNAL,
        parent=run.context,
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.id,
            "gen_ai.tool.type": "function",
        },
    )
    if permission is not None and span.is_recording():
        span.set_attribute("assembler.permission.decided_by", permission.decided_by)
        if permission.rule:
            span.set_attribute("assembler.permission.rule", permission.rule)
    if telemetry.content and span.is_recording():
        span.set_attribute(
            "gen_ai.tool.call.arguments", arguments_json(call.arguments, call.raw_arguments)
        )
    return span


def _blocked(
    span: Span,
    decision: CallDecision,
    permission: PermissionOutcome | None = None,
    *,
    with_content: bool,
) -> None:
    """Who blocked the call, always; why, only with the content opt-in: a reason is
    free text, and guards quote what they refuse (a command with its token in it)."""
    attributes = {"assembler.blocked_by": decision.blocked_by}
    if with_content:
        attributes["assembler.reason"] = decision.reason
    if permission is not None and permission.rule:
        attributes["assembler.permission.rule"] = permission.rule
    span.add_event(BLOCKED_EVENT, attributes)


def _end_run(run: RunState, reason: str, with_content: bool, price_known: bool = False) -> None:
    span = run.span
    if span.is_recording():
        span.set_attribute("assembler.run.reason", reason)
        span.set_attribute("gen_ai.usage.input_tokens", run.usage.input_tokens)
        span.set_attribute("gen_ai.usage.output_tokens", run.usage.output_tokens)
        if run.usage.cache_read_tokens:
            span.set_attribute("gen_ai.usage.cache_read.input_tokens", run.usage.cache_read_tokens)
        if run.usage.cache_write_tokens:
            span.set_attribute(
                "gen_ai.usage.cache_creation.input_tokens", run.usage.cache_write_tokens
            )
        if price_known:
            span.set_attribute("assembler.usage.cost_usd", round(run.cost, 6))
        if with_content and run.answer:
            span.set_attribute("gen_ai.output.messages", text_messages("assistant", run.answer))
    if reason == "error":
        fail(span, run.error_type or "_OTHER")
    span.end()
