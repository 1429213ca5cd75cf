"""Loopback servers that answer like the real APIs do about tokens: usage counted from
the request, prompt caching, extended thinking's signatures, and `max_tokens`.

The scripted servers (`anthropic_server`, `openai_server`) send whatever usage a test
wrote. The responders here compute it from each request instead, the way the real
services do, so a test can assert what an agent's requests earn:

- **Tokens.** `count_tokens` is this server's tokenizer: a word, a number or one
  punctuation mark per token. It is deliberately not the client's estimate
  (characters / 4), so a budget test sees a real estimation error.
- **Anthropic's prompt cache.** The request is read as blocks in the API's prefix
  order: tools, system, then each message's content blocks. A block with
  `cache_control` is a breakpoint. A prefix ending at a breakpoint, of at least
  `minimum` tokens, is written to the cache (`cache_creation_input_tokens`); a later
  request reads (`cache_read_input_tokens`) the longest cached prefix ending at one of
  its breakpoints or at one of the 20 block boundaries before each of them, as the
  API's lookback does. `input_tokens` is the rest.
- **OpenAI's automatic cache.** The prompt (tools, then messages) is read as tokens;
  a prefix of at least 1024 tokens seen before is read from the cache in steps of
  128 tokens (`prompt_tokens_details.cached_tokens`), with no markers at all.
- **Thinking.** A reply may start with a thinking block whose signature this server
  makes (an HMAC of the text). With `thinking` enabled, a request whose last assistant
  message holds `tool_use` must start with that block, byte for byte and signed by
  this server, or it is refused with HTTP 400 as the API words it.
- **`max_tokens`.** A reply longer than the request's limit stops there with
  `stop_reason: max_tokens` (`finish_reason: length`), mid tool call if that is where
  the limit falls.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from wire._server import RecordedRequest, Reply, StreamReply, sse
from wire.anthropic_server import anthropic_error
from wire.openai_server import DONE, _chunk, delta_frame, openai_error

_TOKEN = re.compile(r"\w+|[^\w\s]")
_SECRET = b"loopback-thinking-key"


def count_tokens(text: str) -> int:
    """This server's token count of `text`."""
    return len(_TOKEN.findall(text))


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sign(thinking: str) -> str:
    """The signature this server gives a thinking block."""
    return hmac.new(_SECRET, thinking.encode(), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class Say:
    """One scripted reply: thinking, text, then tool calls (`(id, name, arguments)`)."""

    text: str = ""
    calls: Sequence[tuple[str, str, dict[str, Any]]] = ()
    thinking: str = ""


Script = Callable[[dict[str, Any]], Say]
"""Decides the reply from the request body."""


def replies(*says: Say) -> Script:
    """A script of replies given in order (the last one repeats)."""
    queue = list(says)

    def next_reply(body: dict[str, Any]) -> Say:
        return queue.pop(0) if len(queue) > 1 else queue[0]

    return next_reply


# -- Anthropic ---------------------------------------------------------------------------


@dataclass
class AnthropicCache:
    """The prompt cache of one Anthropic organisation, as this server keeps it."""

    minimum: int = 1024
    lookback: int = 20
    written: set[str] = field(default_factory=set)

    def usage(self, body: dict[str, Any]) -> tuple[int, int, int]:
        """(input, cache read, cache write) tokens of a request body."""
        blocks = _anthropic_blocks(body)
        hashes: list[str] = []
        totals: list[int] = []
        digest = hashlib.sha256()
        total = 0
        for block in blocks:
            digest.update(_canonical(_without_marker(block)).encode())
            hashes.append(digest.copy().hexdigest())
            total += count_tokens(_block_text(block))
            totals.append(total)
        breakpoints = [i for i, block in enumerate(blocks) if "cache_control" in block]
        read_end = -1
        for point in breakpoints:
            for i in range(point, max(-1, point - self.lookback - 1), -1):
                if hashes[i] in self.written:
                    read_end = max(read_end, i)
                    break
        read = totals[read_end] if read_end >= 0 else 0
        write_end = max((p for p in breakpoints if totals[p] >= self.minimum), default=-1)
        for point in breakpoints:
            if totals[point] >= self.minimum:
                self.written.add(hashes[point])
        write = totals[write_end] - read if write_end > read_end else 0
        return total - read - write, read, write


def _anthropic_blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [dict(tool, type="tool") for tool in body.get("tools") or []]
    system = body.get("system")
    if isinstance(system, str):
        blocks.append({"type": "text", "text": system})
    elif isinstance(system, list):
        blocks.extend(system)
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            blocks.append({"type": "text", "text": content, "role": message["role"]})
        else:
            blocks.extend(dict(block, role=message["role"]) for block in content)
    return blocks


def _without_marker(block: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in block.items() if k != "cache_control"}


def _block_text(block: dict[str, Any]) -> str:
    return _canonical(_without_marker(block))


def thinking_error(body: dict[str, Any]) -> Reply | None:
    """The API's rule with thinking on: an assistant message with `tool_use` that the
    request continues from starts with a thinking block, unchanged and signed."""
    if not body.get("thinking"):
        return None
    for index, message in enumerate(body.get("messages") or []):
        if message.get("role") != "assistant":
            continue
        content = message.get("content") or []
        if not any(block.get("type") == "tool_use" for block in content):
            continue
        first = content[0]
        if first.get("type") not in ("thinking", "redacted_thinking"):
            return anthropic_error(
                400,
                f"messages.{index}.content.0.type: Expected `thinking` or `redacted_thinking`, "
                f"but found `{first.get('type')}`. When `thinking` is enabled, a final "
                "`assistant` message must start with a thinking block.",
                kind="invalid_request_error",
            )
        if first["type"] == "thinking" and first.get("signature") != sign(first["thinking"]):
            return anthropic_error(
                400,
                f"messages.{index}.content.0: Invalid `signature` in `thinking` block",
                kind="invalid_request_error",
            )
    return None


def anthropic_responder(
    script: Script, cache: AnthropicCache | None = None
) -> Callable[[RecordedRequest], Reply]:
    """Answer each request with the script's reply, usage as the API would count it."""
    cache = cache or AnthropicCache()

    def respond(request: RecordedRequest) -> Reply:
        body = request.body
        refused = thinking_error(body)
        if refused is not None:
            return refused
        fresh, read, write = cache.usage(body)
        return _anthropic_stream(script(body), body, (fresh, read, write))

    return respond


def _anthropic_stream(say: Say, body: dict[str, Any], usage: tuple[int, int, int]) -> StreamReply:
    fresh, read, write = usage
    limit = int(body.get("max_tokens") or 4096)
    budget = _Budget(limit)
    frames = [
        _event(
            "message_start",
            {
                "message": {
                    "id": "msg_modeled",
                    "type": "message",
                    "role": "assistant",
                    "model": body.get("model", ""),
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {
                        "input_tokens": fresh,
                        "cache_creation_input_tokens": write,
                        "cache_read_input_tokens": read,
                        "output_tokens": 1,
                    },
                }
            },
        )
    ]
    index = 0
    if say.thinking and body.get("thinking"):
        frames.append(
            _event(
                "content_block_start",
                {
                    "index": index,
                    "content_block": {"type": "thinking", "thinking": "", "signature": ""},
                },
            )
        )
        for piece in budget.take(say.thinking):
            frames.append(
                _event(
                    "content_block_delta",
                    {"index": index, "delta": {"type": "thinking_delta", "thinking": piece}},
                )
            )
        if not budget.cut:
            frames.append(
                _event(
                    "content_block_delta",
                    {
                        "index": index,
                        "delta": {"type": "signature_delta", "signature": sign(say.thinking)},
                    },
                )
            )
        frames.append(_event("content_block_stop", {"index": index}))
        index += 1
    if say.text and not budget.cut:
        frames.append(
            _event(
                "content_block_start",
                {"index": index, "content_block": {"type": "text", "text": ""}},
            )
        )
        for piece in budget.take(say.text):
            frames.append(
                _event(
                    "content_block_delta",
                    {"index": index, "delta": {"type": "text_delta", "text": piece}},
                )
            )
        frames.append(_event("content_block_stop", {"index": index}))
        index += 1
    for call_id, name, arguments in say.calls:
        if budget.cut:
            break
        frames.append(
            _event(
                "content_block_start",
                {
                    "index": index,
                    "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}},
                },
            )
        )
        for piece in budget.take(json.dumps(arguments)):
            frames.append(
                _event(
                    "content_block_delta",
                    {"index": index, "delta": {"type": "input_json_delta", "partial_json": piece}},
                )
            )
        frames.append(_event("content_block_stop", {"index": index}))
        index += 1
    stop = "max_tokens" if budget.cut else ("tool_use" if say.calls else "end_turn")
    frames.append(
        _event(
            "message_delta",
            {
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": budget.used},
            },
        )
    )
    frames.append(_event("message_stop", {}))
    return StreamReply(tuple(frames))


def _event(name: str, data: dict[str, Any]) -> bytes:
    return sse({"type": name, **data}, event=name)


@dataclass
class _Budget:
    """Output tokens left under `max_tokens`; text is taken token by token."""

    limit: int
    used: int = 0
    cut: bool = False

    def take(self, text: str) -> list[str]:
        pieces: list[str] = []
        for found in re.finditer(r"\s*(?:\w+|[^\w\s])", text):
            if self.used >= self.limit:
                self.cut = True
                break
            pieces.append(found.group())
            self.used += 1
        else:
            tail = text[sum(len(p) for p in pieces) :]
            if tail and pieces:
                pieces[-1] += tail
        return pieces


# -- OpenAI ------------------------------------------------------------------------------


@dataclass
class OpenAICache:
    """OpenAI's automatic prompt cache: prefixes of 1024 tokens and more, in steps of
    128, keyed by their exact text."""

    minimum: int = 1024
    step: int = 128
    seen: set[str] = field(default_factory=set)

    def usage(self, body: dict[str, Any]) -> tuple[int, int]:
        """(prompt tokens, cached tokens) of a request body."""
        prompt = _canonical(body.get("tools") or []) + _canonical(body.get("messages") or [])
        tokens = _TOKEN.findall(prompt)
        cached = 0
        digest = hashlib.sha256()
        boundaries: list[tuple[int, str]] = []
        for start in range(0, len(tokens) - len(tokens) % self.step, self.step):
            digest.update("\x00".join(tokens[start : start + self.step]).encode())
            end = start + self.step
            if end >= self.minimum:
                boundaries.append((end, digest.copy().hexdigest()))
        for end, key in boundaries:
            if key in self.seen:
                cached = end
        self.seen.update(key for _, key in boundaries)
        return len(tokens), cached


def openai_responder(
    script: Script,
    cache: OpenAICache | None = None,
    *,
    reasoning_field: str = "reasoning_content",
    quirks: bool = False,
) -> Callable[[RecordedRequest], Reply]:
    """Answer each request with the script's reply, usage as the API would count it.
    A reply's `thinking` streams as `reasoning_field` (llama.cpp, vLLM, DeepSeek).
    `quirks`: as OpenAI-compatible servers do, repeat the role, id and name in every
    chunk, split each call's arguments finely, and refuse `null` where OpenAI takes it."""
    cache = cache or OpenAICache()

    def respond(request: RecordedRequest) -> Reply:
        body = request.body
        if quirks:
            refused = null_error(body)
            if refused is not None:
                return refused
        prompt, cached = cache.usage(body)
        return _openai_stream(script(body), body, (prompt, cached), reasoning_field, quirks)

    return respond


def null_error(body: dict[str, Any]) -> Reply | None:
    """vLLM's and llama.cpp's validation: a message field that is `null` is refused."""
    for index, message in enumerate(body.get("messages") or []):
        for key, value in message.items():
            if value is None:
                return openai_error(
                    400,
                    f"messages.{index}.{key}: Input should be a valid string",
                    kind="BadRequestError",
                )
    return None


def _openai_stream(
    say: Say, body: dict[str, Any], usage: tuple[int, int], field_name: str, quirks: bool
) -> StreamReply:
    prompt, cached = usage
    limit = int(body.get("max_tokens") or body.get("max_completion_tokens") or 1 << 30)
    budget = _Budget(limit)
    repeat: dict[str, Any] = {"role": "assistant"} if quirks else {}
    frames = [delta_frame({"role": "assistant", "content": ""})]
    if say.thinking:
        for piece in budget.take(say.thinking):
            frames.append(delta_frame({**repeat, field_name: piece}))
    if say.text and not budget.cut:
        for piece in budget.take(say.text):
            frames.append(delta_frame({**repeat, "content": piece}))
    for index, (call_id, name, arguments) in enumerate(say.calls):
        if budget.cut:
            break
        head = {"index": index, "id": call_id, "type": "function"}
        frames.append(
            delta_frame({"tool_calls": [{**head, "function": {"name": name, "arguments": ""}}]})
        )
        for piece in budget.take(json.dumps(arguments)):
            call = (
                {**head, "function": {"name": name, "arguments": piece}}
                if quirks
                else {"index": index, "function": {"arguments": piece}}
            )
            frames.append(delta_frame({**repeat, "tool_calls": [call]}))
    finish = "length" if budget.cut else ("tool_calls" if say.calls else "stop")
    frames.append(delta_frame({}, finish))
    usage = {
        "prompt_tokens": prompt,
        "completion_tokens": budget.used,
        "total_tokens": prompt + budget.used,
        "prompt_tokens_details": {"cached_tokens": cached},
    }
    frames.append(sse(_chunk([], usage=usage)))
    frames.append(DONE)
    return StreamReply(tuple(frames))
