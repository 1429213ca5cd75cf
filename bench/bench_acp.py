"""Start-up of `assemble acp` against `assemble rpc` (issue 16): from starting the
process to an agent that can take a prompt.

`assemble rpc` builds its agent before it announces `ready`; `assemble acp` answers
`initialize` first and builds an agent per `session/new`. Both are timed on the
shipping example (scripted model, `--trust --no-session`), interleaved, wall time to:
rpc's `ready` event; acp's `initialize` answer; acp's `session/new` answer (the agent
built and started). Since issue 27 (round 2) both answers come before the SDK is
loaded (`assembler.acp.early`); the SDK loads after them. The CPU time each process
had used at that moment is read too (`/proc/PID/stat`, Linux): on a machine shared
with other jobs it moves less than wall time. The SDK's own import (`python -c
"import acp"` against `python -c "pass"`) and the lighter import `assemble acp` uses
(`assembler.acp.sdk_import`) are timed as well.
Run: `python bench/bench_acp.py`.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

from _timing import REPO, warm_bytecode_env

MANIFEST = str(REPO / "agents" / "shipping-fixer.yaml")
ARGS = ["--trust", "--no-session"]
RUNS = 15
LIGHT = "from assembler.acp.sdk_import import import_sdk; import_sdk()"


def _read_until(stream: IO[str], done: str) -> None:
    for line in stream:
        if done in line:
            return
    raise SystemExit(f"no {done!r} in the output")


def cpu(pid: int) -> float:
    """Seconds of CPU (user and system) process `pid` has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rpc(env: dict[str, str]) -> tuple[float, float]:
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "assembler", "rpc", MANIFEST, *ARGS],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        text=True, env=env, cwd=REPO,
    )  # fmt: skip
    assert process.stdout is not None and process.stdin is not None
    _read_until(process.stdout, '"ready"')
    elapsed = time.perf_counter() - start
    used = cpu(process.pid)
    process.stdin.close()
    process.wait(timeout=60)
    return elapsed, used


def acp(env: dict[str, str]) -> tuple[float, float, float]:
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "assembler", "acp", MANIFEST, *ARGS],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        text=True, env=env, cwd=REPO,
    )  # fmt: skip
    assert process.stdout is not None and process.stdin is not None
    requests = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}},
        {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": str(REPO), "mcpServers": []}},
    ]  # fmt: skip
    process.stdin.write("".join(json.dumps(r) + "\n" for r in requests))
    process.stdin.flush()
    _read_until(process.stdout, '"id":0')
    initialized = time.perf_counter() - start
    _read_until(process.stdout, '"sessionId"')
    ready = time.perf_counter() - start
    used = cpu(process.pid)
    process.stdin.close()
    process.wait(timeout=60)
    return initialized, ready, used


def python(code: str, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    return time.perf_counter() - start


def main() -> None:
    with tempfile.TemporaryDirectory() as cache:
        env = warm_bytecode_env(Path(cache))
        for _ in range(2):  # compile the bytecode, warm the OS caches
            rpc(env)
            acp(env)
            python("import acp", env)
        rpcs, inits, sessions, bare, sdk, light = [], [], [], [], [], []
        rpc_cpu, acp_cpu = [], []
        for _ in range(RUNS):
            ready_rpc, used_rpc = rpc(env)
            rpcs.append(ready_rpc)
            rpc_cpu.append(used_rpc)
            initialized, ready, used = acp(env)
            inits.append(initialized)
            sessions.append(ready)
            acp_cpu.append(used)
            bare.append(python("pass", env))
            sdk.append(python("import acp", env))
            light.append(python(LIGHT, env))
    floor = statistics.median(bare)
    sdk_import = statistics.median(sdk) - floor
    print(
        f"importing the ACP SDK (`import acp` - `pass`, whole process): {sdk_import * 1000:.0f} ms"
    )
    light_import = statistics.median(light) - floor
    print(
        f"the lighter import (`import_sdk()` - `pass`): {light_import * 1000:.0f} ms "
        f"({light_import / sdk_import:.2f}x)"
    )
    base = statistics.median(rpcs)
    print(f"assemble rpc, start to `ready` (baseline): {base * 1000:.0f} ms")
    for name, samples in (
        ("assemble acp, start to `initialize` answered", inits),
        ("assemble acp, start to `session/new` answered", sessions),
    ):
        value = statistics.median(samples)
        print(f"{name}: {value * 1000:.0f} ms ({value / base:.2f}x)")
    base_cpu, acp_used = statistics.median(rpc_cpu), statistics.median(acp_cpu)
    print(f"CPU used by then: rpc {base_cpu * 1000:.0f} ms (baseline), ", end="")
    print(f"acp {acp_used * 1000:.0f} ms ({acp_used / base_cpu:.2f}x)")


if __name__ == "__main__":
    main()
