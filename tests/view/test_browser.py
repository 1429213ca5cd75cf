"""The view in a real browser (headless Chromium): each page shows what a person
checks, scripts and HTML in a session execute nothing, a request without the token
gets nothing, a report loads nothing, a live session's new turns appear without a
reload. Screenshots go to the test's temporary directory.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from view_browser import ScriptWatch
from view_corpus import PAYLOADS, hostile_results, hostile_session, results_file, shipping_session

from assembler.messages import AssistantMessage, UserMessage
from assembler.sessions.store import Session
from assembler.view.report import build_report
from assembler.view.server import ViewServer, make_server

pytestmark = pytest.mark.slow


@pytest.fixture
def serve() -> Iterator[Any]:
    started: list[tuple[ViewServer, threading.Thread]] = []

    def start(roots: list[Path], results: list[Path]) -> ViewServer:
        server = make_server(roots, results)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        started.append((server, thread))
        return server

    yield start
    for server, thread in started:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def url(server: ViewServer, path: str, **query: str) -> str:
    extra = "".join(f"&{k}={quote(v)}" for k, v in query.items())
    return f"http://127.0.0.1:{server.port}{path}?token={server.token}{extra}"


def test_each_page_shows_what_a_person_checks(
    browser: Any,
    serve: Any,
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    shipping_session(tmp_path, data)
    old = results_file(
        tmp_path / "before.jsonl", {"fix-rounding": ["passed"], "explain": ["passed"]}
    )
    new = results_file(
        tmp_path / "after.jsonl", {"fix-rounding": ["failed"], "explain": ["passed"]}
    )
    server = serve([data], [new, old])
    page = browser.new_page()
    watch = ScriptWatch.on(browser, page)

    page.goto(server.url)
    row = page.locator("table.sessions tbody tr").first
    assert "shipping-fixer" in row.inner_text() and "completed" in row.inner_text()
    assert "Fix the failing shipping test." in row.inner_text()
    page.screenshot(path=str(tmp_path / "list.png"), full_page=True)

    row.locator("a").first.click()
    page.wait_for_selector("#entries")
    blocked = page.locator(".call.verdict-blocked")
    assert blocked.count() == 1
    assert "blocked by protect_tests" in blocked.inner_text()
    assert "tests/test_fees.py" in blocked.inner_text()
    assert page.locator(".call.verdict-ran").count() == 4
    assert "run ended: completed" in page.locator("#entries").inner_text()
    page.screenshot(path=str(tmp_path / "session.png"), full_page=True)

    page.locator("ul.prompts a").first.click()
    page.wait_for_selector("section.prompt")
    sections = page.locator("table.sections tbody tr td:first-child").all_inner_texts()
    assert sections == ["identity", "tools", "workspace", "skills"]
    assert "shipping-fixer.yaml:5: identity" in page.locator("table.sections").inner_text()
    assert "You are a careful maintainer" in page.locator("pre.text").first.inner_text()
    page.screenshot(path=str(tmp_path / "prompt.png"), full_page=True)

    page.goto(url(server, "/results/0"))
    assert "1/2" in page.locator("p.big").inner_text()
    assert "exit 1: FAILED" in page.locator("details.run.failed").first.inner_text()
    assert page.locator("svg.chart").count() == 1
    page.screenshot(path=str(tmp_path / "results.png"), full_page=True)

    page.goto(url(server, "/compare", old="1", new="0"))
    assert "1 worse" in page.locator("p.big").inner_text()
    first = page.locator("table.tasks tbody tr").first.inner_text()
    assert "fix-rounding" in first and "worse" in first
    page.screenshot(path=str(tmp_path / "compare.png"), full_page=True)

    assert watch.dialogs == []
    own = f"http://127.0.0.1:{server.port}/static/view.js"
    assert {s.split("?")[0] for s in watch.scripts if s} <= {own}
    assert all(r.startswith(f"http://127.0.0.1:{server.port}/") for r in watch.requests)
    page.close()


def test_scripts_and_html_in_a_session_execute_nothing(
    browser: Any,
    serve: Any,
    tmp_path: Path,
) -> None:
    session = hostile_session(tmp_path / "data")
    results = hostile_results(tmp_path / "results.jsonl")
    server = serve([tmp_path / "data"], [results])
    page = browser.new_page()
    watch = ScriptWatch.on(browser, page)
    own = f"http://127.0.0.1:{server.port}/static/view.js"

    page.goto(server.url)
    listing = page.locator("table.sessions").inner_text()
    assert PAYLOADS[0] in listing  # the agent's name, as text
    links = page.locator("table.sessions tbody a")
    assert links.count() == 2  # the session, and its copy under a file name of HTML
    # Only `goto` and reading text here: a click would let Playwright compile its own
    # helpers in the page's world, and the hook counts every script compiled there.
    hrefs = [links.nth(n).get_attribute("href") for n in range(2)]
    base = f"http://127.0.0.1:{server.port}"
    for number, href in enumerate(hrefs):
        assert href is not None
        page.goto(base + href)
        text = page.locator("main").inner_text()
        for payload in PAYLOADS[:3]:
            assert payload in text  # shown as written
        page.screenshot(path=str(tmp_path / f"hostile-session-{number}.png"), full_page=True)
    prompt = page.locator("ul.prompts a").first.get_attribute("href")
    assert prompt is not None
    page.goto(base + prompt)
    assert PAYLOADS[6] in page.locator("main").inner_text()  # a memory record's name
    page.screenshot(path=str(tmp_path / "hostile-prompt.png"), full_page=True)
    page.goto(url(server, "/results/0"))
    assert PAYLOADS[1] in page.locator("table.tasks").inner_text()
    page.screenshot(path=str(tmp_path / "hostile-results.png"), full_page=True)

    assert watch.dialogs == []
    assert watch.isolated  # the hook was listening
    assert [s for s in watch.scripts if s.split("?")[0] != own] == []
    assert [s for s in watch.scripts if s.split("?")[0] == own]  # the hook sees scripts
    assert not [line for line in watch.console if "Content Security Policy" in line]
    assert all(r.startswith(f"http://127.0.0.1:{server.port}/") for r in watch.requests)
    assert not [r for r in watch.requests if r.split("?")[0].endswith("/x")]  # no <img src=x>
    assert session.path.is_file()
    page.close()


def test_the_hook_sees_a_script_that_runs(browser: Any, tmp_path: Path) -> None:
    """The control: the same hook on a page that does run an injected script."""
    page_file = tmp_path / "unsafe.html"
    page_file.write_text(
        "<p>x</p><img src=nothing onerror=\"alert('img')\"><script>var a = 1;</script>"
    )
    page = browser.new_page()
    watch = ScriptWatch.on(browser, page)
    page.goto(page_file.as_uri())
    assert page_file.as_uri() in watch.scripts  # the inline script
    assert watch.dialogs == ["img"]  # the handler
    page.close()


def test_a_request_without_the_token_gets_nothing(
    browser: Any,
    serve: Any,
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    shipping_session(tmp_path, data)
    server = serve([data], [])
    page = browser.new_page()
    for address in (
        f"http://127.0.0.1:{server.port}/",
        f"http://127.0.0.1:{server.port}/?token=not-the-token",
        f"http://127.0.0.1:{server.port}/static/view.css",
    ):
        response = page.goto(address)
        assert response is not None and response.status == 403
        assert "shipping" not in page.content()
    page.close()


def test_a_report_makes_no_request(browser: Any, tmp_path: Path) -> None:
    session = hostile_session(tmp_path)
    report = tmp_path / "report.html"
    report.write_text(build_report(session.path))
    page = browser.new_page()
    watch = ScriptWatch.on(browser, page)
    page.goto(report.as_uri())
    page.wait_for_load_state("load")
    assert PAYLOADS[0] in page.locator("main").inner_text()
    page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    assert watch.requests == [report.as_uri()]
    assert watch.dialogs == []
    assert watch.scripts == [] and watch.isolated
    assert page.locator("header.bar").bounding_box()["height"] > 20  # styled: the bar has room
    page.close()


def test_a_live_session_grows_without_a_reload(
    browser: Any,
    serve: Any,
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    path = shipping_session(tmp_path, data)
    server = serve([data], [])
    page = browser.new_page()
    navigations: list[str] = []
    page.on("framenavigated", lambda frame: navigations.append(frame.url))
    key = quote(f"0/{path.relative_to(data).as_posix()}")
    page.goto(url(server, f"/session/{key}"))
    page.wait_for_selector("#entries")
    before = page.locator("#entries > li").count()

    session = Session.load(path)
    session.append("event", {"event": {"type": "run_start", "prompt": "Once more."}})
    session.append_message(UserMessage("Once more, with feeling."))
    session.append_message(AssistantMessage("A new turn, live."))
    page.wait_for_selector("text=A new turn, live.", timeout=30_000)  # a guard, not a timing
    assert page.locator("#entries > li").count() == before + 3
    page.wait_for_selector("#status.live", timeout=30_000)
    assert len(navigations) == 1  # the first load only
    page.screenshot(path=str(tmp_path / "live.png"), full_page=True)
    page.close()
