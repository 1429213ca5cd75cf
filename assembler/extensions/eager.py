"""Running a coroutine's first step at once, as the task it would become runs it.

Most extension handlers written `async def` never wait for anything, or only at the
end; as a task each costs a task, a loop iteration and callbacks before its result is
known (issue 21). Run eagerly, a handler that finishes in its first step costs a call;
one that awaits goes on as a task from where it stopped.

Python 3.12 has this built in (`asyncio.Task(..., eager_start=True)`). On 3.11 it is
done here the same way: the task is created first (its first scheduled step only
continues what ran eagerly) and made the current task while the first step runs in
the task's context, so `asyncio.current_task()`, `asyncio.timeout()` and task groups
inside the handler see the handler's own task, never the caller's. That uses
asyncio's `_enter_task` and `_leave_task`, which 3.11 has and 3.12 no longer needs.
"""

from __future__ import annotations

import asyncio
import contextvars
import sys
import types
from collections.abc import Coroutine, Generator
from typing import Any


def start_eagerly(
    loop: asyncio.AbstractEventLoop,
    coroutine: Coroutine[Any, Any, Any],
    context: contextvars.Context,
) -> tuple[Any] | BaseException | asyncio.Task[Any]:
    """The coroutine's result (in a 1-tuple) or its exception if it ended within its
    first step; else the task running the rest. `KeyboardInterrupt` and `SystemExit`
    propagate, as from a task's step."""
    if sys.version_info >= (3, 12):
        task = asyncio.Task(coroutine, loop=loop, context=context, eager_start=True)
        if not task.done():
            return task
        if task.cancelled():
            return asyncio.CancelledError()
        error = task.exception()
        return error if error is not None else (task.result(),)
    return _start_on_311(loop, coroutine, context)


class _Rest:
    """What the task runs: the coroutine from where its eager first step stopped."""

    def __init__(self, coroutine: Coroutine[Any, Any, Any]) -> None:
        self.coroutine = coroutine
        self.yielded: Any = None
        self.suspended = False

    async def run(self) -> Any:
        if not self.suspended:  # it ended in its first step: nothing left
            return None
        return await _forward(self.coroutine, self.yielded)


def _start_on_311(
    loop: asyncio.AbstractEventLoop,
    coroutine: Coroutine[Any, Any, Any],
    context: contextvars.Context,
) -> tuple[Any] | BaseException | asyncio.Task[Any]:
    from asyncio.tasks import _enter_task, _leave_task

    rest = _Rest(coroutine)
    task = loop.create_task(rest.run(), context=context)
    caller = asyncio.current_task(loop)
    if caller is not None:
        _leave_task(loop, caller)
    _enter_task(loop, task)
    try:
        rest.yielded = context.run(coroutine.send, None)
    except StopIteration as stop:
        return (stop.value,)
    except (Exception, asyncio.CancelledError) as error:
        return error
    finally:
        _leave_task(loop, task)
        if caller is not None:
            _enter_task(loop, caller)
    rest.suspended = True
    return task


@types.coroutine
def _forward(coroutine: Coroutine[Any, Any, Any], yielded: Any) -> Generator[Any, Any, Any]:
    """Go on driving `coroutine`, which last yielded `yielded`: hand what it yields to
    the task, and the task's answers (values, exceptions, closing) back to it."""
    while True:
        try:
            sent = yield yielded
        except GeneratorExit:
            coroutine.close()
            raise
        except BaseException as error:
            try:
                yielded = coroutine.throw(error)
            except StopIteration as stop:
                return stop.value
        else:
            try:
                yielded = coroutine.send(sent)
            except StopIteration as stop:
                return stop.value
