"""Running a tool's blocking work off the event loop, within the tool timeout.

File I/O and CPU-bound work in a tool body would stall the event loop: every other
tool call, the model's stream and Ctrl-C handling wait for it. So the work runs in a
thread of its own, and the tool waits for it at most `ToolContext.timeout` seconds.
A thread cannot be stopped from outside; on a timeout (or a cancelled call) it is
abandoned: a daemon thread, so it never keeps the process alive, whose late result
is dropped. Work that must be stoppable for real (user regexes) runs in a process
(`assembler.tools.builtin.search`).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from assembler.errors import ToolError

if TYPE_CHECKING:
    import asyncio

T = TypeVar("T")


async def run_blocking(work: Callable[[], T], *, timeout: float, what: str, note: str = "") -> T:
    """`work()` in a daemon thread; a `ToolError` if it takes over `timeout` seconds.

    `what` names the work in the message (`read src/app.py`); `note` is added to it,
    to say what a late finish may still do (a write may yet land).
    """
    # Imported here: listing and validating tools must not load asyncio.
    import asyncio

    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(value: T | None, error: BaseException | None) -> None:
        if future.done():  # timed out or cancelled: nobody wants the result
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)  # type: ignore[arg-type]

    def target() -> None:
        value: T | None = None
        error: BaseException | None = None
        try:
            value = work()
        except BaseException as exc:
            error = exc
        with contextlib.suppress(RuntimeError):  # the loop is closed: the run is over
            loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=target, name=f"tool: {what}", daemon=True).start()
    try:
        done, _ = await asyncio.wait({future}, timeout=timeout)
    except asyncio.CancelledError:
        future.cancel()
        raise
    if not done:
        future.cancel()
        raise ToolError(
            f"{what} did not finish within {timeout:g} s (limits.tool_timeout); "
            f"it was abandoned{note}"
        )
    return future.result()
