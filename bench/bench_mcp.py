"""Benchmark: what `assembler.mcp` adds on top of the MCP SDK, against `mcp-server-time`.

    python bench/bench_mcp.py [--starts 21] [--calls 500]

Both measurements run the reference server `mcp-server-time` over stdio, in the same
process and interleaved with their baseline, so drift (CPU frequency, page cache)
hits both sides alike:

- start-up: `connect_tool_sets` for one set (background task, minimal environment,
  stderr capture, `initialize`, `tools/list`, `Tool` objects), until it returns.
  Baseline: the SDK alone, `stdio_client` + `ClientSession.initialize()` +
  `list_tools()`, which is the server's own start-up time as any client sees it.
  Shutdown is not timed on either side. `--starts` runs each, in alternating order.
- a call: `Tool.execute` for `get_current_time` (through the connection, result
  rendered and truncated). Baseline: `ClientSession.call_tool` on the same session of
  the same server process. `--calls` calls each, alternating.

Printed: the median of each side, their ratio, and "added", the median of the paired
differences (ours minus the SDK run next to it), which is what the targets are checked
against: on a busy machine a start-up varies by hundreds of milliseconds from run to
run, and pairing cancels most of that.

Targets (from the issue): start-up overhead at most +50 ms, a call under +2 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from assembler.manifest.model import MCPServerSpec, MCPToolSet
from assembler.mcp import connect_tool_sets
from assembler.tools.base import ToolContext

START_TARGET_MS = 50.0
CALL_TARGET_MS = 2.0
ARGUMENTS = {"timezone": "Europe/Paris"}


def server_command() -> tuple[str, tuple[str, ...]]:
    script = shutil.which("mcp-server-time", path=str(Path(sys.executable).parent))
    script = script or shutil.which("mcp-server-time")
    return (script, ()) if script else (sys.executable, ("-m", "mcp_server_time"))


async def sdk_start(command: str, args: tuple[str, ...], cwd: Path) -> float:
    params = StdioServerParameters(command=command, args=list(args), cwd=str(cwd))
    with open(os.devnull, "w") as devnull:
        started = time.perf_counter()
        async with (
            stdio_client(params, errlog=devnull) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            listed = await session.list_tools()
            elapsed = time.perf_counter() - started
            assert listed.tools
    return elapsed


async def our_start(spec: MCPServerSpec, workspace: Path) -> float:
    started = time.perf_counter()
    toolsets = await connect_tool_sets([MCPToolSet(spec)], workspace)
    elapsed = time.perf_counter() - started
    assert toolsets.tools
    await toolsets.aclose()
    return elapsed


Samples = tuple[list[float], list[float]]


async def bench_start(spec: MCPServerSpec, workspace: Path, runs: int) -> Samples:
    command, args = spec.command or "", spec.args
    await sdk_start(command, args, workspace)  # warm the page cache for both
    sdk: list[float] = []
    ours: list[float] = []
    for index in range(runs):
        if index % 2:
            sdk.append(await sdk_start(command, args, workspace))
            ours.append(await our_start(spec, workspace))
        else:
            ours.append(await our_start(spec, workspace))
            sdk.append(await sdk_start(command, args, workspace))
    return sdk, ours


async def bench_calls(spec: MCPServerSpec, workspace: Path, calls: int) -> Samples:
    toolsets = await connect_tool_sets([MCPToolSet(spec, allow=("get_current_time",))], workspace)
    try:
        (tool,) = toolsets.tools
        session = toolsets.connections[spec.name].session
        assert session is not None
        ctx = ToolContext(workspace=workspace)
        for _ in range(20):  # warm-up: imports, validators, caches
            await tool.execute(ARGUMENTS, ctx)
            await session.call_tool("get_current_time", ARGUMENTS)
        sdk: list[float] = []
        ours: list[float] = []
        for _ in range(calls):
            started = time.perf_counter()
            direct = await session.call_tool("get_current_time", ARGUMENTS)
            sdk.append(time.perf_counter() - started)
            started = time.perf_counter()
            result = await tool.execute(ARGUMENTS, ctx)
            ours.append(time.perf_counter() - started)
            assert not direct.is_error and not result.is_error, result.content
        return sdk, ours
    finally:
        await toolsets.aclose()


def report(label: str, samples: Samples, target_ms: float) -> bool:
    sdk, ours = samples
    baseline, mine = statistics.median(sdk), statistics.median(ours)
    added_ms = statistics.median(o - s for s, o in zip(sdk, ours, strict=True)) * 1000
    ok = added_ms <= target_ms
    print(
        f"{label:<9} SDK {baseline * 1000:8.2f} ms   ours {mine * 1000:8.2f} ms   "
        f"ratio {mine / baseline:5.3f}   added {added_ms:+7.2f} ms   "
        f"(target <= +{target_ms:g} ms: {'ok' if ok else 'MISSED'})"
    )
    return ok


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--starts", type=int, default=21, help="start-ups per side")
    parser.add_argument("--calls", type=int, default=500, help="calls per side")
    options = parser.parse_args()

    command, args = server_command()
    spec = MCPServerSpec(name="time", command=command, args=args)
    print(f"server: {' '.join([command, *args])}  (python {sys.version.split()[0]})")
    with tempfile.TemporaryDirectory() as directory:
        workspace = Path(directory)
        samples = await bench_start(spec, workspace, options.starts)
        start_ok = report("start-up", samples, START_TARGET_MS)
        samples = await bench_calls(spec, workspace, options.calls)
        call_ok = report("call", samples, CALL_TARGET_MS)
    print(f"{options.starts} start-ups and {options.calls} calls per side")
    return 0 if start_ok and call_ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
