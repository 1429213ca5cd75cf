"""Commands that outlive their call, as several runs in one process share them.

An evaluation runs its tasks (and repeats) as concurrent runs in one process: each
run's scope closes its own commands while another run starts commands (and sweeps
the ones that ended). Neither may close a descriptor the other still uses.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
import uuid
from pathlib import Path

import pytest
from procs import live_processes_with

from assembler.tools import processes
from assembler.tools.base import ToolContext
from assembler.tools.builtin.bash import BASH_TOOL
from assembler.tools.processes import ProcessScope

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="scans /proc")


def test_a_scope_closes_while_another_run_sweeps_its_commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seconds = f"301.{uuid.uuid4().int % 10**9:09d}"
    scope = ProcessScope()
    ctx = ToolContext(workspace=tmp_path, processes=scope)
    real_wait_closed = processes.wait_closed

    def another_run_sweeps_first(fds: list[int], deadline: float) -> list[int]:
        # Another run starting a command in this instant sweeps the commands whose
        # supervisor has exited: this scope's own, which the kill just ended.
        while len(scope) and time.monotonic() < deadline:
            processes.sweep()
            time.sleep(0.01)
        assert len(scope) == 0, "the other run's sweep did not forget the command"
        return real_wait_closed(fds, deadline)

    async def scenario() -> None:
        # The job keeps the command registered after the call: it outlives the call.
        result = await BASH_TOOL.execute({"command": f"sleep {seconds} >/dev/null 2>&1 &"}, ctx)
        assert not result.is_error, result.content
        assert len(scope) == 1
        monkeypatch.setattr(processes, "wait_closed", another_run_sweeps_first)
        await scope.aclose()  # raised EBADF: it waited on descriptors the sweep closed

    asyncio.run(scenario())
    assert live_processes_with(seconds) == []


def test_a_command_forgotten_twice_closes_its_descriptors_once() -> None:
    control_read, control_write = os.pipe()
    watch, watch_write = os.pipe()
    os.close(watch_write)  # its supervisor has exited
    command = processes._Command(-1, control_write, watch, released=True)
    with processes._lock:
        processes._commands[command.key] = command
    try:
        command.forget()
        # The process reuses the freed numbers (the lowest free are taken first) ...
        reused = os.pipe()
        assert set(reused) & {control_write, watch}, "the numbers were not reused"
        command.forget()  # ... which a second sweep of the same command must leave alone
        os.write(reused[1], b"still open")
        assert os.read(reused[0], 64) == b"still open"
        os.close(reused[0])
        os.close(reused[1])
    finally:
        os.close(control_read)
        with processes._lock:
            processes._commands.pop(command.key, None)


def test_the_exit_signals_stop_does_not_wait_for_the_thread_it_interrupted() -> None:
    """SIGTERM's handler runs on the main thread, possibly while that thread is inside
    the registry (adding or forgetting a process): stopping must still go through."""
    stopped = threading.Event()
    key = -2
    processes.RUNNING.add(key, stopped.set)

    def interrupted_inside_the_registry() -> None:
        with processes.RUNNING._lock:  # as `add` or `discard` holds it
            processes.RUNNING.stop_all()  # the handler, on the same thread

    thread = threading.Thread(target=interrupted_inside_the_registry, daemon=True)
    try:
        thread.start()
        thread.join(10)
        assert not thread.is_alive(), "stopping waited for the lock its own thread held"
        assert stopped.is_set()
    finally:
        if not thread.is_alive():  # else the lock stays held: leave the entry
            processes.RUNNING.discard(key)
