"""Issue 20, item 17: a URL shown to the user never shows what `${VAR}` put in it.

`display_url` left out user-info and the query, but a token interpolated into the path
(`https://api.telegram.org/bot${TOKEN}/`, a gateway's `/${KEY}/v1`) was printed
whenever the server could not be reached: the MCP error and the provider's "cannot
reach" message were made from the URL with the value in it. A default written as
`${VAR:-value}` was shown too. Every URL shown is now made from the manifest's text,
each reference shown as `${NAME}`, whatever its syntax.
"""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest
from clirun import assemble

from assembler import load_manifest
from assembler.errors import MCPError
from assembler.manifest.model import MCPToolSet
from assembler.mcp import MCPConnection
from assembler.urls import display_url

PATH_TOKEN = "pathtoken-4711"
QUERY_TOKEN = "querytoken-4712"
DEFAULT_TOKEN = "defaulttoken-4713"


def free_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.mark.parametrize(
    ("written", "shown"),
    [
        ("https://api.example.com/bot${TOKEN}/send", "https://api.example.com/bot${TOKEN}/send"),
        ("https://h.example/${KEY:-" + DEFAULT_TOKEN + "}/v1", "https://h.example/${KEY}/v1"),
        ("https://${TENANT}.example.com:8443/v1", "https://${TENANT}.example.com:8443/v1"),
        ("http://127.0.0.1:${PORT}/v1", "http://127.0.0.1:${PORT}/v1"),
        ("https://${USER}:${PASS}@db.example/x?k=${Q}#${F}", "https://db.example/x"),
        ("https://h.example/${A:-x@y}/z", "https://h.example/${A}/z"),
    ],
)
def test_references_are_shown_by_name(written: str, shown: str) -> None:
    assert display_url(written) == shown


def test_an_unreachable_mcp_server_is_named_without_the_values(tmp_path: Path) -> None:
    (tmp_path / "agent.yaml").write_text(
        "version: 1\nname: t\nidentity: You help.\ntools:\n  sets: [{mcp: remote}]\n"
        f"  servers:\n    remote:\n      url: http://127.0.0.1:{free_port()}/mcp/${{MCP_PATH}}/x"
        "?key=${MCP_KEY}\n      timeout: 5\n"
    )
    env = {"MCP_PATH": PATH_TOKEN, "MCP_KEY": QUERY_TOKEN}
    manifest = load_manifest(tmp_path / "agent.yaml", env=env)
    [tool_set] = [s for s in manifest.tools.sets if isinstance(s, MCPToolSet)]

    async def scenario() -> str:
        connection = MCPConnection(tool_set.server, workspace=tmp_path)
        try:
            await connection.start()
        except MCPError as error:
            return str(error)
        finally:
            await connection.close()
        raise AssertionError("connected to a port nothing listens on")

    message = asyncio.run(scenario())
    assert "cannot reach" in message
    assert PATH_TOKEN not in message and QUERY_TOKEN not in message
    assert "/mcp/${MCP_PATH}/x" in message


def test_an_unreachable_model_endpoint_is_named_without_the_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("openai")
    port = free_port()
    (tmp_path / "agent.yaml").write_text(
        "version: 1\nname: t\nidentity: You help.\nmodel:\n  provider: openai\n  name: m\n"
        f"  base_url: 'http://127.0.0.1:{port}/${{GATEWAY_TOKEN}}/"
        f"${{GATEWAY_TENANT:-{DEFAULT_TOKEN}}}/v1'\n"
        "  options: {max_retries: 0}\n"
    )
    monkeypatch.setenv("GATEWAY_TOKEN", PATH_TOKEN)
    monkeypatch.chdir(tmp_path)
    outcome = assemble(capsys, "run", "--no-session", "--trust", "agent.yaml", "-p", "hi")
    shown = outcome.out + outcome.err
    assert outcome.code != 0
    assert "cannot reach" in shown
    assert PATH_TOKEN not in shown and DEFAULT_TOKEN not in shown
    assert f"http://127.0.0.1:{port}/${{GATEWAY_TOKEN}}/${{GATEWAY_TENANT}}/v1" in shown
