"""A task's user side played against an agent: the prompt, then what the user did
after it (`TaskSpec.messages`), in the order the session recorded.

* `prompt`: a new run, once the previous one ended;
* `steer` with `after_turn`: queued when turn `after_turn` of the run ends (0: with
  the prompt), so the runner delivers it before the next request, as it did; with
  `before_tools`, queued as that turn's calls are proposed (the recorded steer came
  before they started, and they were skipped for it);
* `follow_up`: queued when the run starts; the runner delivers one each time the run
  would otherwise end, which is where a recorded follow-up was delivered;
* `compact`: the conversation compacted once the run ended (`/compact`);
* `interrupt`: the run stops where the recorded one did (after turn `after_turn`,
  before its tool calls ran or after), and the session is resumed from its file as
  `--continue` does (the calls left without a result get the "interrupted" result).

A replay in `strict` mode stops at the first divergence: the driver stops too, since
what follows would be measured against a conversation that is no longer the same.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from assembler.agent.conversation import restore
from assembler.runner.events import Event, RunEnd, ToolCallProposed, TurnEnd, TurnStart
from assembler.sessions.store import Session

if TYPE_CHECKING:
    from assembler.agent.agent import Agent

STOPPED = "stopped where the recorded run stopped"
"""The message of the `cancelled` end a replayed interrupt yields."""


def ends_interrupted(messages: Sequence[Mapping[str, Any]]) -> bool:
    """The task's last run stops where a recorded one was cut off (so `cancelled` is
    its expected end, not a failure)."""
    runs = [m for m in messages if "prompt" in m or "interrupt" in m]
    return bool(runs) and "interrupt" in runs[-1]


@dataclass
class RunPlan:
    """One run of the task: its prompt and what happened during and after it."""

    prompt: str | None
    """None: the agent's `task:` (a typed agent's first message)."""
    steers: dict[int, list[str]] = field(default_factory=dict)
    early: dict[int, list[str]] = field(default_factory=dict)
    """Steers queued when the turn's calls are proposed, before they start."""
    follow_ups: list[str] = field(default_factory=list)
    interrupt: tuple[int, bool] | None = None
    """(after_turn, tools_ran) where the recorded run stopped."""
    compactions: list[str | None] = field(default_factory=list)


def plan_runs(prompt: str | None, messages: Sequence[Mapping[str, Any]]) -> list[RunPlan]:
    """The task's runs, in order (the schema has checked each message's shape)."""
    plans = [RunPlan(prompt)]
    for message in messages:
        current = plans[-1]
        if "prompt" in message:
            plans.append(RunPlan(str(message["prompt"])))
        elif "steer" in message:
            turn = int(message.get("after_turn", 0))
            queue = current.early if message.get("before_tools") else current.steers
            queue.setdefault(turn, []).append(str(message["steer"]))
        elif "follow_up" in message:
            current.follow_ups.append(str(message["follow_up"]))
        elif "compact" in message:
            value = message["compact"]
            current.compactions.append(value if isinstance(value, str) else None)
        elif "interrupt" in message:
            stop = message["interrupt"]
            current.interrupt = (int(stop.get("after_turn", 0)), bool(stop.get("tools_ran")))
    return plans


async def drive(
    agent: Agent,
    prompt: str | None,
    messages: Sequence[Mapping[str, Any]] = (),
    *,
    params: Mapping[str, Any] | None = None,
    max_turns: int | None = None,
    stop_on_error: bool = False,
) -> AsyncIterator[Event]:
    """Every event of every run of the task, in order. `stop_on_error`: a run that
    ended with `error` (a strict replay's divergence) ends the task there. `params`
    binds a typed agent's parameters for the first run; the later runs keep them."""
    for index, plan in enumerate(plan_runs(prompt, messages)):
        ended: RunEnd | None = None
        for text in plan.steers.get(0, ()):
            agent.steer(text)
        for text in plan.follow_ups:
            agent.follow_up(text)
        turn, proposed = 0, False
        bound = params if index == 0 else None
        stream = agent.stream(plan.prompt, params=bound, max_turns=max_turns)
        async with aclosing(stream) as events:
            async for event in events:
                yield event
                if isinstance(event, TurnStart):
                    turn = event.turn
                    proposed = False
                elif isinstance(event, ToolCallProposed) and not proposed:
                    proposed = True
                    for text in plan.early.get(turn, ()):
                        agent.steer(text)
                elif isinstance(event, TurnEnd):
                    for text in plan.steers.get(event.turn, ()):
                        agent.steer(text)
                elif isinstance(event, RunEnd):
                    ended = event
                if _stops(plan.interrupt, turn, event):
                    break
        if plan.interrupt is not None and ended is None:
            _resume(agent)
            ended = RunEnd("cancelled", turns=turn, message=STOPPED)
            yield ended
        if stop_on_error and ended is not None and ended.reason == "error":
            return
        for instructions in plan.compactions:
            compacted = await agent.compact(instructions)
            if compacted is not None:
                yield compacted


def _stops(interrupt: tuple[int, bool] | None, turn: int, event: Event) -> bool:
    if interrupt is None:
        return False
    after, tools_ran = interrupt
    if tools_ran:
        return isinstance(event, TurnEnd) and event.turn == after
    return isinstance(event, ToolCallProposed) and turn == after


def _resume(agent: Agent) -> None:
    """The agent continues its own session as read back from the file (`--continue`)."""
    if agent.session is None:
        return
    agent.use_session(restore(Session.load(agent.session.path)))
