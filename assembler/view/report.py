"""`assemble report`: the view's pages as one self-contained HTML file, for CI
artifacts and pull requests.

The file holds everything it shows: the style sheet inline (allowed by its hash in a
Content-Security-Policy `<meta>`), charts as inline SVG, no script at all, no link
to anything outside the file. A session's report holds its whole conversation (no
pages), every recorded prompt with what changed, and the sessions of its sub-agents
found beside it; a results report holds the summary, every run's evidence and,
with `--compare`, what got better or worse.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from assembler.errors import UsageError
from assembler.sessions.records import SUFFIX
from assembler.view import html, pages
from assembler.view.catalog import Catalog
from assembler.view.links import ReportLinks, anchor
from assembler.view.prompts import prompt_view
from assembler.view.results import looks_like_results, read

MAX_SESSIONS = 50
"""Sub-agent sessions followed into one report, at most."""


@dataclass
class Part:
    kind: str
    data: Any
    anchor: str = ""
    prompts: list[Any] = field(default_factory=list)


@dataclass
class PromptPart:
    data: Any
    anchor: str


def _session_parts(path: Path) -> tuple[list[Part], set[str]]:
    catalog = Catalog([path.parent])
    first = catalog.key_of(path)
    assert first is not None
    keys, queue = {first}, [first]
    parts: list[Part] = []
    while queue and len(parts) < MAX_SESSIONS:
        key = queue.pop(0)
        data = pages.session_page(catalog, key, whole=True, limit=None)
        session_path = catalog.resolve(key)
        assert session_path is not None
        session, _ = catalog.open(session_path)
        prompts = [
            PromptPart(prompt_view(session, entry), anchor("prompt", f"{key}/{entry}"))
            for entry, _, _ in data.prompts
        ]
        parts.append(Part("session", data, anchor("session", key), prompts))
        children = [item.link for item in data.items if item.kind == "subagent" and item.link]
        children += [call.child for item in data.items for call in item.calls if call.child]
        for child in children:
            if child not in keys:
                keys.add(child)
                queue.append(child)
    return parts, {part.data.key for part in parts}


def build_report(target: Path, compare: Path | None = None) -> str:
    """The HTML of the report on `target` (a session file or a results file)."""
    if not target.is_file():
        raise UsageError(f"{target} is not a file")
    css = html.static_text("view.css")
    if "</" in css:  # it goes into a <style> element unescaped: it must not end it
        raise AssertionError("view.css must not contain '</'")
    if looks_like_results(target):
        new = read(target)
        parts = [Part("results", pages.results_page(0, new))]
        title = f"eval results {target.name}"
        if compare is not None:
            old = read(compare)
            parts.insert(0, Part("compare", pages.compare_page(old, new)))
            title = f"{compare.name} → {target.name}"
        links = ReportLinks(set())
    else:
        if compare is not None:
            raise UsageError("--compare compares two eval results files; "
                             f"{target} is a session")  # fmt: skip
        if not target.name.endswith(SUFFIX):
            raise UsageError(f"{target} is neither a session file (.jsonl) nor eval results")
        parts, keys = _session_parts(target.resolve())
        links = ReportLinks(keys)
        header = parts[0].data.header
        title = f"{header.get('agent', '')} session {header.get('id', '')}"
    return html.render(
        "report.html",
        links=links,
        results_files=[],
        parts=parts,
        title=title,
        css=html.Safe(css),  # the package's own style sheet, hashed into the CSP below
        csp=html.report_csp(css),
        generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    )
