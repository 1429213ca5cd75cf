"""Running the tool calls of one assistant message: permission, extensions, the tool,
what the model sees, and the audit trace, for each call; at most `max_parallel_tools`
at a time; results in the model's order.

`ToolCalls` is mixed into `AgentRunner`; it is its own module because it is its own
concern (what happens to one call) and the loop (what happens to one turn) reads
better without it.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from dataclasses import replace

from assembler.frozen import thaw
from assembler.messages import Message, ToolCall, ToolResultMessage
from assembler.runner.answer import Answer
from assembler.runner.budget import BudgetStop
from assembler.runner.hooks import (
    CallDecision,
    PermissionCheck,
    ToolCallRecord,
    current_permission,
)
from assembler.runner.metering import Meter
from assembler.runner.parts import RunnerParts
from assembler.tools.base import ToolContext, ToolResult

CANCEL_GRACE = 10.0
"""Seconds a cancelled run waits for its tools to wind down (a command's processes
killed, a sub-agent closed) before the cancellation goes on."""

SKIPPED_FOR_STEER = "skipped: the user sent a new instruction before this tool started"


class ToolCalls:
    """The tool-call half of `AgentRunner` (see the module docstring)."""

    parts: RunnerParts
    permissions: PermissionCheck | None
    tool_context: ToolContext
    max_parallel_tools: int
    meter: Meter
    _budget_stop: BudgetStop | None
    _steers: deque[str]
    _answer: Answer | None
    """The typed answer of the run in progress (the `final_answer` calls go to it)."""
    _append: Callable[[Message], None]
    """Adds a message to the conversation and tells the recorder (`AgentRunner`'s)."""

    async def _execute_all(
        self,
        turn: int,
        calls: tuple[ToolCall, ...],
        emit: Callable[[object], None] | None = None,
    ) -> list[ToolCallRecord]:
        """Run the calls of one message concurrently, at most `max_parallel_tools` at a
        time (in the model's order); results keep the model's order.

        Every call gets a result message and a trace record, even when the run stops
        here: cancelled by the user, or an extension's `tool_result` handler failed
        (the call may have run; the trace must say so). Then the error propagates;
        a cancellation waits (up to `CANCEL_GRACE`) for the tools to wind down first.
        """
        records = [ToolCallRecord(turn=turn, call=call) for call in calls]
        slots = asyncio.Semaphore(self.max_parallel_tools)

        async def execute(record: ToolCallRecord) -> ToolCallRecord:
            async with slots:
                return await self._execute(record, emit)

        tasks = [asyncio.ensure_future(execute(record)) for record in records]
        try:
            outcomes = await asyncio.gather(*tasks, return_exceptions=True)
        except asyncio.CancelledError:
            for task in tasks:
                task.cancel()
            for record in records:
                if record.final is None:
                    record.final = ToolResult("cancelled by the user", is_error=True)
            self._conclude(records)
            if tasks:
                await asyncio.wait(tasks, timeout=CANCEL_GRACE)
            raise
        self._conclude(records)
        failure = next((o for o in outcomes if isinstance(o, BaseException)), None)
        if failure is not None:
            raise failure
        return records

    def _conclude(self, records: list[ToolCallRecord]) -> None:
        """Append each call's result message and write its trace record, in order."""
        for record in records:
            final = record.final or ToolResult("the call did not finish", is_error=True)
            record.final = final
            self._append(
                ToolResultMessage(record.call.id, record.call.name, final.content, final.is_error)
            )
            if self.parts.trace is not None:
                self.parts.trace(record)

    async def _execute(
        self, record: ToolCallRecord, emit: Callable[[object], None] | None = None
    ) -> ToolCallRecord:
        call = record.call
        started = time.perf_counter()
        if self._steers:
            record.final = ToolResult(SKIPPED_FOR_STEER, is_error=True)
            return record
        if self._answer is not None and call.name == self._answer.tool:
            # the typed answer: no side effect, so no rule or guard stands between the
            # model and finishing (see `runner.answer`)
            record.executed = True
            record.final = self._answer.on_call(call)
            return record
        if call.arguments is None:
            record.final = ToolResult(
                f"tool `{call.name}` was not run: its arguments are not a JSON object "
                f"({call.arguments_error or 'invalid JSON'}). Send the arguments again as JSON.",
                is_error=True,
            )
            return record
        tool = self.parts.registry.get(call.name)
        if tool is None:
            known = ", ".join(self.parts.registry.names()) or "none"
            record.final = ToolResult(
                f"there is no tool named `{call.name}`; available tools: {known}", is_error=True
            )
            return record
        if self.permissions is not None:
            record.permission = await self.permissions.check(call, tool)
            current_permission.set(record.permission)
            if not record.permission.allowed:
                record.decision = CallDecision(True, record.permission.reason, "permissions")
                record.final = ToolResult(
                    f"tool call denied by the permissions: {record.permission.reason}",
                    is_error=True,
                    details={"blocked_by": "permissions", "rule": record.permission.rule},
                )
                return record
        record.decision = await self.parts.hooks.before_tool_call(call)
        if record.decision.blocked:
            record.final = ToolResult(
                f"tool call blocked by {record.decision.blocked_by}: {record.decision.reason}",
                is_error=True,
                details={"blocked_by": record.decision.blocked_by},
            )
            return record
        stop = self.meter.start_tool_call()
        if stop is not None:  # counted only when it would really run
            self._budget_stop = self._budget_stop or stop
            record.final = ToolResult(f"not run: {stop.message()}", is_error=True)
            return record
        if self.parts.trace is not None:  # a run killed mid-tool still leaves this
            record.phase = "started"
            self.parts.trace(record)
            record.phase = "done"
        record.executed = True
        try:
            # a copy of its own: a tool changing its arguments in place must not change
            # the proposal that the conversation and the audit trace record
            context = replace(
                self.tool_context,
                call_id=call.id,
                emit=emit,
                timeout=self.meter.tool_timeout(self.tool_context.timeout),
                budget=self.meter.pot,
            )
            raw = await tool.execute(thaw(call.arguments), context)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # a tool's own bug must not end the run
            raw = ToolResult(f"tool `{call.name}` failed: {type(e).__name__}: {e}", is_error=True)
        record.raw_result = raw
        record.duration_ms = (time.perf_counter() - started) * 1000
        try:
            outcome = await self.parts.hooks.after_tool_result(call, raw)
        except Exception as e:
            record.final = ToolResult(f"the result was withheld: {e}", is_error=True)
            record.notes.append(f"tool_result processing failed: {e}")
            raise
        record.final = outcome.result
        record.rewritten_by = outcome.rewritten_by
        return record
