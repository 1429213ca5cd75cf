"""Issue 11, item 16: `assemble rpc` reads lines in linear time and refuses a line
over `MAX_LINE_BYTES` (16 MiB) with an error reply; the line is discarded and the
server keeps serving.

The attack: one 64 MB line took 32 s (every chunk re-copied everything buffered so
far) and there was no cap, so a client could make the server hold any amount.
"""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

from assembler.agent import Agent
from assembler.rpc import MAX_LINE_BYTES, serve

MIB = 1024 * 1024


def rpc(tmp_path: Path, data: bytes) -> list[dict[str, Any]]:
    """Run a real `assemble rpc` with `data` on stdin; its replies."""
    (tmp_path / "ws").mkdir(exist_ok=True)
    (tmp_path / "script.yaml").write_text("- text: Served.\n")
    manifest = tmp_path / "agent.yaml"
    manifest.write_text(
        "version: 1\nname: rpc-limit\nidentity: Test agent.\nworkspace: ws\n"
        "tools:\n  sets:\n    - builtin: [read]\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "assembler", "rpc", str(manifest), "--no-session",
         "--model", f"scripted:{tmp_path / 'script.yaml'}"],
        input=data, capture_output=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return [json.loads(line) for line in done.stdout.splitlines()]


def line(request: dict[str, Any], size: int | None = None) -> bytes:
    """`request` as one JSON line; with `size`, padded (in `params.pad`) to exactly
    `size` bytes before the newline."""
    text = json.dumps(request).encode()
    if size is not None:
        params = {**request.get("params", {}), "pad": ""}
        bare = json.dumps({**request, "params": params}).encode()
        params["pad"] = "x" * (size - len(bare))
        text = json.dumps({**request, "params": params}).encode()
        assert len(text) == size
    return text + b"\n"


def finals(replies: list[dict[str, Any]], ident: object) -> list[dict[str, Any]]:
    return [r for r in replies if r.get("id") == ident and ("result" in r or "error" in r)]


def test_the_limit_is_16_mib() -> None:
    assert MAX_LINE_BYTES == 16 * MIB


def test_a_line_over_the_limit_is_refused_and_the_server_goes_on(tmp_path: Path) -> None:
    too_long = line({"id": 1, "method": "prompt", "params": {"text": "hi"}}, MAX_LINE_BYTES + 1)
    at_limit = line({"id": 3, "method": "tools", "params": {}}, MAX_LINE_BYTES)
    data = (
        too_long
        + line({"id": 2, "method": "tools"})
        + at_limit
        + line({"id": 4, "method": "prompt", "params": {"text": "hi"}})
        + line({"id": 5, "method": "shutdown"})
    )
    replies = rpc(tmp_path, data)
    (refused,) = finals(replies, None)
    assert refused["error"]["type"] == "LineTooLong"
    assert "16 MiB" in refused["error"]["message"]
    assert not finals(replies, 1)  # the line was discarded, not served
    assert [t["name"] for t in finals(replies, 2)[0]["result"]] == ["read"]
    assert [t["name"] for t in finals(replies, 3)[0]["result"]] == ["read"]
    assert finals(replies, 4)[0]["result"]["text"] == "Served."
    assert finals(replies, 5) == [{"id": 5, "result": {"ok": True}}]


def test_a_long_line_at_the_end_of_input_is_refused(tmp_path: Path) -> None:
    data = line({"id": 1, "method": "tools"}) + b"[" * (MAX_LINE_BYTES + 5)  # no newline
    replies = rpc(tmp_path, data)
    assert [t["name"] for t in finals(replies, 1)[0]["result"]] == ["read"]
    (refused,) = finals(replies, None)
    assert refused["error"]["type"] == "LineTooLong"


def test_several_long_lines_each_get_one_refusal(tmp_path: Path) -> None:
    long = b"x" * (MAX_LINE_BYTES + 1) + b"\n"
    data = long + line({"id": 1, "method": "tools"}) + long + long
    replies = rpc(tmp_path, data)
    assert [r["error"]["type"] for r in finals(replies, None)] == ["LineTooLong"] * 3
    assert [t["name"] for t in finals(replies, 1)[0]["result"]] == ["read"]


class Listing:
    """Just enough of an `Agent` to answer `tools` and `shutdown`."""

    name = "listing"

    class registry:
        @staticmethod
        def schemas() -> list[Any]:
            return []

    async def start(self) -> None:
        pass

    async def aclose(self) -> None:
        pass

    manifest = SimpleNamespace(limits=SimpleNamespace(permission_timeout=300.0))

    def set_approver(self, approver: Any, *, timeout: float | None = None) -> None:
        pass  # `serve` makes the client the approver of `ask` rules


def test_a_text_stream_without_a_file_descriptor_has_the_same_limit() -> None:
    """`serve(agent, stdin=...)` from the SDK, with a stream that has no descriptor."""
    source = io.StringIO(
        "x" * (MAX_LINE_BYTES + 1) + "\n" + json.dumps({"id": 1, "method": "tools"}) + "\n"
    )
    out = io.StringIO()
    asyncio.run(serve(cast(Agent, Listing()), source, out))
    replies = [json.loads(text) for text in out.getvalue().splitlines()]
    assert [r["error"]["type"] for r in finals(replies, None)] == ["LineTooLong"]
    assert finals(replies, 1) == [{"id": 1, "result": []}]
