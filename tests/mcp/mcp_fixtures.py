"""Servers for the MCP tests: script files for stdio, an in-thread uvicorn for HTTP.

Imported by the test modules of this directory (pytest puts it on `sys.path`); the
module name avoids `mcp`, which would shadow the SDK.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import uvicorn
from mcp.server.mcpserver import MCPServer
from starlette.types import ASGIApp, Receive, Scope, Send

from assembler.manifest.model import MCPServerSpec

PYTHON = sys.executable

#: A stdio server with tools that report on its own process, for the tests to check
#: what the server sees (environment, working directory, pid) and how results render.
PROBE_SERVER = textwrap.dedent(
    '''
    import os
    import sys

    from mcp.server.mcpserver import Image, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    server = MCPServer(sys.argv[1] if len(sys.argv) > 1 else "probe")


    @server.tool()
    def getenv(name: str) -> str:
        """Return one environment variable of the server process."""
        return repr(os.environ.get(name))


    @server.tool()
    def pid() -> str:
        """Return the server's process id."""
        return str(os.getpid())


    @server.tool()
    def cwd() -> str:
        """Return the server's working directory."""
        return os.getcwd()


    @server.tool()
    def fail(message: str) -> str:
        """Always fails.

        A second line that is not part of the snippet.
        """
        raise ToolError(message)


    @server.tool()
    def picture() -> Image:
        """Return a small PNG image."""
        return Image(data=b"\\x89PNG\\r\\n\\x1a\\n" + b"\\0" * 12592, format="png")


    @server.tool()
    def lines(count: int) -> str:
        """Return `count` numbered lines."""
        return "\\n".join(f"line {i}" for i in range(1, count + 1))


    @server.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        return text


    server.run()
    '''
)


def write_script(directory: Path, name: str, source: str) -> Path:
    path = directory / name
    path.write_text(source, encoding="utf-8")
    return path


def probe_spec(directory: Path, name: str = "probe", **fields: object) -> MCPServerSpec:
    """A stdio spec for the probe server; `fields` override the spec's defaults."""
    script = directory / "probe_server.py"
    if not script.exists():
        write_script(directory, "probe_server.py", PROBE_SERVER)
    args = fields.pop("args", (str(script), name))
    return MCPServerSpec(name=name, command=PYTHON, args=args, **fields)  # type: ignore[arg-type]


def time_server_command() -> tuple[str, tuple[str, ...]]:
    """The reference `mcp-server-time`: its console script, else `python -m`."""
    script = shutil.which("mcp-server-time") or shutil.which(
        "mcp-server-time", path=str(Path(PYTHON).parent)
    )
    if script:
        return script, ()
    return PYTHON, ("-m", "mcp_server_time")


def git_server_command() -> tuple[str, tuple[str, ...]]:
    script = shutil.which("mcp-server-git") or shutil.which(
        "mcp-server-git", path=str(Path(PYTHON).parent)
    )
    if script:
        return script, ()
    return PYTHON, ("-m", "mcp_server_git")


def make_git_repository(directory: Path) -> Path:
    """A repository with one commit (`first commit`) and one untracked file."""
    directory.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}

    def run(*args: str) -> None:
        subprocess.run(["git", *args], cwd=directory, env=env, check=True, capture_output=True)

    run("init", "-q")
    (directory / "README.md").write_text("hello\n", encoding="utf-8")
    run("add", "README.md")
    run(
        "-c", "user.name=Test", "-c", "user.email=test@example.com", "commit", "-qm", "first commit"
    )
    (directory / "notes.txt").write_text("untracked\n", encoding="utf-8")
    return directory


def process_exists(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie counts as gone)."""
    status = Path(f"/proc/{pid}/status")
    if status.parent.exists():
        try:
            text = status.read_text()
        except OSError:
            return False
        return "\nState:\tZ" not in text
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def wait_gone(pid: int, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not process_exists(pid):
            return True
        time.sleep(0.02)
    return not process_exists(pid)


def children_of(pid: int) -> set[int]:
    """Direct children of `pid` (Linux /proc only; empty elsewhere)."""
    found: set[int] = set()
    proc = Path("/proc")
    if not proc.exists():
        return found
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.add(int(entry.name))
    return found


# -- HTTP ---------------------------------------------------------------------------


def http_server(name: str, tools: Sequence[str] = ("add",)) -> MCPServer:
    """An SDK server with some of: `add(a, b)`, `greet(name)`, `search(query)`."""
    server = MCPServer(name)
    if "add" in tools:

        @server.tool()
        def add(a: int, b: int) -> str:
            """Add two integers."""
            return str(a + b)

    if "greet" in tools:

        @server.tool()
        def greet(name: str) -> str:
            """Greet someone by name."""
            return f"Hello, {name}!"

    if "search" in tools:

        @server.tool()
        def search(query: str) -> str:
            """Search this server's corpus."""
            return f"{server.name} results for {query}"

    return server


class BearerAuth:
    """ASGI middleware: 401 unless `Authorization: Bearer <token>` is sent."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != (
            self.expected
        ):
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [(b"content-type", b"text/plain")],
                }
            )
            await send({"type": "http.response.body", "body": b"unauthorized"})
            return
        await self.app(scope, receive, send)


@contextmanager
def serve_http(server: MCPServer, *, token: str | None = None) -> Iterator[str]:
    """Run `server`'s streamable-HTTP app on 127.0.0.1 in a thread; yields its URL."""
    app: ASGIApp = server.streamable_http_app()
    if token is not None:
        app = BearerAuth(app, token)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    runner = uvicorn.Server(config)
    thread = threading.Thread(target=runner.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not runner.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test HTTP server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        runner.should_exit = True
        thread.join(10)
        sock.close()
