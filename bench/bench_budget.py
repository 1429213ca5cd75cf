"""What a budget check costs before each request (issue 23).

Before every model request the runner estimates the request's input tokens, reserves
room in the run's pot and lowers `max_tokens` (`Meter.prepare`). Target: under 1% of
the request's own client-side time, measured here as serialising the request the way
the wire does it (the Chat Completions message list built from the conversation, then
`json.dumps` of the body, which the SDK does before sending), at 1k, 10k and 100k
tokens of history; and linear growth. The check of a running session counts only the
messages added since the previous request; the first check of a resumed session
counts the whole history once (also reported). Run: `python bench/bench_budget.py`.
"""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import replace
from typing import Any

from _timing import median_seconds, report

from assembler.budgets import BudgetLimits
from assembler.messages import (
    AssistantMessage,
    History,
    ModelRequest,
    ModelSettings,
    ToolCall,
    ToolResultMessage,
    ToolSchema,
    UserMessage,
)
from assembler.pricing import Price
from assembler.providers.openai_chat import _messages
from assembler.runner.metering import Meter

SIZES = (1_000, 10_000, 100_000)
"""Tokens of history (about four characters each)."""
SYSTEM = "You are a careful coding agent. " * 60
TOOLS = tuple(
    ToolSchema(
        f"tool_{n}",
        f"Tool number {n}: does one thing well.",
        {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    )
    for n in range(12)
)


def history(tokens: int) -> list[UserMessage | AssistantMessage | ToolResultMessage]:
    """Turns of a tool loop (a call, a result of ~400 tokens) until `tokens` is reached."""
    messages: list[UserMessage | AssistantMessage | ToolResultMessage] = [
        UserMessage("Fix the failing test in src/app.py.")
    ]
    chars = 0
    n = 0
    while chars < tokens * 4:
        n += 1
        arguments = {"path": f"src/file_{n}.py"}  # with its raw text, as providers stream it
        call = ToolCall(f"call_{n}", "tool_1", arguments, json.dumps(arguments))
        result = f"line {n}: " + "def handler(request): return respond(request.body) " * 30
        messages.append(AssistantMessage(text="Reading the next file.", tool_calls=(call,)))
        messages.append(ToolResultMessage(f"call_{n}", "tool_1", result))
        chars += len(result) + 60
    return messages


def main() -> None:
    rows: list[tuple[str, str]] = []
    previous: tuple[float, float] | None = None
    for size in SIZES:
        conversation = history(size)
        request = ModelRequest(
            model="claude-sonnet-4-5",
            system=SYSTEM,
            messages=History(conversation),
            tools=TOOLS,
            settings=ModelSettings(max_tokens=64_000),
        )

        def serialise(request: ModelRequest = request) -> str:
            body = {
                "model": request.model,
                "messages": _messages(request),
                "tools": [
                    {"type": "function", "function": {"name": t.name, "parameters": t.parameters}}
                    for t in request.tools
                ],
                "max_tokens": request.settings.max_tokens,
            }
            return json.dumps(body)

        def check(request: ModelRequest = request, conversation: list[Any] = conversation) -> float:
            """One turn's check: the meter has counted the history up to the previous
            request (two messages fewer), as it has in a running session."""
            meter = Meter(limits=BudgetLimits(tokens=10**9, cost_usd=1e6), price=Price(3, 15))
            meter.start_run()
            before = replace(request, messages=History(conversation, len(conversation) - 2))
            meter.prepare(before)[1].release()  # type: ignore[union-attr]
            start = time.perf_counter()
            _, reservation, _ = meter.prepare(request)
            elapsed = time.perf_counter() - start
            assert reservation is not None
            reservation.release()
            return elapsed

        def first(request: ModelRequest = request) -> None:
            """The first check of a session this long (a resumed one): all counted."""
            meter = Meter(limits=BudgetLimits(tokens=10**9), price=Price(3, 15))
            meter.start_run()
            meter.prepare(request)

        repeat = 30 if size == 100_000 else 100
        base = median_seconds(serialise, repeat=repeat)
        cost = statistics.median(check() for _ in range(repeat))
        whole = median_seconds(first, repeat=repeat)
        growth = ""
        if previous is not None:
            growth = f"; x{base / previous[0]:.1f} and x{cost / previous[1]:.1f} for x10 history"
        rows.append(
            (
                f"{size:,} tokens ({len(conversation):,} messages)",
                f"serialise {base * 1e3:.3f} ms, check per turn {cost * 1e6:.1f} us "
                f"({cost / base:.2%}){growth}; first check of a resumed session "
                f"{whole * 1e3:.3f} ms ({whole / base:.1%})",
            )
        )
        previous = (base, cost)
    report("budget check before a request, against serialising it (median)", rows)


if __name__ == "__main__":
    main()
