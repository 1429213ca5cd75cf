"""The shipping example's session, converted and replayed 100 times: the same result
every time, and not one network socket opened (a Python audit hook sees every socket
the process creates and every connection it makes)."""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from regress_project import failure, record, replay, restore_workspace, to_test

from assembler.testing import text, tool_call

READ_AND_FIX = [
    tool_call("read", path="shipping/fees.py"),
    tool_call(
        "edit",
        path="shipping/fees.py",
        old_text="math.floor(weight_kg)",
        new_text="math.ceil(weight_kg)",
    ),
    text("Fixed: started kilograms round up."),
]
"""The fix without running the tests (whose subprocess would dominate 100 runs)."""

NETWORK = (socket.AF_INET, socket.AF_INET6)


class SocketWatch:
    """Network sockets created and connections attempted while `active`."""

    def __init__(self) -> None:
        self.active = False
        self.seen: list[str] = []

    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        if not self.active:
            return
        if event == "socket.__new__" and args and args[1] in NETWORK:
            self.seen.append(f"{event}{args}")
        elif event in ("socket.connect", "socket.bind", "socket.getaddrinfo"):
            self.seen.append(f"{event}{args[1:]}")


_WATCH = SocketWatch()
_HOOKED: list[SocketWatch] = []


@pytest.fixture
def sockets() -> Iterator[SocketWatch]:
    if not _HOOKED:  # an audit hook cannot be removed: one per process, switched on here
        sys.addaudithook(_WATCH)
        _HOOKED.append(_WATCH)
    _WATCH.seen.clear()
    _WATCH.active = True
    try:
        yield _WATCH
    finally:
        _WATCH.active = False


def test_the_watch_sees_a_socket(sockets: SocketWatch) -> None:
    """The proof below can fail: a socket opened is seen."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM):
        pass
    assert sockets.seen


@pytest.mark.slow
def test_a_hundred_replays_are_identical_and_offline(project: Path, sockets: SocketWatch) -> None:
    sockets.active = False
    session = record(project, READ_AND_FIX)
    restore_workspace(project)
    eval_file = to_test(session, project / "evals" / "fix.eval.yaml").eval_file
    sockets.active = True
    runs = replay(eval_file, repeat=100)
    assert sockets.seen == []
    assert len(runs) == 100
    outcomes = {
        (
            run.status,
            run.replay,
            run.answer,
            run.turns,
            tuple((c.kind, c.passed, c.evidence) for c in run.checks),
            tuple(run.tool_calls),
        )
        for run in runs
    }
    assert len(outcomes) == 1, outcomes
    (only,) = runs[:1]
    assert only.status == "passed", failure(only)
    assert only.replay == "3 replies, every request as recorded"
