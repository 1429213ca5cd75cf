"""`BuildOptions`: one object describing a build, for the CLI, a parent building its
child, and embedding code; keywords of `build_agent` change single fields of it."""

from __future__ import annotations

import asyncio
import dataclasses
import typing
from pathlib import Path

from assembler.agent import build_agent
from assembler.agent.options import BuildChanges, BuildOptions
from assembler.testing import ScriptedModel, text

MANIFEST = """\
version: 1
name: opts
identity: You answer.
model:
  provider: openai
  name: gpt-test
  base_url: http://127.0.0.1:9/v1
  api_key_env: OPTS_KEY
workspace: .
permissions:
  ask: [write]
"""


def manifest(tmp_path: Path) -> Path:
    path = tmp_path / "agent.yaml"
    path.write_text(MANIFEST)
    return path


def test_the_keywords_of_build_agent_are_the_fields_of_build_options() -> None:
    """`BuildChanges` (the keywords' types) lists every field of `BuildOptions`, with
    the same type: a field added to one and not the other fails here."""
    fields = {field.name: field.type for field in dataclasses.fields(BuildOptions)}
    changes = BuildChanges.__annotations__
    assert list(changes) == list(fields)
    for name, annotation in changes.items():
        written = (
            annotation.__forward_arg__ if isinstance(annotation, typing.ForwardRef) else annotation
        )
        assert written == fields[name], name


def test_keywords_change_fields_of_the_options_given(tmp_path: Path) -> None:
    options = BuildOptions(
        provider=ScriptedModel([text("hi")]), session_dir=tmp_path / "sessions", trust=True
    )
    recorded = build_agent(manifest(tmp_path), options, env={"OPTS_KEY": "k"})
    assert recorded.session is not None
    assert recorded.session.path.parent == tmp_path / "sessions"
    unrecorded = build_agent(manifest(tmp_path), options, record_session=False)
    assert unrecorded.session is None
    assert options.record_session is True  # the object given is not changed
    asyncio.run(recorded.aclose())
    asyncio.run(unrecorded.aclose())


def test_the_runner_gets_its_endpoint_and_permissions_when_it_is_made(tmp_path: Path) -> None:
    agent = build_agent(
        manifest(tmp_path),
        BuildOptions(record_session=False, trust=True, permission_mode="deny-asks"),
        env={"OPTS_KEY": "k"},
    )
    state = agent.state()
    assert state.endpoint == "http://127.0.0.1:9/v1"
    assert state.permission_mode == "deny-asks"
    asyncio.run(agent.aclose())
