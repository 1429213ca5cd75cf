"""`assemble view` at scale (issue 26): the first page of a 10,000-entry session of
about 40 MB, the session list over 10,000 sessions, and the cost per entry from 100 to
10,000 entries.

Each figure is set against a baseline measured in the same run:

* a session page against reading the same file's bytes once (`Path.read_bytes`), the
  least any reader that looks at the whole file pays;
* the session list against `os.scandir` + `stat` of the same files, the least a
  listing sorted by last activity pays.

"Cold" is a fresh server process state (no index: the file is indexed on the first
request); "warm" is the same page asked again after one line was appended (only the
new bytes are read). Times are wall time of the whole HTTP request on 127.0.0.1,
medians. `--browser` adds Chromium's first contentful paint of the 10,000-entry
session page (needs /usr/bin/chromium and Playwright).

`python bench/bench_view.py [--browser]`; figures in bench/README.md.
"""

from __future__ import annotations

import http.client
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import quote

from assembler.sessions.records import Entry, encode_record, new_entry_id, new_session_id
from assembler.view.server import ViewServer, make_server

RESULT = ("a line of tool output, as a test run or a file read prints it\n" * 180)[:11_000]


def write_session(path: Path, entries: int) -> None:
    """`entries` entries as `run` writes them: prompts, answers with a tool call, results
    of about 3 KB (about 4 KB an entry on average)."""
    header = {"type": "session", "version": 1, "id": path.stem, "agent": "bench",
              "manifest": None, "model": "scripted:x", "created": "2026-12-01T00:00:00.000Z",
              "workspace": "/work"}  # fmt: skip
    lines = [encode_record(header, what="header")]
    parent = None
    for number in range(entries):
        kind = number % 3
        if number == 0:
            payload = {"event": {"type": "run_start", "prompt": "go"}}
            entry_type = "event"
        elif kind == 1:
            payload = {"message": {"role": "assistant", "text": f"step {number} " * 20,
                       "tool_calls": [{"id": f"c{number}", "name": "read",
                                       "arguments": {"path": f"src/file{number}.py"},
                                       "raw_arguments": "", "arguments_error": ""}]},
                       "usage": {"input_tokens": 1000 + number, "output_tokens": 50}}  # fmt: skip
            entry_type = "message"
        elif kind == 2:
            payload = {"message": {"role": "tool", "tool_call_id": f"c{number - 1}",
                                   "name": "read", "content": RESULT, "is_error": False}}  # fmt: skip
            entry_type = "message"
        else:
            payload = {"message": {"role": "user", "content": "and then? " * 30}}
            entry_type = "message"
        entry = Entry(new_entry_id(), parent, entry_type, "2026-12-01T00:00:01.000Z", payload)
        lines.append(encode_record(entry.to_record(), what="entry"))
        parent = entry.id
    path.write_bytes(b"".join(lines))


def serve(roots: list[Path]) -> tuple[ViewServer, threading.Thread]:
    server = make_server(roots, [])
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, thread


def get(server: ViewServer, path: str) -> float:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    began = time.perf_counter()
    sep = "&" if "?" in path else "?"
    conn.request("GET", f"{path}{sep}token={server.token}")
    response = conn.getresponse()
    body = response.read()
    took = time.perf_counter() - began
    conn.close()
    assert response.status == 200, body[:300]
    return took


def read_bytes(path: Path) -> float:
    began = time.perf_counter()
    path.read_bytes()
    return time.perf_counter() - began


def session_page(tmp: Path, entries: int, runs: int = 5) -> dict[str, float]:
    folder = tmp / f"s{entries}" / "sessions" / "bench"
    folder.mkdir(parents=True)
    path = folder / f"{new_session_id()}.jsonl"
    write_session(path, entries)
    key = quote(f"0/sessions/bench/{path.name}")
    cold, warm, base = [], [], []
    for _ in range(runs):
        base.append(read_bytes(path))
        server, thread = serve([tmp / f"s{entries}"])  # a fresh index each time
        try:
            cold.append(get(server, f"/session/{key}"))
            with path.open("ab") as handle:
                handle.write(encode_record({"id": new_entry_id(), "parent": None,
                                            "type": "event", "time": "t",
                                            "event": {"type": "noop"}}, what="e"))  # fmt: skip
            warm.append(get(server, f"/session/{key}"))
        finally:
            server.shutdown()
            server.server_close()
            thread.join()
    return {
        "size_mb": path.stat().st_size / 1e6,
        "cold": statistics.median(cold),
        "warm": statistics.median(warm),
        "base": statistics.median(base),
    }


def session_list(tmp: Path, count: int, runs: int = 5) -> dict[str, float]:
    root = tmp / f"list{count}"
    for agent in range(10):
        folder = root / "sessions" / f"agent{agent}"
        folder.mkdir(parents=True)
        for _ in range(count // 10):
            write_session(folder / f"{new_session_id()}-{os.urandom(3).hex()}.jsonl", 12)
    cold, warm, base = [], [], []
    for _ in range(runs):
        began = time.perf_counter()
        for folder in (root / "sessions").iterdir():
            for entry in os.scandir(folder):
                entry.stat()
        base.append(time.perf_counter() - began)
        server, thread = serve([root])
        try:
            cold.append(get(server, "/"))
            warm.append(get(server, "/"))
        finally:
            server.shutdown()
            server.server_close()
            thread.join()
    return {"cold": statistics.median(cold), "warm": statistics.median(warm),
            "base": statistics.median(base)}  # fmt: skip


def first_paint(tmp: Path) -> float | None:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    folder = tmp / "paint" / "sessions" / "bench"
    folder.mkdir(parents=True)
    path = folder / f"{new_session_id()}.jsonl"
    write_session(path, 10_000)
    server, thread = serve([tmp / "paint"])
    flags = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync"]  # fmt: skip
    paints = []
    try:
        with sync_playwright() as playwright:
            context = playwright.chromium.launch_persistent_context(
                str(tmp / "profile"), executable_path="/usr/bin/chromium", headless=True, args=flags
            )
            page = context.new_page()
            key = quote(f"0/sessions/bench/{path.name}")
            for _ in range(3):
                server.app.catalog._open.clear()  # cold: index the file again
                page.goto(f"http://127.0.0.1:{server.port}/session/{key}?token={server.token}")
                paint = None
                for _ in range(200):  # the paint entry comes after the load event
                    paint = page.evaluate(
                        "performance.getEntriesByName('first-contentful-paint')"
                        ".map(entry => entry.startTime)[0] || null"
                    )
                    if paint is not None:
                        break
                    page.wait_for_timeout(50)
                assert paint is not None, "no first-contentful-paint entry"
                paints.append(paint / 1000)
            context.close()
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    return statistics.median(paints)


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench-view-"))
    try:
        print("session page (first page of 100 entries), fresh index vs. read_bytes of the file:")
        previous: tuple[int, float] | None = None
        for entries in (100, 1_000, 10_000):
            r = session_page(tmp, entries)
            marginal = ""
            if previous is not None:  # what each further entry costs: flat means linear
                added = (r["cold"] - previous[1]) / (entries - previous[0])
                marginal = f", {added * 1e6:5.1f} us per added entry"
            previous = (entries, r["cold"])
            print(
                f"  {entries:>6,} entries ({r['size_mb']:5.1f} MB): cold {r['cold'] * 1000:7.1f} ms "
                f"({r['cold'] / r['base']:5.1f}x read_bytes {r['base'] * 1000:6.1f} ms)"
                f"{marginal}; after an append {r['warm'] * 1000:6.1f} ms"
            )
        print("session list (first page of 100), fresh server vs. scandir + stat:")
        for count in (100, 1_000, 10_000):
            r = session_list(tmp, count)
            print(
                f"  {count:>6,} sessions: cold {r['cold'] * 1000:7.1f} ms, warm {r['warm'] * 1000:6.1f} ms "
                f"({r['warm'] / r['base']:5.1f}x scandir+stat {r['base'] * 1000:6.1f} ms)"
            )
        if "--browser" in sys.argv:
            paint = first_paint(tmp)
            if paint is not None:
                print(f"first contentful paint, 10,000 entries, cold index: {paint * 1000:.0f} ms")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
