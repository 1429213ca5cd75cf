"""The kernel sandbox and the long-lived supervisor (issues 21 and 22): what they cost.

- The persistent supervisor: a `bash` tool call running `true`, unconfined, against
  `subprocess.run(["bash", "-c", "true"])` in the same process; wall time per call and
  CPU per call (this process plus the supervisor and its command supervisors, read
  from /proc), interleaved.
- The sandbox per call: the same call in `workspace-write` + `network: off`, paired
  with an unconfined call (unconfined, then confined, alternately), in sessions of
  1, 10, 100 and 1,000 calls (each session a fresh agent sandbox, which a command
  supervisor takes on when it is made, as `build_agent` has it do; 0.2 s before the
  first call stand for the model's first answer), to show the cost per call stays flat.
- The mechanism, for the decision: starting `bash -c true` under bubblewrap with a
  private network and mount namespace (what Claude Code does), against plain
  `bash -c true`, both with `subprocess.run`; and making the private network
  `network: allow` uses (once per agent).
- The filtering proxy: a loopback HTTP GET through it against the same GET direct
  (one request per connection both ways), and 100 requests at once through it.

Run: `python bench/bench_sandbox.py` (`--quick`: fewer rounds, sessions up to 100).
"""

from __future__ import annotations

import asyncio
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _timing import report

from assembler.sandbox import netns
from assembler.sandbox.proxy import FilteringProxy
from assembler.sandbox.runtime import Sandbox
from assembler.sandbox.spec import HostRule, SandboxSpec
from assembler.tools.base import ToolContext
from assembler.tools.builtin.bash import BASH_TOOL
from assembler.tools.processes import prepare_sandbox
from assembler.tools.supervisor_client import HOST

QUICK = "--quick" in sys.argv
CONFINED = SandboxSpec("workspace-write", "off")


def _ticks(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def supervisor_cpu() -> float:
    """CPU seconds of the long-lived supervisor and its live command supervisors (and
    of those it reaped)."""
    pid = HOST.pid
    if pid is None:
        return 0.0
    total = _ticks(pid)
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    total += (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()
                if int(stat[1]) == pid:
                    total += _ticks(int(name))
            except (OSError, IndexError):
                continue
    return total


def own_cpu() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


def bench_supervisor(ws: Path) -> list[tuple[str, str]]:
    """Blocks of calls, tool and plain alternately; CPU read at block boundaries only
    (reading /proc costs CPU of its own)."""
    ctx = ToolContext(workspace=ws)
    blocks, size = (5, 20) if QUICK else (20, 20)

    async def tool_call() -> None:
        await BASH_TOOL.execute({"command": "true"}, ctx)

    loop = asyncio.new_event_loop()
    for _ in range(10):
        loop.run_until_complete(tool_call())
        subprocess.run(["bash", "-c", "true"], check=False)
    walls: dict[str, list[float]] = {"tool": [], "plain": []}
    cpus = {"tool": 0.0, "plain": 0.0}
    for _ in range(blocks):
        before, sup = own_cpu(), supervisor_cpu()
        for _ in range(size):
            start = time.perf_counter()
            loop.run_until_complete(tool_call())
            walls["tool"].append(time.perf_counter() - start)
        cpus["tool"] += own_cpu() - before + supervisor_cpu() - sup
        before = own_cpu()
        for _ in range(size):
            start = time.perf_counter()
            subprocess.run(["bash", "-c", "true"], check=False)
            walls["plain"].append(time.perf_counter() - start)
        cpus["plain"] += own_cpu() - before
    loop.close()
    rounds = blocks * size
    tool, plain = (statistics.median(walls[k]) * 1000 for k in ("tool", "plain"))
    tool_cpu, plain_cpu = (cpus[k] / rounds * 1000 for k in ("tool", "plain"))
    python = _python_start()
    return [
        (
            "bash `true`, wall",
            f"{tool:6.2f} ms vs subprocess.run {plain:5.2f} ms: "
            f"{tool / plain:4.1f}x, +{tool - plain:5.2f} ms",
        ),
        (
            "bash `true`, CPU",
            f"{tool_cpu:6.2f} ms vs subprocess.run {plain_cpu:5.2f} ms: "
            f"{tool_cpu / plain_cpu:4.1f}x, +{tool_cpu - plain_cpu:5.2f} ms",
        ),
        ("before: a supervisor per call", f"a `python -I -S` start alone: {python:6.2f} ms"),
    ]


def _python_start() -> float:
    samples = []
    for _ in range(10 if QUICK else 30):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-I", "-S", "-c", "pass"], check=False)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1000


def bench_sessions(ws: Path) -> list[tuple[str, str]]:
    rows = []
    sizes = (1, 10, 100) if QUICK else (1, 10, 100, 1000)
    loop = asyncio.new_event_loop()
    plain = ToolContext(workspace=ws)
    for size in sizes:
        differences, confined_times, plain_times = [], [], []
        repeats = max(1, 100 // size) if size < 100 else 1
        for _ in range(repeats):
            # As `build_agent` does: the sandbox, then a command supervisor told to take
            # it on. A new agent's first command comes after a model's answer at the
            # earliest: the pause stands for it.
            sandbox = Sandbox.start(CONFINED, ws, ws / "agent.yaml")
            assert sandbox is not None
            prepare_sandbox(sandbox.policy().to_dict())
            time.sleep(0.2)
            boxed = ToolContext(workspace=ws, sandbox=sandbox)
            for _ in range(size):
                a = _timed(loop, plain)
                b = _timed(loop, boxed)
                plain_times.append(a)
                confined_times.append(b)
                differences.append(b - a)
            sandbox.close()
        rows.append(
            (
                f"{size:>5} call(s) per session",
                f"confined {statistics.median(confined_times) * 1000:6.2f} ms, unconfined "
                f"{statistics.median(plain_times) * 1000:6.2f} ms: paired difference "
                f"{statistics.median(differences) * 1000:+6.2f} ms",
            )
        )
    loop.close()
    return rows


def _timed(loop: asyncio.AbstractEventLoop, ctx: ToolContext) -> float:
    start = time.perf_counter()
    result = loop.run_until_complete(BASH_TOOL.execute({"command": "true"}, ctx))
    elapsed = time.perf_counter() - start
    assert not result.is_error, result.content
    return elapsed


def bench_mechanism(ws: Path) -> list[tuple[str, str]]:
    bwrap = shutil.which("bwrap")
    rows = []
    runs = 20 if QUICK else 60
    commands: dict[str, list[str]] = {"plain": ["bash", "-c", "true"]}
    if bwrap:
        commands["bwrap"] = [
            bwrap,
            "--ro-bind",
            "/",
            "/",
            "--bind",
            str(ws),
            str(ws),
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--tmpfs",
            "/tmp",
            "--unshare-net",
            "--unshare-pid",
            "--die-with-parent",
            "--new-session",
            "bash",
            "-c",
            "true",
        ]
    samples: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, command in commands.items():
            start = time.perf_counter()
            subprocess.run(command, check=False, stderr=subprocess.DEVNULL)
            samples[name].append(time.perf_counter() - start)
    plain = statistics.median(samples["plain"]) * 1000
    if bwrap:
        boxed = statistics.median(samples["bwrap"]) * 1000
        rows.append(
            (
                "bwrap per command",
                f"{boxed:6.2f} ms vs plain {plain:5.2f} ms: +{boxed - plain:5.2f} ms",
            )
        )
    else:
        rows.append(("bwrap per command", "not installed (apt-get install bubblewrap)"))
    made = []
    for _ in range(5 if QUICK else 15):
        start = time.perf_counter()
        network = netns.create()
        made.append(time.perf_counter() - start)
        network.close()
    rows.append(
        (
            "private network for `allow`",
            f"{statistics.median(made) * 1000:6.1f} ms once per agent (a helper process)",
        )
    )
    return rows


#: The upstream server runs in a process of its own too, like a remote host.
SERVER = """
import http.server, sys

class Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "5")
        self.end_headers()
        self.wfile.write(b"hello")

    def log_message(self, *args):
        pass

class Server(http.server.ThreadingHTTPServer):
    request_queue_size = 512
    daemon_threads = True

server = Server(("127.0.0.1", 0), Hello)
print(server.server_port, flush=True)
server.serve_forever()
"""


#: The client runs in a process of its own, as a sandboxed command would: in this
#: process it would share the interpreter lock with the proxy's thread.
CLIENT = """
import json, statistics, sys, time, urllib.request
from concurrent.futures import ThreadPoolExecutor
url, proxy, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
proxied = urllib.request.build_opener(urllib.request.ProxyHandler({"http": proxy}))
times = {"direct": [], "proxy": []}
for _ in range(runs):
    for name, opener in (("direct", direct), ("proxy", proxied)):
        start = time.perf_counter()
        opener.open(url, timeout=30).read()
        times[name].append(time.perf_counter() - start)
result = {k: statistics.median(v) for k, v in times.items()}
for name, opener in (("direct", direct), ("proxy", proxied)):
    start = time.perf_counter()
    with ThreadPoolExecutor(100) as pool:
        answers = list(pool.map(lambda _: opener.open(url, timeout=60).read(), range(100)))
    result[name + "_100"] = time.perf_counter() - start
    result[name + "_ok"] = sum(a == b"hello" for a in answers)
print(json.dumps(result))
"""


def bench_proxy() -> list[tuple[str, str]]:
    import json

    server = subprocess.Popen([sys.executable, "-c", SERVER], stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    port = int(server.stdout.readline())
    listener = socket.create_server(("127.0.0.1", 0), backlog=512)
    proxy = FilteringProxy(listener, [HostRule.parse(f"127.0.0.1:{port}")])
    address = f"http://127.0.0.1:{listener.getsockname()[1]}"
    runs = "100" if QUICK else "400"
    try:
        done = subprocess.run(
            [sys.executable, "-c", CLIENT, f"http://127.0.0.1:{port}/", address, runs],
            capture_output=True,
            check=True,
        )
    finally:
        proxy.close()
        server.kill()
        server.wait()
    result = json.loads(done.stdout)
    plain, through = result["direct"] * 1000, result["proxy"] * 1000
    return [
        (
            "one GET",
            f"through the proxy {through:5.2f} ms vs direct {plain:5.2f} ms: "
            f"+{through - plain:5.2f} ms",
        ),
        (
            "100 at once, direct",
            f"{result['direct_ok']}/100 answered in {result['direct_100'] * 1000:6.1f} ms",
        ),
        (
            "100 at once, through the proxy",
            f"{result['proxy_ok']}/100 answered in {result['proxy_100'] * 1000:6.1f} ms",
        ),
    ]


def main() -> None:
    with tempfile.TemporaryDirectory() as root:
        ws = Path(root) / "ws"
        ws.mkdir()
        report("the long-lived supervisor (issue 21)", bench_supervisor(ws))
        report("sandboxed vs unsandboxed bash call (issue 22)", bench_sessions(ws))
        report("the mechanism: bubblewrap for comparison (issue 22)", bench_mechanism(ws))
        report("the filtering proxy (issue 22)", bench_proxy())


if __name__ == "__main__":
    main()
