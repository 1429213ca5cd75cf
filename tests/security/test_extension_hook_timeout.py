"""Issue 11, item 14: a handler that does not finish within `limits.hook_timeout` is
abandoned, whatever it does with cancellation, and a late `tool_call` guard blocks.

The attack: an async guard that swallows `CancelledError` (and returns None, or goes
on waiting) used to let the call through or hang the run; a synchronous guard that
blocks was never timed out at all.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from extension_project import project, run_bounded

from assembler.errors import ExtensionError
from assembler.runner.events import Diagnostic, RunEnd, ToolCallBlocked, ToolCallResult
from assembler.testing import ScriptedModel, text, tool_call

LIMITS = "limits:\n  hook_timeout: 0.3\n"
WRITE = tool_call("write", path="out.txt", content="side effect")

SWALLOW_AND_ALLOW = """
import asyncio

def setup(api, options):
    @api.on("tool_call")
    async def guard(event):
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            pass  # swallowed: the guard then "allows" the call
        return None
"""

SWALLOW_FOREVER = """
import asyncio

def setup(api, options):
    @api.on("{event}")
    async def stubborn(event):
        while True:
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                continue
"""

SYNC_HANG = """
import time

def setup(api, options):
    @api.on("{event}")
    def slow(event):
        time.sleep(30)
"""


def test_a_guard_that_swallows_cancellation_and_allows_still_blocks(tmp_path: Path) -> None:
    manifest = project(tmp_path, {"guard": SWALLOW_AND_ALLOW}, extra=LIMITS)
    events, _, failure = run_bounded(manifest, ScriptedModel([WRITE, text("ok")]))
    assert failure is None
    assert not (tmp_path / "ws" / "out.txt").exists()
    blocked = [e for e in events if isinstance(e, ToolCallBlocked)]
    assert len(blocked) == 1 and blocked[0].blocked_by == "guard"
    assert "timed out" in blocked[0].reason


@pytest.mark.parametrize("source", [SWALLOW_FOREVER, SYNC_HANG], ids=["async-swallow", "sync"])
def test_a_guard_that_never_finishes_is_abandoned_and_blocks(tmp_path: Path, source: str) -> None:
    manifest = project(tmp_path, {"stubborn": source.format(event="tool_call")}, extra=LIMITS)
    started = time.monotonic()
    events, _, failure = run_bounded(manifest, ScriptedModel([WRITE, text("ok")]), within=15)
    assert failure is None
    assert time.monotonic() - started < 15
    assert not (tmp_path / "ws" / "out.txt").exists()
    blocked = next(e for e in events if isinstance(e, ToolCallBlocked))
    assert blocked.blocked_by == "stubborn" and "timed out after 0.3 s" in blocked.reason
    end = events[-1]
    assert isinstance(end, RunEnd) and end.reason == "completed"
    notes = [e.message for e in events if isinstance(e, Diagnostic)]
    assert any("stubborn" in n and "abandoned" in n for n in notes), notes


@pytest.mark.parametrize("source", [SWALLOW_FOREVER, SYNC_HANG], ids=["async-swallow", "sync"])
@pytest.mark.parametrize(
    "event", ["tool_result", "context", "turn_start", "turn_end", "session_start", "session_end"]
)
def test_every_handler_kind_is_abandoned_when_late(tmp_path: Path, source: str, event: str) -> None:
    """Observation and notification handlers fail loudly: the run stops with an
    `ExtensionError` naming the extension, in time, and no unprocessed result reaches
    the model."""
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "a.txt").write_text("secret\n")
    manifest = project(tmp_path, {"late": source.format(event=event)}, extra=LIMITS)
    model = ScriptedModel([tool_call("read", path="a.txt"), text("never")])
    started = time.monotonic()
    events, _, failure = run_bounded(manifest, model, within=15)
    assert time.monotonic() - started < 15
    assert isinstance(failure, ExtensionError), failure
    assert f"extension `late`: {event} handler timed out after 0.3 s" in str(failure)
    assert len(model.requests) <= (2 if event == "session_end" else 1)
    if event == "tool_result":
        assert not any(isinstance(e, ToolCallResult) for e in events)


def test_assemble_run_exits_although_a_guard_ignores_cancellation(tmp_path: Path) -> None:
    """The whole process: `asyncio.run` waits for every task at exit, so an abandoned
    handler that keeps swallowing cancellation must not keep the command alive."""
    manifest = project(
        tmp_path, {"stubborn": SWALLOW_FOREVER.format(event="tool_call")}, extra=LIMITS
    )
    script = tmp_path / "script.yaml"
    script.write_text(
        "- tool_calls: [{name: write, arguments: {path: out.txt, content: x}}]\n- text: done\n"
    )
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "assembler", "run", str(manifest), "-p", "go", "--trust",
         "--no-session", "--model", f"scripted:{script}"],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert time.monotonic() - started < 30
    assert done.returncode == 0, done.stderr
    assert "blocked by stubborn: tool_call handler timed out after 0.3 s" in done.stderr
    assert done.stdout.strip() == "done"
    assert not (tmp_path / "ws" / "out.txt").exists()


ORDER = """
import asyncio
from pathlib import Path

LOG = Path(__file__).with_name("order.log")

def setup(api, options):
    @api.on("tool_call")
    {prefix}def guard(event):
        {wait}
        with LOG.open("a") as log:
            log.write("{name}\\n")
        return {result}
"""


def guard(name: str, *, is_async: bool = False, wait: str = "pass", result: str = "None") -> str:
    return ORDER.format(prefix="async " if is_async else "", wait=wait, name=name, result=result)


def test_plain_and_coroutine_guards_run_in_load_order(tmp_path: Path) -> None:
    extensions = {
        "one": guard("one"),
        "two": guard("two", is_async=True, wait="await asyncio.sleep(0)"),
        "three": guard("three"),
        "four": guard("four"),
        "five": guard("five", is_async=True),
    }
    manifest = project(tmp_path, extensions, extra=LIMITS)
    _, _, failure = run_bounded(manifest, ScriptedModel([WRITE, text("ok")]))
    assert failure is None
    assert (tmp_path / "ext" / "order.log").read_text().split() == [
        "one", "two", "three", "four", "five",
    ]  # fmt: skip
    assert (tmp_path / "ws" / "out.txt").exists()


def test_a_late_plain_guard_inside_a_batch_is_the_one_named(tmp_path: Path) -> None:
    """Plain guards share one trip to the worker thread; each still has its own
    deadline, and the late one is the one that blocks, after the ones before it."""
    extensions = {  # together longer than one deadline, each well within its own
        "first": guard("first", wait="import time; time.sleep(0.6)"),
        "second": guard("second", wait="import time; time.sleep(0.6)"),
        "slow": guard("slow", wait="import time; time.sleep(30)"),
        "never": guard("never"),
    }
    manifest = project(tmp_path, extensions, extra="limits:\n  hook_timeout: 1\n")
    events, _, failure = run_bounded(manifest, ScriptedModel([WRITE, text("ok")]), within=15)
    assert failure is None
    blocked = next(e for e in events if isinstance(e, ToolCallBlocked))
    assert blocked.blocked_by == "slow" and "timed out after 1 s" in blocked.reason
    assert (tmp_path / "ext" / "order.log").read_text().split() == ["first", "second"]


def test_after_a_late_plain_handler_the_next_calls_get_a_fresh_worker(tmp_path: Path) -> None:
    source = """
import time
from pathlib import Path

CALLS = Path(__file__).with_name("calls.log")

def setup(api, options):
    @api.on("tool_call")
    def slow_once(event):
        first = not CALLS.exists()
        CALLS.write_text("called")
        if first:
            time.sleep(30)
        return None
"""
    manifest = project(tmp_path, {"once": source}, extra=LIMITS)
    model = ScriptedModel([WRITE, WRITE, text("ok")])
    events, _, failure = run_bounded(manifest, model, within=15)
    assert failure is None
    results = [e for e in events if isinstance(e, ToolCallResult)]
    assert [r.executed for r in results] == [False, True]
    assert (tmp_path / "ws" / "out.txt").read_text() == "side effect"


def test_a_plain_guard_returning_a_coroutine_is_awaited_within_the_deadline(
    tmp_path: Path,
) -> None:
    source = """
import asyncio
from assembler.extensions import Block

async def decide(event):
    await asyncio.sleep(0)
    return Block("decided later")

async def never(event):
    while True:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            pass

def setup(api, options):
    api.on("tool_call", lambda event: decide(event) if event.name == "write" else never(event))
"""
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "a.txt").write_text("a\n")
    manifest = project(tmp_path, {"lazy": source}, extra=LIMITS)
    model = ScriptedModel([WRITE, tool_call("read", path="a.txt"), text("ok")])
    events, _, failure = run_bounded(manifest, model, within=15)
    assert failure is None
    reasons = [e.reason for e in events if isinstance(e, ToolCallBlocked)]
    assert reasons[0] == "decided later"
    assert "timed out after 0.3 s" in reasons[1]


def test_reloading_leaves_no_idle_worker_threads(tmp_path: Path) -> None:
    import asyncio
    import gc
    import threading

    from assembler.agent.build import build_agent
    from assembler.validation.load import load_manifest

    source = "def setup(api, options):\n    api.on('turn_start', lambda event: None)\n"
    manifest = project(tmp_path, {"plain": source})
    model = ScriptedModel([text("ok")] * 6)
    agent = build_agent(load_manifest(manifest), provider=model, trust=True, record_session=False)

    def handler_threads() -> set[threading.Thread]:
        return {t for t in threading.enumerate() if t.name == "assemble-extension-handlers"}

    # Workers left by earlier tests in this process may end while this one runs:
    # count only the threads this agent started.
    earlier = handler_threads()

    def workers() -> int:
        gc.collect()
        return len(handler_threads() - earlier)

    async def go() -> list[int]:
        counts = []
        async with agent:
            for _ in range(6):
                await agent.prompt("hi")
                counts.append(workers())
                agent.reload()
        return counts

    counts = asyncio.run(go())
    assert max(counts) <= 2  # the live worker, and one that is ending
    for _ in range(1000):  # a guard: the retired workers end (about a second; more under load)
        if workers() == 0:
            break
        threading.Event().wait(0.01)
    assert workers() == 0
