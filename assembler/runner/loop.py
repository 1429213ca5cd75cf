"""`AgentRunner`: the loop of model requests and tool calls for one prompt.

Before every model request it asks its zero-argument system-prompt provider for the
prompt of this turn and the tool registry for the schemas of this turn, so a tool
registered between two requests is in both the prompt and the schemas of the next
one. It never falls back to a prompt built earlier: a prompt without this turn's
workspace, tools, skills and memory describes a different agent. It does not catch
the renderer's exceptions either: a broken data source must fail loudly
(DESIGN.md section 5).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable

from assembler.errors import ProviderError, RenderError
from assembler.messages import (
    AssistantMessage,
    Message,
    ModelRequest,
    ModelSettings,
    ResponseDone,
    TextDelta,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from assembler.providers.base import ModelProvider
from assembler.runner.events import (
    ErrorEvent,
    Event,
    RunEnd,
    RunStart,
    TextDeltaEvent,
    ToolCallBlocked,
    ToolCallProposed,
    ToolResultEvent,
    TurnEnd,
    TurnStart,
    UsageEvent,
)
from assembler.runner.hooks import NoHooks, RunnerHooks, ToolCallRecord
from assembler.tools.base import ToolContext, ToolResult
from assembler.tools.registry import ToolRegistry

DEFAULT_MAX_TURNS = 50
DEFAULT_MAX_CONSECUTIVE_BLOCKS = 3
#: Tool calls of one assistant message that run at the same time (`limits.max_parallel_tools`).
DEFAULT_MAX_PARALLEL_TOOLS = 8

TraceSink = Callable[[ToolCallRecord], None]


class AgentRunner:
    """Runs prompts against a model with the tools of a registry.

    `messages` is the conversation so far; `run()` appends to it as it goes, so a
    second prompt continues the same conversation.
    """

    def __init__(
        self,
        *,
        provider: ModelProvider,
        system_prompt: Callable[[], str],
        registry: ToolRegistry,
        tool_context: ToolContext,
        settings: ModelSettings | None = None,
        model_name: str = "",
        max_turns: int = DEFAULT_MAX_TURNS,
        max_consecutive_blocks: int = DEFAULT_MAX_CONSECUTIVE_BLOCKS,
        max_parallel_tools: int = DEFAULT_MAX_PARALLEL_TOOLS,
        hooks: RunnerHooks | None = None,
        trace: TraceSink | None = None,
    ) -> None:
        if not callable(system_prompt):
            raise RenderError(
                f"the system prompt provider must be callable, got {type(system_prompt).__name__}"
            )
        self.provider = provider
        self.system_prompt = system_prompt
        self.registry = registry
        self.tool_context = tool_context
        self.settings = settings or ModelSettings()
        self.model_name = model_name or provider.name
        self.max_turns = max_turns
        self.max_consecutive_blocks = max_consecutive_blocks
        self.max_parallel_tools = max(1, max_parallel_tools)
        self.hooks: RunnerHooks = hooks or NoHooks()
        self.trace = trace
        self.messages: list[Message] = []
        self.usage = Usage()
        self.label = provider.name
        self.endpoint = ""

    def current_system_prompt(self) -> str:
        """Ask the provider for this turn's prompt; it must be a non-empty `str`."""
        prompt = self.system_prompt()
        if not isinstance(prompt, str):
            raise RenderError(
                f"the system prompt provider returned {type(prompt).__name__}, not str"
            )
        if not prompt.strip():
            raise RenderError("the system prompt provider returned an empty prompt")
        return prompt

    async def run(self, prompt: str, *, max_turns: int | None = None) -> AsyncIterator[Event]:
        """Run one prompt to the end, yielding events; the last is always `RunEnd`
        (unless an exception propagates, such as the renderer's)."""
        limit = max_turns or self.max_turns
        yield RunStart(prompt, self.label, self.endpoint)
        await self.hooks.on_run_start(prompt)
        self.messages.append(UserMessage(prompt))
        consecutive_blocks = 0
        turn = 0
        final_text = ""
        reason = "max_turns"
        note = f"stopped after {limit} turns (limits.max_turns); the task may be unfinished"
        try:
            while turn < limit:
                turn += 1
                yield TurnStart(turn)
                await self.hooks.on_turn_start(turn)
                done: ResponseDone | None = None
                try:
                    async for event in self._request():
                        if isinstance(event, TextDelta):
                            yield TextDeltaEvent(event.text)
                        else:
                            done = event
                except ProviderError as e:
                    # The model endpoint failed (after the SDK's own retries): the run
                    # ends, the conversation stays valid, the next prompt may succeed.
                    yield ErrorEvent(str(e), type(e).__name__)
                    reason, note = "error", str(e)
                    break
                assert done is not None  # _request always ends with ResponseDone
                message = done.message
                self.messages.append(message)
                self.usage = self.usage + done.usage
                yield UsageEvent(done.usage, self.usage)
                final_text = message.text or final_text
                if not message.tool_calls:
                    await self.hooks.on_turn_end(turn, message)
                    yield TurnEnd(turn, message, done.stop_reason)
                    reason, note = "completed", ""
                    break
                for call in message.tool_calls:
                    yield ToolCallProposed(call)
                records = await self._execute_all(turn, message.tool_calls)
                for record in records:
                    if record.decision.blocked:
                        consecutive_blocks += 1
                        yield ToolCallBlocked(
                            record.call, record.decision.reason, record.decision.blocked_by
                        )
                    else:
                        consecutive_blocks = 0
                    final = record.final or ToolResult("", is_error=True)
                    yield ToolResultEvent(
                        record.call, final.content, final.is_error, record.executed, final.details
                    )
                await self.hooks.on_turn_end(turn, message)
                yield TurnEnd(turn, message, done.stop_reason)
                if consecutive_blocks >= self.max_consecutive_blocks:
                    reason = "blocked"
                    note = (
                        f"stopped after {consecutive_blocks} blocked tool calls in a row "
                        "(limits.max_consecutive_blocks)"
                    )
                    break
        except asyncio.CancelledError:
            await self.hooks.on_run_end("cancelled")
            raise
        await self.hooks.on_run_end(reason)
        yield RunEnd(reason, final_text, turn, self.usage, note)

    async def _request(self) -> AsyncIterator[TextDelta | ResponseDone]:
        system = self.current_system_prompt()
        messages = await self.hooks.transform_context(self.messages)
        request = ModelRequest(
            model=self.model_name,
            system=system,
            messages=tuple(messages),
            tools=self.registry.schemas(),
            settings=self.settings,
        )
        done = None
        async for event in self.provider.stream(request):
            if isinstance(event, ResponseDone):
                done = event
            yield event
        if done is None:
            yield ResponseDone(AssistantMessage(), Usage(), "empty")

    async def _execute_all(self, turn: int, calls: tuple[ToolCall, ...]) -> list[ToolCallRecord]:
        """Run the calls of one message concurrently, at most `max_parallel_tools` at a
        time (in the model's order); results keep the model's order.

        Every call gets a result message and a trace record, even when the run stops
        here: cancelled by the user, or an extension's `tool_result` handler failed
        (the call may have run; the trace must say so). Then the error propagates.
        """
        records = [ToolCallRecord(turn=turn, call=call) for call in calls]
        slots = asyncio.Semaphore(self.max_parallel_tools)

        async def execute(record: ToolCallRecord) -> ToolCallRecord:
            async with slots:
                return await self._execute(record)

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
            self.messages.append(
                ToolResultMessage(record.call.id, record.call.name, final.content, final.is_error)
            )
            if self.trace is not None:
                self.trace(record)

    async def _execute(self, record: ToolCallRecord) -> ToolCallRecord:
        call = record.call
        started = time.perf_counter()
        if call.arguments is None:
            record.final = ToolResult(
                f"tool `{call.name}` was not run: its arguments are not a JSON object "
                f"({call.arguments_error or 'invalid JSON'}). Send the arguments again as JSON.",
                is_error=True,
            )
            return record
        tool = self.registry.get(call.name)
        if tool is None:
            known = ", ".join(self.registry.names()) or "none"
            record.final = ToolResult(
                f"there is no tool named `{call.name}`; available tools: {known}", is_error=True
            )
            return record
        record.decision = await self.hooks.before_tool_call(call)
        if record.decision.blocked:
            record.final = ToolResult(
                f"tool call blocked by {record.decision.blocked_by}: {record.decision.reason}",
                is_error=True,
                details={"blocked_by": record.decision.blocked_by},
            )
            return record
        record.executed = True
        try:
            raw = await tool.execute(dict(call.arguments), self.tool_context)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # a tool's own bug must not end the run
            raw = ToolResult(f"tool `{call.name}` failed: {type(e).__name__}: {e}", is_error=True)
        record.raw_result = raw
        record.duration_ms = (time.perf_counter() - started) * 1000
        try:
            outcome = await self.hooks.after_tool_result(call, raw)
        except Exception as e:
            record.final = ToolResult(f"the result was withheld: {e}", is_error=True)
            record.notes.append(f"tool_result processing failed: {e}")
            raise
        record.final = outcome.result
        record.rewritten_by = outcome.rewritten_by
        return record
