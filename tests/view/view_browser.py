"""Headless Chromium for the view's tests: Debian's `chromium` driven by Playwright,
started with the flags that keep it off the network (this machine has none, and a
browser that tries hangs on its connections), in a fresh profile.

`ScriptWatch` is the hook of the script-injection tests: through the DevTools
protocol it sees every script the page compiles (inline ones, event handlers when
they fire, `javascript:` URLs), every dialog, every request and every message a
Content-Security-Policy refusal leaves in the console.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = os.environ.get("ASSEMBLER_TEST_CHROMIUM", "/usr/bin/chromium")
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


def chromium_or_skip() -> str:
    """The browser; missing, the test skips on a developer's machine and fails in CI
    (`.ci/run` installs it), so CI cannot pass without the browser tests."""
    if Path(CHROMIUM).is_file() or shutil.which(CHROMIUM):
        return CHROMIUM
    if os.environ.get("CI"):
        pytest.fail(f"{CHROMIUM} is missing: .ci/run installs chromium with apt-get")
    pytest.skip(f"no {CHROMIUM}: apt-get install chromium chromium-driver")
    raise AssertionError("unreachable")


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    executable = chromium_or_skip()
    sync_api = pytest.importorskip("playwright.sync_api")
    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_api.sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile),
            executable_path=executable,
            headless=True,
            args=FLAGS,
            viewport={"width": 1280, "height": 900},
        )
        try:
            yield context
        finally:
            context.close()


@dataclass
class ScriptWatch:
    """Scripts compiled, dialogs opened, requests sent and console errors of one page."""

    scripts: list[str] = field(default_factory=list)
    """The URL of each script the pages themselves compiled ("" for inline code);
    Playwright's own queries run in an isolated world and are not counted."""
    isolated: int = 0
    """Scripts compiled in isolated worlds: proof the hook was listening."""
    dialogs: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    console: list[str] = field(default_factory=list)

    @classmethod
    def on(cls, context: Any, page: Any) -> ScriptWatch:
        watch = cls()
        session = context.new_cdp_session(page)

        def parsed(event: dict[str, Any]) -> None:
            if event.get("executionContextAuxData", {}).get("isDefault"):
                watch.scripts.append(event.get("url", ""))
            else:
                watch.isolated += 1

        session.on("Debugger.scriptParsed", parsed)
        session.send("Debugger.enable")

        def dialog(d: Any) -> None:
            watch.dialogs.append(d.message)
            d.dismiss()

        page.on("dialog", dialog)
        page.on("request", lambda request: watch.requests.append(request.url))
        page.on("console", lambda message: watch.console.append(f"{message.type}: {message.text}"))
        return watch
