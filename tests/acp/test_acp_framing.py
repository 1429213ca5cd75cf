"""Malformed input over ACP: every line that is not a JSON-RPC 2.0 message gets the
JSON-RPC error for it, the session goes on, and nothing but protocol reaches stdout.

The checks themselves are fuzzed in process (hypothesis); one real `assemble acp`
process then gets a stream of malformed and valid messages on its stdin, written as
an editor with bugs would, and every line it writes must be a JSON-RPC message."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from acp_harness import manifest
from hypothesis import given
from hypothesis import strategies as st

from assembler.acp.framing import INVALID_REQUEST, PARSE_ERROR, Lines, checked

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(st.binary(max_size=200))
def test_any_bytes_are_passed_on_or_answered(line: bytes) -> None:
    answer = checked(line)
    if answer is None:
        assert not line.strip() or isinstance(json.loads(line), dict)
    else:
        _is_error(answer)


@given(json_values)
def test_any_json_is_passed_on_only_when_it_is_a_message(value: Any) -> None:
    answer = checked(json.dumps(value).encode())
    if answer is None:
        assert isinstance(value, dict) and value.get("jsonrpc") == "2.0"
        assert isinstance(value.get("method"), str) or "result" in value or "error" in value
    else:
        assert _is_error(answer)["error"]["code"] in (PARSE_ERROR, INVALID_REQUEST)


def test_the_error_names_the_request_when_it_can() -> None:
    wrong_version = checked(b'{"jsonrpc": "1.0", "id": 7, "method": "initialize"}')
    assert wrong_version is not None and _is_error(wrong_version)["id"] == 7
    wrong_id = checked(b'{"jsonrpc": "2.0", "id": {"x": 1}, "method": "initialize"}')
    assert wrong_id is not None and _is_error(wrong_id)["id"] is None
    deep = checked(b"[" * 100_000 + b"]" * 100_000)
    assert deep is not None and _is_error(deep)["error"]["code"] == PARSE_ERROR


@given(st.lists(st.binary(min_size=0, max_size=40), max_size=12), st.integers(1, 30))
def test_lines_are_cut_as_they_were_written(pieces: list[bytes], size: int) -> None:
    """Whatever the chunks, the lines come out as written; a line over the limit is
    one None and nothing of it leaks into the next line."""
    stream = b"".join(pieces)
    lines = Lines(limit=32)
    out: list[bytes | None] = []
    for start in range(0, len(stream), size):
        out += lines.feed(stream[start : start + size])
    last = lines.end()
    if last is not None:
        out.append(last)
    written = stream.split(b"\n")
    expected: list[bytes | None] = [
        line + b"\n" if len(line) + 1 <= 32 else None for line in written[:-1]
    ]
    if written[-1]:
        expected.append(written[-1] + b"\n" if len(written[-1]) <= 32 else None)
    assert out == expected


def _is_error(line: bytes) -> dict[str, Any]:
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    reply: dict[str, Any] = json.loads(line)
    assert reply["jsonrpc"] == "2.0" and "id" in reply
    assert isinstance(reply["error"]["code"], int) and reply["error"]["message"]
    return reply


# -- a real process ------------------------------------------------------------------


def _request(request_id: object, method: str, params: object) -> bytes:
    message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    return json.dumps(message).encode()


MALFORMED: list[bytes] = [
    b"not json at all",
    b'{"jsonrpc": "2.0", "id": 1, "method": "initialize"',  # cut short
    b"\xff\xfe\x00 invalid utf-8",
    b"[]",
    b"5",
    b'"a string"',
    b'[{"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {}}]',  # a batch
    b"{}",
    b'{"jsonrpc": "2.0"}',
    b'{"jsonrpc": "1.0", "id": 3, "method": "initialize", "params": {}}',
    b'{"jsonrpc": "2.0", "id": [4], "method": "initialize", "params": {}}',
    b'{"jsonrpc": "2.0", "id": true, "method": "initialize", "params": {}}',
    b'{"jsonrpc": "2.0", "id": 5, "method": 42, "params": {}}',
    b'{"jsonrpc": "2.0", "id": 6, "method": "initialize", "params": "x"}',
    b'{"jsonrpc": "2.0", "id": 7, "result": {}, "error": {}}',
    b"[" * 50_000 + b"]" * 50_000,
    _request(8, "initialize", {"protocolVersion": -5}),  # out of range: the SDK says -32602
    _request(9, "session/prompt", {"sessionId": 5, "prompt": "hi"}),
    _request(10, "session/prompt", [1, 2, 3]),
    _request(11, "no/such/method", {}),
    _request(12, "session/prompt", {"sessionId": "nope", "prompt": []}),
    _request(13, "session/set_mode", {"sessionId": "nope", "modeId": "bypass"}),
    _request(14, "session/list", {"cursor": {"x": 1}}),
    _request(15, "session/close", {"sessionId": None}),
    b'{"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": 1}}',
    b'{"jsonrpc": "2.0", "method": "no/such/notification", "params": {}}',
    b'{"jsonrpc": "2.0", "id": 999, "result": {"outcome": "out of order"}}',
    _request("x" * 70_000, "session/new", {"cwd": "/", "mcpServers": "none"}),
]


def test_a_real_process_answers_every_malformed_line(tmp_path: Path) -> None:
    agent = manifest(tmp_path, "- text: Still here.\n")
    rng = random.Random(27)
    mutated = []
    for _ in range(60):  # valid requests with one byte changed, ids 100 and up
        line = bytearray(
            _request(100 + len(mutated), "session/new", {"cwd": "/", "mcpServers": []})
        )
        line[rng.randrange(len(line))] = rng.choice(b'{}[]":,0 \\x\x00')
        mutated.append(bytes(line).replace(b"\n", b" "))
    too_long = (
        b'{"jsonrpc": "2.0", "id": 16, "method": "x", "params": {"p": "'
        + b"a" * (51 * 1024 * 1024)
        + b'"}}'
    )
    valid = [
        _request(20, "initialize", {"protocolVersion": 1}),
        _request(21, "session/new", {"cwd": "/", "mcpServers": []}),
    ]
    stream = b"\n".join([*MALFORMED, too_long, *mutated, *valid]) + b"\n"
    log = tmp_path / "stderr.txt"
    with log.open("wb") as stderr_file:
        process = subprocess.Popen(
            [sys.executable, "-m", "assembler", "acp", str(agent), "--no-session"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr_file,
            env=dict(os.environ),
        )
    assert process.stdin is not None and process.stdout is not None
    threading.Thread(target=process.stdin.write, args=(stream,), daemon=True).start()
    replies: list[dict[str, Any]] = []
    try:
        # stdin stays open until the last request is answered: the end of input ends
        # the session, answered or not
        while not any(r.get("id") == 21 for r in replies):
            line = process.stdout.readline()
            assert line, "the process ended before answering everything"
            replies.append(json.loads(line))  # every line is JSON
    finally:
        process.stdin.close()
        rest = process.stdout.read()
        process.wait(timeout=60)
    replies += [json.loads(line) for line in rest.splitlines()]
    stderr = log.read_text(errors="replace")
    assert process.returncode == 0, stderr[-3000:]
    assert "Traceback" not in stderr
    assert all(r["jsonrpc"] == "2.0" for r in replies)
    answered = [r for r in replies if "id" in r]
    by_id = {r["id"]: r for r in answered if r["id"] is not None}
    assert by_id[3]["error"]["code"] == INVALID_REQUEST  # wrong version, its id kept
    assert by_id[5]["error"]["code"] == INVALID_REQUEST
    assert by_id[6]["error"]["code"] == INVALID_REQUEST
    assert {by_id[i]["error"]["code"] for i in (8, 9, 10, 14, 15)} == {-32602}
    assert by_id[11]["error"]["code"] == -32601
    assert by_id[12]["error"]["code"] == -32602 and "no session" in by_id[12]["error"]["message"]
    assert by_id[13]["error"]["code"] == -32602
    assert by_id["x" * 70_000]["error"]["code"] == -32602
    nulls = [r["error"]["code"] for r in answered if r["id"] is None]
    assert nulls.count(PARSE_ERROR) >= 4  # not JSON, cut short, not UTF-8, too deep
    assert 999 not in by_id and 16 not in by_id  # a stray response is not answered
    too_long_answers = [r for r in answered if "too long" in r.get("error", {}).get("message", "")]
    assert len(too_long_answers) == 1
    # each mutated request got one answer or none (a mutation can make a notification,
    # or a valid request again), never two
    ids = [r["id"] for r in answered]
    assert all(ids.count(i) == 1 for i in range(100, 160) if i in ids)
    # and after all that, the session works
    assert by_id[20]["result"]["protocolVersion"] == 1
    assert by_id[21]["result"]["sessionId"]
