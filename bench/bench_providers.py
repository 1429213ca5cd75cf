"""Stream parsing in both providers, at 10, 100, 1,000 and 10,000 chunks.

One streamed reply whose tool-call arguments arrive in N fragments, served by the
loopback test servers (`tests/wire/`) and read through the official SDKs, exactly as
the provider tests do: OpenAI Chat Completions chunks (llama-cpp-python's shape, the
name repeated in every chunk), and Anthropic events split the way LiteLLM splits them
(N `tool_use` blocks sharing one id). Baselines, same run: the official SDK streaming
the same bytes with nothing done to its events (what the provider adds is the
difference), and `json.loads` of the same payloads (the least any SSE client does).
Flat per-event cost from 100 to 10,000 means the cost grows linearly (argument
fragments are joined once, at the end). Run: `python bench/bench_providers.py`.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time

import anthropic
import openai
from _timing import REPO, report

sys.path.insert(0, str(REPO / "tests"))

from wire._server import RawReply, ScriptedHTTPServer
from wire.anthropic_server import AnthropicServer
from wire.openai_server import OpenAIServer

from assembler.messages import ModelRequest, ResponseDone, UserMessage
from assembler.providers.anthropic_messages import AnthropicProvider
from assembler.providers.base import ModelProvider
from assembler.providers.openai_chat import OpenAIChatProvider

SIZES = (10, 100, 1_000, 10_000)
REQUEST = ModelRequest("m", "system", (UserMessage("go"),))


def fragments(n: int) -> list[str]:
    """`{"path": "xxxx..."}` cut into n pieces."""
    pieces = ['{"path": "', *["x"] * (n - 2), '"}']
    return pieces[:n]


def openai_payloads(n: int) -> list[str]:
    def chunk(delta: dict[str, object], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        body = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m"}
        return json.dumps({**body, "choices": [choice]})

    call = {"index": 0, "id": "call_1", "type": "function"}
    out = [
        chunk({"tool_calls": [{**call, "function": {"name": "ls", "arguments": piece}}]})
        for piece in fragments(n)
    ]
    return [*out, chunk({}, "tool_calls")]


def anthropic_payloads(n: int) -> list[tuple[str, str]]:
    events: list[tuple[str, dict[str, object]]] = [
        (
            "message_start",
            {
                "message": {
                    "id": "msg", "type": "message", "role": "assistant", "model": "m",
                    "content": [], "stop_reason": None, "stop_sequence": None,
                    "usage": {"input_tokens": 1, "output_tokens": 1},
                }
            },
        )
    ]  # fmt: skip
    for index, piece in enumerate(fragments(n)):
        block = {"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {}}
        delta = {"type": "input_json_delta", "partial_json": piece}
        events.append(("content_block_start", {"index": index, "content_block": block}))
        events.append(("content_block_delta", {"index": index, "delta": delta}))
    events.append(
        ("message_delta", {"delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": n}})
    )
    events.append(("message_stop", {}))
    return [(name, json.dumps({"type": name, **data})) for name, data in events]


def openai_body(n: int) -> bytes:
    return "".join(f"data: {p}\n\n" for p in openai_payloads(n)).encode() + b"data: [DONE]\n\n"


def anthropic_body(n: int) -> bytes:
    return "".join(f"event: {e}\ndata: {p}\n\n" for e, p in anthropic_payloads(n)).encode()


async def _provider_once(provider: ModelProvider) -> None:
    done = None
    async for event in provider.stream(REQUEST):
        if isinstance(event, ResponseDone):
            done = event
    assert done is not None and len(done.message.tool_calls) == 1
    assert done.message.tool_calls[0].name == "ls"


async def _sdk_once(client: openai.AsyncOpenAI | anthropic.AsyncAnthropic) -> None:
    """The official SDK's own stream of the same bytes, its events only counted."""
    count = 0
    if isinstance(client, openai.AsyncOpenAI):
        chunks = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "go"}], stream=True
        )
        async for _chunk in chunks:
            count += 1
    else:
        events = await client.messages.create(
            model="m", max_tokens=10, messages=[{"role": "user", "content": "go"}], stream=True
        )
        async for _event in events:
            count += 1
    assert count > 0


def measure(server: ScriptedHTTPServer, body: bytes, kind: str, repeat: int) -> tuple[float, float]:
    """Median seconds per request: (the provider, the SDK alone), run interleaved so a
    busy machine slows both alike."""

    async def main() -> tuple[float, float]:
        url = server.base_url
        provider: ModelProvider
        client: openai.AsyncOpenAI | anthropic.AsyncAnthropic
        if kind == "openai":
            provider = OpenAIChatProvider("m", api_key="k", base_url=url, max_retries=0)
            client = openai.AsyncOpenAI(api_key="k", base_url=url, max_retries=0)
        else:
            provider = AnthropicProvider("m", api_key="k", base_url=url, max_retries=0)
            client = anthropic.AsyncAnthropic(api_key="k", base_url=url, max_retries=0)
        ours: list[float] = []
        theirs: list[float] = []
        for _ in range(repeat + 1):  # the first round opens the connections
            for run, samples in ((_provider_once(provider), ours), (_sdk_once(client), theirs)):
                server.add(RawReply(200, "text/event-stream", body))
                start = time.perf_counter()
                await run
                samples.append(time.perf_counter() - start)
        await provider.aclose()
        await client.close()
        return statistics.median(ours[1:]), statistics.median(theirs[1:])

    return asyncio.run(main())


def json_baseline(payloads: list[str], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for payload in payloads:
            json.loads(payload)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    for wire, server_type, body_of, payloads_of, kind in (
        ("OpenAI chunks", OpenAIServer, openai_body, openai_payloads, "openai"),
        ("Anthropic events", AnthropicServer, anthropic_body, anthropic_payloads, "anthropic"),
    ):
        rows = []
        with server_type() as server:
            for n in SIZES:
                repeat = max(7, 3_000 // n)
                payloads = payloads_of(n)
                texts = [p if isinstance(p, str) else p[1] for p in payloads]
                ours, sdk = measure(server, body_of(n), kind, repeat)
                baseline = json_baseline(texts, repeat * 4)
                count = len(texts)
                rows.append(
                    (
                        f"{n:>6} fragments ({count:>5} events)",
                        f"provider {ours * 1e3:8.2f} ms = {ours / count * 1e6:6.1f} µs/event"
                        f" | SDK alone {sdk / count * 1e6:6.1f} µs/event: {ours / sdk:4.2f}x"
                        f" | json.loads {baseline / count * 1e6:5.2f} µs/event:"
                        f" {ours / baseline:5.1f}x",
                    )
                )
        report(f"{wire}: one tool call streamed in N fragments (loopback HTTP + SDK)", rows)


if __name__ == "__main__":
    main()
