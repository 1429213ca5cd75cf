"""Automatic compaction over the real wire: an agent built on the OpenAI and Anthropic
providers meets each provider's "too long" error (OpenAI's `context_length_exceeded`,
Anthropic's `prompt is too long`, and llama.cpp's `llama-server` HTTP 400 as recorded
from the real server, on both wires), compacts once, and retries with a smaller request.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from wire._server import ErrorReply, Reply
from wire.anthropic_server import AnthropicServer, anthropic_error
from wire.anthropic_server import stream as anthropic_stream
from wire.openai_server import OpenAIServer
from wire.openai_server import stream as openai_stream
from wire.recorded import recording

from assembler.agent import build_agent
from assembler.runner.compaction import SUMMARY_SYSTEM_PROMPT
from assembler.runner.events import Compacted


def manifest(tmp_path: Path, model: str, base_url: str) -> Path:
    (tmp_path / "work").mkdir(exist_ok=True)
    path = tmp_path / "agent.yaml"
    path.write_text(
        "version: 1\nname: long-talker\nidentity: You answer.\nworkspace: work\n"
        f"model: {{provider: {model}, name: test-model, base_url: '{base_url}'}}\n"
        "tools: {sets: []}\n",
        "utf-8",
    )
    return path


def openai_overflow() -> Reply:
    return ErrorReply(
        400,
        {
            "error": {
                "message": "This model's maximum context length is 128000 tokens. However, "
                "your messages resulted in 130012 tokens.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        },
    )


def llama_server_overflow(case: str) -> Reply:
    return recording(f"llama-server/{case}").reply()


WIRES: dict[str, tuple[str, Callable[[], Reply], Callable[[str], Reply]]] = {
    "openai": ("openai", openai_overflow, openai_stream),
    "openai, llama-server's 400": (
        "openai",
        lambda: llama_server_overflow("context-overflow"),
        openai_stream,
    ),
    "anthropic": (
        "anthropic",
        lambda: anthropic_error(
            400, "prompt is too long: 208310 tokens > 200000 maximum", kind="invalid_request_error"
        ),
        anthropic_stream,
    ),
    "anthropic, llama-server's 400": (
        "anthropic",
        lambda: llama_server_overflow("anthropic-context-overflow"),
        anthropic_stream,
    ),
}


@pytest.mark.parametrize("wire", list(WIRES))
def test_an_overflow_compacts_once_and_the_retry_is_smaller(
    wire: str,
    tmp_path: Path,
    openai_server: OpenAIServer,
    anthropic_server: AnthropicServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    provider, overflow, answer = WIRES[wire]
    server: Any = openai_server if provider == "openai" else anthropic_server
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    server.add(answer("First answer."))
    server.add(answer("Second answer."))
    server.add(overflow())
    server.add(answer("SUMMARY: two questions, two answers."))
    server.add(answer("Third answer."))
    agent = build_agent(
        manifest(tmp_path, provider, server.base_url),
        session_dir=tmp_path / "sessions",
        trust=True,  # a loopback base_url: no secret leaves, but be explicit
    )

    async def go() -> Any:
        await agent.prompt("first question")
        await agent.prompt("second question")
        result = await agent.prompt("third question")
        await agent.aclose()
        return result

    result = asyncio.run(go())
    assert result.text == "Third answer."
    assert [e.reason for e in result.events if isinstance(e, Compacted)] == ["overflow"]
    bodies = [request.body for request in server.requests]
    overflowed, summary, retried = bodies[2], bodies[3], bodies[4]
    assert SUMMARY_SYSTEM_PROMPT.splitlines()[0] in str(summary)
    assert len(retried["messages"]) < len(overflowed["messages"])
    assert "third question" in str(retried["messages"][-1])
    assert "SUMMARY: two questions" in str(retried["messages"])
