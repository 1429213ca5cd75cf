"""Which server for `assemble view`: Starlette + uvicorn (the `[mcp]` extra already
brings both) or the standard library's `http.server`. Measured, not guessed:

* start-up: a whole process that imports the server and answers one request, against
  `python -c pass` (the floor) in the same run;
* latency of a 100 KB page, one keep-alive connection, 300 requests (median);
* first event of a server-sent-event stream after the file it tails grows.

`python bench/bench_view_stack.py`; figures in bench/README.md ("assemble view").
"""

from __future__ import annotations

import http.client
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

PAGE = "<p>" + "x" * 100_000 + "</p>"

STDLIB = textwrap.dedent(
    """
    import sys, time, os
    from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
    page = ("<p>" + "x" * 100_000 + "</p>").encode()
    grow = sys.argv[2]
    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        def log_message(self, *a): pass
        def do_GET(self):
            if self.path == "/events":
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                size = os.path.getsize(grow)
                while os.path.getsize(grow) == size:
                    time.sleep(0.02)
                self.wfile.write(b"data: grew\\n\\n"); self.wfile.flush()
                return
            self.send_response(200)
            self.send_header("content-type", "text/html")
            self.send_header("content-length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H)
    print("ready", flush=True)
    server.serve_forever()
    """
)

STARLETTE = textwrap.dedent(
    """
    import sys, os, asyncio
    from starlette.applications import Starlette
    from starlette.responses import HTMLResponse, StreamingResponse
    from starlette.routing import Route
    import uvicorn
    page = "<p>" + "x" * 100_000 + "</p>"
    grow = sys.argv[2]
    async def index(request):
        return HTMLResponse(page)
    async def events(request):
        async def stream():
            size = os.path.getsize(grow)
            while os.path.getsize(grow) == size:
                await asyncio.sleep(0.02)
            yield "data: grew\\n\\n"
        return StreamingResponse(stream(), media_type="text/event-stream")
    app = Starlette(routes=[Route("/", index), Route("/events", events)])
    import socket
    sock = socket.socket()
    sock.bind(("127.0.0.1", int(sys.argv[1])))
    sock.listen(64)
    config = uvicorn.Config(app, log_level="error", lifespan="off")
    server = uvicorn.Server(config)
    print("ready", flush=True)
    asyncio.run(server.serve(sockets=[sock]))
    """
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(code: str, grow: Path) -> tuple[subprocess.Popen[str], int, float]:
    port = free_port()
    began = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(port), str(grow)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    proc.stdout.readline()
    conn = http.client.HTTPConnection("127.0.0.1", port)
    conn.request("GET", "/")
    conn.getresponse().read()
    conn.close()
    return proc, port, time.perf_counter() - began


def latency(port: int, n: int = 300) -> float:
    conn = http.client.HTTPConnection("127.0.0.1", port)
    samples = []
    for _ in range(n):
        began = time.perf_counter()
        conn.request("GET", "/")
        body = conn.getresponse().read()
        samples.append(time.perf_counter() - began)
        assert len(body) > 100_000
    conn.close()
    return statistics.median(samples)


def sse_delay(port: int, grow: Path) -> float:
    conn = http.client.HTTPConnection("127.0.0.1", port)
    conn.request("GET", "/events")
    response = conn.getresponse()
    time.sleep(0.1)
    began = time.perf_counter()
    with grow.open("a") as f:
        f.write("x\n")
    response.fp.readline()  # type: ignore[union-attr]
    delay = time.perf_counter() - began
    conn.close()
    return delay


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        grow = Path(tmp) / "grow.jsonl"
        grow.write_text("")
        floor = []
        for _ in range(5):
            began = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], check=True)
            floor.append(time.perf_counter() - began)
        results: dict[str, dict[str, float]] = {}
        for name, code in (("stdlib http.server", STDLIB), ("starlette + uvicorn", STARLETTE)):
            starts, lats, sses = [], [], []
            for _ in range(5):
                proc, port, took = start(code, grow)
                try:
                    starts.append(took)
                    lats.append(latency(port))
                    sses.append(sse_delay(port, grow))
                finally:
                    proc.terminate()
                    proc.wait()
            results[name] = {
                "start": statistics.median(starts),
                "latency": statistics.median(lats),
                "sse": statistics.median(sses),
            }
        base = statistics.median(floor)
        print(f"floor: python -c pass: {base * 1000:.1f} ms")
        std = results["stdlib http.server"]
        for name, r in results.items():
            print(
                f"{name:22} start-up to first response {r['start'] * 1000:7.1f} ms "
                f"({r['start'] / base:.1f}x floor); 100 KB page {r['latency'] * 1e6:7.0f} us "
                f"({r['latency'] / std['latency']:.2f}x stdlib); SSE after append "
                f"{r['sse'] * 1000:.1f} ms"
            )


if __name__ == "__main__":
    main()
