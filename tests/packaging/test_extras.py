"""`assembler.extras`: the one line for a missing extra, from a failed import or from
a check that imports nothing."""

from __future__ import annotations

import sys

import pytest

from assembler.errors import MissingExtraError, UsageError
from assembler.extras import EXTRAS, install_hint, installed, missing, require, requires


@pytest.mark.parametrize(
    ("extra", "subject", "message"),
    [
        (
            "openai",
            "openai:gpt-4o",
            "openai:gpt-4o needs the OpenAI SDK: pip install 'agent-assembler[openai]'",
        ),
        (
            "mcp",
            "MCP server `time`",
            "MCP server `time` needs the MCP SDK: pip install 'agent-assembler[mcp]'",
        ),
        (
            "dask",
            "--scheduler local:2",
            "--scheduler local:2 needs dask.distributed: pip install 'agent-assembler[dask]'",
        ),
        (
            "acp",
            "assemble acp",
            "assemble acp needs the Agent Client Protocol SDK: pip install 'agent-assembler[acp]'",
        ),
        (
            "otel",
            "tracing",
            "tracing needs the OpenTelemetry API: pip install 'agent-assembler[otel]'",
        ),
    ],
)
def test_the_message_names_the_extra(extra: str, subject: str, message: str) -> None:
    error = missing(extra, subject)
    assert isinstance(error, MissingExtraError) and isinstance(error, UsageError)
    assert str(error) == message


def test_a_failed_import_inside_requires_becomes_the_message(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(MissingExtraError) as raised, requires("dask", "--scheduler local:2"):
        import distributed  # noqa: F401
    assert str(raised.value) == (
        "--scheduler local:2 needs dask.distributed: pip install 'agent-assembler[dask]'"
    )
    assert isinstance(raised.value.__cause__, ImportError)


def test_a_broken_install_says_which_module_failed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK is there but one of its own dependencies is not: the message says so."""
    monkeypatch.setitem(sys.modules, "jiter", None)
    with pytest.raises(MissingExtraError) as raised, requires("openai", "openai:gpt-4o"):
        import jiter  # noqa: F401
    assert str(raised.value) == (
        "openai:gpt-4o needs the OpenAI SDK: pip install 'agent-assembler[openai]' "
        "(the OpenAI SDK could not be imported: import of jiter halted; None in sys.modules)"
    )


def test_other_errors_pass_through_requires() -> None:
    with pytest.raises(ValueError, match="not an import"), requires("mcp", "x"):
        raise ValueError("not an import")


def test_installed_imports_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    assert installed("mcp")  # the test environment has every extra
    monkeypatch.delitem(sys.modules, "distributed", raising=False)
    assert installed("dask")
    assert "distributed" not in sys.modules  # found, not imported
    monkeypatch.setitem(sys.modules, "mcp_types", None)
    assert not installed("mcp")
    with pytest.raises(MissingExtraError, match=r"needs the MCP SDK"):
        require("mcp", "MCP server `docs`")


def test_every_extra_has_a_hint() -> None:
    for name in EXTRAS:
        assert install_hint(name) == f"pip install 'agent-assembler[{name}]'"
