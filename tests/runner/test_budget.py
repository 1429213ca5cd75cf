"""Budgets in the runner: an adversarial model that asks for huge replies and calls
tools with huge results never crosses a token budget by more than one request's
estimation error; `tool_calls` and `wall_time` stop at exactly their limits; dollars
are counted from the price; a reply cut inside a tool call is never run."""

from __future__ import annotations

import asyncio
import json
import random
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from assembler.budgets import BudgetLimits
from assembler.messages import (
    AssistantMessage,
    ModelRequest,
    ResponseDone,
    ToolCall,
    Usage,
    to_plain,
)
from assembler.pricing import Price
from assembler.runner.budget import BudgetPot
from assembler.runner.cuts import CUT_NOTE
from assembler.runner.events import Diagnostic, RunEnd, ToolCallResult, UsageEvent
from assembler.runner.loop import AgentRunner
from assembler.runner.metering import Meter
from assembler.runner.parts import RunParts
from assembler.testing import FunctionModel
from assembler.tools.base import Tool, ToolContext, ToolResult
from assembler.tools.registry import ToolRegistry

_TOKEN = re.compile(r"\w+|[^\w\s]")


def server_tokens(request: ModelRequest) -> int:
    """The "provider's" count of a request: a word or a punctuation mark per token, not
    the runner's characters / 4, so the estimate has a real error to measure."""
    plain = {
        "system": request.system,
        "tools": [(t.name, t.description, t.parameters) for t in request.tools],
        "messages": [to_plain(m.__dict__) for m in request.messages],
    }
    return len(_TOKEN.findall(json.dumps(plain, default=str)))


def dump_tool(rng: random.Random, calls: list[str]) -> Tool:
    """A tool whose results are huge and unpredictable: words, or JSON-ish punctuation
    (many more tokens per character than the estimate assumes)."""

    async def execute(arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        calls.append(str(arguments))
        size = rng.randint(500, 30_000)
        if rng.random() < 0.5:
            body = " ".join(rng.choice(("alpha", "beta", "gamma", "x")) for _ in range(size // 5))
        else:
            body = "".join(rng.choice('{}[],:"0123') for _ in range(size))
        return ToolResult(body)

    return Tool("dump", "Dump something big.", {"type": "object"}, execute, snippet="Dumps")


def runner_with(model: Any, tools: list[Tool], meter: Meter, **kw: Any) -> AgentRunner:
    registry = ToolRegistry()
    for tool in tools:
        registry.register(tool)
    return AgentRunner(
        provider=model,
        parts=RunParts(lambda: "## identity\nA greedy agent.", registry),
        tool_context=ToolContext(workspace=Path.cwd()),
        meter=meter,
        max_turns=200,
        **kw,
    )


def run(runner: AgentRunner, prompt: str = "spend") -> list[Any]:
    async def collect() -> list[Any]:
        return [event async for event in runner.run(prompt)]

    return asyncio.run(collect())


def greedy(rng: random.Random, per_turn: int = 1, largest: int = 1_000_000) -> FunctionModel:
    """Wants replies of up to `largest` tokens (often the largest) and `per_turn` more
    tool calls; writes as much of it as the request's `max_tokens` lets it."""

    def reply(request: ModelRequest) -> ResponseDone:
        wanted = largest if rng.random() < 0.3 else rng.randint(1, largest // 50 or 1)
        limit = request.settings.max_tokens
        output = wanted if limit is None else min(wanted, limit)
        calls = tuple(ToolCall("", "dump", {"n": rng.randint(0, 99)}) for _ in range(per_turn))
        return ResponseDone(
            AssistantMessage(text="More.", tool_calls=calls),
            Usage(input_tokens=server_tokens(request), output_tokens=output),
            "tool_calls",
        )

    return FunctionModel(reply)


@pytest.mark.parametrize("seed", range(100))
def test_a_token_budget_is_crossed_by_at_most_one_requests_estimation_error(seed: int) -> None:
    rng = random.Random(seed)
    limit = rng.randint(3_000, 120_000)
    calls: list[str] = []
    meter = Meter(limits=BudgetLimits(tokens=limit))
    events = run(runner_with(greedy(rng), [dump_tool(rng, calls)], meter))

    end = events[-1]
    assert isinstance(end, RunEnd) and end.reason == "budget", end
    assert end.budget is not None and end.budget["budget"] == "tokens"
    usages = [e for e in events if isinstance(e, UsageEvent)]
    assert usages, "the first request fits every budget drawn here"
    errors = [u.usage.input_tokens - (u.estimated_input_tokens or 0) for u in usages]
    spent = end.usage.input_tokens + end.usage.output_tokens
    assert meter.pot is not None and meter.pot.tokens == spent
    over = spent - limit
    # the only way past the limit: the last request's input was larger than estimated
    assert over <= max(0, errors[-1]) <= max(0, *errors)
    # the stop names the budget, its limit and what was used
    assert end.budget == {"budget": "tokens", "limit": limit, "used": spent, "scope": "run"}
    assert "budget `tokens` is spent" in end.message


def test_the_estimation_error_is_measured_and_small_after_the_first_request() -> None:
    """The figure the budget guarantee rests on: how far the calibrated estimate is from
    the provider's count, on a long session with mixed content."""
    rng = random.Random(7)
    meter = Meter(limits=BudgetLimits(tokens=300_000))
    events = run(runner_with(greedy(rng, largest=500), [dump_tool(rng, [])], meter))
    usages = [e for e in events if isinstance(e, UsageEvent)]
    assert len(usages) >= 10
    errors = [u.usage.input_tokens - (u.estimated_input_tokens or 0) for u in usages]
    print("estimation errors (tokens):", errors)
    # the history the provider already counted is never guessed again: from the
    # second request on, the error is at most what the request added (a reply and a
    # tool result of unpredictable content), however long the history
    for before, after, error in zip(usages, usages[1:], errors[1:], strict=False):
        added = after.usage.input_tokens - before.usage.input_tokens
        assert error <= added  # an estimate too low (the side that can cross a budget)
        assert -error <= 4 * added  # too high (stops early): bounded by the ratio's cap
    relative = [abs(e) / u.usage.input_tokens for e, u in zip(errors, usages, strict=True)]
    print("relative:", [round(r, 3) for r in relative])
    assert sum(relative[2:]) / len(relative[2:]) < 0.15  # a small share of long requests


@pytest.mark.parametrize("limit", [1, 2, 5, 7, 20])
def test_tool_calls_stop_at_exactly_their_limit(limit: int) -> None:
    rng = random.Random(limit)
    calls: list[str] = []
    meter = Meter(limits=BudgetLimits(tool_calls=limit))
    events = run(runner_with(greedy(rng, per_turn=3), [dump_tool(rng, calls)], meter))

    assert len(calls) == limit
    results = [e for e in events if isinstance(e, ToolCallResult)]
    assert sum(r.executed for r in results) == limit
    refused = [r for r in results if not r.executed]
    assert refused and all("budget `tool_calls` is spent" in r.content for r in refused)
    end = events[-1]
    assert isinstance(end, RunEnd) and end.reason == "budget"
    assert end.budget == {"budget": "tool_calls", "limit": limit, "used": limit, "scope": "run"}


def test_wall_time_stops_at_the_first_boundary_after_the_deadline() -> None:
    """A clock the test moves: each tool call takes 1 s; with 5.5 s, calls start at
    0 to 5 s, and nothing (request or call) starts after the deadline."""
    now = [0.0]
    starts: list[float] = []
    requests: list[float] = []

    async def slow(arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        starts.append(now[0])
        now[0] += 1.0
        assert context.timeout <= 5.5 - starts[-1]  # tools get what is left
        return ToolResult("done")

    def reply(request: ModelRequest) -> AssistantMessage:
        requests.append(now[0])
        return AssistantMessage(tool_calls=(ToolCall("", "slow", {}),))

    tool = Tool("slow", "Slow.", {"type": "object"}, slow, snippet="Slow")
    meter = Meter(limits=BudgetLimits(wall_time=5.5), clock=lambda: now[0])
    events = run(runner_with(FunctionModel(reply), [tool], meter))

    assert starts == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert requests == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    end = events[-1]
    assert isinstance(end, RunEnd) and end.reason == "budget"
    assert end.budget == {"budget": "wall_time", "limit": 5.5, "used": 6.0, "scope": "run"}


def test_a_cost_budget_counts_dollars_from_the_price() -> None:
    """$3 / $15 per million: each request of 1,000 tokens in costs $0.003; replies are
    capped so the dollars left pay for them."""
    price = Price(input=3, output=15)

    def reply(request: ModelRequest) -> ResponseDone:
        limit = request.settings.max_tokens or 0
        return ResponseDone(
            AssistantMessage(text="x", tool_calls=(ToolCall("", "dump", {}),)),
            Usage(input_tokens=1_000, output_tokens=min(50_000, limit)),
            "tool_calls",
        )

    async def small(arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult("ok")

    tool = Tool("dump", "Small.", {"type": "object"}, small, snippet="Small")
    meter = Meter(limits=BudgetLimits(cost_usd=0.5), price=price)
    events = run(runner_with(FunctionModel(reply), [tool], meter))

    end = events[-1]
    assert isinstance(end, RunEnd) and end.reason == "budget"
    assert end.budget is not None and end.budget["budget"] == "cost_usd"
    assert end.cost_usd is not None
    expected = sum(price.cost(e.usage) for e in events if isinstance(e, UsageEvent))
    assert end.cost_usd == pytest.approx(expected)
    # the estimate (a few tokens) is below the reported 1,000, so the overshoot is at
    # most that error's price, once
    assert end.cost_usd <= 0.5 + 1_000 * 3e-6
    usage = [e for e in events if isinstance(e, UsageEvent)]
    assert usage[-1].total_cost_usd == pytest.approx(end.cost_usd)


def test_a_child_pot_draws_from_its_parent() -> None:
    parent = BudgetPot(BudgetLimits(tokens=1_000), "evaluation")
    child = parent.child(BudgetLimits(tokens=5_000), "task")
    held = child.reserve(400, None, wanted=10_000, minimum=100)
    assert not isinstance(held, type(None))
    assert held.tokens == 1_000  # the parent's limit is the smaller: 600 left for the reply
    held.settle(Usage(input_tokens=400, output_tokens=600))
    assert parent.tokens == child.tokens == 1_000
    stop = child.reserve(10, None, wanted=100, minimum=1)
    assert getattr(stop, "scope", None) == "evaluation"


def test_a_reply_cut_inside_a_tool_call_is_never_run_and_retried_once_larger() -> None:
    ran: list[str] = []
    seen: list[int | None] = []

    async def write(arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        ran.append(str(arguments))
        return ToolResult("written")

    def reply(request: ModelRequest) -> ResponseDone | str:
        seen.append(request.settings.max_tokens)
        if len(seen) <= 2:  # cut twice: at 1,000, then at the larger limit
            call = ToolCall("", "write", {"path": "big.txt", "content": "aaa"})
            return ResponseDone(AssistantMessage(tool_calls=(call,)), Usage(10, 5), "max_tokens")
        return "I will write it in parts."

    tool = Tool("write", "Write.", {"type": "object"}, write, snippet="Writes")
    runner = runner_with(FunctionModel(reply), [tool], Meter(), max_output=64_000)
    runner.settings = runner.settings.__class__(max_tokens=1_000)
    events = run(runner)

    assert ran == []
    assert seen == [1_000, 2_000, 1_000]
    results = [e for e in events if isinstance(e, ToolCallResult)]
    assert len(results) == 1 and not results[0].executed and results[0].is_error
    assert CUT_NOTE in results[0].content
    warnings = [e.message for e in events if isinstance(e, Diagnostic)]
    assert any("asking again with 2,000" in w for w in warnings)
    end = events[-1]
    assert isinstance(end, RunEnd) and end.reason == "completed"
    # both cut replies were paid for, each counted once
    assert end.usage.input_tokens == 20 and end.usage.output_tokens == 10


def _one_answer(max_tokens: int | None, meter: Meter) -> list[Any]:
    """A run whose model answers at once, with the manifest's `max_tokens`."""
    from assembler.messages import ModelSettings

    def reply(request: ModelRequest) -> ResponseDone:
        return ResponseDone(
            AssistantMessage(text="done"), Usage(input_tokens=10, output_tokens=5), "stop"
        )

    return run(
        runner_with(FunctionModel(reply), [], meter, settings=ModelSettings(max_tokens=max_tokens))
    )


def test_a_cost_budget_on_a_model_with_free_replies_charges_only_the_input() -> None:
    """A priced model whose output costs nothing (a local model priced per input, or a
    price override) with a small `max_tokens`: the request fits; it is not refused."""
    meter = Meter(limits=BudgetLimits(cost_usd=1.0), price=Price(input=3, output=0))
    end = _one_answer(100, meter)[-1]
    assert isinstance(end, RunEnd) and end.reason == "completed", end


def test_a_cost_budget_on_free_replies_still_stops_when_the_input_alone_is_over() -> None:
    meter = Meter(limits=BudgetLimits(cost_usd=1e-9), price=Price(input=3, output=0))
    end = _one_answer(100, meter)[-1]
    assert isinstance(end, RunEnd) and end.reason == "budget"
    assert end.budget is not None and end.budget["budget"] == "cost_usd"


def test_a_small_max_tokens_that_fits_the_budget_is_not_refused() -> None:
    """`max_tokens: 100` asks for less than the smallest reply the runner holds room for
    by default (256): the budget only needs room for the 100 asked."""
    end = _one_answer(100, Meter(limits=BudgetLimits(tokens=200)))[-1]
    assert isinstance(end, RunEnd) and end.reason == "completed", end
