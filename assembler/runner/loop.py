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
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing
from dataclasses import replace

from assembler.errors import ProviderError, RenderError
from assembler.messages import (
    Message,
    ModelSettings,
    ResponseDone,
    Usage,
    UserMessage,
)
from assembler.providers.base import ModelProvider
from assembler.runner.answer import OUTPUT_INVALID, Answer
from assembler.runner.budget import BudgetStop
from assembler.runner.calls import ToolCalls
from assembler.runner.compaction import (
    DEFAULT_KEEP_TOKENS,
    plan_compaction,
    summarise,
    summary_message,
)
from assembler.runner.cuts import cut_calls, larger_limit, was_cut
from assembler.runner.events import (
    Compacted,
    Diagnostic,
    ErrorEvent,
    Event,
    PlanUpdated,
    RunEnd,
    RunStart,
    ToolCallBlocked,
    ToolCallProposed,
    ToolCallResult,
    TurnEnd,
    TurnStart,
    UsageEvent,
    UserMessageDelivered,
)
from assembler.runner.hooks import (
    PermissionCheck,
)
from assembler.runner.metering import BudgetExhausted, Meter
from assembler.runner.parts import RunnerParts, RunRecorder
from assembler.runner.progress import ToolProgress
from assembler.runner.requests import ModelRequests
from assembler.tools.base import ToolContext, ToolResult
from assembler.tools.builtin.todo import plan_of
from assembler.typed.output import OutputContract

DEFAULT_MAX_TURNS = 50
DEFAULT_MAX_CONSECUTIVE_BLOCKS = 3
DEFAULT_COMPACT_RESERVE = 16_384
#: Tool calls of one assistant message that run at the same time (`limits.max_parallel_tools`).
DEFAULT_MAX_PARALLEL_TOOLS = 8


class AgentRunner(ToolCalls, ModelRequests):
    """Runs prompts against a model with the tools of a registry.

    `messages` is the conversation so far; `run()` appends to it as it goes, so a
    second prompt continues the same conversation. While a run works, `steer()`
    queues a message for the next boundary (after the running tools, before the
    next request) and `follow_up()` one for when the run would end.
    """

    def __init__(
        self,
        *,
        provider: ModelProvider,
        parts: RunnerParts,
        tool_context: ToolContext,
        settings: ModelSettings | None = None,
        model_name: str = "",
        max_turns: int = DEFAULT_MAX_TURNS,
        max_consecutive_blocks: int = DEFAULT_MAX_CONSECUTIVE_BLOCKS,
        recorder: RunRecorder | None = None,
        context_window: int | None = None,
        compact_reserve: int = DEFAULT_COMPACT_RESERVE,
        keep_tokens: int = DEFAULT_KEEP_TOKENS,
        max_parallel_tools: int = DEFAULT_MAX_PARALLEL_TOOLS,
        endpoint: str = "",
        permissions: PermissionCheck | None = None,
        output: OutputContract | None = None,
        meter: Meter | None = None,
        stable_prefix: Callable[[str], int | None] | None = None,
        max_output: int | None = None,
    ) -> None:
        self.provider = provider
        self.parts = parts
        self.tool_context = tool_context
        self.settings = settings or ModelSettings()
        self.model_name = model_name or provider.name
        self.max_turns = max_turns
        self.max_consecutive_blocks = max_consecutive_blocks
        self.recorder = recorder
        self.context_window = context_window
        self.compact_reserve = compact_reserve
        self.keep_tokens = keep_tokens
        self.max_parallel_tools = max(1, max_parallel_tools)
        self.messages: list[Message] = []
        self.usage = Usage()
        self.context_tokens = 0
        """Input tokens of the latest response: how full the context window is."""
        self.label = provider.name
        self.endpoint = endpoint
        """Where requests go, as banners show it (empty for the provider's own)."""
        self.running = False
        self.permissions = permissions
        """Decides each call before extensions do (the manifest's `permissions`)."""
        self.output = output
        """The schema every run must end with an answer of (the manifest's `output`)."""
        self._answer: Answer | None = None
        self._steers: deque[str] = deque()
        self._follow_ups: deque[str] = deque()
        self.meter = meter or Meter(context_window=context_window)
        """Prices each response and keeps each run within its budgets."""
        self.stable_prefix = stable_prefix
        """How much of a system prompt stays the same every turn (a cache breakpoint)."""
        self.max_output = max_output
        """The model's longest reply, when known: the most a retry after a cut asks."""
        self._budget_stop: BudgetStop | None = None
        self._cost_of_last = 0.0

    @property
    def cost(self) -> float:
        """What every response so far cost, in US dollars (0 without a known price)."""
        return self.meter.cost

    @property
    def parts(self) -> RunnerParts:
        return self._parts

    @parts.setter
    def parts(self, parts: RunnerParts) -> None:
        """Swapped as a unit (`Agent.reload()`); the prompt provider must be callable."""
        if not callable(parts.prompt):
            raise RenderError(
                f"the system prompt provider must be callable, got {type(parts.prompt).__name__}"
            )
        self._parts = parts

    def current_system_prompt(self) -> str:
        """Ask the provider for this turn's prompt; it must be a non-empty `str`."""
        prompt = self.parts.prompt()
        if not isinstance(prompt, str):
            raise RenderError(
                f"the system prompt provider returned {type(prompt).__name__}, not str"
            )
        if not prompt.strip():
            raise RenderError("the system prompt provider returned an empty prompt")
        return prompt

    # -- messages from the user while the agent works ---------------------------------

    def steer(self, text: str) -> None:
        """Deliver `text` after the tool calls in progress, before the next request;
        calls of the same message that have not started are skipped. Sent while idle,
        it follows the next prompt."""
        self._steers.append(text)

    def follow_up(self, text: str) -> None:
        """Deliver `text` as a new user turn when the run would otherwise end."""
        self._follow_ups.append(text)

    def queued(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Steers and follow-ups not delivered yet, in order."""
        return tuple(self._steers), tuple(self._follow_ups)

    def _append(
        self, message: Message, usage: Usage | None = None, cost: float | None = None
    ) -> None:
        self.messages.append(message)
        if self.recorder is not None:
            self.recorder.message(message, usage, cost)

    def _deliver(self, queue: deque[str], source: str, *, one: bool = False) -> list[Event]:
        events: list[Event] = []
        while queue:
            text = queue.popleft()
            self._append(UserMessage(text))
            events.append(UserMessageDelivered(source, text))
            if one:
                break
        return events

    # -- compaction -------------------------------------------------------------------

    def needs_compaction(self) -> bool:
        """Reported usage has passed `context_window - compact_reserve`."""
        if not self.context_window:
            return False
        return self.context_tokens > self.context_window - self.compact_reserve

    async def compact(
        self, instructions: str | None = None, *, reason: str = "manual"
    ) -> Compacted | None:
        """Summarise the history before the recent tail with the model; None when
        nothing is older than the last user turn. The system prompt is not part of it."""
        plan = plan_compaction(self.messages, keep_tokens=self.keep_tokens)
        if plan is None:
            return None
        older = self.messages[: plan.cut]
        budget = None
        if self.context_window:
            budget = max(16_000, (self.context_window - self.compact_reserve) * 3)
        summary = await summarise(
            self.provider,
            self.model_name,
            older,
            instructions=instructions,
            settings=replace(self.settings, tool_choice=None),
            max_chars=budget,
        )
        tokens_before = self.context_tokens or plan.tokens_before
        kept = self.messages[plan.cut :]
        self.messages = [summary_message(summary.text), *kept]  # a new list: see History
        self.context_tokens = 0
        self.usage = self.usage + summary.usage
        self.meter.charge(summary.usage)
        if self.recorder is not None:
            self.recorder.compaction(summary.text, plan.cut, tokens_before, reason)
        return Compacted(reason, tokens_before, len(older), len(kept), summary.text, summary.usage)

    # -- the run ------------------------------------------------------------------------

    async def run(
        self, prompt: str, *, max_turns: int | None = None
    ) -> AsyncGenerator[Event, None]:
        """Run one prompt to the end, yielding events; the last is always `RunEnd`
        (unless an exception propagates, such as the renderer's)."""
        limit = max_turns or self.max_turns
        self.running = True
        try:  # closed early, the run winds down (tools cancelled and settled) at once
            async with aclosing(self._run(prompt, limit)) as events:
                async for event in events:
                    yield event
        finally:
            self.running = False

    async def _run(self, prompt: str, limit: int) -> AsyncGenerator[Event, None]:
        answer = self._answer = Answer(self.output) if self.output is not None else None
        yield RunStart(prompt, self.label, self.endpoint)
        self.meter.start_run()
        self._budget_stop = None
        start_cost = self.meter.cost
        await self.parts.hooks.on_run_start(prompt)
        self._append(UserMessage(prompt))
        for event in self._deliver(self._steers, "steer"):
            yield event
        consecutive_blocks = 0
        turn = 0
        final_text = ""
        reason = "max_turns"
        note = f"stopped after {limit} turns (limits.max_turns); the task may be unfinished"
        retried_cut = False
        try:
            while turn < limit:
                turn += 1
                yield TurnStart(turn)
                await self.parts.hooks.on_turn_start(turn)
                async for event in self._compact_if_full():
                    yield event
                done: ResponseDone | None = None
                failure: ProviderError | BudgetExhausted | None = None
                wanted = None
                while True:  # at most twice: once more after a reply cut inside a call
                    async for item in self._respond(wanted):
                        if isinstance(item, ResponseDone):
                            done = item
                        elif isinstance(item, ProviderError | BudgetExhausted):
                            failure = item
                        else:
                            yield item
                    if failure is not None or done is None or retried_cut or not was_cut(done):
                        break
                    retried_cut = True  # one retry per run: a model that keeps writing
                    wanted = larger_limit(self.meter.last_max_tokens, self.max_output)
                    if wanted is None:
                        break
                    self._charge(done)  # the cut reply was paid for all the same
                    yield self._usage_event(done)
                    yield Diagnostic(
                        f"the reply was cut at max_tokens ({self.meter.last_max_tokens:,}) "
                        f"inside a tool call, which was not run; asking again with {wanted:,}",
                        "warning",
                    )
                    done = None
                if isinstance(failure, BudgetExhausted):
                    reason, note = "budget", str(failure)
                    self._budget_stop = failure.stop
                    break
                if failure is not None:
                    # The model endpoint failed (after the SDK's own retries): the run
                    # ends, the conversation stays valid, the next prompt may succeed.
                    yield ErrorEvent(str(failure), type(failure).__name__)
                    reason, note = "error", str(failure)
                    break
                assert done is not None  # _request always ends with ResponseDone
                if was_cut(done):  # still cut: the calls are answered, never run
                    done = replace(done, message=cut_calls(done.message))
                    yield Diagnostic(
                        "the reply was cut at max_tokens inside a tool call; the call was not "
                        "run, and the model is told to continue in smaller pieces",
                        "warning",
                    )
                message = done.message
                cost = self._charge(done)
                while self.meter.notes:  # a prefix the prompt cache could not serve
                    yield Diagnostic(self.meter.notes.pop(0), "warning")
                self._append(message, done.usage, cost if self.meter.price else None)
                yield self._usage_event(done, cost)
                final_text = message.text or final_text
                if not message.tool_calls:
                    await self.parts.hooks.on_turn_end(turn, message)
                    yield TurnEnd(turn, message, done.stop_reason)
                    cut = self.meter.cut_by_budget(done.stop_reason)
                    if cut is not None:  # the answer stops where the budget did
                        self._budget_stop = cut
                        reason, note = "budget", cut.message()
                        break
                    pending = self._deliver(self._steers, "steer") or self._deliver(
                        self._follow_ups, "follow_up", one=True
                    )
                    if not pending and answer is not None:
                        pending = self._ask_again(answer.on_text(message.text, done.output_via))
                    if pending:
                        for event in pending:
                            yield event
                        continue
                    reason, note = _ending(answer)
                    break
                for call in message.tool_calls:
                    yield ToolCallProposed(call)
                # what running tools send (a sub-agent's events) is yielded as it comes
                progress = ToolProgress()
                work = asyncio.ensure_future(
                    self._execute_all(turn, message.tool_calls, progress.emit)
                )
                async with aclosing(progress.until(work)) as sent:
                    async for event in sent:
                        yield event
                records = work.result()
                for record in records:
                    if record.decision.blocked:
                        consecutive_blocks += 1
                        yield ToolCallBlocked(
                            record.call, record.decision.reason, record.decision.blocked_by
                        )
                    elif record.executed:
                        consecutive_blocks = 0
                    final = record.final or ToolResult("", is_error=True)
                    yield ToolCallResult(
                        record.call, final.content, final.is_error, record.executed, final.details
                    )
                    plan = plan_of(self.parts.registry.get(record.call.name), record.raw_result)
                    if plan is not None:  # what the tool did, whatever a handler showed
                        yield PlanUpdated(plan, record.call.id)
                await self.parts.hooks.on_turn_end(turn, message)
                yield TurnEnd(turn, message, done.stop_reason)
                if answer is not None and answer.done:
                    reason, note = _ending(answer)
                    break
                for event in self._deliver(self._steers, "steer"):
                    yield event
                if self._budget_stop is not None:
                    reason, note = "budget", self._budget_stop.message()
                    break
                if consecutive_blocks >= self.max_consecutive_blocks:
                    reason = "blocked"
                    note = (
                        f"stopped after {consecutive_blocks} blocked tool calls in a row "
                        "(limits.max_consecutive_blocks)"
                    )
                    break
        except asyncio.CancelledError:
            await self.parts.hooks.on_run_end("cancelled")
            raise
        finally:
            self._answer = None
        await self.parts.hooks.on_run_end(reason)
        stop = self._budget_stop if reason == "budget" else None
        yield RunEnd(
            reason,
            final_text,
            turn,
            self.usage,
            note,
            cost_usd=self.meter.cost - start_cost if self.meter.price is not None else None,
            budget=stop.to_dict() if stop is not None else None,
            output=answer.value if answer is not None and answer.accepted else None,
            typed=answer is not None,
        )

    def _ask_again(self, text: str | None) -> list[Event]:
        """The message a typed run sends back when a reply was not a valid answer."""
        if text is None:
            return []
        self._append(UserMessage(text))
        return [UserMessageDelivered("output_check", text)]

    def _charge(self, done: ResponseDone) -> float:
        """Add a response's usage to the totals; its cost (settled by `_request`)."""
        self.usage = self.usage + done.usage
        self.context_tokens = done.usage.input_tokens
        return self._cost_of_last

    def _usage_event(self, done: ResponseDone, cost: float | None = None) -> UsageEvent:
        """The `UsageEvent` of a response: its usage, the totals, its cost and the total
        (None without a price), and the input the meter estimated before sending it."""
        costs: tuple[float | None, float | None] = (None, None)
        if self.meter.price is not None:
            costs = (self._cost_of_last if cost is None else cost), self.meter.cost
        return UsageEvent(done.usage, self.usage, *costs, self.meter.last_estimate)

    async def _compact_if_full(self) -> AsyncIterator[Event]:
        """Compact before the request when reported usage nears the window; a failed
        summary is a warning, and the request goes ahead as it is."""
        if not self.needs_compaction():
            return
        try:
            compacted = await self.compact(reason="threshold")
        except ProviderError as e:
            yield Diagnostic(f"automatic compaction failed: {e}", "warning")
            return
        if compacted is not None:
            yield compacted


def _ending(answer: Answer | None) -> tuple[str, str]:
    """The end reason and note of a run that stops on its own (nothing more to ask)."""
    if answer is None or answer.accepted:
        return "completed", ""
    return OUTPUT_INVALID, answer.note()
