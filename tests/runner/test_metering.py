"""The meter's check before a request: its written-out common case gives what the
general path gives, a size it remembers is never used for a message or a prompt that
changed, and a pot's hold without loops matches the hold over a chain."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import pytest

from assembler.budgets import BudgetLimits
from assembler.messages import (
    AssistantMessage,
    ContextMessage,
    History,
    Message,
    ModelRequest,
    ModelSettings,
    Reasoning,
    ToolCall,
    ToolResultMessage,
    ToolSchema,
    Usage,
    UserMessage,
)
from assembler.pricing import Price
from assembler.runner.budget import BudgetPot, BudgetStop
from assembler.runner.estimate import estimate_tokens
from assembler.runner.metering import Meter

TOOLS = (ToolSchema("read", "Read a file.", {"type": "object"}),)
PRICE = Price(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)


@dataclass(frozen=True)
class LoudResult(ToolResultMessage):
    """A subclass: sized by the general path, never by the common case's exact types."""


def one_turn(rng: random.Random, n: int) -> list[Message]:
    """Messages a run's loop may add between two requests, of every kind."""
    kind = rng.randrange(6)
    if kind == 0:
        return [UserMessage("u" * rng.randint(0, 300))]
    if kind == 1:
        return [ContextMessage("c" * rng.randint(0, 300))]
    raw = "" if rng.random() < 0.3 else '{"path": "%s"}' % ("p" * rng.randint(0, 40))
    calls = tuple(
        ToolCall(f"call_{n}_{i}", "read", {"path": "x" * rng.randint(0, 40)}, raw)
        for i in range(rng.randint(0, 3))
    )
    reasoning = (Reasoning("thinking", "t" * 50, "sig"),) if kind == 2 else ()
    messages: list[Message] = [
        AssistantMessage(text="a" * rng.randint(0, 200), tool_calls=calls, reasoning=reasoning)
    ]
    for call in calls:
        result = LoudResult if kind == 3 else ToolResultMessage
        messages.append(result(call.id, call.name, "r" * rng.randint(0, 2_000)))
    return messages


def request_of(
    conversation: list[Message], system: str = "You help.", tools: Any = TOOLS
) -> ModelRequest:
    return ModelRequest(
        model="m",
        system=system,
        messages=History(conversation),
        tools=tools,
        settings=ModelSettings(max_tokens=4_000),
    )


def meter() -> Meter:
    made = Meter(
        limits=BudgetLimits(cost_usd=50.0, tokens=10_000_000, wall_time=3600.0),
        price=PRICE,
        context_window=200_000,
        clock=lambda: 0.0,
    )
    made.start_run()
    return made


@pytest.mark.parametrize("seed", range(20))
def test_the_common_case_gives_what_the_general_path_gives(seed: int) -> None:
    """Two meters see the same requests and the same usage; one is sent down the
    general path every time (its remembered prompt forgotten), the other takes the
    common case from the second request on. Every figure they give is the same, and
    the raw estimate is the whole request's, sized from scratch."""
    rng = random.Random(seed)
    fast, slow = meter(), meter()
    general_calls = 0
    general = fast._estimate

    def counted(request: ModelRequest) -> tuple[int, int]:
        nonlocal general_calls
        general_calls += 1
        return general(request)

    fast._estimate = counted  # type: ignore[method-assign]
    conversation: list[Message] = [UserMessage("Start.")]
    for turn in range(30):
        request = request_of(conversation)
        slow._system = None  # the common case never applies to this one
        sent_fast, held_fast, raw_fast = fast.prepare(request)
        sent_slow, held_slow, raw_slow = slow.prepare(request)
        assert raw_fast == raw_slow == estimate_tokens(request)
        assert fast.last_estimate == slow.last_estimate
        assert sent_fast.settings == sent_slow.settings
        assert held_fast is not None and held_slow is not None
        assert held_fast[1:] == held_slow[1:]
        usage = Usage(input_tokens=raw_fast + rng.randint(-50, 400), output_tokens=100)
        assert fast.settle(held_fast, usage, raw_fast) == slow.settle(held_slow, usage, raw_slow)
        conversation.extend(one_turn(rng, turn))
    assert general_calls == 1  # the first request only: the rest took the common case


def test_a_remembered_size_is_not_used_for_a_changed_conversation_or_prompt() -> None:
    """What the meter counted belongs to one conversation list, one prompt string and
    one tool tuple: a compaction's new list (same length, other messages), a shorter
    view, a new prompt or new tools are sized afresh, and new tools or a new prompt
    prefix are noticed."""
    check = meter()
    conversation: list[Message] = [UserMessage("Start."), UserMessage("x" * 4_000)]
    _, held, raw = check.prepare(request_of(conversation))
    check.settle(held, Usage(input_tokens=raw, output_tokens=10), raw)
    assert raw == estimate_tokens(request_of(conversation))

    compacted: list[Message] = [UserMessage("Start."), UserMessage("summary")]
    request = request_of(compacted)
    _, held, raw = check.prepare(request)
    check.release(held)
    assert raw == estimate_tokens(request)  # not the 4,000 characters counted before

    shorter = ModelRequest(
        model="m", system="You help.", messages=History(compacted, 1), tools=TOOLS
    )
    _, held, raw = check.prepare(shorter)
    check.release(held)
    assert raw == estimate_tokens(shorter)

    longer = request_of(compacted, system="You help. " * 200)
    _, held, raw = check.prepare(longer)
    check.release(held)
    assert raw == estimate_tokens(longer)
    assert check.notes and "system prompt" in check.notes[-1]

    other = (ToolSchema("write", "Write a file, with a long description. " * 20, {}),)
    request = request_of(compacted, system=longer.system, tools=other)
    _, held, raw = check.prepare(request)
    check.release(held)
    assert raw == estimate_tokens(request)

    as_tuple = ModelRequest(model="m", system=longer.system, messages=tuple(compacted), tools=other)
    _, held, raw = check.prepare(as_tuple)
    check.release(held)
    assert raw == estimate_tokens(as_tuple)


def twin_pots(rng: random.Random) -> tuple[BudgetPot, BudgetPot]:
    """Two pots alike, the second made to take the path over a chain."""
    limits = BudgetLimits(
        cost_usd=rng.choice((None, rng.uniform(0.01, 5.0))),
        tokens=rng.choice((None, rng.randint(1_000, 400_000))),
        wall_time=rng.choice((None, 60.0)),
    )
    pots = (BudgetPot(limits, clock=lambda: 0.0), BudgetPot(limits, clock=lambda: 0.0))
    spent = rng.randint(0, 300_000)
    for pot in pots:
        pot.tokens = spent
        pot.cost = spent * 4e-6
    pots[1]._alone = False
    return pots


def test_a_pot_of_its_own_holds_what_the_path_over_a_chain_holds() -> None:
    rng = random.Random(7)
    stops = capped = 0
    for _ in range(3_000):
        alone, chained = twin_pots(rng)
        price = rng.choice((None, PRICE, Price(input=1.0, output=0.0)))
        estimate = rng.randint(0, 150_000)
        wanted = rng.randint(1, 64_000)
        minimum = rng.choice((256, 1_280, wanted))
        cached = rng.randint(-5, 160_000)
        for _ in range(3):  # held one after another: room held before counts
            one = alone.hold(estimate, price, wanted, minimum, cached)
            two = chained.hold(estimate, price, wanted, minimum, cached)
            if isinstance(one, BudgetStop):
                assert one == two
                stops += 1
                break
            assert not isinstance(two, BudgetStop)
            assert one[1:] == two[1:]
            capped += one[3] is not None
            assert (alone.reserved_tokens, alone.reserved_cost) == (
                chained.reserved_tokens,
                chained.reserved_cost,
            )
    assert stops > 100 and capped > 100  # both kinds of outcome were compared


def test_a_pot_of_its_own_sees_the_room_its_sub_agents_hold() -> None:
    """A run's pot draws from no other, but its sub-agents' pots draw from it: the
    room they hold is not given twice, whichever pot asks."""
    run = BudgetPot(BudgetLimits(tokens=10_000, cost_usd=1.0))
    child = run.child(BudgetLimits(), "sub-agent")
    held = child.hold(4_000, PRICE, 5_000, 256)
    assert not isinstance(held, BudgetStop) and held[1] == 9_000
    own = run.hold(500, PRICE, 4_000, 256)
    assert not isinstance(own, BudgetStop)
    assert own[1] == 1_000 and own[3] is not None  # 500 of reply left, and a budget said so
    assert isinstance(child.hold(100, PRICE, 1_000, 256), BudgetStop)
    run.let_go(own)
    child.let_go(held, Usage(input_tokens=4_000, output_tokens=100), 0.0)
    assert run.reserved_tokens == 0 and run.tokens == 4_100
