"""The data of each page, apart from how it looks (`html`): the session list, one
session, one recorded prompt, an eval results file and two compared.

A page reads only what it shows: the list reads directory entries and the sessions
of its page; a session page parses the entries of its page (the index gives their
place); see `lines` and `catalog`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assembler.errors import SessionError
from assembler.view.catalog import Catalog, Listed
from assembler.view.charts import RateBar, TurnUsage, per_turn, rate_chart, usage_chart
from assembler.view.entries import PAGE_LIMIT, Item, ItemMaker
from assembler.view.prompts import PromptView, prompt_entries, prompt_view
from assembler.view.results import Change, Results, compare
from assembler.view.session_file import SessionFile

LIST_PAGE = 100
SESSION_PAGE = 100
HEAD_BYTES = 8192


@dataclass
class Row:
    key: str
    id: str
    agent: str
    workspace: str
    model: str
    started: str
    last_activity: float
    turns: int
    tokens: int
    cost: float | None
    status: str
    prompt: str
    origin: str = ""
    error: str = ""


def _peek(path: Path) -> dict[str, Any]:
    """The header and the start of a session (for search), from its first 8 KiB."""
    import json

    try:
        with path.open("rb") as handle:
            head = handle.read(HEAD_BYTES)
    except OSError:
        return {}
    lines = head.split(b"\n")
    found: dict[str, Any] = {"text": head.decode("utf-8", "replace").lower()}
    try:
        header = json.loads(lines[0])
    except ValueError:
        return found
    if isinstance(header, dict):
        found["agent"] = str(header.get("agent", ""))
    return found


def row_of(catalog: Catalog, listed: Listed, now: float) -> Row:
    try:
        session, _ = catalog.open(listed.path)
    except (SessionError, OSError) as exc:
        return Row(listed.key, listed.path.name, listed.folder, "", "", "", listed.modified,
                   0, 0, None, "unreadable", "", error=str(exc))  # fmt: skip
    header, totals = session.header, session.totals
    origin = ""
    if isinstance(header.get("delegated_from"), Mapping):
        origin = "sub-agent of " + str(header["delegated_from"].get("session", "?"))
    elif header.get("parent_session"):
        origin = f"fork of {header['parent_session']}"
    return Row(
        key=listed.key,
        id=str(header.get("id", "")),
        agent=str(header.get("agent", "")),
        workspace=str(header.get("workspace") or ""),
        model=str(header.get("model", "")),
        started=str(header.get("created", "")),
        last_activity=listed.modified,
        turns=totals.turns,
        tokens=totals.tokens,
        cost=totals.cost,
        status=session.status(now),
        prompt=totals.first_prompt,
        origin=origin,
    )


@dataclass
class ListPage:
    rows: list[Row]
    total: int
    page: int
    more: bool
    agents: list[str]
    query: str = ""
    agent: str = ""
    status: str = ""
    results: list[tuple[int, Results]] = field(default_factory=list)


def session_list(
    catalog: Catalog, *, query: str = "", agent: str = "", status: str = "", page: int = 0
) -> ListPage:
    """One page of sessions, most recently active first, filtered lazily: only as many
    sessions are read as the page needs."""
    listed = catalog.scan()
    now = time.time()
    wanted = query.lower().strip()
    start, stop = page * LIST_PAGE, (page + 1) * LIST_PAGE
    rows: list[Row] = []
    matched = 0
    more = False
    for item in listed:
        if wanted or agent:
            head = _peek(item.path)
            if agent and head.get("agent", item.folder) != agent:
                continue
            if (
                wanted
                and wanted not in head.get("text", "")
                and wanted not in item.relative.lower()
            ):
                continue
        if status:
            row = row_of(catalog, item, now)
            if row.status != status:
                continue
        if matched >= stop:
            more = True
            break
        if matched >= start:
            rows.append(row if status else row_of(catalog, item, now))
        matched += 1
    agents = sorted({item.folder for item in listed})
    return ListPage(rows, len(listed), page, more, agents, query, agent, status)


@dataclass
class SessionPage:
    key: str
    header: Mapping[str, Any]
    status: str
    totals: Any
    items: list[Item]
    page: int
    pages: int
    chart: Any
    prompts: list[tuple[str, int, str]]
    last_number: int
    parent_key: str = ""
    delegated_key: str = ""
    skipped: int = 0


def _sibling(catalog: Catalog, path: Path) -> Any:
    def key(session_id: object) -> str | None:
        if not isinstance(session_id, str) or not session_id or "/" in session_id:
            return None
        if session_id in (".", "..") or os.sep in session_id or "\x00" in session_id:
            return None
        candidate = path.with_name(f"{session_id}.jsonl")
        return catalog.key_of(candidate) if candidate.is_file() else None

    return key


def session_page(
    catalog: Catalog, key: str, *, page: int | None = None, limit: int | None = PAGE_LIMIT,
    whole: bool = False,
) -> SessionPage:  # fmt: skip
    """One page of a session's entries in display order (`whole`: all of them). The
    default page is the first."""
    path = catalog.resolve(key)
    if path is None:
        raise SessionError(f"no session {key!r} here")
    session, trace = catalog.open(path)
    placed = session.order()
    pages = max(1, -(-len(placed) // SESSION_PAGE))
    current = min(max(page or 0, 0), pages - 1)
    shown = placed if whole else placed[current * SESSION_PAGE : (current + 1) * SESSION_PAGE]
    sibling = _sibling(catalog, path)
    items = ItemMaker(session, trace, sibling, limit=limit).items(shown)
    header = session.header
    delegated = header.get("delegated_from")
    return SessionPage(
        key=key,
        header=header,
        status=session.status(),
        totals=session.totals,
        items=items,
        page=current,
        pages=pages,
        chart=usage_chart(_turn_usage(session)),
        prompts=prompt_entries(session),
        last_number=session.index.count - 1,  # line numbers count every line, in order
        parent_key=sibling(header.get("parent_session")) or "",
        delegated_key=sibling(delegated.get("session")) if isinstance(delegated, Mapping) else "",
        skipped=session.totals.skipped,
    )


def _turn_usage(session: SessionFile) -> list[TurnUsage]:
    return per_turn(session.totals.usage_values)


def entry_page(catalog: Catalog, key: str, entry: str) -> tuple[SessionPage, Item]:
    """One entry whole (no text cut), with its session's header."""
    path = catalog.resolve(key)
    if path is None:
        raise SessionError(f"no session {key!r} here")
    session, trace = catalog.open(path)
    placed = [p for p in session.order() if p.line.info.id == entry]
    if not placed:
        raise SessionError(f"session {session.header.get('id')} has no entry {entry!r}")
    (item,) = ItemMaker(session, trace, _sibling(catalog, path), limit=None).items(placed[:1])
    page = session_page(catalog, key, page=0)
    return page, item


def new_items(catalog: Catalog, key: str, after: int) -> tuple[list[Item], int, SessionFile]:
    """Entries written after line `after` (a live page's tail), in file order."""
    path = catalog.resolve(key)
    if path is None:
        raise SessionError(f"no session {key!r} here")
    session, trace = catalog.open(path)
    placed = [p for p in session.order() if p.line.number > after]
    placed.sort(key=lambda p: p.line.number)
    items = ItemMaker(session, trace, _sibling(catalog, path)).items(placed)
    last = max((p.line.number for p in placed), default=after)
    return items, last, session


def prompt_page(catalog: Catalog, key: str, entry: str) -> PromptView:
    path = catalog.resolve(key)
    if path is None:
        raise SessionError(f"no session {key!r} here")
    session, _ = catalog.open(path)
    return prompt_view(session, entry)


@dataclass
class ResultsPage:
    number: int
    results: Results
    chart: Any


def results_page(number_: int, results: Results) -> ResultsPage:
    bars = [RateBar(t.task, t.rate, detail=f"{t.passed}/{t.runs} passed") for t in results.tasks]
    return ResultsPage(number_, results, rate_chart(bars))


@dataclass
class ComparePage:
    old: Results
    new: Results
    changes: list[Change]
    chart: Any
    old_number: int = 0
    new_number: int = 1


def compare_page(
    old: Results, new: Results, old_number: int = 0, new_number: int = 1
) -> ComparePage:
    changes = compare(old, new)
    bars = [
        RateBar(
            c.task,
            c.after.rate if c.after else 0.0,
            before=c.before.rate if c.before else 0.0,
            detail=c.verdict,
        )
        for c in changes
    ]
    return ComparePage(old, new, changes, rate_chart(bars), old_number, new_number)


def iter_pages(total: int, size: int) -> Iterator[int]:
    yield from range(max(1, -(-total // size)))
