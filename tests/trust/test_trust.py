"""Trust: project code runs only in a directory the user trusted, outside the project."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from clirun import assemble

from assembler.agent.build import build_agent
from assembler.errors import TrustError
from assembler.testing import ScriptedModel, text
from assembler.trust import (
    ProjectCode,
    TrustDecision,
    TrustStore,
    check_trust,
    project_code,
    require_trust,
)
from assembler.validation.load import load_manifest


def add_marker(shipping: Path) -> Path:
    marker = shipping / "marker"
    extension = shipping / "agents" / "extensions" / "protect_tests.py"
    extension.write_text(extension.read_text() + f"\nopen({str(marker)!r}, 'w').write('ran')\n")
    return marker


def test_the_store_lives_in_the_user_config_dir_not_the_project(shipping: Path) -> None:
    store = TrustStore()
    store.add(shipping / "agents")
    assert store.file == Path(os.environ["ASSEMBLER_CONFIG_DIR"]) / "trust.json"
    assert not store.file.resolve().is_relative_to(shipping.resolve())
    assert store.is_trusted(shipping / "agents")
    assert store.is_trusted(shipping / "agents" / "extensions")  # below a trusted one
    assert not store.is_trusted(shipping)


def test_trust_is_keyed_by_the_resolved_directory(shipping: Path, tmp_path: Path) -> None:
    link = tmp_path / "link-to-agents"
    link.symlink_to(shipping / "agents")
    TrustStore().add(link)
    assert TrustStore().is_trusted(shipping / "agents")
    assert [e.path for e in TrustStore().entries()] == [(shipping / "agents").resolve()]


def test_a_manifest_cannot_grant_itself_trust(
    shipping: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = shipping / "agents" / "shipping-fixer.yaml"
    manifest.write_text(manifest.read_text() + "trust: true\n")
    result = assemble(capsys, "validate", str(manifest))
    assert result.code == 1
    assert "unknown key `trust`" in result.out


def test_untrusted_build_refuses_before_any_project_code_runs(shipping: Path) -> None:
    marker = add_marker(shipping)
    with pytest.raises(TrustError) as caught:
        build_agent(
            load_manifest(shipping / "agents" / "shipping-fixer.yaml"), provider=ScriptedModel([])
        )
    assert "extension file extensions/protect_tests.py" in str(caught.value)
    assert not marker.exists()


def test_an_interactive_yes_lets_the_code_run(shipping: Path) -> None:
    marker = add_marker(shipping)
    asked: list[tuple[Path, list[str]]] = []

    def ask(directory: Path, code: list[str]) -> bool:
        asked.append((directory, code))
        return True

    build_agent(
        load_manifest(shipping / "agents" / "shipping-fixer.yaml"),
        provider=ScriptedModel([text("x")]),
        ask_trust=ask,
        record_session=False,
    )
    assert asked and asked[0][0] == (shipping / "agents").resolve()
    assert marker.exists()


def test_an_interactive_no_refuses(shipping: Path) -> None:
    marker = add_marker(shipping)
    with pytest.raises(TrustError):
        check_trust(
            load_manifest(shipping / "agents" / "shipping-fixer.yaml"), None, lambda d, c: False
        )
    assert not marker.exists()


def test_trust_commands_add_list_remove(shipping: Path, capsys: pytest.CaptureFixture[str]) -> None:
    agents = str((shipping / "agents").resolve())
    assert assemble(capsys, "trust", "list").out.strip() == "no trusted directories"
    added = assemble(capsys, "trust", "add", agents)
    assert added.code == 0 and agents in added.out
    assert assemble(capsys, "trust", "list").out.startswith(agents + "\t")
    script = shipping / "agents" / "hello.script.yaml"
    script.write_text("- text: hello\n")
    run = assemble(
        capsys,
        "run",
        agents + "/shipping-fixer.yaml",
        "--model",
        "scripted:hello.script.yaml",
        "-p",
        "hi",
    )
    assert run.code == 0 and run.out == "hello\n"
    removed = assemble(capsys, "trust", "remove", agents)
    assert removed.code == 0
    again = assemble(capsys, "trust", "remove", agents)
    assert again.code == 1 and "was not trusted" in again.err
    refused = assemble(
        capsys,
        "run",
        agents + "/shipping-fixer.yaml",
        "--model",
        "scripted:hello.script.yaml",
        "-p",
        "hi",
    )
    assert refused.code == 1 and "not a trusted directory" in refused.err


def test_installed_modules_need_no_trust(tmp_path: Path) -> None:
    (tmp_path / "agent.yaml").write_text(
        "version: 1\nname: plain\nidentity: Test.\ntools:\n  sets:\n    - python: json:dumps\n"
    )
    check_trust(load_manifest(tmp_path / "agent.yaml"), None)


def test_a_project_python_tool_needs_trust(tmp_path: Path) -> None:
    (tmp_path / "mytools.py").write_text("def hello() -> str:\n    'Say hello.'\n    return 'hi'\n")
    (tmp_path / "agent.yaml").write_text(
        "version: 1\nname: plain\nidentity: Test.\ntools:\n  sets:\n    - python: mytools:hello\n"
    )
    with pytest.raises(TrustError, match=r"Python tool mytools:hello \(mytools.py\)"):
        check_trust(load_manifest(tmp_path / "agent.yaml"), None)


def test_a_project_extension_module_needs_trust_and_loads_from_the_project(tmp_path: Path) -> None:
    (tmp_path / "project_ext").mkdir()
    (tmp_path / "project_ext" / "__init__.py").write_text("")
    (tmp_path / "project_ext" / "guard.py").write_text(
        "def setup(api, options):\n"
        "    def hello() -> str:\n        'Say hello.'\n        return 'hi'\n"
        "    api.register_tool(hello)\n"
    )
    (tmp_path / "agent.yaml").write_text(
        "version: 1\nname: plain\nidentity: Test.\nextensions:\n  - module: project_ext.guard\n"
    )
    manifest = load_manifest(tmp_path / "agent.yaml")
    with pytest.raises(
        TrustError, match=r"extension module project_ext.guard \(project_ext/guard.py\)"
    ):
        check_trust(manifest, None)
    model = ScriptedModel([text("ok")])
    agent = build_agent(manifest, provider=model, trust=True, record_session=False)
    assert "hello" in agent.registry.names()


def test_code_in_the_workspace_needs_the_workspace_trusted(tmp_path: Path) -> None:
    (tmp_path / "agents").mkdir()
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "wstools.py").write_text(
        "def hello() -> str:\n    'Say hello.'\n    return 'hi'\n"
    )
    (tmp_path / "agents" / "agent.yaml").write_text(
        "version: 1\nname: plain\nidentity: Test.\nworkspace: ../work\n"
        "tools:\n  sets:\n    - python: wstools:hello\n"
    )
    manifest = load_manifest(tmp_path / "agents" / "agent.yaml")
    TrustStore().add(tmp_path / "agents")
    with pytest.raises(TrustError) as caught:
        check_trust(manifest, None)
    assert str((tmp_path / "work").resolve()) in str(caught.value)
    TrustStore().add(tmp_path / "work")
    check_trust(manifest, None)


def test_bash_does_not_see_the_manifests_key_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_GATEWAY_CREDS_VAR", "sk-do-not-leak")
    monkeypatch.setenv("ORDINARY_SETTING", "visible")
    (tmp_path / "agent.yaml").write_text(
        "version: 1\nname: plain\nidentity: Test.\n"
        "model: {provider: openai, name: m, base_url: 'http://127.0.0.1:9/v1', "
        "api_key_env: MY_GATEWAY_CREDS_VAR}\n"
        # Variables reach commands only when passed through; a glob that matches the
        # key variable's name still does not pass it.
        "tools: {env: {passthrough: ['ORDINARY_*', 'MY_*']}}\n"
    )
    from assembler.runner.events import ToolCallResult
    from assembler.testing import tool_call

    model = ScriptedModel([tool_call("bash", command="env"), text("ok")])
    agent = build_agent(
        load_manifest(tmp_path / "agent.yaml"), provider=model, record_session=False
    )
    import asyncio

    async def go() -> list[object]:
        async with agent:
            return [e async for e in agent.stream("env?")]

    result = next(e for e in asyncio.run(go()) if isinstance(e, ToolCallResult))
    assert "ORDINARY_SETTING=visible" in result.content
    assert "sk-do-not-leak" not in result.content


def test_one_question_lists_the_code_below_the_directory_it_trusts(tmp_path: Path) -> None:
    """Trusting the manifest's directory also trusts a workspace below it: the one
    question lists the workspace's code too, each item once."""
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "wsmod.py").write_text("def helper(x: str) -> str:\n    return x\n")
    (tmp_path / "ext.py").write_text("def setup(api, options):\n    pass\n")
    (tmp_path / "agent.yaml").write_text(
        "version: 1\nname: a\nidentity: Hi.\nworkspace: ws\n"
        "tools:\n  sets:\n    - python: wsmod:helper\nextensions:\n  - path: ext.py\n"
    )
    asked: list[tuple[Path, list[str]]] = []

    def ask(directory: Path, code: list[str]) -> bool:
        asked.append((directory, code))
        TrustStore().add(directory)
        return True

    check_trust(load_manifest(tmp_path / "agent.yaml"), None, ask)
    assert asked == [
        (tmp_path.resolve(), ["extension file ext.py", "Python tool wsmod:helper (ws/wsmod.py)"])
    ]


def _code_of(tmp_path: Path, body: str) -> list[str]:
    (tmp_path / "agent.yaml").write_text(f"version: 1\nname: a\nidentity: Hi.\n{body}")
    return [item.description for item in project_code(load_manifest(tmp_path / "agent.yaml"))]


def test_the_question_names_the_variables_an_mcp_server_is_sent_and_where(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOKEN", "t0ken")
    code = _code_of(
        tmp_path,
        "tools:\n  sets:\n    - mcp:\n        url: https://mcp.example.net/x?k=${TOKEN}\n",
    )
    assert code == ["MCP server `sets[0]` sends ${TOKEN} to https://mcp.example.net/x"]


def test_the_question_names_the_api_key_a_remote_model_endpoint_receives(tmp_path: Path) -> None:
    code = _code_of(
        tmp_path,
        "model:\n  provider: openai\n  name: gpt-4o\n  base_url: https://models.example.net/v1\n"
        "  api_key_env: MY_KEY\n",
    )
    assert code == ["model endpoint https://models.example.net/v1 receives your API key ($MY_KEY)"]


def test_one_yes_covers_the_directories_below_it(tmp_path: Path) -> None:
    """The answer is for this build only (nothing is stored): code in the manifest's
    directory and in a workspace below it is still one question."""
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "wsmod.py").write_text("def helper(x: str) -> str:\n    return x\n")
    (tmp_path / "ext.py").write_text("def setup(api, options):\n    pass\n")
    (tmp_path / "agent.yaml").write_text(
        "version: 1\nname: a\nidentity: Hi.\nworkspace: ws\n"
        "tools:\n  sets:\n    - python: wsmod:helper\nextensions:\n  - path: ext.py\n"
    )
    code = [
        ProjectCode("extension file ext.py", tmp_path.resolve()),
        ProjectCode("Python tool wsmod:helper", (tmp_path / "ws").resolve()),
    ]
    asked: list[Path] = []

    def ask(directory: Path, listing: list[str]) -> bool:
        asked.append(directory)
        return True

    require_trust(code, None, ask)
    assert asked == [tmp_path.resolve()]


def test_trusting_creates_a_config_directory_that_does_not_exist_yet(tmp_path: Path) -> None:
    store = TrustStore(tmp_path / "new" / "config")
    store.add(tmp_path)
    assert store.is_trusted(tmp_path)


def test_a_trust_decision_survives_the_trip_to_a_worker_process(tmp_path: Path) -> None:
    decision = TrustDecision(frozenset({tmp_path / "agent.yaml"}), frozenset({"ab" * 32}), False)
    assert TrustDecision.from_dict(decision.to_dict()) == decision


def test_trusting_a_second_directory_keeps_the_first(tmp_path: Path) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    store = TrustStore(tmp_path / "config")
    store.add(tmp_path / "one")
    store.add(tmp_path / "two")
    assert store.is_trusted(tmp_path / "one") and store.is_trusted(tmp_path / "two")


def test_a_trust_decision_fingerprints_the_code_it_covered(tmp_path: Path) -> None:
    code_file = tmp_path / "ext.py"
    code_file.write_text("x = 1\n")
    decision = TrustDecision.of(
        [tmp_path / "agent.yaml"], [ProjectCode("extension", tmp_path, (code_file,))], True
    )
    assert decision.digests == {hashlib.sha256(b"x = 1\n").hexdigest()}
