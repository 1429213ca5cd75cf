"""`assemble sessions list` and `sessions show`: what listing and reading sessions cost
as their number and length grow.

Listing summarises each session (entries, first user message, last activity) from one
read of its file without decoding every line; the baselines are reading the headers
only (`SessionStore.list`, which cannot give those columns) and decoding every line of
every file (what a naive summary would do). A transcript decodes every entry; its
baseline is a plain `json.loads` of each line. Run: `python bench/bench_session_list.py`.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from _timing import median_seconds, report

from assembler.cli.transcript import text_transcript
from assembler.messages import AssistantMessage, ToolCall, ToolResultMessage, Usage, UserMessage
from assembler.sessions.catalog import list_sessions
from assembler.sessions.records import read_session_file
from assembler.sessions.store import Session, SessionStore


def write_session(store: SessionStore, entries: int) -> Path:
    session = store.create("bench", None, "scripted:bench", metadata={"workspace": "/ws"})
    for index in range(max(1, entries // 3)):
        session.append_message(UserMessage(f"question {index}: " + "words " * 20))
        call = ToolCall(f"c{index}", "read", {"path": f"file{index}.txt"})
        session.append_message(AssistantMessage("Reading.", (call,)), usage=Usage(100, 20))
        session.append_message(ToolResultMessage(call.id, "read", "contents " * 40))
    return session.path


def listing(counts: tuple[int, ...] = (10, 100, 1000), entries: int = 99) -> None:
    rows = []
    first: float | None = None
    with tempfile.TemporaryDirectory() as scratch:
        for count in counts:
            folder = Path(scratch) / str(count)
            store = SessionStore(folder)
            for _ in range(count):
                write_session(store, entries)

            def headers(store: SessionStore = store) -> None:
                store.list()

            def decode_all(store: SessionStore = store) -> None:
                for info in store.list():
                    read_session_file(info.path)

            def ours(folder: Path = folder, count: int = count) -> None:
                assert len(list_sessions([folder])) == count

            repeat = 5 if count >= 1000 else 15
            floor = median_seconds(headers, repeat=repeat, warmup=1)
            naive = median_seconds(decode_all, repeat=repeat, warmup=1)
            mine = median_seconds(ours, repeat=repeat, warmup=1)
            per = mine / count
            first = first or per
            rows.append(
                (
                    f"{count:>5} sessions of {entries} entries",
                    f"{mine * 1e3:8.1f} ms ({per * 1e6:6.0f} µs/session, {per / first:.2f}x the "
                    f"per-session cost at {counts[0]}); headers only {floor * 1e3:.1f} ms "
                    f"({mine / floor:.1f}x); every line decoded {naive * 1e3:.1f} ms "
                    f"({mine / naive:.2f}x)",
                )
            )
    report("sessions list: summaries of N sessions (list_sessions)", rows)


def transcript(sizes: tuple[int, ...] = (50, 500, 5000)) -> None:
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for size in sizes:
            path = write_session(SessionStore(Path(scratch) / str(size)), size)

            def floor(path: Path = path) -> None:
                with path.open("rb") as handle:
                    for line in handle:
                        json.loads(line)

            def ours(path: Path = path) -> None:
                text_transcript(Session.load(path))

            base = median_seconds(floor, repeat=15, warmup=2)
            mine = median_seconds(ours, repeat=15, warmup=2)
            rows.append(
                (
                    f"{size:>5} entries",
                    f"{mine * 1e3:7.1f} ms  (json.loads of each line {base * 1e3:6.1f} ms; "
                    f"{mine / base:.2f}x; {mine / size * 1e6:.1f} µs/entry)",
                )
            )
    report("sessions show: the text transcript of one session", rows)


if __name__ == "__main__":
    listing()
    transcript()
