"""The early phase (issue 27): `initialize` and `session/new` answered before the SDK
is loaded, exactly as the SDK would answer them.

- What it accepts, the SDK's own request models accept, with the same capabilities
  (a property test over generated parameters, and the shapes real clients send);
- a real `assemble acp` answers both while the SDK's schema module cannot be
  imported yet (held by a `sitecustomize` gate), and serves the session once it is;
- the same requests answered early and by the SDK (made to decline the early path
  with a `_meta`) give the same bytes, errors included.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from acp.schema import ClientCapabilities, InitializeRequest, NewSessionRequest
from acp_harness import manifest
from hypothesis import given, settings
from hypothesis import strategies as st

from assembler.acp.early import _initialize_params, _new_session_params

# -- what the early phase accepts, the SDK accepts --------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 70_000) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


def maybe(key: str, value: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(st.just({}), value.map(lambda v: {key: v}))


def merged(*parts: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.tuples(*parts).map(lambda ds: {k: v for d in ds for k, v in d.items()})


FLAG = st.booleans() | JSON
FS = merged(maybe("readTextFile", FLAG), maybe("writeTextFile", FLAG), maybe("_meta", JSON))
CAPABILITIES = merged(
    maybe("fs", FS | JSON),
    maybe("terminal", FLAG),
    maybe("auth", merged(maybe("terminal", FLAG), maybe("_meta", JSON)) | JSON),
    maybe("_meta", JSON),
    maybe("session", JSON),
)
INFO = merged(
    maybe("name", st.text(max_size=4) | JSON),
    maybe("version", st.text(max_size=4)),
    maybe("title", JSON),
)
INITIALIZE = merged(
    maybe("protocolVersion", st.integers(-2, 70_000) | JSON),
    maybe("clientCapabilities", CAPABILITIES | JSON),
    maybe("clientInfo", INFO | JSON),
    maybe("_meta", JSON),
)
NEW_SESSION = merged(
    maybe("cwd", st.text(max_size=5) | JSON),
    maybe("mcpServers", st.just([]) | JSON),
    maybe("_meta", JSON),
    maybe("additionalDirectories", JSON),
)


@settings(max_examples=400, deadline=None)
@given(INITIALIZE)
def test_an_initialize_answered_early_is_one_the_sdk_accepts(params: dict[str, Any]) -> None:
    if not _initialize_params(params):
        return
    request = InitializeRequest.model_validate(params)
    capabilities = params.get("clientCapabilities")
    # what the server keeps: the same capabilities either way
    kept = (
        ClientCapabilities.model_validate(capabilities)
        if capabilities is not None
        else ClientCapabilities()
    )
    assert kept == request.client_capabilities


@settings(max_examples=300, deadline=None)
@given(NEW_SESSION)
def test_a_session_new_answered_early_is_one_the_sdk_accepts(params: dict[str, Any]) -> None:
    if not _new_session_params(params):
        return
    request = NewSessionRequest.model_validate(params)
    assert (request.cwd, request.mcp_servers, request.field_meta) == (params["cwd"], [], None)


@pytest.mark.parametrize(
    "params",
    [
        {"protocolVersion": 1},
        {
            "protocolVersion": 1,
            "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True}, "auth": {}},
        },
        {  # as Zed sends it
            "protocolVersion": 1,
            "clientCapabilities": {
                "fs": {"readTextFile": True, "writeTextFile": True},
                "terminal": True,
                "_meta": {"terminal_output": True, "terminal-auth": True},
            },
            "clientInfo": {"name": "zed", "title": "Zed", "version": "0.210.0"},
        },
    ],
)
def test_what_clients_send_is_answered_early(params: dict[str, Any]) -> None:
    assert _initialize_params(params)
    InitializeRequest.model_validate(params)


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"protocolVersion": True},
        {"protocolVersion": -1},
        {"protocolVersion": 65536},
        {"protocolVersion": "2024-11-05"},  # the SDK maps it to 1: its business
        {"protocolVersion": 1, "_meta": {"client_capabilities": {}}},
        {"protocolVersion": 1, "clientCapabilities": None},
        {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": 1}}},
        {"protocolVersion": 1, "clientCapabilities": {"elicitation": {}}},
        {"protocolVersion": 1, "clientInfo": {"name": "x"}},
        {"protocolVersion": 1, "extra": 1},
    ],
)
def test_anything_else_is_left_to_the_sdk(params: dict[str, Any]) -> None:
    assert not _initialize_params(params)


@pytest.mark.parametrize(
    "params",
    [
        {"cwd": "/"},
        {"cwd": 1, "mcpServers": []},
        {"cwd": "/", "mcpServers": [{"name": "x", "command": "y", "args": [], "env": []}]},
        {"cwd": "/", "mcpServers": [], "_meta": {}},
        {"cwd": "/", "mcpServers": [], "additionalDirectories": ["/tmp"]},
    ],
)
def test_a_session_new_out_of_the_plain_shape_is_left_to_the_sdk(params: dict[str, Any]) -> None:
    assert not _new_session_params(params)


# -- a real server --------------------------------------------------------------------

GATE = """\
import os, sys, time
class _Gate:
    def find_spec(self, name, path=None, target=None):
        if name == "acp.schema":
            while not os.path.exists({opened!r}):
                time.sleep(0.01)
        return None
sys.meta_path.insert(0, _Gate())
"""


def request(request_id: object, method: str, params: dict[str, Any]) -> bytes:
    message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    return (json.dumps(message) + "\n").encode()


async def start(
    agent: Path, *args: str, env: dict[str, str] | None = None
) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "assembler", "acp", str(agent), "--trust", *args,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env=env or dict(os.environ),
    )  # fmt: skip


async def answer(process: asyncio.subprocess.Process) -> dict[str, Any]:
    assert process.stdout is not None
    async with asyncio.timeout(60):
        line = await process.stdout.readline()
    assert line, "the server closed its output"
    data: dict[str, Any] = json.loads(line)
    return data


async def finish(process: asyncio.subprocess.Process) -> tuple[int, str]:
    assert process.stdin is not None and process.stderr is not None
    process.stdin.close()
    async with asyncio.timeout(60):
        errors = await process.stderr.read()
        code = await process.wait()
    return code, errors.decode(errors="replace")


def test_both_answers_come_before_the_sdk_is_loaded(tmp_path: Path) -> None:
    agent = manifest(tmp_path, "- text: Hello.\n")
    opened = tmp_path / "sdk-may-load"
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(GATE.format(opened=str(opened)))
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)

    async def scenario() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], int, str]:
        process = await start(agent, "--no-session", env={**os.environ, "PYTHONPATH": path})
        assert process.stdin is not None
        try:
            process.stdin.write(request(0, "initialize", {"protocolVersion": 1}))
            process.stdin.write(request(1, "session/new", {"cwd": "/", "mcpServers": []}))
            first, second = await answer(process), await answer(process)
            opened.touch()  # the SDK may load now; the session is then served by it
            session = second["result"]["sessionId"]
            prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}
            process.stdin.write(request(2, "session/prompt", prompt))
            replies = [await answer(process)]
            while replies[-1].get("id") != 2:  # the session's updates come first
                replies.append(await answer(process))
            code, errors = await finish(process)
        finally:  # a server stuck at the gate must not outlive the test
            opened.touch()
            if process.returncode is None:
                process.kill()
                await process.wait()
        done = next(r for r in replies if r.get("id") == 2)
        return first, second, done, code, errors

    first, second, done, code, errors = asyncio.run(scenario())
    assert first["result"]["protocolVersion"] == 1
    assert second["result"]["modes"]["currentModeId"] == "default"
    assert done["result"] == {"stopReason": "end_turn"}
    assert code == 0, errors


def test_answered_early_or_by_the_sdk_the_bytes_are_the_same(tmp_path: Path) -> None:
    agent = manifest(tmp_path, "- text: unused\n")
    broken = tmp_path / "broken.yaml"  # its model needs a key that is not set
    broken.write_text(agent.read_text().replace("scripted:script.yaml", "openai:gpt-4o"))
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    sessions = str(tmp_path / "sessions")

    async def exchange(path: Path, meta: dict[str, Any]) -> list[dict[str, Any]]:
        process = await start(path, "--session-dir", sessions, env=env)
        assert process.stdin is not None
        capabilities = {"fs": {"readTextFile": True}, "terminal": False}
        process.stdin.write(
            request(
                0, "initialize", {"protocolVersion": 1, "clientCapabilities": capabilities, **meta}
            )
        )
        process.stdin.write(
            request("n", "session/new", {"cwd": str(tmp_path), "mcpServers": [], **meta})
        )
        replies = [await answer(process), await answer(process)]
        code, errors = await finish(process)
        assert code == 0, errors
        return replies

    async def scenario() -> list[list[dict[str, Any]]]:
        return [
            await exchange(path, meta)
            for path in (agent, broken)
            for meta in ({}, {"_meta": {"by": "sdk"}})
        ]

    early, by_sdk, early_error, sdk_error = asyncio.run(scenario())
    assert early[0] == by_sdk[0]
    assert early[0]["result"]["agentCapabilities"]["sessionCapabilities"] == {
        "list": {},
        "fork": {},
        "resume": {},
        "close": {},
    }
    ids = [r["result"].pop("sessionId") for r in (early[1], by_sdk[1])]
    assert ids[0] != ids[1] and early[1] == by_sdk[1]
    assert early_error == sdk_error
    assert early_error[1]["error"]["data"] == {"type": "MissingCredentialsError"}
