"""Slash commands over ACP: advertised with `available_commands_update` once a session
is open (built-in and extension commands), run when a prompt is one, and any other
text, slash or not, goes to the model."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from acp import RequestError
from acp.schema import AvailableCommandsUpdate
from acp_harness import Editor, manifest, serving

EXTENSION = """\
def setup(api, options):
    api.register_command('greet', lambda argument: f'Hello, {argument}!', 'Says hello.')
    api.register_command('session', lambda argument: 'shadowed', 'Loses to the built-in.')

    def boom(argument):
        raise RuntimeError('it broke')

    api.register_command('boom', boom, 'Breaks.')
"""

SCRIPT = "- text: The path is missing.\n"


def test_commands_are_advertised_and_run(tmp_path: Path) -> None:
    (tmp_path / "ext.py").write_text(EXTENSION)
    agent = manifest(tmp_path, SCRIPT, extra="extensions:\n  - path: ext.py\n")
    editor = Editor()

    async def scenario() -> None:
        async with serving(
            agent, "--trust", "--session-dir", str(tmp_path / "s"), editor=editor
        ) as acp:
            session = await acp.start()
            await editor.until(lambda: editor.announced(session), "the commands")
            (update,) = editor.announced(session)
            assert isinstance(update, AvailableCommandsUpdate)
            offered = {c.name: c for c in update.available_commands}
            assert list(offered) == ["compact", "session", "model", "cost", "boom", "greet"]
            assert offered["model"].input is not None and offered["cost"].input is None
            assert offered["greet"].description == "Says hello. (extension `ext`)"
            assert offered["compact"].input is not None
            assert offered["compact"].input.root.hint == "what to keep"
            assert offered["session"].input is None

            answer = await acp.prompt(session, "/greet  Ada ")
            assert answer.stop_reason == "end_turn"
            assert editor.text(session) == "Hello, Ada!"
            await acp.prompt(session, "/session")
            said = editor.text(session).removeprefix("Hello, Ada!")
            assert said.startswith(f"session {session}\n")
            assert "\nmodel: scripted:" in said
            assert "permission mode: default" in said
            with pytest.raises(RequestError, match=r"/boom .* RuntimeError: it broke"):
                await acp.prompt(session, "/boom")
            # not a command: to the model, as typed
            before = editor.text(session)
            await acp.prompt(session, "/usr/bin/env is missing")
            assert editor.text(session).removeprefix(before) == "The path is missing."
            assert editor.user_text(session) == []  # the editor showed the prompt itself
            await acp.prompt(session, "/compact")
            said = editor.text(session).removeprefix(before + "The path is missing.")
            assert said == "Nothing to compact: nothing is older than the last message."

    asyncio.run(scenario())
    # the commands were not the model's turns: only the one message reached it
    records = next((tmp_path / "s").glob("*.jsonl")).read_text()
    assert records.count('"role":"user"') == 1
    assert "/usr/bin/env is missing" in records


def test_model_and_cost_commands(tmp_path: Path) -> None:
    """`/model` shows and switches the model (a refused name changes nothing), `/cost`
    shows tokens and cost, as in the terminal; the switch reaches the next turn."""
    (tmp_path / "second.yaml").write_text(
        "- text: From the second script.\n  usage: {input_tokens: 1000, output_tokens: 10}\n"
    )
    agent = manifest(tmp_path, SCRIPT)
    editor = Editor()

    async def scenario() -> None:
        async with serving(
            agent, "--trust", "--session-dir", str(tmp_path / "s"), editor=editor
        ) as acp:
            session = await acp.start()
            shown = ""

            async def said(prompt: str) -> str:
                nonlocal shown
                await acp.prompt(session, prompt)
                text = editor.text(session).removeprefix(shown)
                shown = editor.text(session)
                return text

            assert (await said("/model")).startswith("model: scripted:")
            refused = await said("/model nocolon")
            assert "the model stays scripted:" in refused
            switched = await said(f"/model scripted:{tmp_path / 'second.yaml'}")
            assert (
                switched.startswith("model: scripted:") and "second.yaml from the next" in switched
            )
            assert await said("Which script?") == "From the second script."
            cost = await said("/cost")
            assert cost.startswith("tokens: 1,000 in, 10 out; cache: 0 read, 0 written\n")
            assert "cost: unknown (no price for scripted:" in cost

    asyncio.run(scenario())
    records = next((tmp_path / "s").glob("*.jsonl")).read_text()
    assert '"type":"model"' in records and "second.yaml" in records
