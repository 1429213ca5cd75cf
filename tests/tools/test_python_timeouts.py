"""A sync Python tool that overruns its timeout: the run goes on, and can end.

A thread cannot be stopped, so a timed-out sync tool may keep running; what must not
happen is that it keeps the process alive (as a thread of asyncio's default executor
would: `asyncio.run` joins those at shutdown) or that its late result raises.
"""

from __future__ import annotations

import asyncio
import itertools
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assembler.manifest.model import PythonToolSpec
from assembler.tools.base import Tool, ToolContext, ToolResult
from assembler.tools.python.tools import load_python_tool

_counter = itertools.count()

SCRIPT = """
import asyncio
import sys
from pathlib import Path

from assembler.manifest.model import PythonToolSpec
from assembler.tools.base import ToolContext
from assembler.tools.python.tools import load_python_tool

root = Path(sys.argv[1])
tool = load_python_tool(PythonToolSpec(sys.argv[2]), [root])
result = asyncio.run(tool.execute({}, ToolContext(workspace=root, timeout=0.5)))
print(result.content)
print(result.details.get("timed_out"))
"""


@pytest.fixture
def modules(tmp_path: Path) -> Iterator[list[str]]:
    names: list[str] = []
    yield names
    for name in names:
        sys.modules.pop(name, None)


def write_module(root: Path, names: list[str], source: str) -> str:
    name = f"pytool_timeout_{next(_counter)}"
    (root / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    names.append(name)
    return name


def load(root: Path, module: str, function: str) -> Tool:
    return load_python_tool(PythonToolSpec(f"{module}:{function}"), [root])


def thread_of(name: str) -> threading.Thread:
    return next(t for t in threading.enumerate() if t.name == f"python tool {name}")


@pytest.mark.parametrize(
    ("function", "body"),
    [
        ("nap", "time.sleep(30)"),
        ("forever", "threading.Event().wait()"),
    ],
)
def test_a_timed_out_sync_tool_does_not_keep_the_process_alive(
    tmp_path: Path, function: str, body: str
) -> None:
    (tmp_path / "stuck.py").write_text(
        f"import threading\nimport time\n\ndef {function}() -> str:\n    {body}\n"
        '    return "late"\n',
        encoding="utf-8",
    )
    script = tmp_path / "run_tool.py"
    script.write_text(SCRIPT, encoding="utf-8")
    # The timeout only keeps a regression from hanging the suite: the script ends
    # about half a second after it starts.
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path), f"stuck:{function}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=15,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"{function} did not finish within 0.5 s (it runs in a thread that cannot be stopped)",
        "True",
    ]


def test_sync_tools_run_on_a_daemon_thread_with_the_callers_context(
    tmp_path: Path, modules: list[str]
) -> None:
    module = write_module(
        tmp_path,
        modules,
        """
        import contextvars
        import threading

        request = contextvars.ContextVar("request", default="none")

        def where() -> str:
            thread = threading.current_thread()
            return f"{thread.name} daemon={thread.daemon} request={request.get()}"
        """,
    )
    tool = load(tmp_path, module, "where")

    async def scenario() -> ToolResult:
        sys.modules[module].request.set("r-1")
        return await tool.execute({}, ToolContext(workspace=tmp_path))

    assert asyncio.run(scenario()).content == "python tool where daemon=True request=r-1"


def test_a_late_result_is_dropped_quietly(
    tmp_path: Path, modules: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    module = write_module(
        tmp_path,
        modules,
        """
        import threading

        release = threading.Event()

        def late(fail: bool = False) -> str:
            release.wait(10)
            if fail:
                raise ValueError("too late")
            return "late"
        """,
    )
    tool = load(tmp_path, module, "late")
    release: threading.Event = sys.modules[module].release
    ctx = ToolContext(workspace=tmp_path, timeout=0.05)
    loop_errors: list[dict[str, Any]] = []
    thread_errors: list[Any] = []
    monkeypatch.setattr(threading, "excepthook", thread_errors.append)

    async def finish_while_the_loop_runs(fail: bool) -> ToolResult:
        asyncio.get_running_loop().set_exception_handler(lambda _, c: loop_errors.append(c))
        result = await tool.execute({"fail": fail}, ctx)
        release.set()
        await asyncio.to_thread(thread_of("late").join, 10)
        for _ in range(3):  # let the result's callback run
            await asyncio.sleep(0)
        release.clear()
        return result

    for fail in (False, True):
        result = asyncio.run(finish_while_the_loop_runs(fail))
        assert result.is_error and result.details["timed_out"] is True

    result = asyncio.run(tool.execute({}, ctx))  # the thread outlives the loop
    assert result.is_error and result.details["timed_out"] is True
    thread = thread_of("late")
    release.set()
    thread.join(10)
    assert not thread.is_alive()
    assert (loop_errors, thread_errors) == ([], [])
