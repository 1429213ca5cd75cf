"""What a budget check costs before each request (issue 23).

Before every model request the runner asks its meter to check the budgets
(`Meter.prepare`: estimate the request's input tokens, reserve room in the run's pot,
lower `max_tokens`) and for the wall-time deadline (`Meter.seconds_left`); after the
response it prices the usage and settles the reservation (`Meter.settle`). Target:
the check under 1% of the request's own client-side time at 1k, 10k and 100k tokens
of history, and linear growth.

Baselines, same run: (1) serialising the request as the provider adapter builds it
(its own functions turn the conversation, the tools and the system prompt into the
body) and as the SDK then encodes it (`openapi_dumps`), for both wires, the body
checked once against what each real adapter hands its SDK client: the stricter
baseline; (2) the request's whole client-side work, through the real adapters and the
real SDK clients (`AsyncAnthropic`, `AsyncOpenAI`, `max_retries=0`) whose httpx
transport stops each request where it would be sent (`SdkPath`: the SDK's transform of
the params, options, headers, encoding and httpx request; no response is parsed), its
body checked once against (1). Each uses the cheaper of the two wires.

Measured: the meter is configured as a built agent's is (the issue's example budget,
`cost_usd: 2.50, tokens: 400000, wall_time: 15m, tool_calls: 200`; 10**12 tokens, the
earlier rounds' budget, as a second row; the model's price and context window) and is
in the state of a running session: it has counted, sent and settled the history up to
the previous request (two messages fewer). Many such meters are primed and each checks
one request, timed as a batch (a sub-microsecond call is below a single timer
reading's precision). The first check of a resumed session counts the whole history
once (also reported). Run: `python bench/bench_budget.py`; `--instructions` counts
instructions executed instead (valgrind's cachegrind, at 1k, 10k and 100k tokens: a
figure the machine's load does not move, unlike time; about twenty minutes, two
valgrind processes at a time, `BENCH_JOBS` to change that, `BENCH_OPS` to count
fewer). valgrind is a system package (`apt-get install valgrind` on Debian and
Ubuntu); the timed run needs nothing more.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import httpx2
from _timing import median_seconds, report
from anthropic import AsyncAnthropic
from anthropic._utils._json import openapi_dumps as anthropic_dumps
from openai import AsyncOpenAI
from openai._utils._json import openapi_dumps as openai_dumps

from assembler.budgets import BudgetLimits
from assembler.messages import (
    AssistantMessage,
    History,
    ModelRequest,
    ModelSettings,
    ToolCall,
    ToolResultMessage,
    ToolSchema,
    Usage,
    UserMessage,
)
from assembler.pricing import known_price
from assembler.providers import anthropic_blocks, anthropic_messages, openai_chat
from assembler.runner.metering import Meter

SIZES = (1_000, 10_000, 100_000, 1_000_000)
"""Tokens of history (about four characters each)."""
MODEL = "claude-sonnet-4-5"
WINDOW = 1_000_000  # the largest history fits, so the window never lowers a reply here
SYSTEM = "You are a careful coding agent. " * 60
TOOLS = tuple(
    ToolSchema(
        f"tool_{n}",
        f"Tool number {n}: does one thing well.",
        {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    )
    for n in range(12)
)
LIMITS = BudgetLimits.from_mapping(
    {"cost_usd": 2.50, "tokens": 400_000, "wall_time": "15m", "tool_calls": 200}
)
"""The issue's example budget, as a manifest gives it: every kind of budget, none of
them near its end at 1k, 10k and 100k tokens (the common case of a request)."""
HUGE = BudgetLimits(cost_usd=1e6, tokens=10**12, wall_time=3600.0, tool_calls=10**6)
"""Rounds 2 and 3's budget: 10**12 tokens takes Python's multi-digit integers in every
subtraction of the check (a real budget fits one 30-bit digit); kept as a row to
compare with those rounds, and the budget of the 1M row (the example's 400,000 tokens
cannot hold a 1M-token history)."""
BATCH = 500
"""Meters primed, then checked one request each, per timed batch."""


def history(tokens: int) -> list[UserMessage | AssistantMessage | ToolResultMessage]:
    """Turns of a tool loop (a call, a result of ~400 tokens) until `tokens` is reached."""
    messages: list[UserMessage | AssistantMessage | ToolResultMessage] = [
        UserMessage("Fix the failing test in src/app.py.")
    ]
    chars = 0
    n = 0
    while chars < tokens * 4:
        n += 1
        arguments = {"path": f"src/file_{n}.py"}  # with its raw text, as providers stream it
        call = ToolCall(f"call_{n}", "tool_1", arguments, json.dumps(arguments))
        result = f"line {n}: " + "def handler(request): return respond(request.body) " * 30
        messages.append(AssistantMessage(text="Reading the next file.", tool_calls=(call,)))
        messages.append(ToolResultMessage(f"call_{n}", "tool_1", result))
        chars += len(result) + 60
    return messages


# -- the baseline: the body each adapter builds, encoded as its SDK does ---------------


def openai_body(request: ModelRequest) -> dict[str, Any]:
    return {
        "model": request.model,
        "messages": openai_chat._messages(request),
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": [
            openai_chat._tool_param(t.name, t.description, t.parameters) for t in request.tools
        ],
        "max_tokens": request.settings.max_tokens,
    }


def anthropic_body(request: ModelRequest) -> dict[str, Any]:
    tools = anthropic_blocks.tool_params(request, True)
    system = anthropic_blocks.system_blocks(request, True)
    messages = anthropic_messages._messages(request)
    anthropic_blocks.mark_tail(messages, used=int(bool(tools)) + int(system is not None))
    return {
        "model": request.model,
        "max_tokens": request.settings.max_tokens,
        "system": system,
        "messages": messages,
        "tools": tools,
        "stream": True,
    }


class _Sent(Exception):
    """Raised by the recording client once it has the adapter's arguments."""


class _Recorder:
    """Stands in for an SDK client's `create`: keeps what the adapter passes it."""

    def __init__(self) -> None:
        self.body: dict[str, Any] = {}
        self.chat = self.completions = self.messages = self

    async def create(self, **kwargs: Any) -> Any:
        self.body = {
            k: v for k, v in kwargs.items() if type(v).__name__ not in ("Omit", "NotGiven")
        }
        self.body.pop("extra_body", None)
        raise _Sent


def adapters_body(request: ModelRequest) -> tuple[dict[str, Any], dict[str, Any]]:
    """What the real adapters hand their SDK clients for `request` (nothing is sent)."""
    url = "http://127.0.0.1:9"
    openai_provider = openai_chat.OpenAIChatProvider(MODEL, api_key="x", base_url=url + "/v1")
    anthropic_provider = anthropic_messages.AnthropicProvider(MODEL, api_key="x", base_url=url)
    bodies = []
    for provider, start in (
        (openai_provider, lambda p: p._create(request, None)),
        (anthropic_provider, lambda p: anext(p._attempt(request))),
    ):
        recorder = _Recorder()
        provider._client = recorder  # type: ignore[attr-defined]
        with contextlib.suppress(_Sent):
            asyncio.run(start(provider))
        bodies.append(recorder.body)
    return bodies[0], bodies[1]


# -- the second baseline: the request's whole client-side work through the SDKs -------


class _Stop(Exception):
    """Raised by `_StopTransport` where the request would go onto the network."""


class _StopTransport(httpx2.AsyncBaseTransport):
    """An httpx transport that keeps the request the SDK built and stops it there:
    nothing is sent and no response is parsed."""

    def __init__(self) -> None:
        self.body = b""
        self.stopped = 0

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        self.body = request.content
        self.stopped += 1
        raise _Stop


class SdkPath:
    """The real adapters calling the real SDK clients (`AsyncOpenAI`, `AsyncAnthropic`,
    `max_retries=0`) whose transport stops each request as it would be sent: the
    adapter's body, the SDK's `maybe_transform` of the params, its options, headers,
    encoding and httpx request, all of a request's client-side work but the socket."""

    def __init__(self) -> None:
        url = "http://127.0.0.1:9"
        self.transports = {"OpenAI": _StopTransport(), "Anthropic": _StopTransport()}
        openai_provider = openai_chat.OpenAIChatProvider(
            MODEL, api_key="x", base_url=url + "/v1", max_retries=0
        )
        openai_provider._client = AsyncOpenAI(  # the adapter's arguments, and the transport
            api_key="x",
            base_url=url + "/v1",
            max_retries=0,
            http_client=httpx2.AsyncClient(transport=self.transports["OpenAI"]),
        )
        anthropic_provider = anthropic_messages.AnthropicProvider(
            MODEL, api_key="x", base_url=url, max_retries=0
        )
        anthropic_provider._client = AsyncAnthropic(
            api_key="x",
            base_url=url,
            max_retries=0,
            http_client=httpx2.AsyncClient(transport=self.transports["Anthropic"]),
        )
        self.openai = openai_provider
        self.anthropic = anthropic_provider
        self.loop = asyncio.new_event_loop()

    async def _one(self, wire: str, request: ModelRequest) -> None:
        transport = self.transports[wire]
        stopped = transport.stopped
        try:
            if wire == "OpenAI":
                await self.openai._create(request, None)
            else:
                await anext(self.anthropic._attempt(request))
        except Exception:  # the SDK's APIConnectionError (or the adapter's) from _Stop
            pass
        assert transport.stopped == stopped + 1, f"the {wire} request never reached httpx"

    async def _many(self, wire: str, request: ModelRequest, times: int) -> float:
        start = time.perf_counter()
        for _ in range(times):
            await self._one(wire, request)
        return (time.perf_counter() - start) / times

    def seconds(self, wire: str, request: ModelRequest, times: int) -> float:
        """Seconds per request over `times` requests, in one run of the event loop."""
        return self.loop.run_until_complete(self._many(wire, request, times))

    def body(self, wire: str, request: ModelRequest) -> Any:
        """The JSON body the SDK put into the httpx request, decoded."""
        self.seconds(wire, request, 1)
        return json.loads(self.transports[wire].body)


# -- the check -------------------------------------------------------------------------


def primed(request: ModelRequest, conversation: list[Any], limits: BudgetLimits = LIMITS) -> Meter:
    """A meter as a running session's is just before `request`: the history up to two
    messages fewer estimated, sent and settled with the provider's count."""
    meter = Meter(limits=limits, price=known_price("anthropic", MODEL), context_window=WINDOW)
    meter.start_run()
    before = ModelRequest(
        model=request.model,
        system=request.system,
        messages=History(conversation, len(conversation) - 2),
        tools=request.tools,
        settings=request.settings,
    )
    _, reservation, raw = meter.prepare(before)
    meter.settle(reservation, Usage(input_tokens=raw + raw // 10, output_tokens=40), raw)
    return meter


def batch(
    request: ModelRequest, conversation: list[Any], limits: BudgetLimits = LIMITS
) -> tuple[float, float]:
    """Seconds per request of (the check before it, settling after it), over a batch
    of primed meters."""
    meters = [primed(request, conversation, limits) for _ in range(BATCH)]
    usage = Usage(input_tokens=len(conversation) * 200, output_tokens=40)
    held = []
    clock = time.perf_counter
    start = clock()
    for meter in meters:  # what the runner calls before sending a request (requests.py)
        sent, reservation, raw = meter.prepare(request, wanted=None)
        meter.last_seconds_left  # noqa: B018 (the stream's timeout, read as the runner does)
        held.append((reservation, raw))
    check = clock() - start
    assert sent.settings.max_tokens == request.settings.max_tokens  # nothing lowered it
    start = clock()
    for meter, (reservation, raw) in zip(meters, held, strict=True):
        meter.settle(reservation, usage, raw)
    settle = clock() - start
    return check / BATCH, settle / BATCH


def build(size: int) -> tuple[list[Any], ModelRequest]:
    """The history of `size` tokens and the request that carries it."""
    conversation = history(size)
    request = ModelRequest(
        model=MODEL,
        system=SYSTEM,
        messages=History(conversation),
        tools=TOOLS,
        settings=ModelSettings(max_tokens=64_000),
    )
    return conversation, request


def check_bodies(request: ModelRequest, sdk: SdkPath) -> None:
    """Both baselines serialise the request the runner sends: the body built here is
    what the real adapters hand their SDK clients, and it is what the SDKs encode."""
    sdk_openai, sdk_anthropic = adapters_body(request)
    assert openai_body(request) == sdk_openai, "the OpenAI body differs from the adapter's"
    assert anthropic_body(request) == sdk_anthropic, "the Anthropic body differs"
    for wire, body in (("OpenAI", openai_body(request)), ("Anthropic", anthropic_body(request))):
        dumps = openai_dumps if wire == "OpenAI" else anthropic_dumps
        assert sdk.body(wire, request) == json.loads(dumps(body)), f"the {wire} SDK body differs"


def main() -> None:
    rows: list[tuple[str, str]] = []
    previous: tuple[float, float] | None = None
    sdk = SdkPath()
    for size in SIZES:
        conversation, request = build(size)
        check_bodies(request, sdk)
        limits = LIMITS if size <= 100_000 else HUGE  # 400,000 tokens cannot hold 1M

        def first(request: ModelRequest = request, limits: BudgetLimits = limits) -> None:
            """The first check of a session this long (a resumed one): all counted."""
            meter = Meter(limits=limits, price=known_price("anthropic", MODEL))
            meter.start_run()
            meter.prepare(request)

        serialise: dict[str, Callable[[], object]] = {
            "OpenAI": lambda r=request: openai_dumps(openai_body(r)),
            "Anthropic": lambda r=request: anthropic_dumps(anthropic_body(r)),
        }
        repeat = {1_000: 100, 10_000: 100, 100_000: 20, 1_000_000: 5}[size]
        rounds = {1_000: 30, 10_000: 30, 100_000: 15, 1_000_000: 5}[size]
        wires = {name: median_seconds(f, repeat=repeat, warmup=2) for name, f in serialise.items()}
        base = min(wires.values())
        sdk.seconds("OpenAI", request, 2)
        sdk.seconds("Anthropic", request, 2)  # warm-up
        through = {
            wire: statistics.median(
                sdk.seconds(wire, request, max(1, repeat // 10)) for _ in range(rounds)
            )
            for wire in ("OpenAI", "Anthropic")
        }
        full = min(through.values())
        timed = [batch(request, conversation, limits) for _ in range(rounds)]
        cost = statistics.median(t[0] for t in timed)
        after = statistics.median(t[1] for t in timed)
        huge = ""
        if limits is LIMITS:
            big = statistics.median(batch(request, conversation, HUGE)[0] for _ in range(rounds))
            huge = f"; check with 10**12 tokens (rounds 2-3) {big * 1e6:.2f} us ({big / base:.2%})"
        whole = median_seconds(first, repeat=repeat, warmup=2)
        growth = ""
        if previous is not None:
            growth = f"; x{base / previous[0]:.1f} and x{cost / previous[1]:.1f} for x10 history"
        rows.append(
            (
                f"{size:,} tokens ({len(conversation):,} messages)"
                + ("" if limits is LIMITS else ", budget of 10**12 tokens"),
                "build+encode "
                + ", ".join(f"{name} {t * 1e3:.3f} ms" for name, t in wires.items())
                + "; through the SDK "
                + ", ".join(f"{name} {t * 1e3:.3f} ms" for name, t in through.items())
                + f"; check {cost * 1e6:.2f} us ({cost / base:.2%} of the smaller build+encode, "
                f"{cost / full:.2%} of the smaller SDK path){huge}; "
                f"settle after {after * 1e6:.2f} us (check + settle {(cost + after) / base:.2%})"
                f"{growth}; first check of a resumed session {whole * 1e3:.3f} ms "
                f"({whole / base:.1%})",
            )
        )
        previous = (base, cost)
    report("budget check before a request, against serialising it (median)", rows)
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


INSTRUCTION_SIZES = (1_000, 10_000, 100_000)
CHECKS = 1_000
"""Meters primed in every process of `instructions` (the same set-up whatever it runs),
and checks counted in the process that runs them."""
SERIALISED = {1_000: 40, 10_000: 20, 100_000: 5}
"""Requests built and encoded per process of `instructions`, by size."""
THROUGH_SDK = {1_000: 20, 10_000: 10, 100_000: 3}
"""Requests through the SDK clients per process of `instructions`, by size."""
OPERATIONS = ("check", "check-1e12", "Anthropic", "OpenAI", "SDK Anthropic", "SDK OpenAI")
"""What `instructions` counts (`BENCH_OPS`, comma-separated, to count fewer)."""


def run_operation(size: int, operation: str, times: int) -> None:
    """One process of `instructions`: the set-up at `size` tokens, then `operation`
    `times` times (`none`: the set-up alone; `none-1e12`: that of `check-1e12`)."""
    conversation, request = build(size)
    limits = HUGE if operation.endswith("1e12") else LIMITS
    meters = [primed(request, conversation, limits) for _ in range(CHECKS)]
    # the SDK clients made and their first request sent (a small one: what the SDKs
    # work out once per type) in every process, so that none of it is counted
    sdk = SdkPath()
    small = replace(request, messages=History(conversation[:3]))
    sdk.seconds("OpenAI", small, 1)
    sdk.seconds("Anthropic", small, 1)
    if operation.startswith("check"):  # what the runner calls before a request (requests.py)
        for meter in meters[:times]:
            meter.prepare(request, wanted=None)
            meter.last_seconds_left  # noqa: B018
    elif operation == "Anthropic":
        for _ in range(times):
            anthropic_dumps(anthropic_body(request))
    elif operation == "OpenAI":
        for _ in range(times):
            openai_dumps(openai_body(request))
    elif operation.startswith("SDK "):
        sdk.seconds(operation[4:], request, times)


def instructions() -> None:
    """Instructions per operation at each size: a process that runs N operations less
    one that runs the same set-up and none (valgrind's cachegrind counts them)."""
    if shutil.which("valgrind") is None:
        sys.exit(
            "--instructions needs valgrind (Debian/Ubuntu: `apt-get install valgrind`; "
            "Fedora: `dnf install valgrind`; macOS: not available, use the timed run)"
        )

    def count(size: int, operation: str, times: int) -> int:
        done = subprocess.run(
            ["valgrind", "--tool=cachegrind", "--cache-sim=no",
             "--cachegrind-out-file=/dev/null", sys.executable,
             __file__, "--run", str(size), operation, str(times)],
            env={**os.environ, "PYTHONHASHSEED": "0"}, capture_output=True, text=True,
            check=True,
        )  # fmt: skip
        refs = [line for line in done.stderr.splitlines() if "I   refs" in line]
        return int(refs[-1].split()[-1].replace(",", ""))

    wanted = os.environ.get("BENCH_OPS")
    operations = [o for o in OPERATIONS if not wanted or o in wanted.split(",")]
    times = {
        "check": lambda size: CHECKS,
        "check-1e12": lambda size: CHECKS,
        "Anthropic": SERIALISED.__getitem__,
        "OpenAI": SERIALISED.__getitem__,
        "SDK Anthropic": THROUGH_SDK.__getitem__,
        "SDK OpenAI": THROUGH_SDK.__getitem__,
    }
    jobs = [(size, "none", 0) for size in INSTRUCTION_SIZES]
    if "check-1e12" in operations:
        jobs += [(size, "none-1e12", 0) for size in INSTRUCTION_SIZES]
    for size in INSTRUCTION_SIZES:
        jobs += [(size, operation, times[operation](size)) for operation in operations]
    workers = int(os.environ.get("BENCH_JOBS", "2"))
    with ThreadPoolExecutor(workers) as pool:  # each job is its own valgrind process
        counts = dict(zip(jobs, pool.map(lambda job: count(*job), jobs), strict=True))
    rows = []
    previous: float | None = None
    for size in INSTRUCTION_SIZES:
        each = {}
        for size_, operation, n in jobs:
            if size_ == size and n:
                floor = counts[(size, "none-1e12" if operation == "check-1e12" else "none", 0)]
                each[operation] = (counts[(size, operation, n)] - floor) / n
        text = ", ".join(f"{operation} {value:,.0f}" for operation, value in each.items())
        if "Anthropic" in each and "OpenAI" in each:
            base = min(each["Anthropic"], each["OpenAI"])
            text += (
                "; check = "
                + ", ".join(
                    f"{each[c] / base:.2%} ({c})" for c in ("check", "check-1e12") if c in each
                )
                + " of build + encode"
            )
        if "SDK Anthropic" in each and "SDK OpenAI" in each:
            full = min(each["SDK Anthropic"], each["SDK OpenAI"])
            text += (
                "; "
                + ", ".join(
                    f"{each[c] / full:.2%} ({c})" for c in ("check", "check-1e12") if c in each
                )
                + " of the SDK path"
            )
        if "check" in each:
            if previous is not None:
                text += f"; check x{each['check'] / previous:.2f} for x10"
            previous = each["check"]
        rows.append((f"{size:,} tokens", text))
    report("budget check before a request, instructions executed (valgrind)", rows)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--run"]:
        run_operation(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]))
    elif sys.argv[1:2] == ["--instructions"]:
        instructions()
    else:
        main()
