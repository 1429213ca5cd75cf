"""`session/list` over ACP (issue 27): the first page as the number of recorded
sessions grows (10, 100, 1,000), in process.

A page reads the headers of every session (to filter by agent and workspace and to
order them), then summarises the sessions of the page only (50 at most). The baseline
is reading the headers alone (`SessionStore.list`), which every listing pays; the
difference is the summaries, which should stop growing once there are more sessions
than a page. Run: `python bench/bench_acp_list.py`.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from _timing import median_seconds, report
from bench_session_list import write_session

from assembler.acp.listing import PAGE_SIZE, session_page
from assembler.sessions.store import SessionStore


def main(counts: tuple[int, ...] = (10, 100, 1000), entries: int = 99) -> None:
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for count in counts:
            store = SessionStore(Path(scratch) / str(count))
            for _ in range(count):
                write_session(store, entries)

            def headers(store: SessionStore = store) -> None:
                store.list()

            def page(store: SessionStore = store) -> None:
                listed = session_page(store, agent="bench", workspace=Path("/ws"), cursor=None)
                assert len(listed.sessions) <= PAGE_SIZE

            repeat = 20 if count >= 1000 else 60
            base = median_seconds(headers, repeat=repeat, warmup=2)
            value = median_seconds(page, repeat=repeat, warmup=2)
            rows.append(
                (
                    f"{count:>5} sessions of {entries} entries",
                    f"headers {base * 1000:7.2f} ms, first page {value * 1000:7.2f} ms "
                    f"({value / base:.2f}x), per session {value / count * 1e6:6.1f} µs",
                )
            )
    report("session/list, first page, in process", rows)


if __name__ == "__main__":
    main()
