"""What `assemble view` answers, apart from HTTP: a request path and query in, a status,
a content type and a body out. The server (`server`) adds the transport, the token
and the headers; keeping them apart lets tests call pages directly.

Read-only: every route is a GET that reads files; nothing here writes, deletes or
runs anything.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assembler.errors import AssemblerError
from assembler.view import html, pages
from assembler.view.catalog import Catalog
from assembler.view.links import ServerLinks
from assembler.view.results import Results, read

STATIC = {"view.css": "text/css; charset=utf-8", "view.js": "text/javascript; charset=utf-8"}


@dataclass(frozen=True)
class Reply:
    status: int
    content_type: str
    body: bytes


class NotFound(Exception):
    """A path or a name that is not here."""


class ResultsFiles:
    """The eval results files given on the command line, read again when they change
    (an evaluation may still be writing one)."""

    def __init__(self, paths: list[Path]) -> None:
        self.paths = paths
        self._cache: dict[Path, tuple[tuple[int, float], Results]] = {}
        self._lock = threading.Lock()

    def all(self) -> list[tuple[int, Results]]:
        return [(number, self.get(number)) for number in range(len(self.paths))]

    def get(self, number: int) -> Results:
        if not 0 <= number < len(self.paths):
            raise NotFound(f"no results file number {number}")
        path = self.paths[number]
        stat = path.stat()
        stamp = (stat.st_size, stat.st_mtime)
        with self._lock:
            cached = self._cache.get(path)
            if cached is None or cached[0] != stamp:
                cached = (stamp, read(path))
                self._cache[path] = cached
            return cached[1]


class App:
    def __init__(self, roots: list[Path], results: list[Path], token: str) -> None:
        self.catalog = Catalog(roots)
        self.results = ResultsFiles(results)
        self.links = ServerLinks(token)

    def _page(self, template: str, **context: Any) -> Reply:
        body = html.render(
            template,
            links=self.links,
            results_files=self.results.all(),
            roots=[str(r) for r in self.catalog.roots],
            **context,
        )
        return Reply(200, "text/html; charset=utf-8", body.encode("utf-8"))

    def handle(self, path: str, query: Mapping[str, str]) -> Reply:
        try:
            return self._route(path, query)
        except (NotFound, AssemblerError, OSError) as exc:
            body = html.render(
                "error.html",
                links=self.links,
                results_files=[],
                status="Not found",
                message=str(exc),
            )
            return Reply(404, "text/html; charset=utf-8", body.encode("utf-8"))

    def _route(self, path: str, query: Mapping[str, str]) -> Reply:
        if path == "/":
            listing = pages.session_list(
                self.catalog,
                query=query.get("q", ""),
                agent=query.get("agent", ""),
                status=query.get("status", ""),
                page=_int(query.get("page")),
            )
            return self._page("list.html", data=listing)
        if path.startswith("/session/"):
            key = path.removeprefix("/session/")
            session = pages.session_page(self.catalog, key, page=_int(query.get("page")))
            return self._page("session.html", data=session, session_anchor="session")
        if path.startswith("/entry/"):
            key = path.removeprefix("/entry/")
            header, item = pages.entry_page(self.catalog, key, query.get("id", ""))
            return self._page("entry.html", data=header, item=item)
        if path.startswith("/prompt/"):
            key = path.removeprefix("/prompt/")
            prompt = pages.prompt_page(self.catalog, key, query.get("entry", ""))
            return self._page("prompt.html", data=prompt, key=key, prompt_anchor="prompt")
        if path.startswith("/results/"):
            number = _int(path.removeprefix("/results/"), -1)
            results = pages.results_page(number, self.results.get(number))
            return self._page("results.html", data=results)
        if path == "/compare":
            old, new = _int(query.get("old"), 0), _int(query.get("new"), 1)
            compared = pages.compare_page(self.results.get(old), self.results.get(new), old, new)
            return self._page("compare.html", data=compared)
        if path.startswith("/static/"):
            name = path.removeprefix("/static/")
            if name not in STATIC:
                raise NotFound(f"no file {name!r}")
            return Reply(200, STATIC[name], html.static_text(name).encode("utf-8"))
        raise NotFound(f"nothing at {path}")

    # -- live updates -------------------------------------------------------------------

    def session_events(self, key: str, after: int) -> Iterator[tuple[str, str] | None]:
        """Server-sent events for a live session page: `entries` (the HTML of entries
        written after line `after`) and `totals`, each time the file grows; None when
        nothing changed (the server then waits and asks again)."""
        while True:
            items, last, session = pages.new_items(self.catalog, key, after)
            if items:
                after = last
                yield ("entries", html.render_items(items, key, self.links))
                totals = session.totals
                yield (
                    "totals",
                    json.dumps(
                        {
                            "status": session.status(),
                            "turns": f"{totals.turns} in {totals.runs} run(s), "
                            f"{totals.entries:,} entries",
                            "tokens": f"{totals.input_tokens:,} in "
                            f"({totals.cache_read_tokens:,} cache read), "
                            f"{totals.output_tokens:,} out",
                        }
                    ),
                )
            else:
                yield None

    def list_events(self, query: Mapping[str, str]) -> Iterator[tuple[str, str] | None]:
        """`rows`: the session table again, whenever a session file of the listing
        changed."""
        seen: tuple[Any, ...] | None = None
        while True:
            listed = self.catalog.scan()
            stamp: tuple[Any, ...] = tuple(
                (item.key, item.modified) for item in listed[: pages.LIST_PAGE * 2]
            )
            stamp += (len(listed),)
            if seen is not None and stamp != seen:
                data = pages.session_list(
                    self.catalog,
                    query=query.get("q", ""),
                    agent=query.get("agent", ""),
                    status=query.get("status", ""),
                    page=_int(query.get("page")),
                )
                yield ("rows", html.render("rows.html", data=data, links=self.links))
            else:
                yield None
            seen = stamp


def _int(value: str | None, default: int = 0) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default
