"""The cheap path for extension handlers (issue 21), and that the deadline still holds
on it: a coroutine handler's first step runs at once (as its own task), a plain one is
waited for in place and then through the loop, notifications are not waited for.

Real threads, real event loops; `HandlerCaller` directly, and whole agents where the
runner's order matters.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from extension_project import project, run_bounded
from handler_chains import Collect

from assembler.errors import ExtensionError
from assembler.extensions.calls import HandlerCaller
from assembler.extensions.handler_thread import BRIEF_WAIT, PlainJob
from assembler.extensions.subscriptions import HandlerFailure, Notification, Subscription
from assembler.runner.events import TurnEnd, TurnStart
from assembler.testing import ScriptedModel, text, tool_call

MARK: contextvars.ContextVar[str] = contextvars.ContextVar("mark", default="caller")


def test_a_coroutine_handler_runs_as_its_own_task_in_its_own_context() -> None:
    seen: dict[str, Any] = {}

    async def handler(event: Any) -> str:
        seen["task"] = asyncio.current_task()
        MARK.set("handler")  # must not leak into the caller's context
        return "first step"

    async def go() -> None:
        chain = Collect()
        failure = await HandlerCaller(5).run("turn_start", [Subscription("e", handler)], chain)
        assert failure is None and chain.results == ["first step"]
        assert seen["task"] is not None and seen["task"] is not asyncio.current_task()
        assert MARK.get() == "caller"

    asyncio.run(go())


def test_a_coroutine_handler_that_waits_goes_on_as_a_task_and_keeps_its_timeout() -> None:
    """`asyncio.timeout` inside the handler belongs to the handler's task: it fires
    there, and the caller is not cancelled."""

    async def patient(event: Any) -> str:
        try:
            async with asyncio.timeout(0.05):
                await asyncio.sleep(10)
        except TimeoutError:
            return "timed out inside"
        return "slept"

    async def go() -> None:
        chain = Collect()
        failure = await HandlerCaller(5).run("turn_start", [Subscription("e", patient)], chain)
        assert failure is None and chain.results == ["timed out inside"]
        await asyncio.sleep(0.1)  # the caller itself was not cancelled

    asyncio.run(go())


def test_a_coroutine_handler_is_abandoned_at_its_deadline_after_its_first_step() -> None:
    async def stubborn(event: Any) -> None:
        while True:
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                continue

    async def go() -> HandlerFailure | None:
        caller = HandlerCaller(0.2)
        started = time.monotonic()
        failure = await caller.run("context", [Subscription("slow", stubborn)], Collect())
        assert time.monotonic() - started < 5
        assert "abandoned" in caller.take_diagnostics()[0]
        await caller.reap()
        return failure

    failure = asyncio.run(go())
    assert failure == HandlerFailure("slow")


def test_a_plain_handler_slower_than_the_brief_wait_is_awaited_until_its_deadline() -> None:
    def slow(event: Any) -> str:
        time.sleep(BRIEF_WAIT * 20)
        return "slow but in time"

    def hangs(event: Any) -> None:
        time.sleep(30)

    async def go() -> None:
        caller = HandlerCaller(1.0)
        chain = Collect()
        assert await caller.run("tool_result", [Subscription("s", slow)], chain) is None
        assert chain.results == ["slow but in time"]
        started = time.monotonic()
        failure = await caller.run("tool_result", [Subscription("h", hangs)], Collect())
        assert failure == HandlerFailure("h")
        assert 0.9 < time.monotonic() - started < 5
        chain = Collect()  # the next event gets a fresh thread
        assert await caller.run("tool_result", [Subscription("s", lambda e: "next")], chain) is None
        assert chain.results == ["next"]
        await caller.reap()

    asyncio.run(go())


def test_after_a_slow_event_the_loop_stops_waiting_in_place_until_one_is_quick_again(
    monkeypatch: Any,
) -> None:
    """A wait in place that was not enough is not repeated on every event (slow or
    very many handlers would hold the loop `BRIEF_WAIT` each time); an event answered
    quickly through the loop brings it back."""
    waits: list[float] = []
    real = PlainJob.wait_briefly

    def spy(job: PlainJob, seconds: float) -> Any:
        waits.append(seconds)
        return real(job, seconds)

    monkeypatch.setattr(PlainJob, "wait_briefly", spy)

    def slow(event: Any) -> str:
        time.sleep(BRIEF_WAIT * 20)  # slower than the wait in place
        return "slow"

    async def go() -> None:
        caller = HandlerCaller(5)
        for _ in range(2):
            chain = Collect()
            assert await caller.run("context", [Subscription("e", slow)], chain) is None
            assert chain.results == ["slow"]
        assert waits == [BRIEF_WAIT, 0.0]
        # a quick handler answers through the loop within BRIEF_WAIT (on a loaded
        # machine a thread switch can take longer, hence a few events)
        for _ in range(50):
            chain = Collect()
            assert (
                await caller.run("context", [Subscription("e", lambda e: "quick")], chain) is None
            )
            assert chain.results == ["quick"]
            if waits[-1] == BRIEF_WAIT:
                break
        await caller.reap()

    asyncio.run(go())
    assert waits[-1] == BRIEF_WAIT and waits[2] == 0.0


def test_a_notification_is_not_waited_for_but_the_next_event_is_held_behind_it() -> None:
    order: list[str] = []
    release = threading.Event()

    def noted(event: Any) -> None:
        release.wait(5)
        order.append("notification")

    def after(event: Any) -> str:
        order.append("next event")
        return "ok"

    async def go() -> None:
        caller = HandlerCaller(10)
        started = time.monotonic()
        assert await caller.notify("turn_start", [Subscription("n", noted)], "e") is None
        assert time.monotonic() - started < 1  # it returned while the handler waits
        release.set()
        chain = Collect()
        assert await caller.run("context", [Subscription("a", after)], chain) is None
        assert order == ["notification", "next event"] and chain.results == ["ok"]
        await caller.reap()

    asyncio.run(go())


def test_a_notification_goes_to_the_thread_with_the_next_event_or_on_its_own() -> None:
    # Held until the next job or the loop's next iteration (one wake-up of the thread
    # for both), in order either way; never left unsent while the loop runs.
    order: list[str] = []
    ran = threading.Event()

    def noted(event: Any) -> None:
        order.append(f"notification {event}")
        ran.set()

    def after(event: Any) -> None:
        order.append("next event")

    async def go() -> None:
        caller = HandlerCaller(10)
        await caller.notify("turn_end", [Subscription("n", noted)], 1)
        await caller.notify("turn_start", [Subscription("n", noted)], 2)
        assert await caller.run("context", [Subscription("a", after)], Collect()) is None
        assert order == ["notification 1", "notification 2", "next event"]

        await caller.notify("turn_end", [Subscription("n", noted)], 3)
        ran.clear()
        await asyncio.sleep(0)  # the loop's next iteration sends it; nothing waits for it
        assert await asyncio.to_thread(ran.wait, 5)
        assert order[-1] == "notification 3"
        assert await caller.settle() is None
        await caller.reap()

    asyncio.run(go())


def test_a_late_notification_is_reported_by_the_next_event_which_still_gets_an_answer() -> None:
    """The late handler holds its thread; the event queued behind it moves to a new
    one, and what is reported is the notification's failure, under its own name."""
    ran: list[str] = []

    async def go() -> HandlerFailure | None:
        caller = HandlerCaller(0.3)
        await caller.notify("turn_start", [Subscription("late", lambda e: time.sleep(30))], "e")
        chain = Collect()
        started = time.monotonic()
        failure = await caller.run("context", [Subscription("a", lambda e: ran.append("a"))], chain)
        assert time.monotonic() - started < 5
        assert any("late" in note for note in caller.take_diagnostics())
        await caller.reap()
        return failure

    failure = asyncio.run(go())
    assert failure == HandlerFailure("late", None, "turn_start")
    assert failure.describe("context", 0.3) == "turn_start handler timed out after 0.3 s"
    assert ran == ["a"]


def test_a_notification_with_a_coroutine_handler_is_waited_for_in_order() -> None:
    order: list[str] = []

    async def first(event: Any) -> None:
        await asyncio.sleep(0.01)
        order.append("coroutine")

    async def go() -> None:
        caller = HandlerCaller(5)
        steps = [Subscription("c", first), Subscription("p", lambda e: order.append("plain"))]
        assert await caller.notify("turn_end", steps, Notification("e")) is None
        assert order == ["coroutine", "plain"]
        await caller.reap()

    asyncio.run(go())


def test_post_queues_plain_handlers_and_leaves_coroutine_ones_untouched() -> None:
    """`post` is `notify` without a coroutine: it queues a notification whose handlers
    are all plain, and does nothing at all (False) when one is a coroutine, which the
    caller must then `notify` (waited for, in order)."""
    order: list[str] = []

    async def coroutine(event: Any) -> None:
        order.append(f"coroutine {event}")

    async def go() -> None:
        caller = HandlerCaller(5)
        mixed = [
            Subscription("p", lambda e: order.append(f"plain {e}")),
            Subscription("c", coroutine),
        ]
        assert caller.post("turn_start", mixed, 1) is False
        assert not caller.busy
        await asyncio.sleep(0.05)  # a loop iteration or two: nothing was queued to run
        assert order == []
        assert caller.post("turn_end", [Subscription("p", lambda e: order.append(f"plain {e}"))], 2)
        assert caller.busy
        assert await caller.notify("turn_start", mixed, 3) is None  # waits for both, in order
        assert order == ["plain 2", "plain 3", "coroutine 3"]
        assert not caller.busy
        await caller.reap()

    asyncio.run(go())


AWAITS_AT_TURN_END = """
import asyncio
from pathlib import Path

def setup(api, options):
    @api.on("turn_end")
    async def noted(event):
        await asyncio.sleep(0.05)
        (Path(__file__).parent / "turn_end.log").write_text(str(event.turn))

    @api.on("turn_start")
    async def broken(event):
        if event.turn == 2:
            raise RuntimeError("turn 2 is broken")
"""


def test_coroutine_turn_handlers_are_waited_for_by_the_hooks(tmp_path: Path) -> None:
    """Through the whole agent: a coroutine `turn_end` handler has finished when the
    consumer sees `TurnEnd`, and a coroutine `turn_start` handler's failure stops the
    run before that turn's request."""
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "a.txt").write_text("a\n")
    manifest = project(tmp_path, {"turns": AWAITS_AT_TURN_END})
    model = ScriptedModel([tool_call("read", path="a.txt"), text("never")])
    from assembler.agent.build import build_agent
    from assembler.validation.load import load_manifest

    agent = build_agent(load_manifest(manifest), provider=model, trust=True, record_session=False)
    log = tmp_path / "ext" / "turn_end.log"
    seen: list[str] = []

    async def go() -> None:
        async with agent:
            async for event in agent.stream("go"):
                if isinstance(event, TurnEnd):
                    seen.append(log.read_text() if log.exists() else "not yet")

    with pytest.raises(ExtensionError) as failure:
        asyncio.run(go())
    assert seen == ["1"]
    assert "extension `turns`: turn_start handler failed: RuntimeError: turn 2 is broken" in str(
        failure.value
    )
    assert len(model.requests) == 1


WAITS_FOR_THE_CONSUMER = """
import time
from pathlib import Path

HERE = Path(__file__).parent

def setup(api, options):
    @api.on("{event}")
    def waits(event):
        deadline = time.monotonic() + 5
        while not (HERE / "release").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        (HERE / "{event}.log").write_text(str((HERE / "release").exists()))
"""


def test_the_run_goes_on_while_a_turn_handler_runs(tmp_path: Path) -> None:
    """`turn_start` and `turn_end` handlers are notified, not waited for: the consumer
    of the run sees `TurnStart`/`TurnEnd` while the handler still runs (it waits for
    the consumer), and the run's next step waits for the handler."""
    from assembler.agent.build import build_agent
    from assembler.validation.load import load_manifest

    for event, kind in (("turn_start", TurnStart), ("turn_end", TurnEnd)):
        folder = tmp_path / event
        folder.mkdir()
        manifest = project(folder, {"wait": WAITS_FOR_THE_CONSUMER.format(event=event)})
        agent = build_agent(
            load_manifest(manifest), provider=ScriptedModel([text("done")]), trust=True,
            record_session=False,
        )  # fmt: skip

        async def go(kind: type = kind, folder: Path = folder, agent: Any = agent) -> None:
            async with agent:
                async for seen in agent.stream("go"):
                    if isinstance(seen, kind):
                        (folder / "ext" / "release").write_text("")

        started = time.monotonic()
        asyncio.run(go())
        assert time.monotonic() - started < 4
        assert (folder / "ext" / f"{event}.log").read_text() == "True"


RAISES_AT_TURN_END = """
def setup(api, options):
    @api.on("turn_end")
    def broken(event):
        raise RuntimeError("turn_end is broken")
"""


def test_a_failing_turn_end_handler_stops_the_run_before_the_next_request(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "a.txt").write_text("a\n")
    manifest = project(tmp_path, {"broken": RAISES_AT_TURN_END})
    model = ScriptedModel([tool_call("read", path="a.txt"), text("never")])
    _, _, failure = run_bounded(manifest, model)
    assert isinstance(failure, ExtensionError)
    assert "extension `broken`: turn_end handler failed: RuntimeError: turn_end is broken" in str(
        failure
    )
    assert len(model.requests) == 1


def test_a_late_notification_is_declared_late_with_no_event_after_it() -> None:
    """One timer watches every notification in flight: it fires at the deadline even
    when the loop has nothing else to do, and no later event is needed."""
    release = threading.Event()

    async def go() -> list[str]:
        caller = HandlerCaller(0.2)
        await caller.notify("turn_end", [Subscription("slow", lambda e: release.wait(10))], "e")
        notes: list[str] = []
        for _ in range(200):  # the loop idles; only the timer can find it late
            await asyncio.sleep(0.05)
            notes = caller.take_diagnostics()
            if notes:
                break
        release.set()
        failure = await caller.settle()
        await caller.reap()
        assert failure == HandlerFailure("slow", None, "turn_end")
        return notes

    notes = asyncio.run(go())
    assert len(notes) == 1 and "extension `slow`: turn_end handler did not finish" in notes[0]


def test_a_notification_sent_after_the_timer_was_armed_gets_its_own_full_deadline() -> None:
    """The timer was armed for an earlier notification; the later one, still running
    when it fires, is within its own deadline: it is looked at again, not declared
    late, and ends well."""
    ran: list[str] = []

    def slow(event: Any) -> None:
        time.sleep(0.5)
        ran.append(event)

    async def go() -> HandlerFailure | None:
        caller = HandlerCaller(1.0)
        await caller.notify("turn_end", [Subscription("quick", lambda e: None)], "first")
        await asyncio.sleep(0.6)  # the timer fires at 1.0 s, while `slow` runs (0.6-1.1 s)
        await caller.notify("turn_start", [Subscription("slow", slow)], "second")
        await asyncio.sleep(0.9)
        failure = await caller.settle()
        assert caller.take_diagnostics() == []
        await caller.reap()
        return failure

    assert asyncio.run(go()) is None
    assert ran == ["second"]


ON_TOOL_RESULT_ONLY = """
from pathlib import Path

def setup(api, options):
    @api.on("tool_result")
    def seen(event):
        (Path(__file__).parent / "tool_result.log").write_text(event.name)
"""


def test_an_event_no_extension_handles_never_reaches_the_handler_thread(tmp_path: Path) -> None:
    """A turn's turn_start, context and turn_end have no handler here: the handler
    thread is never even started for them. The tool_result of a tool call starts it."""
    from assembler.agent.build import build_agent
    from assembler.runner.events import RunEnd, ToolCallResult
    from assembler.validation.load import load_manifest

    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "a.txt").write_text("a\n")
    manifest = project(tmp_path, {"results": ON_TOOL_RESULT_ONLY})

    def handler_threads() -> set[threading.Thread]:
        return {t for t in threading.enumerate() if t.name == "assemble-extension-handlers"}

    def started_while_running(model: ScriptedModel) -> dict[str, bool]:
        agent = build_agent(load_manifest(manifest), provider=model, trust=True,
                            record_session=False)  # fmt: skip
        earlier = handler_threads()
        seen: dict[str, bool] = {}

        async def go() -> None:
            async with agent:
                async for event in agent.stream("go"):
                    if isinstance(event, ToolCallResult | RunEnd):
                        seen[type(event).__name__] = bool(handler_threads() - earlier)

        asyncio.run(go())
        return seen

    assert started_while_running(ScriptedModel([text("no tools")])) == {"RunEnd": False}
    assert not (tmp_path / "ext" / "tool_result.log").exists()
    with_a_call = started_while_running(
        ScriptedModel([tool_call("read", path="a.txt"), text("ok")])
    )
    assert with_a_call == {"ToolCallResult": True, "RunEnd": True}
    assert (tmp_path / "ext" / "tool_result.log").read_text() == "read"
