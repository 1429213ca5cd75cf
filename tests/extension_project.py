"""A project with extension files, and a way to run it that cannot hang a test.

Used by the `test_extension_*` attacks: each writes hostile or broken extensions into
`ext/`, runs a scripted model through the real `build_agent`, and looks at what
happened on disk and in the events.
"""

from __future__ import annotations

import asyncio
import textwrap
import threading
from pathlib import Path
from typing import Any

from assembler.agent import Agent
from assembler.agent.build import build_agent
from assembler.testing import ScriptedModel
from assembler.validation.load import load_manifest


def project(
    tmp_path: Path,
    extensions: dict[str, str],
    *,
    tools: str = "[read, write]",
    extra: str = "",
) -> Path:
    """A manifest loading `ext/<name>.py` for each entry, in the given order."""
    (tmp_path / "ws").mkdir(exist_ok=True)
    (tmp_path / "ext").mkdir(exist_ok=True)
    entries = []
    for name, source in extensions.items():
        (tmp_path / "ext" / f"{name}.py").write_text(textwrap.dedent(source))
        entries.append(f"  - path: ext/{name}.py")
    manifest = tmp_path / "agent.yaml"
    manifest.write_text(
        "version: 1\nname: attack\nidentity: Test agent.\nworkspace: ws\n"
        f"tools:\n  sets:\n    - builtin: {tools}\n"
        + ("extensions:\n" + "\n".join(entries) + "\n" if entries else "")
        + extra
    )
    return manifest


def run_bounded(
    manifest: Path,
    model: ScriptedModel,
    *,
    within: float = 20.0,
    prompt: str = "go",
    session_dir: Path | None = None,
) -> tuple[list[Any], Agent, BaseException | None]:
    """Run the agent to its end (including `aclose`) in a thread; fail the test if
    that takes longer than `within` seconds, instead of hanging the suite.

    Returns the events, the agent, and the exception the run ended with, if any. With
    `session_dir`, the session and its audit trace are written there.
    """
    agent = build_agent(
        load_manifest(manifest),
        provider=model,
        trust=True,
        record_session=session_dir is not None,
        session_dir=session_dir,
    )
    events: list[Any] = []
    failure: list[BaseException] = []

    async def go() -> None:
        async with agent:
            async for event in agent.stream(prompt):
                events.append(event)

    def target() -> None:
        try:
            asyncio.run(go())
        except BaseException as e:  # reported to the test, which decides
            failure.append(e)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(within)
    assert not thread.is_alive(), f"the run did not end within {within} s"
    return events, agent, failure[0] if failure else None
