"""The hand-made answers (`answers`) are what the SDK would write (issue 27): each is
validated by the SDK's own model and dumped as its connection dumps a result, and must
come back key for key and in order; and it equals the answer built from the SDK's
models the way the server built it before."""

from __future__ import annotations

import json
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, RequestError
from acp.schema import (
    AgentCapabilities,
    Implementation,
    InitializeResponse,
    NewSessionResponse,
    PromptCapabilities,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionForkCapabilities,
    SessionListCapabilities,
    SessionResumeCapabilities,
)
from pydantic import BaseModel

from assembler.acp import answers
from assembler.acp.modes import mode_state
from assembler.permissions.policy import PERMISSION_MODES
from assembler.version import __version__


def dumped(model: BaseModel) -> str:
    """A result as the SDK's connection writes it (`Connection._execute_request`)."""
    data = model.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_unset=True)
    return json.dumps(data, separators=(",", ":"))


def same(result: dict[str, Any], model: type[BaseModel]) -> str:
    text = json.dumps(result, separators=(",", ":"))
    assert dumped(model.model_validate(result)) == text
    return text


def test_the_protocol_version_is_the_sdks() -> None:
    assert answers.PROTOCOL_VERSION == PROTOCOL_VERSION


@pytest.mark.parametrize("recorded", [True, False])
def test_initialize_is_the_sdks_answer(recorded: bool) -> None:
    result = answers.initialize_result(recorded=recorded, title="helper")
    by_sdk = InitializeResponse(
        protocol_version=PROTOCOL_VERSION,
        agent_capabilities=AgentCapabilities(
            load_session=recorded,
            prompt_capabilities=PromptCapabilities(embedded_context=True),
            session_capabilities=SessionCapabilities(
                list=SessionListCapabilities() if recorded else None,
                fork=SessionForkCapabilities() if recorded else None,
                resume=SessionResumeCapabilities() if recorded else None,
                close=SessionCloseCapabilities(),
            ),
        ),
        agent_info=Implementation(name="agent-assembler", title="helper", version=__version__),
    )
    assert same(result, InitializeResponse) == dumped(by_sdk)


@pytest.mark.parametrize("mode", [None, *PERMISSION_MODES])
def test_a_new_sessions_answer_is_the_sdks(mode: str | None) -> None:
    result = answers.new_session_result("s-1", mode)
    by_sdk = NewSessionResponse(session_id="s-1", modes=mode_state(mode))
    assert same(result, NewSessionResponse) == dumped(by_sdk)
    assert [m["id"] for m in result["modes"]["availableModes"]] == list(PERMISSION_MODES)


def test_lines_are_written_as_the_sdks_connection_writes_them() -> None:
    result = answers.new_session_result("s", None)
    assert (
        answers.response_line(7, result)
        == (
            json.dumps({"jsonrpc": "2.0", "id": 7, "result": result}, separators=(",", ":")) + "\n"
        ).encode()
    )
    error = RequestError(-32603, "no key", {"type": "MissingCredentialsError"})
    assert (
        answers.error_response_line("a", -32603, "no key", error.data)
        == (
            json.dumps(
                {"jsonrpc": "2.0", "id": "a", "error": error.to_error_obj()}, separators=(",", ":")
            )
            + "\n"
        ).encode()
    )
